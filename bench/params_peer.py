#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch (CUDA, eager) running the loops of bench_params, timed the same way: wall clock of N
steps then a synchronize, divided by N, best of 5 runs after a warm-up step.

    python3 bench/params_peer.py [--steps 200]
"""
import argparse
import time

import torch


def per_step_ms(steps, step):
    step(0)
    torch.cuda.synchronize()
    best, nxt = float("inf"), 1
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(steps):
            step(nxt)
            nxt += 1
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) * 1e3 / steps)
    return best


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=200)
    args = p.parse_args()
    dev = "cuda"
    print(f"params_peer on {torch.cuda.get_device_name()} (torch {torch.__version__}, eager)")
    n = 1 << 16
    x = torch.rand(n, device=dev)
    st = {"y": torch.zeros(n, device=dev)}

    def fixed(i):
        st["y"] = st["y"] * 0.99 + x * 0.5

    def changing(i):
        st["y"] = st["y"] * 0.99 + x * (0.5 + 1e-3 * i)

    gen = torch.Generator(device=dev)

    def fixed_seed(i):
        gen.manual_seed(7)
        st["y"] = st["y"] * 0.5 + torch.rand(n, device=dev, generator=gen)

    def new_seed(i):
        gen.manual_seed(7 + i)
        st["y"] = st["y"] * 0.5 + torch.rand(n, device=dev, generator=gen)

    f, c = per_step_ms(args.steps, fixed), per_step_ms(args.steps, changing)
    fs, ns = per_step_ms(args.steps, fixed_seed), per_step_ms(args.steps, new_seed)
    print(f"y = y*0.99 + x*alpha, 2^16 floats: {f:.4f} ms/step fixed, {c:.4f} ms/step changing")
    print(f"y = y*0.5 + rand(seed), 2^16 floats: {fs:.4f} ms/step fixed seed, {ns:.4f} ms/step new seed")
    a, b = torch.rand(1024, device=dev), torch.rand(1024, device=dev)
    out = {}

    def three_op(i):
        out["r"] = a * b + 1.0 - a

    us = 1e3 * per_step_ms(20000, three_op)
    print(f"a*b + 1 - a, 1024 floats, per evaluation (3 eager kernels): {us:.2f} us")
    big = torch.rand(1024 + 6 * args.steps + 8, 256, device=dev)

    def fixed_rows(i):
        out["r"] = torch.softmax(big[:1024], -1)

    def new_rows(i):
        out["r"] = torch.softmax(big[: 1024 + i], -1)

    fr, nr = per_step_ms(args.steps, fixed_rows), per_step_ms(args.steps, new_rows)
    print(f"softmax of B x 256 floats: {fr:.4f} ms/step with B = 1024, {nr:.4f} ms/step with a new B each step")


if __name__ == "__main__":
    main()
