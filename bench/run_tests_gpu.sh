#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Test areas on the GPU machine's first OpenCL device, each split into PARTS processes that run
# side by side (NVIDIA compiles every kernel cold on a fresh machine, on the CPU: parallel
# processes finish the slow areas within one device call). Run from the repository root there;
# output lands in $OUT.
#
#   bash bench/run_tests_gpu.sh [PARTS] AREA...      (e.g. 4 elementwise reduce)
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
parts=${1:-4}
shift
areas=("$@")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/device.txt"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
targets=()
for area in "${areas[@]}"; do targets+=("test_$area"); done
cmake --build /tmp/b -j16 --target "${targets[@]}" >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
pids=()
for area in "${areas[@]}"; do
    count=$(/tmp/b/tests/test_"$area" --count 2>&1 | grep -o "filters: [0-9]*" | grep -o "[0-9]*")
    per=$(((count + parts - 1) / parts))
    for ((part = 0; part < parts; ++part)); do
        first=$((part * per + 1)) last=$(((part + 1) * per))
        [ "$first" -le "$count" ] || continue
        LAZYTENSOR_TEST_DEVICES=opencl:0 /tmp/b/tests/test_"$area" --first="$first" --last="$last" \
            >"$OUT/test_${area}_$part.txt" 2>&1 &
        pids+=($!)
    done
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for f in "$OUT"/test_*_*.txt; do
    echo "== $(basename "$f" .txt)"
    grep -E "^\[doctest\] (test cases|assertions|Status)" "$f"
    grep -B2 -A8 "ERROR\|FATAL" "$f" | head -n 40
done
exit $status
