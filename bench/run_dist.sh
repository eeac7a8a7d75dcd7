#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 49's benchmarks on this machine: builds bench_dist, then under Open MPI's mpiexec runs
# lt::dist::all_sum against MPI_Allreduce with 2 ranks (target: >= 0.9x its bandwidth at 64 MiB),
# and the data-parallel MLP step on 1 and 2 ranks (host: LAZYTENSOR_THREADS=1 per rank, batch 2048).
# On a machine with two GPUs: LAZYTENSOR_DEVICE is ignored with --gpu-per-rank; pass
#   MLP_ARGS="16384 10 --gpu-per-rank" bash bench/run_dist.sh
# Run from the repository root, on a quiet machine.
#
#   bash bench/run_dist.sh [build-dir]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
build="${1:-build-bench}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
    -DLAZYTENSOR_BUILD_EXAMPLES=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" --target bench_dist -j"$(nproc)" >/dev/null || exit 1
# Open MPI as root (containers, CI) and its shared-memory transport in containers (open-mpi/ompi#4948).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1
export LAZYTENSOR_THREADS="${LAZYTENSOR_THREADS:-1}"
echo "# $(date -u +%F), $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
mpiexec -n 2 "$build/bench/bench_dist" allreduce || exit 1
read -r -a mlp <<< "${MLP_ARGS:-2048 10}"
mpiexec -n 1 "$build/bench/bench_dist" mlp "${mlp[@]}" || exit 1
mpiexec -n 2 "$build/bench/bench_dist" mlp "${mlp[@]}" || exit 1
