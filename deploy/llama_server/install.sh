#!/usr/bin/env bash
# Install llama-cpp-python's OpenAI-compatible server (its `server` extra) into its OWN venv, once.
#
#   deploy/llama_server/install.sh VENV_DIR WHEEL_DIR   (Formwork's: ~/.cache/formwork/llama-server-venv)
#
# Why its own venv: the extra pins fastapi, starlette and sse-starlette versions that would fight
# Prefect's. Why the wheel folder: llama-cpp-python ships only as source; deploy/local/build_llama_wheel.sh
# builds the portable wheel once, and this venv reuses it instead of compiling again.
set -euo pipefail
venv="${1:?usage: install.sh VENV_DIR WHEEL_DIR}"
wheels="${2:?usage: install.sh VENV_DIR WHEEL_DIR}"
version="${LLAMA_CPP_VERSION:-0.3.36}"
python="${PYTHON:-python3.11}"
ready_check="import llama_cpp.server.app, uvicorn, sse_starlette, starlette_context"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$ready_check" 2>/dev/null; then
  echo "llama-cpp-python server: ready in $venv"
  exit 0
fi
PYTHON="$python" bash "$(dirname "$0")/../local/build_llama_wheel.sh" "$wheels"
echo "llama-cpp-python $version server: installing into $venv..."
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --find-links "$wheels" "llama-cpp-python[server]==$version"
"$venv/bin/python" -c "$ready_check; import llama_cpp; print('llama-cpp-python server ready:', llama_cpp.__version__)"
