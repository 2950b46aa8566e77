#!/usr/bin/env bash
# Install the built binaries, the default config and the systemd units (what `make install`
# does after building). Never overwrites an existing config: the new default goes beside it as
# config.yaml.new. Prints every file it installed.
#   usage: scripts/install.sh CONTROLLER_BIN WORKER_BIN [EVAL_BIN]   (DESTDIR and PREFIX from the environment)
# EVAL_BIN is agent-eval, which runs every client command of `agent-controller` (the console,
# mcp, completions, config check, eval, probe).
set -euo pipefail

controller=${1:?usage: scripts/install.sh CONTROLLER_BIN WORKER_BIN}
worker=${2:?usage: scripts/install.sh CONTROLLER_BIN WORKER_BIN}
destdir=${DESTDIR:-}
prefix=${PREFIX:-/usr/local}
root=$(cd "$(dirname "$0")/.." && pwd)

put() { # put MODE SOURCE TARGET
  install -D -m "$1" "$2" "$destdir$3"
  echo "installed $destdir$3"
}

put 0755 "$controller" "$prefix/bin/agent-controller"
put 0755 "$worker" "$prefix/bin/agent-worker"
if [ -n "${3:-}" ]; then
  put 0755 "$3" "$prefix/bin/agent-eval"
fi
config=/etc/agent-controller/config.yaml
if [ -e "$destdir$config" ]; then
  put 0644 "$root/config.yaml" "$config.new"
  echo "kept $destdir$config as it was; compare it with config.yaml.new (the new defaults)"
else
  put 0644 "$root/config.yaml" "$config"
fi
put 0644 "$root/systemd/agent-controller.service" /etc/systemd/system/agent-controller.service
put 0644 "$root/systemd/agent-worker.service" /etc/systemd/system/agent-worker.service
if [ -z "$destdir" ]; then
  echo "next: put secrets in /etc/agent-controller/env (mode 0600), then"
  echo "      systemctl daemon-reload && systemctl enable --now agent-controller"
fi
