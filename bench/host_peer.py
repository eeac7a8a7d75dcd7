#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch (CPU) on bench_host's workloads, same sizes, best of N after a warm-up, on one thread
and on all cores. Prints lines "name  ms" in bench_host's row names, so that run_host.sh can put
them beside lazytensor's. Needs python3-torch (Debian: apt-get install python3-torch).

    python3 bench/host_peer.py [--quick]
"""
import os
import sys
import time

import torch


def best_ms(reps, f):
    f()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def main():
    quick = "--quick" in sys.argv
    reps = 3 if quick else 10
    g = torch.Generator().manual_seed(1)
    n = 1 << 24
    a, b, c = (torch.rand(n, generator=g) * 4 - 2 for _ in range(3))
    x = torch.rand(1 << 22, generator=g) * 4 - 2
    m = torch.rand(4096, 4096, generator=g) * 4 - 2
    small_a, small_b = torch.rand(1024, generator=g), torch.rand(1024, generator=g)
    rows = [
        ("chain exp(a)*b+c*0.5-tanh(a), 2^24", lambda: torch.exp(a) * b + c * 0.5 - torch.tanh(a)),
        ("sigmoid, 2^22", lambda: torch.sigmoid(x)),
        ("silu, 2^22", lambda: torch.nn.functional.silu(x)),
        ("gelu, 2^22", lambda: torch.nn.functional.gelu(x)),
        ("row sum 4096x4096", lambda: m.sum(1)),
        ("column sum 4096x4096", lambda: m.sum(0)),
        ("row softmax 4096x4096 (primitives)", lambda: torch.softmax(m, 1)),
        ("row max 4096x4096", lambda: m.amax(1)),
        ("argmax along rows 4096x4096", lambda: m.argmax(1)),
        ("layer_norm over rows 4096x4096", lambda: torch.nn.functional.layer_norm(m, (4096,))),
        ("cumsum along rows 4096x4096 (peer: a copy)", lambda: torch.cumsum(m, 1)),
    ]
    for threads in (1, os.cpu_count()):
        torch.set_num_threads(threads)
        print(f"# PyTorch {torch.__version__}, {threads} thread{'s' if threads > 1 else ''}")
        for name, f in rows:
            print(f"{name:<44} {best_ms(reps, f):10.3f} ms")
        iters = 2000 if quick else 20000

        def cached():
            for _ in range(iters):
                small_a * small_b + 1.0 - small_a

        print(f"{'cached 3-op expression, 1024 floats':<44} {best_ms(3, cached) * 1000.0 / iters:10.3f} us")


if __name__ == "__main__":
    main()
