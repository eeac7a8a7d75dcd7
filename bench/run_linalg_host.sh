#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 47's host target: builds bench_linalg, runs it and NumPy's linalg_peer.py on 2 threads
# (LAZYTENSOR_THREADS and OPENBLAS_NUM_THREADS: both call the same OpenBLAS LAPACK), and prints
# lazytensor / NumPy per line (target: <= 1 / 0.95). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are
# unset for both, so that OpenBLAS picks its kernels for this processor. Needs python3-numpy.
# Run from the repository root, on a quiet machine.
#
#   bash bench/run_linalg_host.sh [build-dir]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
build="${1:-build-bench}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
    -DLAZYTENSOR_BUILD_EXAMPLES=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" --target bench_linalg -j"$(nproc)" >/dev/null || exit 1
out=$(mktemp -d)
export LAZYTENSOR_THREADS=2 OPENBLAS_NUM_THREADS=2
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
"$build/bench/bench_linalg" | tee "$out/ours.txt"
/usr/bin/python3 bench/linalg_peer.py | tee "$out/peer.txt"
python3 bench/print_ratios.py "$out/ours.txt" "$out/peer.txt" --peer NumPy --target 1.053
