#!/usr/bin/env bash
# Build a portable llama-cpp-python wheel once and cache it.
# Why: the package ships only as source; a default build compiles for -march=native (16 min on 2 cores,
# not portable). These flags build for any AVX2 machine in ~6 min, and the wheel is reused afterwards.
set -euo pipefail
version="${LLAMA_CPP_VERSION:-0.3.36}"
wheels="${1:?usage: build_llama_wheel.sh WHEEL_DIR}"
python="${PYTHON:-python3}"
mkdir -p "$wheels"
if ls "$wheels"/llama_cpp_python-"$version"-*.whl >/dev/null 2>&1; then
  echo "llama-cpp-python $version: cached wheel in $wheels"
  exit 0
fi
echo "llama-cpp-python $version: building a portable AVX2 wheel (about 6 minutes on 2 cores)..."
export CMAKE_ARGS="-DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON \
-DGGML_F16C=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF \
-DLLAMA_BUILD_SERVER=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
"$python" -m pip wheel --no-cache-dir --no-deps -w "$wheels" "llama-cpp-python==$version"
