#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 45 on the GPU machine: the schedule-item restructuring must lose no speed. Builds this
# tree and an older one ($OLD, a copy of the tree before the change, carried along: see below)
# with the same benchmark sources, runs the OpenCL test areas that cover the item kinds (sort,
# scan, products, attention, check mode) on opencl:0 for this tree, then bench_opencl,
# bench_sort, bench_scan and bench_params for both, alternating old and new twice, so drift
# shows. Results land in $OUT.
#
#   OLD=.old-tree bash bench/run_items_gpu.sh     (after: git worktree add --detach /tmp/old <commit>;
#                                                   cp -r /tmp/old .old-tree, minus its build dirs)
set -x
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}" "${OLD:=.old-tree}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"

# The same benchmark sources on both sides (what the benchmarks call exists in both).
cp bench/bench_sort.cpp "$OLD/bench/bench_sort.cpp"
targets="bench_opencl bench_sort bench_scan bench_params"
configure() { cmake -S "$1" -B "$2" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >>"$OUT/build.txt" 2>&1; }
configure . /tmp/new && configure "$OLD" /tmp/old || { tail -n 40 "$OUT/build.txt"; exit 1; }
cmake --build /tmp/new -j16 --target $targets test_reduce test_schedule test_matmul test_reliability >>"$OUT/build.txt" 2>&1 &&
    cmake --build /tmp/old -j16 --target $targets >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }

for area in reduce schedule matmul reliability; do
    LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 400 /tmp/new/tests/test_$area 2>&1 | tail -n 4 | sed "s/^/$area: /" | tee -a "$OUT/tests.txt"
done

for round in 1 2; do
    for side in old new; do
        /tmp/$side/bench/bench_opencl --no-first-realize >"$OUT/bench_opencl_${side}_$round.txt" 2>&1
        /tmp/$side/bench/bench_sort --device opencl:0 >"$OUT/bench_sort_${side}_$round.txt" 2>&1
        /tmp/$side/bench/bench_scan --device opencl:0 >"$OUT/bench_scan_${side}_$round.txt" 2>&1
        /tmp/$side/bench/bench_params --device opencl:0 >"$OUT/bench_params_${side}_$round.txt" 2>&1
    done
done
for f in "$OUT"/bench_*_1.txt "$OUT"/bench_*_2.txt; do echo "== $f"; cat "$f"; done
