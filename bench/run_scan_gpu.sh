#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 18's scan targets on the GPU machine: builds the nn-area tests (scans, fused scans and
# their gradients), the reliability area (check mode on scans) and bench_scan, runs the scan
# tests on opencl:0, then bench_scan and its PyTorch peer, and prints lazytensor / PyTorch per
# line. Run from the repository root there.
#
#   bash bench/run_scan_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target test_nn test_reliability bench_scan >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_nn -tc="*scan*,*cumsum*,*cumprod*" 2>&1 | tail -n 30 | tee "$OUT/tests.txt"
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_reliability -tc="*scan*" 2>&1 | tail -n 30 | tee -a "$OUT/tests.txt"
/tmp/b/bench/bench_scan --device opencl:0 | tee "$OUT/bench_scan.txt"
python3 bench/scan_peer.py | tee "$OUT/scan_peer.txt"
python3 bench/print_ratios.py "$OUT/bench_scan.txt" "$OUT/scan_peer.txt" | tee "$OUT/ratios.txt"
