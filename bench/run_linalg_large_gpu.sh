#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 47's GPU target on the GPU machine: builds bench_linalg, runs its --large lines (cholesky
# and solve of 8192 x 8192 float32 on opencl:0, recursive on the device's GEMM kernel) and
# PyTorch's (cuSOLVER, TF32 off), and prints lazytensor / PyTorch per line (target: <= 2).
#
#   source .device/opencl-env.sh; bash bench/run_linalg_large_gpu.sh [N]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
n="${1:-8192}"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF -DLAZYTENSOR_CLANG_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j32 --target bench_linalg >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
/tmp/b/bench/bench_linalg --device opencl:0 --large "$n" | tee "$OUT/bench_linalg_large.txt"
python3 bench/linalg_torch_peer.py --large "$n" | tee "$OUT/linalg_torch_large.txt"
python3 bench/print_ratios.py "$OUT/bench_linalg_large.txt" "$OUT/linalg_torch_large.txt" --target 2 | tee "$OUT/ratios.txt"
