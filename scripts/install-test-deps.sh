#!/usr/bin/env bash
# Install what `make test` needs, only when it is missing. Idempotent; safe to run often.
# Today the tests need only the Rust toolchain plus rustfmt and clippy; browser tests
# (agent-worker) will add chromium, xvfb and poppler-utils here.
set -euo pipefail

need_apt=()
# Packages the test suite uses, as "command:package".
for pair in "curl:curl"; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || need_apt+=("$pkg")
done

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need_apt[@]}"
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo apt-get install -y -qq "${need_apt[@]}"
  else
    echo "missing packages: ${need_apt[*]} (install them as root)" >&2
    exit 1
  fi
fi

for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$comp"
  fi
done
