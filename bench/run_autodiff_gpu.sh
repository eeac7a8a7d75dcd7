#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 19's GPU targets on the device machine: builds the nn-area tests (autodiff included),
# train_mlp and bench_autodiff, runs the tests and the example on opencl:0, then bench_autodiff
# and its PyTorch peer, and prints lazytensor / PyTorch per line. Run from the repository root.
#
#   bash bench/run_autodiff_gpu.sh
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 300 /tmp/b/tests/test_nn 2>&1 | tail -n 4 | tee "$OUT/tests.txt"
LAZYTENSOR_DEVICE=opencl:0 timeout 120 /tmp/b/examples/train_mlp 2>&1 | tail -n 4 | tee "$OUT/train_mlp.txt"
/tmp/b/bench/bench_autodiff --device opencl:0 | tee "$OUT/bench_autodiff.txt"
python3 bench/autodiff_peer.py | tee "$OUT/autodiff_peer.txt"
python3 - "$OUT/bench_autodiff.txt" "$OUT/autodiff_peer.txt" <<'PY' | tee "$OUT/ratios.txt"
import sys
ours = [l for l in open(sys.argv[1]) if l.rstrip().endswith(" ms")]
peer = [l for l in open(sys.argv[2]) if l.rstrip().endswith(" ms")]
ratios = {}
for a, b in zip(ours, peer):
    ta, tb = float(a.split()[-2]), float(b.split()[-2])
    name = a.rsplit(maxsplit=2)[0].strip()
    ratios[name] = ta / tb
    print(f"{name:<62} lazytensor {ta:9.3f} ms  PyTorch {tb:9.3f} ms  ratio {ta / tb:5.2f}")
step = [v for k, v in ratios.items() if "training step" in k]
fwd = [v for k, v in ratios.items() if "forward sum" in k]
bwd = [v for k, v in ratios.items() if "gradient alone" in k]
if step:
    print(f"training step: {step[0]:.2f} x PyTorch (target <= 1.5): {'ok' if step[0] <= 1.5 else 'MISS'}")
if fwd and bwd:
    print(f"softmax gradient's ratio {bwd[0]:.2f} vs the forward's {fwd[0]:.2f}: {bwd[0] / fwd[0]:.2f} (target <= 1.3): "
          f"{'ok' if bwd[0] <= 1.3 * fwd[0] else 'MISS'}")
PY
