#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuBLAS through PyTorch (TF32 off) on issue 18's matrix products, timed as bench_gemm_kernel
times lazytensor: the wall clock of one product and a synchronize, median of 15 after 3
warm-up runs.

    python3 bench/gemm_kernel_peer.py
"""
import statistics
import time

import torch

SHAPES = [  # name, batch, m, k, n, B transposed (as bench_gemm_kernel.cpp lists them)
    ("GEMM 8192x784 @ 784x512", 1, 8192, 784, 512, False),
    ("GEMM 8192x512 @ 512x256", 1, 8192, 512, 256, False),
    ("batched 32 x (1024x64 @ 64x1024), B transposed", 32, 1024, 64, 1024, True),
    ("batched 32 x (1024x1024 @ 1024x64)", 32, 1024, 1024, 64, False),
    ("GEMM 1024^3", 1, 1024, 1024, 1024, False),
    ("GEMM 4096^3", 1, 4096, 4096, 4096, False),
    ("GEMM 8192^3 (no target)", 1, 8192, 8192, 8192, False),
    ("GEMM 8192x256 @ 256x10 (the MLP's last layer)", 1, 8192, 256, 10, False),
]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()} (cuBLAS via torch {torch.__version__}, TF32 off)")
    for name, batch, m, k, n, bt in SHAPES:
        dims = (lambda r, c: (r, c)) if batch == 1 else (lambda r, c: (batch, r, c))
        a = torch.rand(*dims(m, k), device="cuda") * 2 - 1
        b = torch.rand(*dims(n, k) if bt else dims(k, n), device="cuda") * 2 - 1
        if bt:
            b = b.mT
        times = []
        for r in range(-3, 15):
            t0 = time.perf_counter()
            torch.matmul(a, b)
            torch.cuda.synchronize()
            if r >= 0:
                times.append((time.perf_counter() - t0) * 1e3)
        ms = statistics.median(times)
        print(f"{name:<48s} cublas {ms:8.3f} ms {2.0 * batch * m * n * k / (ms * 1e-3) / 1e12:6.1f} TFLOP/s")
    # The workloads built on products (bench_gemm_kernel's last lines), PyTorch eager.
    def fresh_ms(f):
        times = []
        for r in range(-3, 15):
            t0 = time.perf_counter()
            f()
            torch.cuda.synchronize()
            if r >= 0:
                times.append((time.perf_counter() - t0) * 1e3)
        return statistics.median(times)

    def uniform(*shape, scale=1.0):
        return (torch.rand(*shape, device="cuda") * 2 - 1) * scale

    x = uniform(8192, 784)
    w1, b1, w2, b2, w3, b3 = (uniform(*s, scale=0.05) for s in ((784, 512), (512,), (512, 256), (256,), (256, 10), (10,)))
    relu = torch.relu
    mlp = fresh_ms(lambda: torch.softmax(relu(relu(x @ w1 + b1) @ w2 + b2) @ w3 + b3, -1))
    print(f"MLP 784-512-256-10 inference, batch 8192                        {mlp:9.3f} ms")
    linear = fresh_ms(lambda: relu(x @ w1 + b1))
    print(f"relu(x @ w1 + b1), 8192x784 @ 784x512                          {linear:9.3f} ms")
    x16 = x.half()
    half_in = fresh_ms(lambda: relu(x16.float() @ w1 + b1))
    print(f"relu(x16.float() @ w1 + b1), a float16 batch                   {half_in:9.3f} ms")
    to_half = fresh_ms(lambda: (x @ w1 + b1).half())
    print(f"(x @ w1 + b1).half(), a float16 result                         {to_half:9.3f} ms")
    q, k, v = (uniform(32, 1024, 64) for _ in range(3))
    attention = fresh_ms(lambda: torch.softmax(q @ k.mT * 0.125, -1) @ v)
    print(f"attention, batch*heads 32, T 1024  d 64                        {attention:9.3f} ms")


if __name__ == "__main__":
    main()
