#!/usr/bin/env bash
# Production launch of vLLM on GPUs for Formwork: the reasoning pass and/or the formatting pass.
#
#   deploy/vllm/serve_gpu.sh MODEL [NAME]
#     MODEL  a Hugging Face id (e.g. Qwen/Qwen3-8B) or a local folder
#     NAME   the name clients send as "model" (FORMWORK_VLLM_MODEL / FORMWORK_VLLM_FORMAT_MODEL);
#            default: MODEL
#
# Knobs (environment), with defaults:
#   HOST=127.0.0.1 PORT=8000     where the OpenAI-compatible API listens (base URL http://HOST:PORT/v1);
#                                any other address requires an API key (the API has no other guard)
#   VLLM_API_KEY= / VLLM_API_KEY_FILE=  the key clients must send (Formwork: FORMWORK_VLLM_API_KEY or
#                                FORMWORK_VLLM_API_KEY_FILE); passed to vLLM through its environment,
#                                never on the command line (visible in `ps`)
#   TP=1                         --tensor-parallel-size: GPUs the model is split across (one node)
#   MAX_MODEL_LEN=8192           context length; prompt + reasoning + JSON must fit; smaller = more KV
#   GPU_MEM_UTIL=0.90            fraction of each GPU vLLM may take (weights + KV cache)
#   MAX_NUM_SEQS=64              sequences batched at once; keep >= FORMWORK_VLLM_MAX_CONCURRENCY
#   REASONING_PARSER=            e.g. qwen3, deepseek_r1 for thinking models: the thinking goes to
#                                `message.reasoning`, the answer to `content`, and the JSON grammar
#                                applies only after the thinking ends. Empty: not a thinking model.
#   VLLM=vllm                    the vLLM command (the GPU `vllm` wheel; needs vLLM >= 0.10.2)
#   EXTRA_ARGS=                  anything else, appended as is (e.g. "--quantization fp8")
#
# Why these flags (vLLM 0.32 names, checked against its engine/arg_utils.py):
#   --structured-outputs-config backend=xgrammar  names the grammar engine, so there is no silent
#       fallback to another backend ("auto" picks per request); a schema xgrammar cannot compile is
#       refused with HTTP 400, which Formwork reports as RequestRejected naming the keyword.
#       disable_any_whitespace: compact JSON, fewer tokens, no runs of whitespace.
#   --logprobs-mode raw_logprobs  (vLLM's default, pinned): vLLM applies the grammar bitmask to the
#       logits before its sampler, so these are the log-probabilities of the grammar-masked
#       distribution at temperature 1, the evidence for enum and boolean confidences. A *_logits mode
#       would return logits; Formwork then notices (a forced token must have logprob 0) and stores no
#       confidence (tasks/engines/vllm_logprobs.py).
#   Formwork sends every sampling value explicitly, so the model's generation_config.json defaults
#   (repetition penalties, top_k) never reach the formatting pass.
# Check a running server with: formwork's VllmServerEngine.check() (models, /version, enum probe).
set -euo pipefail
model="${1:?usage: serve_gpu.sh MODEL [NAME]}"
name="${2:-$model}"
host="${HOST:-127.0.0.1}"
if [ -n "${VLLM_API_KEY_FILE:-}" ]; then
  VLLM_API_KEY="$(cat "$VLLM_API_KEY_FILE")"
fi
case "$host" in
  127.*|localhost|::1) ;;
  *)
    if [ -z "${VLLM_API_KEY:-}" ]; then
      echo "serve_gpu.sh: HOST=$host listens beyond this machine; set VLLM_API_KEY or VLLM_API_KEY_FILE" >&2
      exit 2
    fi ;;
esac
if [ -n "${VLLM_API_KEY:-}" ]; then
  export VLLM_API_KEY  # vLLM reads it from the environment, like --api-key
fi
so_config='{"backend":"xgrammar","disable_any_whitespace":true}'
args=(
  serve "$model"
  --served-model-name "$name"
  --host "$host"
  --port "${PORT:-8000}"
  --tensor-parallel-size "${TP:-1}"
  --max-model-len "${MAX_MODEL_LEN:-8192}"
  --gpu-memory-utilization "${GPU_MEM_UTIL:-0.90}"
  --max-num-seqs "${MAX_NUM_SEQS:-64}"
  --dtype auto
  --structured-outputs-config "$so_config"
  --logprobs-mode raw_logprobs
)
if [ -n "${REASONING_PARSER:-}" ]; then
  args+=(--reasoning-parser "$REASONING_PARSER")
fi
# shellcheck disable=SC2206  # EXTRA_ARGS is meant to split on spaces
args+=(${EXTRA_ARGS:-})
exec "${VLLM:-vllm}" "${args[@]}"
