#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch on the GPU (cuSOLVER and MAGMA behind torch.linalg) running bench_linalg's routines,
timed as bench_linalg times them on an OpenCL device: wall clock of one call and a device
synchronize, median of `runs` after a warm-up call, on the same kinds of double matrices
(M M^T / n + I, M uniform in [0, 1)), made on the GPU.

    python3 bench/linalg_torch_peer.py [--quick] [--batched] [--large [N]]

--large: bench_linalg --large's lines instead, cholesky and solve (one right-hand side) of an
8192 x 8192 (or N x N) float32 matrix M M^T / n + I, with TF32 off (issue 47's target).
"""
import statistics
import sys
import time

import torch


def median_ms(f, runs):
    f()
    torch.cuda.synchronize()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def line(name, ms):
    print(f"{name:<52} {ms:10.3f} ms")


def main():
    quick = "--quick" in sys.argv
    n, batch, runs = (256, 256, 3) if quick else (1024, 4096, 7)
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(7)

    def spd(shape, k):
        m = torch.rand(shape + (k, k), generator=g, device=dev, dtype=torch.float64)
        return m @ m.transpose(-1, -2) / k + torch.eye(k, device=dev, dtype=torch.float64)

    print(f"linalg_torch_peer: PyTorch {torch.__version__} on {torch.cuda.get_device_name()}")
    if "--large" in sys.argv:
        at = sys.argv.index("--large")
        big = int(sys.argv[at + 1]) if at + 1 < len(sys.argv) and not sys.argv[at + 1].startswith("-") else 8192
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        m = torch.rand((big, big), generator=g, device=dev, dtype=torch.float32)
        a = m @ m.T / big + torch.eye(big, device=dev, dtype=torch.float32)
        b = torch.rand((big, 1), generator=g, device=dev, dtype=torch.float32)
        line(f"cholesky {big}x{big} float32", median_ms(lambda: torch.linalg.cholesky(a), runs))
        line(f"solve {big}x{big} float32, one right-hand side", median_ms(lambda: torch.linalg.solve(a, b), runs))
        return
    if "--batched" not in sys.argv:  # the batched small lines only, as bench_linalg --batched
        a = spd((), n)
        b = torch.rand((n, 1), generator=g, device=dev, dtype=torch.float64)
        line("cholesky 1024x1024 double", median_ms(lambda: torch.linalg.cholesky(a), runs))
        line("solve 1024x1024 double, one right-hand side", median_ms(lambda: torch.linalg.solve(a, b), runs))
        line("qr 1024x1024 double (Q and R)", median_ms(lambda: torch.linalg.qr(a), runs))
        line("svd 1024x1024 double (U, S, Vh)", median_ms(lambda: torch.linalg.svd(a), runs))
        line("eigh 1024x1024 double (eigenvalues and vectors)", median_ms(lambda: torch.linalg.eigh(a), runs))
    small = spd((batch,), 32)
    rhs = torch.rand((batch, 32, 1), generator=g, device=dev, dtype=torch.float64)
    line("cholesky 4096 x (32x32) double", median_ms(lambda: torch.linalg.cholesky(small), runs))
    line("solve 4096 x (32x32) double, one right-hand side", median_ms(lambda: torch.linalg.solve(small, rhs), runs))


if __name__ == "__main__":
    main()
