#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 46's convolution table on the GPU machine, in two calls: `build` configures and builds
# (build-gpu/: this tree; build-gpu-old/: $OLD, an older tree carried along, for issue 45's
# scan rows), `run` runs the convolution tests on opencl:0, bench_conv (as the device decides, then
# with Winograd forced off and on) and its PyTorch peer on
# the GPU (batch 32) and on 2 CPU threads (batch 8), and bench_scan old against new, three
# rounds alternating. Results land in $OUT.
#
#   bash bench/run_conv_gpu.sh build;  bash bench/run_conv_gpu.sh run
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}" "${OLD:=.old-tree}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
if [ "$1" = build ]; then
    nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
    configure() { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
        -DLAZYTENSOR_SANITIZER_TESTS=OFF >>"$OUT/build.txt" 2>&1; }
    configure . build-gpu || { tail -n 40 "$OUT/build.txt"; exit 1; }
    targets="test_nn bench_conv bench_scan"
    if [ -d "$OLD" ]; then configure "$OLD" build-gpu-old || exit 1; fi
    cmake --build build-gpu -j16 --target $targets >>"$OUT/build.txt" 2>&1 || { grep -m5 -A5 error "$OUT/build.txt"; exit 1; }
    if [ -d "$OLD" ]; then cmake --build build-gpu-old -j16 --target bench_scan >>"$OUT/build.txt" 2>&1 || exit 1; fi
    echo built
    exit 0
fi
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 200 build-gpu/tests/test_nn -tc="*conv*,*pool*,*unfold*" >"$OUT/tests.txt" 2>&1
grep -A12 "ERROR" "$OUT/tests.txt" | head -n 60
tail -n 3 "$OUT/tests.txt"
build-gpu/bench/bench_conv --device opencl:0 --items 2>"$OUT/items_gpu.txt" | tee "$OUT/bench_conv_gpu.txt"
python3 bench/conv_peer.py | tee "$OUT/conv_peer_gpu.txt"
python3 bench/print_ratios.py "$OUT/bench_conv_gpu.txt" "$OUT/conv_peer_gpu.txt" | tee "$OUT/ratios_gpu.txt"
# The 3x3 layers with Winograd forced off (im2col) and on, against the same PyTorch run.
for mode in off on; do
    build-gpu/bench/bench_conv --device opencl:0 --winograd $mode >"$OUT/bench_conv_gpu_winograd_$mode.txt"
    python3 bench/print_ratios.py "$OUT/bench_conv_gpu_winograd_$mode.txt" "$OUT/conv_peer_gpu.txt" |
        tee "$OUT/ratios_gpu_winograd_$mode.txt"
done
LAZYTENSOR_THREADS=2 taskset -c 0,1 build-gpu/bench/bench_conv --device host --batch 8 | tee "$OUT/bench_conv_host.txt"
taskset -c 0,1 python3 bench/conv_peer.py --cpu --threads 2 --batch 8 | tee "$OUT/conv_peer_host.txt"
python3 bench/print_ratios.py "$OUT/bench_conv_host.txt" "$OUT/conv_peer_host.txt" | tee "$OUT/ratios_host.txt"
if [ -d build-gpu-old ]; then
    for round in 1 2 3; do
        for side in old new; do
            dir=build-gpu; [ $side = old ] && dir=build-gpu-old
            $dir/bench/bench_scan --device opencl:0 | grep -E "cumsum|exp" >"$OUT/bench_scan_${side}_$round.txt" 2>&1
        done
    done
    paste "$OUT"/bench_scan_old_*.txt "$OUT"/bench_scan_new_*.txt | awk -F'  +' '{print}' >"$OUT/scan_side_by_side.txt"
fi
