#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch (CUDA) running bench_sort's operations, timed the same way: wall clock of one call and
a synchronize, median of 15 after a warm-up call, on inputs already on the device.

    python3 bench/sort_peer.py [--quick]
"""
import statistics
import sys
import time

import torch


def median_ms(f):
    f()
    torch.cuda.synchronize()
    t = []
    for _ in range(15):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    quick = "--quick" in sys.argv
    n, side = (1 << 20, 1024) if quick else (1 << 24, 8192)
    print(f"sort_peer on {torch.cuda.get_device_name()} (torch {torch.__version__})")
    x = torch.rand(n, device="cuda")
    m = torch.rand(side, side, device="cuda")
    print(f"sort 1-D, {n} floats (values and indices)             {median_ms(lambda: torch.sort(x, stable=True)):9.3f} ms")
    print(f"topk k=8 along rows, {side}x{side} floats                  {median_ms(lambda: torch.topk(m, 8)):9.3f} ms")
    print(f"argsort along rows, {side}x{side} floats                   {median_ms(lambda: torch.argsort(m, stable=True)):9.3f} ms")


if __name__ == "__main__":
    main()
