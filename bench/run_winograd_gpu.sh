#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Winograd F(4x4, 3x3) on the GPU machine, in one call: builds test_nn and bench_conv
# (build-gpu/), runs the convolution tests on opencl:0, then bench_conv with Winograd forced
# off and on and PyTorch (cuDNN) beside it, with the ratios (ratios_gpu.txt: off, then on); and the schedule items of both
# forms with their times (LAZYTENSOR_DEBUG=3). Results land in $OUT.
#
#   source .device/opencl-env.sh; bash bench/run_winograd_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF -DLAZYTENSOR_CLANG_TESTS=OFF >"$OUT/build.txt" 2>&1 || { tail -n 40 "$OUT/build.txt"; exit 1; }
cmake --build build-gpu -j16 --target bench_conv test_nn >>"$OUT/build.txt" 2>&1 || { grep -m5 -A5 error "$OUT/build.txt"; exit 1; }
echo built
nvidia-smi --query-gpu=name,driver_version --format=csv >"$OUT/tests.txt"
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 120 build-gpu/tests/test_nn -tc="*conv*,*Winograd*,*WINOGRAD*" >>"$OUT/tests.txt" 2>&1
grep -A12 "ERROR" "$OUT/tests.txt" | head -n 60
tail -n 3 "$OUT/tests.txt"
python3 bench/conv_peer.py | tee "$OUT/conv_peer_gpu.txt"
for mode in off on; do
    build-gpu/bench/bench_conv --device opencl:0 --winograd $mode --items 2>"$OUT/items_winograd_$mode.txt" |
        tee "$OUT/bench_conv_gpu_winograd_$mode.txt"
    python3 bench/print_ratios.py "$OUT/bench_conv_gpu_winograd_$mode.txt" "$OUT/conv_peer_gpu.txt" |
        tee -a "$OUT/ratios_gpu.txt"
done
