# SPDX-License-Identifier: MIT
# PyTorch's side of bench_cold_start's mlp child (issue 52): in this fresh process, the same
# phases of the 784-512-256-10 training step of batch 8192, eager, TF32 off. Run with
# NVIDIA's cache emptied or disabled, as the lazytensor children are.
import sys, time
t_import = time.perf_counter()
import torch
torch.backends.cuda.matmul.allow_tf32 = False
def ms(t0):
    return (time.perf_counter() - t0) * 1e3
dev = sys.argv[1] if len(sys.argv) > 1 else "cuda"
sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
import_ms = ms(t_import)
t0 = time.perf_counter()
torch.zeros(1, device=dev); sync()
setup = ms(t0)
sizes = [784, 512, 256, 10]
t0 = time.perf_counter()
g = torch.Generator(device=dev).manual_seed(1)
params = []
for l in range(3):
    w = (torch.randn(sizes[l], sizes[l + 1], device=dev, generator=g) * (2.0 / sizes[l]) ** 0.5).requires_grad_()
    params += [w, torch.zeros(sizes[l + 1], device=dev, requires_grad=True)]
x = torch.rand(8192, 784, device=dev, generator=g)
labels = torch.randint(0, 10, (8192,), device=dev, generator=g)
sync()
init = ms(t0)
def step():
    h = torch.relu(x @ params[0] + params[1])
    h = torch.relu(h @ params[2] + params[3])
    loss = torch.nn.functional.cross_entropy(h @ params[4] + params[5], labels)
    grads = torch.autograd.grad(loss, params)
    with torch.no_grad():
        for p, gr in zip(params, grads):
            p -= 0.01 * gr
    return loss
t0 = time.perf_counter(); step(); sync(); first = ms(t0)
for _ in range(19): step()
sync(); twenty = ms(t0)
t0 = time.perf_counter()
for _ in range(10): step()
sync(); later = ms(t0) / 10
print(f"RESULT torch import_ms={import_ms:.1f} setup_ms={setup:.1f} init_ms={init:.1f} first_ms={first:.1f} "
      f"twenty_ms={twenty:.1f} later_ms={later:.3f}")
