#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 53's GPU rows on the GPU machine: builds bench_scan, bench_sort and the test areas that
# hold the scan and sort tests, then runs both benchmarks with the decoupled look-backs (the
# default on GPUs) and with LAZYTENSOR_OPENCL_LOOKBACK=off, and their PyTorch peers, and prints
# lazytensor / PyTorch per line. With --tests, runs the scan and sort tests on opencl:0 instead,
# the look-back cases 20 times (a race would show as a wrong result or a hang).
#
#   source .device/opencl-env.sh; bash bench/run_issue53_gpu.sh [--tests]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF -DLAZYTENSOR_CLANG_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j32 --target bench_scan bench_sort test_reduce test_nn >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
if [ "${1:-}" = --tests ]; then
    export LAZYTENSOR_TEST_DEVICES=opencl:0
    timeout 300 /tmp/b/tests/test_reduce 2>&1 | tail -n 4 | tee "$OUT/tests.txt"
    timeout 300 /tmp/b/tests/test_nn -tc="*scan*,*cumsum*,*cumprod*,*few long rows*" 2>&1 | tail -n 4 | tee -a "$OUT/tests.txt"
    for i in $(seq 20); do
        timeout 60 /tmp/b/tests/test_nn -tc="*few long rows*" 2>&1 | grep -E "Status" | tr '\n' ' '
        timeout 60 /tmp/b/tests/test_reduce -tc="*onesweep*,*rows of 4096*" 2>&1 | grep -E "Status" | tr '\n' ' '
        echo
    done | sort | uniq -c | tee -a "$OUT/tests.txt"
    exit 0
fi
/tmp/b/bench/bench_scan --device opencl:0 | tee "$OUT/bench_scan.txt"
LAZYTENSOR_OPENCL_LOOKBACK=off /tmp/b/bench/bench_scan --device opencl:0 | tee "$OUT/bench_scan_off.txt"
/tmp/b/bench/bench_sort --device opencl:0 | tee "$OUT/bench_sort.txt"
LAZYTENSOR_OPENCL_LOOKBACK=off /tmp/b/bench/bench_sort --device opencl:0 | tee "$OUT/bench_sort_off.txt"
python3 bench/scan_peer.py | tee "$OUT/scan_peer.txt"
python3 bench/sort_peer.py | tee "$OUT/sort_peer.txt"
python3 bench/print_ratios.py "$OUT/bench_scan.txt" "$OUT/scan_peer.txt" | tee "$OUT/ratios.txt"
python3 bench/print_ratios.py "$OUT/bench_sort.txt" "$OUT/sort_peer.txt" | tee -a "$OUT/ratios.txt"
