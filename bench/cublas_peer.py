#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuBLAS SGEMM through PyTorch (TF32 off) for the cases of bench_gemm_opencl: the gap to report.

    python3 bench/cublas_peer.py [--sizes 1024,4096,8192] [--batch 64,512]

Prints TFLOP/s per case (median of 7 bursts of back-to-back products, CUDA-event timed).
"""
import argparse

import torch


def tflops(fn, flops, reps):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / reps)
    ms = sorted(times)[len(times) // 2]
    return ms, flops / (ms * 1e-3) / 1e12


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="1024,4096,8192")
    p.add_argument("--batch", default="64,512")
    args = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device: {torch.cuda.get_device_name()} (cuBLAS via torch {torch.__version__}, TF32 off)")
    cases = [(f"square {s}", 1, s) for s in map(int, args.sizes.split(","))]
    count, size = map(int, args.batch.split(","))
    cases.append((f"batched {count} x {size}^3", count, size))
    for name, batch, s in cases:
        a = torch.rand(batch, s, s, device="cuda") * 2 - 1
        b = torch.rand(batch, s, s, device="cuda") * 2 - 1
        flops = 2.0 * batch * s ** 3
        reps = max(3, min(400, int(6e10 / flops * 100)))
        ms, tf = tflops(lambda: torch.matmul(a, b), flops, reps)
        print(f"{name:30s} {ms:9.3f} ms {tf:8.2f} TFLOP/s")


if __name__ == "__main__":
    main()
