#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 54's host targets: builds bench_stencil, runs it on the host (all cores) and NumPy's
# stencil_peer.py (one thread) in the same call, and prints lazytensor / NumPy per line
# (targets: 1-D 40 steps <= 4 x 10 steps and <= 1.5 x realizing every step; 2-D ratios <= 0.5).
# Needs python3-numpy. Run from the repository root, on a quiet machine.
#
#   bash bench/run_stencil_host.sh [build-dir]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
build="${1:-build-bench}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
    -DLAZYTENSOR_BUILD_EXAMPLES=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" --target bench_stencil -j"$(nproc)" >/dev/null || exit 1
out=$(mktemp -d)
"$build/bench/bench_stencil" | tee "$out/ours.txt"
python3 bench/stencil_peer.py --numpy | tee "$out/peer.txt"
python3 bench/print_ratios.py "$out/ours.txt" "$out/peer.txt" --peer NumPy
