#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 54's stencil targets on the GPU machine: builds the schedule- and views-area tests and
# bench_stencil, runs the schedule tests and the pad tests on opencl:0, then bench_stencil and its PyTorch peer,
# and prints lazytensor / PyTorch per line (target: the 2-D rows at most 1). Run from the
# repository root there.
#
#   bash bench/run_stencil_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target test_schedule test_views bench_stencil >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_schedule 2>&1 | tail -n 5 | tee "$OUT/tests.txt"
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_views -tc="*pad*" 2>&1 | tail -n 5 | tee -a "$OUT/tests.txt"
/tmp/b/bench/bench_stencil --device opencl:0 | tee "$OUT/bench_stencil.txt"
python3 bench/stencil_peer.py | tee "$OUT/stencil_peer.txt"
python3 bench/print_ratios.py "$OUT/bench_stencil.txt" "$OUT/stencil_peer.txt" --target 1 | tee "$OUT/ratios.txt"
