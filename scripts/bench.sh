#!/usr/bin/env bash
# Run the benchmarks against a built daemon binary (default: the static release build).
set -euo pipefail
bin=${1:-target/x86_64-unknown-linux-gnu/release/agent-controller}
AGENT_CONTROLLER_BIN="$(realpath "$bin")" cargo bench --bench controller -- "${@:2}"
