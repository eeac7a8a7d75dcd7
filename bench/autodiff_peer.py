#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch (CUDA, eager) running bench_autodiff's workloads, timed the same way: wall clock of one
call and a synchronize, median of 15 after two warm-up calls, on inputs already on the device.

    python3 bench/autodiff_peer.py [--quick]
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def median_ms(f):
    for _ in range(2):
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
    batch, side = (1024, 1024) if quick else (8192, 8192)
    dev = "cuda"
    print(f"autodiff_peer on {torch.cuda.get_device_name()} (torch {torch.__version__})")
    sizes = [784, 512, 256, 10]
    params = []
    for l in range(3):
        params.append((torch.randn(sizes[l], sizes[l + 1], device=dev) * (2.0 / sizes[l]) ** 0.5).requires_grad_())
        params.append(torch.zeros(sizes[l + 1], device=dev, requires_grad=True))
    x = torch.rand(batch, sizes[0], device=dev)
    labels = torch.randint(0, 10, (batch,), device=dev)
    lr = 0.01

    def step():
        h = F.relu(x @ params[0] + params[1])
        h = F.relu(h @ params[2] + params[3])
        loss = F.cross_entropy(h @ params[4] + params[5], labels)
        grads = torch.autograd.grad(loss, params)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= lr * g
        return loss

    print(f"MLP 784-512-256-10 training step, batch {batch}                  {median_ms(step):9.3f} ms")

    n = batch
    w1, w2, w3 = (torch.rand(a, b, device=dev) for a, b in ((784, 512), (512, 256), (256, 10)))
    h1, h2, dz1, dz2, dz3 = (torch.rand(n, c, device=dev) for c in (512, 256, 512, 256, 10))
    products = [("x @ w1", x, w1), ("h1 @ w2", h1, w2), ("h2 @ w3", h2, w3), ("dz3 @ w3^T", dz3, w3.t()),
                ("dz2 @ w2^T", dz2, w2.t()), ("x^T @ dz1", x.t(), dz1), ("h1^T @ dz2", h1.t(), dz2), ("h2^T @ dz3", h2.t(), dz3)]
    for name, a, b in products:
        print(f"  product {name:<12} {a.shape[0]:5d} x {b.shape[1]:5d} x {a.shape[1]:5d}                    "
              f"{median_ms(lambda: a @ b):9.3f} ms")

    sx = torch.rand(side, side, device=dev, requires_grad=True)
    sy = torch.rand(side, side, device=dev)

    def forward():
        with torch.no_grad():
            return (torch.softmax(sx, 1) * sy).sum()

    graph = {}

    def build():
        graph["loss"] = (torch.softmax(sx, 1) * sy).sum()

    build()
    torch.cuda.synchronize()

    def backward():  # the backward alone, of a forward built once (its saved tensors reused)
        return torch.autograd.grad(graph["loss"], sx, retain_graph=True)

    def both():
        loss = (torch.softmax(sx, 1) * sy).sum()
        return torch.autograd.grad(loss, sx)

    print(f"softmax {side}x{side}: forward sum(softmax(x) * y)                {median_ms(forward):9.3f} ms")
    print(f"softmax {side}x{side}: its gradient alone                         {median_ms(backward):9.3f} ms")
    print(f"softmax {side}x{side}: forward and gradient in one realize        {median_ms(both):9.3f} ms")


if __name__ == "__main__":
    main()
