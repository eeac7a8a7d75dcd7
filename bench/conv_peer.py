#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch running bench_conv's layers, timed the same way: wall clock of one call and a
synchronize, median of 15 after a warm-up call, inputs already on the device (cuDNN with TF32
off, cudnn.benchmark on; or the CPU with --cpu, on --threads N). The backward line computes the
input's and the weight's gradients from a given output gradient (torch.autograd.grad).

    python3 bench/conv_peer.py [--batch B] [--cpu] [--threads N] [--quick]
"""
import statistics
import sys
import time

import torch
import torch.nn.functional as F


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


def arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    quick = "--quick" in sys.argv
    cpu = "--cpu" in sys.argv
    device = "cpu" if cpu else "cuda"
    batch = arg("--batch", 2 if quick else 8 if cpu else 32)
    if cpu:
        torch.set_num_threads(arg("--threads", torch.get_num_threads()))
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    sync = (lambda: None) if cpu else torch.cuda.synchronize
    name = f"CPU, {torch.get_num_threads()} threads" if cpu else torch.cuda.get_device_name()
    print(f"conv_peer on {name} (torch {torch.__version__}), batch {batch}")
    layers = [
        ("64->64 56x56 3x3", 64, 64, 56, 3, 1, 1), ("128->128 28x28 3x3", 128, 128, 28, 3, 1, 1),
        ("256->256 14x14 3x3", 256, 256, 14, 3, 1, 1), ("512->512 7x7 3x3", 512, 512, 7, 3, 1, 1),
        ("64->128 56x56 3x3 stride 2", 64, 128, 56, 3, 2, 1), ("1x1 64->256 56x56", 64, 256, 56, 1, 1, 1),
        ("depthwise 3x3 256 28x28", 256, 256, 28, 3, 1, 256),
    ]
    for label, cin, cout, size, k, stride, groups in layers:
        x = torch.randn(batch, cin, size, size, device=device, requires_grad=True)
        w = (torch.randn(cout, cin // groups, k, k, device=device) * 0.05).requires_grad_()
        pad = k // 2
        with torch.no_grad():
            y = F.conv2d(x, w, None, stride, pad, 1, groups)
        gy = torch.randn_like(y)

        def forward():
            with torch.no_grad():
                F.conv2d(x, w, None, stride, pad, 1, groups)

        def backward():
            out = F.conv2d(x, w, None, stride, pad, 1, groups)
            torch.autograd.grad(out, (x, w), gy)

        print(f"{'forward ' + label:<52} {median_ms(forward, sync):9.3f} ms")
        print(f"{'backward ' + label:<52} {median_ms(backward, sync):9.3f} ms")

    # bench_conv's training step: the same small CNN, eager PyTorch with autograd and SGD.
    images = 16 if quick else 256
    x = torch.rand(images, 1, 8, 8, device=device)
    labels = torch.randint(0, 10, (images,), device=device)
    params = [(torch.randn(8, 1, 3, 3, device=device) * 0.3), torch.zeros(8, device=device),
              (torch.randn(16, 8, 3, 3, device=device) * 0.1), torch.zeros(16, device=device),
              (torch.randn(64, 10, device=device) * 0.1), torch.zeros(10, device=device)]
    for p in params:
        p.requires_grad_()
    optimizer = torch.optim.SGD(params, lr=0.1)

    def step():
        h = F.max_pool2d(F.relu(F.conv2d(x, params[0], params[1], 1, 1)), 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, params[2], params[3], 1, 1)), 2)
        loss = F.cross_entropy(h.reshape(images, 64) @ params[4] + params[5], labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    print(f"{'train step, small CNN, batch ' + str(images):<52} {median_ms(step, sync):9.3f} ms")


if __name__ == "__main__":
    main()
