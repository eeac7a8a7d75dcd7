#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 50 on the GPU machine: builds the views, ops and elementwise areas (subscripts, scatter,
# the functions, random keys, dtypes) and runs them on opencl:0, then bench_indexing beside its
# PyTorch peer (ratios: lazytensor / PyTorch per line), and bench_idle_cpu on the host's cores.
# Run from the repository root there.
#
#   bash bench/run_indexing_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target test_views test_ops test_elementwise test_interop bench_indexing bench_idle_cpu \
    >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
for area in views ops elementwise interop; do
    LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 "/tmp/b/tests/test_$area" 2>&1 | tail -n 3 | tee "$OUT/tests_$area.txt"
done
/tmp/b/bench/bench_indexing --device opencl:0 | tee "$OUT/bench_indexing.txt"
python3 bench/indexing_peer.py | tee "$OUT/indexing_peer.txt"
python3 bench/print_ratios.py "$OUT/bench_indexing.txt" "$OUT/indexing_peer.txt" | tee "$OUT/ratios.txt"
/tmp/b/bench/bench_idle_cpu | tee "$OUT/bench_idle_cpu.txt"
