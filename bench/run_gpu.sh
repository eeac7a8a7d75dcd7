#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Builds lazytensor on the GPU machine, runs the OpenCL tests, bench_opencl and
# bench_gemm_opencl on opencl:0, and cuBLAS through PyTorch for the matrix-product gap.
# Run from the repository root there, where .device/opencl-env.sh sets up OpenCL, CLBlast,
# xsimd and doctest (from .deb files); results land in $OUT (tests.txt, bench_opencl.txt,
# bench_gemm_opencl.txt, cublas_peer.txt, ...).
#
#   bash bench/run_gpu.sh [bench_opencl options...]
#
# Keeps going when the tests fail, so that the benchmark still runs; the exit status is the
# benchmark's (nonzero only for numerically wrong results or errors).
set -x
set -o pipefail

cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"

# shellcheck disable=SC1091
source .device/opencl-env.sh

{ clinfo -l; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv; } 2>&1 |
    tee "$OUT/clinfo.txt"

cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=ON 2>&1 | tee "$OUT/build.txt"
# Build everything (the whole log goes to build.txt); if something fails to build, show the
# end of the log and still try the benchmark on its own.
if ! cmake --build /tmp/b -j16 >>"$OUT/build.txt" 2>&1; then
    tail -n 100 "$OUT/build.txt"
    cmake --build /tmp/b -j16 --target bench_opencl 2>&1 | tee -a "$OUT/build.txt"
fi

LAZYTENSOR_TEST_DEVICES=opencl:0 ctest --test-dir /tmp/b --output-on-failure --timeout 300 -R opencl 2>&1 |
    tee "$OUT/tests.txt"
echo "ctest exit status: $?" | tee -a "$OUT/tests.txt"

status=0
if [ "${RUN_BENCH_OPENCL:-1}" = 1 ]; then  # RUN_BENCH_OPENCL=0 runs the matrix products only
    /tmp/b/bench/bench_opencl "$@" 2>&1 | tee "$OUT/bench_opencl.txt"
    status=$?
    echo "bench_opencl exit status: $status" | tee -a "$OUT/bench_opencl.txt"
fi

# Matrix products: lazytensor vs CLBlast called directly, and cuBLAS (PyTorch) for the gap.
/tmp/b/bench/bench_gemm_opencl 2>&1 | tee "$OUT/bench_gemm_opencl.txt"
gemm_status=$?
echo "bench_gemm_opencl exit status: $gemm_status" | tee -a "$OUT/bench_gemm_opencl.txt"
python3 bench/cublas_peer.py 2>&1 | tee "$OUT/cublas_peer.txt"

[ "$status" -ne 0 ] && exit "$status"
exit "$gemm_status"
