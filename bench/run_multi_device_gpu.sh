#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 20's multi-device targets on the GPU machine: builds bench_multi_device, runs it over
# every OpenCL device (rows 1-4), then row 4 again with LAZYTENSOR_OPENCL_SHARED_CONTEXT=off:
# separate contexts, so that copies between the GPUs go through pinned host memory (the staging
# path) instead of clEnqueueCopyBuffer. Rows 2-4 need two GPUs (device kind nvidia-h200-x2); on
# one GPU they say so and time what they can. Run from the repository root there; extra
# arguments go to both runs (e.g. --elems 268435456 --reps 20):
#
#   bash bench/run_multi_device_gpu.sh [bench_multi_device options]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
{ clinfo -l; nvidia-smi --query-gpu=index,name,memory.total,pcie.link.gen.current,pcie.link.width.current --format=csv;
  nvidia-smi topo -m; } 2>&1 | tee "$OUT/devices.txt"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target bench_multi_device >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
status=0
timeout 480 /tmp/b/bench/bench_multi_device "$@" 2>&1 | tee "$OUT/bench_multi_device.txt" || status=$?
echo
echo "=== again with LAZYTENSOR_OPENCL_SHARED_CONTEXT=off (row 4: the staging path) ==="
LAZYTENSOR_OPENCL_SHARED_CONTEXT=off timeout 120 /tmp/b/bench/bench_multi_device --rows 4 "$@" 2>&1 |
    tee "$OUT/bench_multi_device_staged.txt" || status=$?
exit "$status"
