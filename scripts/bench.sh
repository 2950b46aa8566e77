#!/usr/bin/env bash
# Run the benchmarks against a built daemon binary (default: the static release build), beside
# the seed's stack (benches/seed_stack: Flask + waitress) in the same run. Its Python packages go
# into a venv under ~/.cache (made once; never in the repository). `scripts/bench.sh BIN steps`
# runs only the named figures (size idle roundtrip upload steps bigresult seed workers scale browser
# desktop).
set -euo pipefail
bin=${1:-target/x86_64-unknown-linux-gnu/release/agent-controller}
venv=${SEED_VENV:-$HOME/.cache/agent-controller-bench/seed-venv}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import flask, waitress, requests' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r benches/seed_stack/requirements.txt
fi
SEED_PYTHON="$venv/bin/python" AGENT_CONTROLLER_BIN="$(realpath "$bin")" cargo bench --bench controller -- "${@:2}"
