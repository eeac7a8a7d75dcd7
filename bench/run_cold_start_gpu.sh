#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 52 on the GPU machine: builds bench_cold_start and runs it (every child a fresh process,
# caches off), one child with LAZYTENSOR_DEBUG=1, and PyTorch's fresh-process first steps beside.
#
#   source .device/opencl-env.sh; bash bench/run_cold_start_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF -DLAZYTENSOR_CLANG_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j32 --target bench_cold_start >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/cold_start.txt"
/tmp/b/bench/bench_cold_start --device opencl:0 --runs "${RUNS:-3}" --debug 2>&1 | tee -a "$OUT/cold_start.txt"
for i in $(seq ${RUNS:-3}); do CUDA_CACHE_PATH=$(mktemp -d) python3 bench/cold_start_peer.py cuda 2>&1 | tee -a "$OUT/cold_start.txt"; done
for i in $(seq ${RUNS:-2}); do CUDA_CACHE_DISABLE=1 python3 bench/cold_start_peer.py cuda 2>&1 | tee -a "$OUT/cold_start.txt"; done
