#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 48's GPU rows on the GPU machine: the FFT tests on opencl:0 (VkFFT forced where the build
# has it, then the default choice), bench_fft --gpu on opencl:0 with VkFFT and with the host
# engine through host memory, torch.fft (cuFFT) on the same lines, and the ratios (target: our
# time <= 1 / 0.7 = 1.43 x cuFFT's). Expects a build in $1 (default build-gpu) with test_ops,
# test_matmul and bench_fft. Results land in $OUT.
#
#   bash bench/run_fft_gpu.sh [build-dir]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
build="${1:-build-gpu}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
export LAZYTENSOR_TEST_DEVICES=opencl:0
timeout 300 "$build/tests/test_matmul" -tc="*fft*,*FFT*" 2>&1 | tail -n 3 | tee "$OUT/test_fft_backend_gpu.txt"
timeout 300 "$build/tests/test_ops" -tc="*fft*,*complex*" 2>&1 | tail -n 3 | tee "$OUT/test_fft_gpu.txt"
LAZYTENSOR_OPENCL_FFT=vkfft timeout 200 "$build/bench/bench_fft" opencl:0 --gpu | tee "$OUT/bench_fft_vkfft.txt"
LAZYTENSOR_OPENCL_FFT=host timeout 200 "$build/bench/bench_fft" opencl:0 --gpu | tee "$OUT/bench_fft_staged.txt"
python3 bench/fft_torch_peer.py | tee "$OUT/fft_torch.txt"
echo "--- VkFFT vs cuFFT (ratio = lazytensor / PyTorch; target <= 1.43, i.e. >= 0.7x cuFFT's speed)"
python3 bench/print_ratios.py "$OUT/bench_fft_vkfft.txt" "$OUT/fft_torch.txt" --target 1.43 | tee "$OUT/ratios_fft_gpu.txt"
