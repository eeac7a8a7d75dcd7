#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""torch.fft (cuFFT) on bench_fft's --gpu lines, timed the same way: wall clock of one call and a
synchronize, median of 15 after a warm-up call, inputs already on the device (complex64 /
float32).

    python3 bench/fft_torch_peer.py
"""
import torch

from sort_peer import median_ms  # the same timing: wall clock of a call and a synchronize, median of 15


def line(name, ms):
    print(f"{name:<52} {ms:10.3f} ms")


def main():
    print(f"fft_torch_peer on {torch.cuda.get_device_name()} (torch {torch.__version__}, cuFFT)")
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.rand(1 << 24, dtype=torch.complex64, device="cuda", generator=g)
    line("c2c 1-D 2^24 complex64", median_ms(lambda: torch.fft.fft(x)))
    r = torch.rand(4096, 4096, device="cuda", generator=g)
    line("rfft2 4096x4096 float32", median_ms(lambda: torch.fft.rfft2(r)))
    b = torch.rand(16384, 1024, dtype=torch.complex64, device="cuda", generator=g)
    line("batched 16384 x c2c 1024 complex64", median_ms(lambda: torch.fft.fft(b)))


if __name__ == "__main__":
    main()
