#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The host tables on the GPU machine's CPU (quiet, unlike the shared CI VM): bench_host at -O3
# against Eigen and PyTorch CPU (bench/host_peer.py), and bench_fft against numpy.fft
# (bench/fft_peer.py), on one thread pinned to one core and on two threads pinned to two
# physical cores. Writes under $OUT. Run from the repository root there:
#
#   source .device/opencl-env.sh; bash bench/run_host_device.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
cmake -S . -B /tmp/hb -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=OFF \
    -DLAZYTENSOR_BUILD_EXAMPLES=OFF -DLAZYTENSOR_PACKAGE_TESTS=OFF >"$OUT/build.txt" 2>&1 || exit 1
cmake --build /tmp/hb -j16 --target bench_host_O3 bench_fft >>"$OUT/build.txt" 2>&1 || { tail -n 40 "$OUT/build.txt"; exit 1; }
# Two logical CPUs on different physical cores (lscpu's CORE column).
read -r one two < <(lscpu -p=CPU,CORE | grep -v '^#' | awk -F, '!seen[$2]++ {print $1}' | head -n 2 | tr '\n' ' ')
lscpu | grep -E "Model name|Thread|Core|Socket" >"$OUT/cpu.txt"
echo "cpus: $one (1 thread), $one,$two (2 threads)" | tee -a "$OUT/cpu.txt"
LAZYTENSOR_THREADS=1 taskset -c "$one" /tmp/hb/bench/bench_host_O3 >"$OUT/host_t1.txt" 2>&1
LAZYTENSOR_THREADS=2 taskset -c "$one,$two" /tmp/hb/bench/bench_host_O3 >"$OUT/host_t2.txt" 2>&1
taskset -c "$one,$two" python3 bench/host_peer.py >"$OUT/torch_t1.txt" 2>&1
for t in 1 2; do
    cpus=$one
    [ "$t" = 2 ] && cpus="$one,$two"
    LAZYTENSOR_THREADS=$t taskset -c "$cpus" /tmp/hb/bench/bench_fft >"$OUT/fft_t$t.txt" 2>&1
done
taskset -c "$one" python3 bench/fft_peer.py >"$OUT/fft_numpy.txt" 2>&1
tail -n +1 "$OUT"/cpu.txt "$OUT"/host_t1.txt "$OUT"/host_t2.txt "$OUT"/torch_t1.txt "$OUT"/fft_t1.txt "$OUT"/fft_t2.txt "$OUT"/fft_numpy.txt
