#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 21's sort targets on the GPU machine: builds the reduce-area tests (sort, argsort, topk)
# and bench_sort, runs the tests on opencl:0, then bench_sort and its PyTorch peer, and prints
# lazytensor / PyTorch per line (target: at most 2). Run from the repository root there.
#
#   bash bench/run_sort_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target test_reduce bench_sort >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_reduce -tc="*sort*" 2>&1 | tail -n 5 | tee "$OUT/tests.txt"
/tmp/b/bench/bench_sort --device opencl:0 | tee "$OUT/bench_sort.txt"
python3 bench/sort_peer.py | tee "$OUT/sort_peer.txt"
python3 bench/print_ratios.py "$OUT/bench_sort.txt" "$OUT/sort_peer.txt" --target 2 | tee "$OUT/ratios.txt"
