#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 15 on the GPU machine: builds the schedule-area tests (scalar parameters, compile
# caching, batched first builds), the OpenCL tests and the fuzzer, runs them on opencl:0, then
# bench_params on opencl:0 and on the host, its PyTorch peer, and bench_opencl (kernel speed with
# scalars as arguments). Run from the repository root there; results land in $OUT.
# With BASE (the source tree of an earlier commit, e.g. from `git archive`), that tree's
# bench_params and bench_opencl are built too and run alternately with this tree's, twice each:
# an A/B on one machine.
#
#   bash bench/run_params_gpu.sh [BASE]
#
# RUN_TESTS=0 or RUN_BENCH=0 leaves out the tests or the benchmarks (two device calls on one
# warm machine, each within its time limit; the build in /tmp/b is reused).
set -x
set -o pipefail

cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"

# shellcheck disable=SC1091
source .device/opencl-env.sh

{ clinfo -l; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; date -u; } 2>&1 | tee "$OUT/clinfo.txt"

cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=ON >"$OUT/build.txt" 2>&1
tests="test_schedule test_opencl test_fuzz test_core test_views test_nn test_elementwise test_reduce"
# shellcheck disable=SC2086
cmake --build /tmp/b -j16 --target $tests bench_params bench_opencl >>"$OUT/build.txt" 2>&1 ||
    { tail -n 60 "$OUT/build.txt"; exit 1; }

export LAZYTENSOR_CACHE_DIR=/tmp/lt-cache
[ "${RUN_TESTS:-1}" = 1 ] && for t in $tests; do
    LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 "/tmp/b/tests/$t" 2>&1 | tail -n 40
    echo "$t exit ${PIPESTATUS[0]}"
done 2>&1 | tee "$OUT/tests.txt"

[ "${RUN_BENCH:-1}" = 1 ] || exit 0
if [ -n "${1:-}" ]; then
    cmake -S "$1" -B /tmp/base_b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
        >"$OUT/build_base.txt" 2>&1
    cmake --build /tmp/base_b -j16 --target bench_params bench_opencl >>"$OUT/build_base.txt" 2>&1 ||
        { tail -n 60 "$OUT/build_base.txt"; exit 1; }
    for run in 1 2; do
        for tree in b base_b; do
            echo "=== run $run, /tmp/$tree"
            "/tmp/$tree/bench/bench_params" --device opencl:0
            "/tmp/$tree/bench/bench_opencl"
        done
    done 2>&1 | tee "$OUT/ab.txt"
else
    /tmp/b/bench/bench_params --device opencl:0 2>&1 | tee "$OUT/bench_params_gpu.txt"
    /tmp/b/bench/bench_opencl 2>&1 | tee "$OUT/bench_opencl.txt"
fi
/tmp/b/bench/bench_params --device host 2>&1 | tee "$OUT/bench_params_host.txt"
python3 bench/params_peer.py 2>&1 | tee "$OUT/params_peer.txt"
