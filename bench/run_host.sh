#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 17's host table: bench_host built header-only at -O3, -O2 and -O1 (the engine at the
# user's level), each on 1 thread and on 2, and PyTorch CPU on the same workloads
# (bench/host_peer.py, if python3-torch is installed). Prints per row: lazytensor at each level
# and thread count, Eigen (1 thread), PyTorch (1 thread and all cores), and the ratios the issue
# asks for: -O2 / -O3 and -O1 / -O3 (1 thread), 2 threads / 1 thread (-O3), and one thread of
# lazytensor against one thread of Eigen and of PyTorch (above 1: lazytensor faster).
#
#   bash bench/run_host.sh [build dir, default build] [--quick]
set -eo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
quick=${2:-}
cmake --build "$build" --target bench_host_O3 bench_host_O2 bench_host_O1 >/dev/null
out=$(mktemp -d)
for level in 3 2 1; do
    for threads in 1 2; do
        LAZYTENSOR_THREADS=$threads "$build/bench/bench_host_O$level" $quick >"$out/O$level-t$threads.txt"
    done
done
: >"$out/torch.txt"
for py in python3 /usr/bin/python3; do  # (Debian's python3-torch is in the system Python, not in a pyenv one)
    if "$py" -c "import torch" 2>/dev/null; then "$py" bench/host_peer.py $quick >"$out/torch.txt"; break; fi
done
head -n 1 "$out/O3-t1.txt"
date -u +"%Y-%m-%d %H:%M UTC"
python3 - "$out" <<'PY'
import re, sys, os
d = sys.argv[1]
row = re.compile(r"^(\S.{0,43}?)\s{2,}(-?[0-9.]+)\s+(-?[0-9.]+)")
def table(name):
    out = {}
    for line in open(os.path.join(d, name)):
        m = row.match(line)
        if m: out[m.group(1).strip()] = (float(m.group(2)), float(m.group(3)))
    return out
runs = {(l, t): table(f"O{l}-t{t}.txt") for l in (3, 2, 1) for t in (1, 2)}
torch = {}
threads = None
for line in open(os.path.join(d, "torch.txt")):
    if line.startswith("#"):
        threads = line.split(",")[1].split()[0]
        continue
    m = re.match(r"^(.*?)\s{2,}([0-9.]+) (ms|us)$", line.rstrip())
    if m: torch.setdefault(m.group(1).strip(), {})[threads] = float(m.group(2))
print("times in ms (the cached row: us per realize). O2/O3, O1/O3: time ratios, 1 thread (target O2/O3 <= 1.15);")
print("2t speedup: 1-thread time / 2-thread time at -O3 (target >= 1.7 where not memory-bound); vsEigen, vsTorch:")
print("their 1-thread time / lazytensor's 1-thread time at -O3 (target >= 1.0)")
print(f"{'benchmark':<40} {'O3 1t':>8} {'O3 2t':>8} {'O2 1t':>8} {'O1 1t':>8} {'Eigen1t':>8} {'torch1t':>8} {'torchN':>8} | {'O2/O3':>6} {'O1/O3':>6} {'2t speedup':>10} {'vsEigen':>7} {'vsTorch':>7}")
for name in runs[(3, 1)]:
    o31, o32, o21, o11 = (runs[k].get(name, (0, 0))[1] for k in ((3, 1), (3, 2), (2, 1), (1, 1)))
    eig = runs[(3, 1)][name][0]
    t = torch.get(name, {})
    t1 = t.get("1", float("nan"))
    tn = max((v for k, v in t.items() if k != "1"), default=float("nan"))
    print(f"{name[:40]:<40} {o31:8.3f} {o32:8.3f} {o21:8.3f} {o11:8.3f} {eig:8.3f} {t1:8.3f} {tn:8.3f} | "
          f"{o21 / o31:6.2f} {o11 / o31:6.2f} {o31 / o32:10.2f} {eig / o31:7.2f} {t1 / o31:7.2f}")
PY
