#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that includes under include/lazytensor/ run one way, down the layers:

    core <- ir <- simd <- autodiff <- schedule <- codegen <- backend <- items <- runtime <- frontend <- interop <- dist

A header may include headers of its own layer and of the layers before it, never of a layer
after it; include/lazytensor.hpp (the entry point) may include anything. The front end,
interop and dist (transports: MPI) know no backend: they include nothing under backend/, schedule/, codegen/ or items/.
Within a layer, the includes must not form a cycle, except through a trailing include: one
after all of a header's code (only preprocessor lines and comments follow it), which a header
uses to pull in the definitions of what it declared; the header is complete by then, so the
order cannot break. Prints every violation as "file:line: includes path (why)" and exits 1 if
there is one. Run by ctest (test check_layers).

    python3 tools/check_layers.py
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "include" / "lazytensor"
LAYERS = ["core", "ir", "simd", "autodiff", "schedule", "codegen", "backend", "items", "runtime", "frontend", "interop", "dist"]
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def layer_of(path):
    return path.relative_to(ROOT).parts[0]


BACKEND_BLIND = {"frontend", "interop", "dist"}
ENGINE_INSIDES = {"backend", "schedule", "codegen", "items"}


def is_code(line):
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("#", "//"))


def includes(path):
    """(line number, included header, whether the include is trailing) per include of ours."""
    lines = path.read_text().splitlines()
    last_code = max((i for i, line in enumerate(lines) if is_code(line)), default=-1)
    for index, line in enumerate(lines):
        m = INCLUDE_RE.match(line)
        if not m:
            continue
        target = (path.parent / m.group(1)).resolve()
        if target.is_file() and ROOT in target.parents:
            yield index + 1, target, index > last_code


def main():
    rank = {name: i for i, name in enumerate(LAYERS)}
    problems = []
    headers = sorted(p.resolve() for p in ROOT.rglob("*.hpp"))
    edges = {}
    for h in headers:
        layer = layer_of(h)
        if layer not in rank:
            problems.append(f"{h.relative_to(ROOT.parent)}: in no layer (known: {', '.join(LAYERS)})")
            continue
        for number, target, trailing in includes(h):
            to = layer_of(target)
            if to not in rank:
                continue
            where = f"{h.relative_to(ROOT.parent)}:{number}: includes {target.relative_to(ROOT.parent)}"
            if rank[to] > rank[layer]:
                problems.append(f"{where} (layer {to} is above layer {layer})")
            elif layer in BACKEND_BLIND and to in ENGINE_INSIDES:
                problems.append(f"{where} (the {layer} layer knows no backend: it reaches the engine through runtime/seam.hpp)")
            elif to == layer and not trailing:
                edges.setdefault(h, []).append(target)
    # Cycles within a layer (depth-first search, colours: 1 on the stack, 2 done).
    colour = {}

    def visit(node, stack):
        colour[node] = 1
        stack.append(node)
        for nxt in edges.get(node, []):
            if colour.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                problems.append("include cycle: " + " -> ".join(str(p.relative_to(ROOT.parent)) for p in cycle))
            elif not colour.get(nxt):
                visit(nxt, stack)
        stack.pop()
        colour[node] = 2

    for h in headers:
        if not colour.get(h):
            visit(h, [])
    for p in problems:
        print(p)
    if problems:
        print(f"check_layers: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_layers: {len(headers)} headers, includes run one way ({' <- '.join(LAYERS)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
