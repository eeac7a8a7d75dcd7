#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch (CUDA) running bench_indexing's operations, timed the same way: wall clock of one call
and a synchronize, median of 15 after a warm-up call, on inputs already on the device.

    python3 bench/indexing_peer.py [--quick]
"""
import sys

import torch

from sort_peer import median_ms  # the same timing: wall clock of a call and a synchronize, median of 15


def main():
    quick = "--quick" in sys.argv
    rows, n, bins = (1 << 16, 1 << 20, 1 << 16) if quick else (1 << 20, 1 << 24, 1 << 16)
    print(f"indexing_peer on {torch.cuda.get_device_name()} (torch {torch.__version__})")
    dev = "cuda"
    table = torch.rand(rows, 16, device=dev)
    idx = torch.randint(0, rows, (rows,), device=dev)
    bin_idx = torch.randint(0, bins, (rows,), device=dev)
    values = torch.rand(rows, 16, device=dev)
    x = torch.rand(n, device=dev) - 0.5
    mask = x > 0
    small = torch.randint(0, 1000, (n // 4,), device=dev, dtype=torch.int32)
    print(f"gather rows x[idx], {rows} x 16 floats                {median_ms(lambda: table[idx]):9.3f} ms")
    acc = torch.zeros(bins, 16, device=dev)
    print(f"index_put accumulate, {rows} rows into {bins}            "
          f"{median_ms(lambda: acc.index_put_((bin_idx,), values, accumulate=True)):9.3f} ms")

    def mask_write():
        y = x * 1.0
        y[mask] = 0.0
    print(f"mask write x[x > 0] = 0, {n} floats                {median_ms(mask_write):9.3f} ms")
    print(f"masked_select, {n} floats                          {median_ms(lambda: torch.masked_select(x, mask)):9.3f} ms")
    print(f"nonzero, {n} bools                                 {median_ms(lambda: torch.nonzero(mask)):9.3f} ms")
    print(f"unique, {n // 4} int32 in [0, 1000)                     {median_ms(lambda: torch.unique(small, sorted=True)):9.3f} ms")


if __name__ == "__main__":
    main()
