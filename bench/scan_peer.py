#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch running bench_scan's operations, timed the same way: wall clock of one call and a
synchronize, median of 15 after a warm-up call, on inputs already on the device (CUDA, or the
CPU with --cpu: 4096 x 4096 and 2^24, on all cores and on one thread).

    python3 bench/scan_peer.py [--quick] [--cpu]
"""
import os
import statistics
import sys
import time

import torch


def median_ms(f, sync):
    f()
    sync()
    t = []
    for _ in range(15):
        t0 = time.perf_counter()
        f()
        sync()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    quick = "--quick" in sys.argv
    cpu = "--cpu" in sys.argv
    device = "cpu" if cpu else "cuda"
    side, n = (1024, 1 << 20) if quick else (4096, 1 << 24) if cpu else (8192, 1 << 26)
    sync = (lambda: None) if cpu else torch.cuda.synchronize
    name = "CPU" if cpu else torch.cuda.get_device_name()
    m = torch.rand(side, side, device=device)
    x = torch.rand(n, device=device)
    mi = (m * 100.0).to(torch.int32)
    matrix = f"{side}x{side}"
    for threads in ((os.cpu_count(), 1) if cpu else (None,)):
        if threads:
            torch.set_num_threads(threads)
        print(f"scan_peer on {name} (torch {torch.__version__}{f', {threads} thread' + ('s' if threads > 1 else '') if threads else ''})")
        rows = [
            (f"copy, {matrix} floats", lambda: m.clone()),
            (f"cumsum along rows, {matrix} floats", lambda: torch.cumsum(m, 1)),
            (f"cumsum along columns, {matrix} floats", lambda: torch.cumsum(m, 0)),
            (f"cumsum 1-D, {n} floats", lambda: torch.cumsum(x, 0)),
            (f"cumprod along rows, {matrix} floats", lambda: torch.cumprod(m, 1)),
            (f"exp(cumsum(m * 0.01, 1)), {matrix} floats", lambda: torch.exp(torch.cumsum(m * 0.01, 1))),
            (f"cumsum(m * 0.01, 1), {matrix} floats", lambda: torch.cumsum(m * 0.01, 1)),
            (f"exp(cumsum(m, 1)), {matrix} floats", lambda: torch.exp(torch.cumsum(m, 1))),
            (f"exp(cumsum(m * 0.01, 0)), {matrix} floats", lambda: torch.exp(torch.cumsum(m * 0.01, 0))),
            (f"cumsum along rows, {matrix} int32 -> int64", lambda: torch.cumsum(mi, 1)),
        ]
        for label, f in rows:
            print(f"{label:<52} {median_ms(f, sync):9.3f} ms")


if __name__ == "__main__":
    main()
