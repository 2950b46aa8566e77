#!/usr/bin/env bash
# `make eval`: the eval's tasks on the local model of ../shared/tools/real-llm (Qwen2.5-Coder-1.5B
# behind llama-server), in the modes a small-model user meets: the Anthropic wire format, the
# OpenAI-compatible one, JSON action mode, and JSON action mode with replies kept to a schema
# of the page (json-schema); openai-schema and anthropic-schema are the native formats with each
# turn's tools narrowed to the page (`reply_schema: true`). Builds and starts the model server when it is not
# there (the first build takes about 6 minutes and 1.2 GB; never in CI).
# Usage: scripts/eval.sh [BIN_DIR] [-- extra eval options, e.g. --tasks price,search --repeat 3]
# EVAL_MODES picks the modes (default "anthropic openai json"); EVAL_SUITE the suite (own, the
# default; miniwob: MiniWoB++'s development split, fetched with pip the first time; injection: tasks
# whose pages carry an attack, with the attack success rate — add `-- --no-boundary` to run them
# without the injection boundary's markers);
# REAL_LLM_DIR the model's folder. The site listens on the model's port + 100 (EVAL_SITE_PORT),
# so a MiniWoB seed reads the same URLs, and the same prompt, run after run.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-target/release}; shift || true
[ "${1:-}" = "--" ] && shift
tool=../shared/tools/real-llm
dir=${REAL_LLM_DIR:-$HOME/.cache/real-llm}
port=${REAL_LLM_PORT:-18080}
if ! curl -sf "http://127.0.0.1:$port/health" >/dev/null; then
  [ -x "$dir/build/bin/llama-server" ] || "$tool/setup.sh" "$dir"
  "$tool/serve.sh" "$dir" "$port" >"$dir/server.log" 2>&1 &
  for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 1; done
fi
config=$(mktemp --suffix=.yaml)
trap 'rm -f "$config"' EXIT
cat >"$config" <<YAML
api: {provider: anthropic, base_url: "http://127.0.0.1:$port", api_key: local, model: qwen2.5-coder-1.5b, max_tokens: 1024, timeout_s: 300, temperature: 0}
providers:
  local-openai: {provider: openai, base_url: "http://127.0.0.1:$port", model: qwen2.5-coder-1.5b, api_key: local, reply_schema: false}
  local-schema: {provider: openai, base_url: "http://127.0.0.1:$port", model: qwen2.5-coder-1.5b, api_key: local, reply_schema: true}
  local-anthropic-schema: {provider: anthropic, base_url: "http://127.0.0.1:$port", model: qwen2.5-coder-1.5b, api_key: local, reply_schema: true}
agent: {context_window_tokens: 8192}
YAML
for mode in ${EVAL_MODES:-anthropic openai json json-schema}; do
  case $mode in
    anthropic) args=(--llm api --tool-mode native) ;;
    openai) args=(--llm local-openai --tool-mode native) ;;
    json) args=(--llm local-openai --tool-mode json) ;;
    json-schema) args=(--llm local-schema --tool-mode json) ;;
    openai-schema) args=(--llm local-schema --tool-mode native) ;;
    anthropic-schema) args=(--llm local-anthropic-schema --tool-mode native) ;;
    *) echo "unknown mode $mode (anthropic, openai, json, json-schema, openai-schema, anthropic-schema)" >&2; exit 2 ;;
  esac
  echo "== ${EVAL_SUITE:-own} $mode"
  "$bin/agent-controller" eval --config "$config" --worker "$bin/agent-worker" \
    --site-port "${EVAL_SITE_PORT:-$((port + 100))}" --suite "${EVAL_SUITE:-own}" "${args[@]}" "$@"
done
