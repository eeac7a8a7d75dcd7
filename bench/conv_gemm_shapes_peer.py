#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cuBLAS (torch.mm, TF32 off) on the products a 3x3 convolution lowers to at batch 32 (W [c, 9c] @
im2col columns [9c, 32 hw^2], and the transposed form), beside cuDNN's own conv2d (benchmark mode):
whether the forward gap of issue 46 is the product or the convolution algorithm.

    python3 bench/conv_gemm_shapes_peer.py
"""
import torch, time, statistics
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
d = torch.device("cuda")
def t(f, runs=50):
    for _ in range(5): f()
    torch.cuda.synchronize()
    s = []
    for _ in range(runs):
        a = time.perf_counter(); f(); torch.cuda.synchronize(); s.append((time.perf_counter() - a) * 1e3)
    return statistics.median(s)
for (c, hw) in [(64, 56), (128, 28), (256, 14), (512, 7)]:
    n = 32 * hw * hw; k = c * 9
    W = torch.randn(c, k, device=d); X = torch.randn(k, n, device=d); Xt = X.t().contiguous()
    x = torch.randn(32, c, hw, hw, device=d); w = torch.randn(c, c, 3, 3, device=d)
    fl = 2 * c * n * k
    a = t(lambda: torch.mm(W, X)); b = t(lambda: torch.mm(Xt, W.t())); cv = t(lambda: torch.nn.functional.conv2d(x, w, padding=1))
    print(f"{c}ch {hw}x{hw}: cuBLAS W[{c},{k}] @ X[{k},{n}] {a:.3f} ms ({fl/a/1e9:.1f} TFLOP/s); X^T @ W^T {b:.3f} ms; cuDNN conv {cv:.3f} ms ({fl/cv/1e9:.1f} TFLOP/s)")
