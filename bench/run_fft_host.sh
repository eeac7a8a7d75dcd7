#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 48's host target: builds bench_fft_host, runs it on 1 and 2 threads and NumPy's
# fft_peer.py (numpy.fft: one thread), and prints lazytensor / NumPy per line (target <= 1 on
# one thread) and 2 threads / 1 thread per line (target <= 1/1.6 = 0.625). The load average is
# printed before and after: on a shared machine, rerun when it was high. Needs python3-numpy.
# Run from the repository root.
#
#   bash bench/run_fft_host.sh [build-dir]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
build="${1:-build-bench}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
    -DLAZYTENSOR_BUILD_EXAMPLES=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" --target bench_fft_host -j2 >/dev/null || exit 1
out=$(mktemp -d)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$build/bench/bench_fft_host" 1 | tee "$out/one.txt"
"$build/bench/bench_fft_host" 2 | tee "$out/two.txt"
/usr/bin/python3 bench/fft_peer.py | tee "$out/peer.txt"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "--- one thread vs NumPy (ratio = lazytensor / NumPy)"
python3 bench/print_ratios.py "$out/one.txt" "$out/peer.txt" --peer NumPy --target 1
echo "--- two threads vs NumPy"
python3 bench/print_ratios.py "$out/two.txt" "$out/peer.txt" --peer NumPy
echo "--- two threads vs one (ratio = 2 threads / 1 thread)"
python3 bench/print_ratios.py "$out/two.txt" "$out/one.txt" --peer 1-thread --target 0.625
