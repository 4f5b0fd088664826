#!/usr/bin/env bash
# Production launch of vLLM on GPUs for Formwork: the reasoning pass and/or the formatting pass.
#
#   deploy/vllm/serve_gpu.sh MODEL [NAME]
#     MODEL  a Hugging Face id (e.g. Qwen/Qwen3-8B) or a local folder
#     NAME   the name clients send as "model" (FORMWORK_VLLM_MODEL / FORMWORK_VLLM_FORMAT_MODEL);
#            default: MODEL
#
# Knobs (environment), with defaults:
#   HOST=0.0.0.0 PORT=8000       where the OpenAI-compatible API listens (base URL http://HOST:PORT/v1)
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
#   Formwork sends every sampling value explicitly, so the model's generation_config.json defaults
#   (repetition penalties, top_k) never reach the formatting pass.
# Check a running server with: formwork's VllmServerEngine.check() (models, /version, enum probe).
set -euo pipefail
model="${1:?usage: serve_gpu.sh MODEL [NAME]}"
name="${2:-$model}"
so_config='{"backend":"xgrammar","disable_any_whitespace":true}'
args=(
  serve "$model"
  --served-model-name "$name"
  --host "${HOST:-0.0.0.0}"
  --port "${PORT:-8000}"
  --tensor-parallel-size "${TP:-1}"
  --max-model-len "${MAX_MODEL_LEN:-8192}"
  --gpu-memory-utilization "${GPU_MEM_UTIL:-0.90}"
  --max-num-seqs "${MAX_NUM_SEQS:-64}"
  --dtype auto
  --structured-outputs-config "$so_config"
)
if [ -n "${REASONING_PARSER:-}" ]; then
  args+=(--reasoning-parser "$REASONING_PARSER")
fi
# shellcheck disable=SC2206  # EXTRA_ARGS is meant to split on spaces
args+=(${EXTRA_ARGS:-})
exec "${VLLM:-vllm}" "${args[@]}"
