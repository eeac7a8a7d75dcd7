#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 18's matrix products on the GPU machine: builds the matmul and nn tests and
# bench_gemm_kernel, runs the tests on opencl:0 (the matmul area forces the own GEMM kernel on
# over every layout; nn runs products as auto chooses), then
# bench_gemm_kernel (own kernel, CLBlast and auto) and its PyTorch peer, and prints
# lazytensor / cuBLAS per shape (target: cuBLAS / ours >= 0.8, 4096^3 >= 0.9). Run from the
# repository root there; results land in $OUT.
#
#   bash bench/run_gemm_kernel_gpu.sh [bench_gemm_kernel options, e.g. --sweep]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv 2>&1 | tee "$OUT/device.txt"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target test_matmul test_nn bench_gemm_kernel >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
for area in matmul nn; do
    echo "test_$area on opencl:0" | tee -a "$OUT/tests.txt"
    LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_$area 2>&1 | tail -n 30 | tee -a "$OUT/tests.txt"
done
/tmp/b/bench/bench_gemm_kernel "$@" 2>&1 | tee "$OUT/bench_gemm_kernel.txt"
python3 bench/gemm_kernel_peer.py 2>&1 | tee "$OUT/gemm_kernel_peer.txt"
python3 - "$OUT/bench_gemm_kernel.txt" "$OUT/gemm_kernel_peer.txt" <<'PY' | tee "$OUT/ratios.txt"
import re, sys
ours = {}
for line in open(sys.argv[1]):
    m = re.match(r"(.{48}) own +([\d.]+) ms", line)
    if m:
        blas = re.search(r"clblast +([\d.]+) ms", line)
        auto = re.search(r"auto +([\d.]+) ms \((\w+)\)", line)
        ours[m.group(1).strip()] = (float(m.group(2)), blas and float(blas.group(1)), auto and float(auto.group(1)),
                                    auto and auto.group(2))
print(f"{'shape':<48} {'own':>8} {'CLBlast':>8} {'auto':>8} {'cuBLAS':>8}  cuBLAS/auto  cuBLAS/own  target")
for line in open(sys.argv[2]):
    m = re.match(r"(.{48}) cublas +([\d.]+) ms", line)
    if not m or m.group(1).strip() not in ours:
        continue
    name, peer = m.group(1).strip(), float(m.group(2))
    own, blas, auto, chosen = ours[name]
    target = 0.9 if "4096" in name else None if "no target" in name else 0.8
    best = auto if auto else own
    fmt = lambda v: f"{v:8.3f}" if v else f"{'-':>8}"
    verdict = f">= {target}: {'ok' if peer / best >= target else 'MISS'}" if target else "no target"
    print(f"{name:<48} {fmt(own)} {fmt(blas)} {fmt(auto)} {peer:8.3f}  {peer / best:11.2f}  {peer / own:10.2f}  "
          f"{verdict} ({chosen or 'own'})")
PY
python3 bench/print_ratios.py "$OUT/bench_gemm_kernel.txt" "$OUT/gemm_kernel_peer.txt" | tee -a "$OUT/ratios.txt"
