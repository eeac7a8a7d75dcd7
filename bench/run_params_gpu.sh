#!/usr/bin/env bash
# Issue 15 on the GPU machine: builds the schedule-area tests (scalar parameters, compile
# caching, batched first builds), the OpenCL tests and the fuzzer, runs them on opencl:0, then
# bench_params on opencl:0 and on the host, its PyTorch peer, and bench_opencl (kernel speed with
# scalars as arguments). Run from the repository root there; results land in $OUT.
#
#   bash bench/run_params_gpu.sh
set -x
set -o pipefail

cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"

# shellcheck disable=SC1091
source .device/opencl-env.sh

{ clinfo -l; nvidia-smi --query-gpu=name,driver_version --format=csv; nproc; date -u; } 2>&1 | tee "$OUT/clinfo.txt"

cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=ON >"$OUT/build.txt" 2>&1
tests="test_schedule test_opencl test_fuzz test_core test_views test_nn"
# shellcheck disable=SC2086
cmake --build /tmp/b -j16 --target $tests bench_params bench_opencl >>"$OUT/build.txt" 2>&1 ||
    { tail -n 60 "$OUT/build.txt"; exit 1; }

export LAZYTENSOR_CACHE_DIR=/tmp/lt-cache
for t in $tests; do
    LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 "/tmp/b/tests/$t" 2>&1 | tail -n 40
    echo "$t exit ${PIPESTATUS[0]}"
done 2>&1 | tee "$OUT/tests.txt"

/tmp/b/bench/bench_params --device opencl:0 2>&1 | tee "$OUT/bench_params_gpu.txt"
/tmp/b/bench/bench_params --device host 2>&1 | tee "$OUT/bench_params_host.txt"
python3 bench/params_peer.py 2>&1 | tee "$OUT/params_peer.txt"
/tmp/b/bench/bench_opencl 2>&1 | tee "$OUT/bench_opencl.txt"
