#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 49 (and 47's GPU rows) on the GPU machine, in two calls: `build` configures and builds
# build-gpu/, `run` runs test_dist under mpirun with 2 ranks on opencl:0 (both ranks on one GPU:
# a correctness run, not a speed one), the realize_async tests on the GPU, bench_dist (all_sum
# against MPI_Allreduce over host memory; the MLP step on one rank and GPU), and bench_linalg on
# opencl:0 beside PyTorch's torch.linalg on CUDA. Results land in $OUT.
#
#   bash bench/run_dist_gpu.sh build;  bash bench/run_dist_gpu.sh run
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
if [ "$1" = build ]; then
    nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
    cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
        >>"$OUT/build.txt" 2>&1 || { tail -n 40 "$OUT/build.txt"; exit 1; }
    grep -m1 "MPI" "$OUT/build.txt"
    cmake --build build-gpu -j16 --target test_dist test_opencl bench_dist bench_linalg ${EXTRA_TARGETS:-} >>"$OUT/build.txt" 2>&1 ||
        { grep -m5 -A5 error "$OUT/build.txt"; exit 1; }
    echo built
    exit 0
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
LAZYTENSOR_CACHE_DIR=off LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 mpirun -n 2 build-gpu/tests/test_dist >"$OUT/test_dist_gpu.txt" 2>&1
grep -E "test cases|ERROR" "$OUT/test_dist_gpu.txt" | head -n 20
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 120 build-gpu/tests/test_opencl -tc="realize_async*" 2>&1 | tail -n 2
LAZYTENSOR_THREADS=4 mpirun -n 2 build-gpu/bench/bench_dist allreduce | tee "$OUT/bench_dist_allreduce.txt"
LAZYTENSOR_DEVICE=opencl:0 mpirun -n 1 build-gpu/bench/bench_dist mlp 16384 20 | tee "$OUT/bench_dist_mlp_1gpu.txt"
build-gpu/bench/bench_linalg --device opencl:0 | tee "$OUT/bench_linalg_gpu.txt"
python3 bench/linalg_torch_peer.py | tee "$OUT/linalg_torch_gpu.txt"
python3 bench/print_ratios.py "$OUT/bench_linalg_gpu.txt" "$OUT/linalg_torch_gpu.txt" --peer PyTorch | tee "$OUT/ratios_linalg_gpu.txt"
