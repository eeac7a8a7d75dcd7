#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_stencil's rows in NumPy (--numpy, the host) or PyTorch eager (CUDA, or --cpu), timed
the same way: wall clock of the whole loop and a synchronize, median of 15 runs (1-D) or 3
(2-D) after a warm-up run. The peer has no laziness: "realized at the end" and "every step" are
the same code; the 2-D rows use pad (np.pad / F.pad) and slice assignment, each the library's
own idiom. Prints lines "name  T ms" in bench_stencil's order, for bench/print_ratios.py.

    python3 bench/stencil_peer.py [--numpy | --cpu] [--steps2d 200]
"""
import statistics
import sys
import time


def median_ms(f, sync, runs):
    f()
    sync()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        sync()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def main():
    steps2d = int(sys.argv[sys.argv.index("--steps2d") + 1]) if "--steps2d" in sys.argv else 200
    c = 0.1
    if "--numpy" in sys.argv:
        import numpy as np
        sync = lambda: None
        name = f"NumPy {np.__version__}"
        u1 = np.random.rand(1 << 16).astype(np.float32)
        u0 = np.random.rand(2048, 2048).astype(np.float32)

        def step_1d(u):
            return np.pad(u[:-2] + u[2:], 1)

        def heat_pad(u):
            center = u[1:-1, 1:-1]
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - np.float32(4) * center
            return u + np.pad(np.float32(c) * lap, 1)

        def heat_assign(u, v):
            center = u[1:-1, 1:-1]
            v[1:-1, 1:-1] = center + np.float32(c) * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - np.float32(4) * center)

        copy = np.copy
        total = lambda u: float(u.sum())
    else:
        import torch
        import torch.nn.functional as F
        device = "cpu" if "--cpu" in sys.argv else "cuda"
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        name = f"PyTorch {torch.__version__} on " + (torch.cuda.get_device_name() if device == "cuda" else "the CPU")
        u1 = torch.rand(1 << 16, device=device)
        u0 = torch.rand(2048, 2048, device=device)

        def step_1d(u):
            return F.pad(u[:-2] + u[2:], (1, 1))

        def heat_pad(u):
            center = u[1:-1, 1:-1]
            lap = u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * center
            return u + F.pad(c * lap, (1, 1, 1, 1))

        def heat_assign(u, v):
            center = u[1:-1, 1:-1]
            v[1:-1, 1:-1] = center + c * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:] - 4 * center)

        copy = torch.clone
        total = lambda u: float(u.sum())

    print(f"stencil_peer on {name}")

    def run_1d(k):
        u = u1
        for _ in range(k):
            u = step_1d(u)
        return total(u)

    def run_pad():
        u = u0
        for _ in range(steps2d):
            u = heat_pad(u)
        return total(u)

    def run_assign():
        u, v = copy(u0), copy(u0)
        for _ in range(steps2d):
            heat_assign(u, v)
            u, v = v, u
        return total(u)

    l10 = median_ms(lambda: run_1d(10), sync, 15)
    l40 = median_ms(lambda: run_1d(40), sync, 15)
    print(f"1-D stencil 2^16, 10 steps, realized at the end  {l10:.3f} ms")
    print(f"1-D stencil 2^16, 40 steps, realized at the end  {l40:.3f} ms")
    print(f"1-D stencil 2^16, 40 steps, realized every step  {l40:.3f} ms")
    pad = median_ms(run_pad, sync, 3)
    assign = median_ms(run_assign, sync, 3)
    print(f"heat 2048^2, {steps2d} steps, pad, realized at the end  {pad:.3f} ms")
    print(f"heat 2048^2, {steps2d} steps, pad, realized every step  {pad:.3f} ms")
    print(f"heat 2048^2, {steps2d} steps, assign into the interior  {assign:.3f} ms")


if __name__ == "__main__":
    main()
