#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 48's host target: builds bench_fft_host, runs it on 1 and 2 threads and NumPy's
# fft_peer.py (numpy.fft: one thread), and prints lazytensor / NumPy per line (target <= 1 on
# one thread) and 2 threads / 1 thread per line (target <= 1/1.6 = 0.625). With ROUNDS=k, each
# program runs k times, alternating, and each line keeps its best median (a shared machine's
# other jobs only ever slow a round down). The load average is printed before and after. Needs
# python3-numpy. Run from the repository root.
#
#   [ROUNDS=k] bash bench/run_fft_host.sh [build-dir]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
build="${1:-build-bench}"
rounds="${ROUNDS:-1}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
    -DLAZYTENSOR_BUILD_EXAMPLES=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" --target bench_fft_host -j2 >/dev/null || exit 1
out=$(mktemp -d)
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq "$rounds"); do
    "$build/bench/bench_fft_host" 1 >"$out/one_$r.txt" || exit 1
    "$build/bench/bench_fft_host" 2 >"$out/two_$r.txt" || exit 1
    /usr/bin/python3 bench/fft_peer.py >"$out/peer_$r.txt" || exit 1
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# The best of the rounds, line by line.
best() {
    python3 -c '
import sys
files = [[l for l in open(f) if l.rstrip().endswith(" ms")] for f in sys.argv[1:]]
print(open(sys.argv[1]).readline().rstrip())
for lines in zip(*files):
    t = min(float(l.split()[-2]) for l in lines)
    print(f"{lines[0].rsplit(maxsplit=2)[0]:<52} {t:10.3f} ms")
' "$@"
}
best "$out"/one_*.txt | tee "$out/one.txt"
best "$out"/two_*.txt | tee "$out/two.txt"
best "$out"/peer_*.txt | tee "$out/peer.txt"
echo "--- one thread vs NumPy (ratio = lazytensor / NumPy)"
python3 bench/print_ratios.py "$out/one.txt" "$out/peer.txt" --peer NumPy --target 1
echo "--- two threads vs NumPy"
python3 bench/print_ratios.py "$out/two.txt" "$out/peer.txt" --peer NumPy
echo "--- two threads vs one (ratio = 2 threads / 1 thread)"
python3 bench/print_ratios.py "$out/two.txt" "$out/one.txt" --peer 1-thread --target 0.625
