#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Puts lazytensor's and a peer's timings side by side: both files have lines "name  T ms" in
the same order. Prints lazytensor / peer per line and, with --target R, whether it is <= R; --peer NAME names
the peer (default PyTorch).

    python3 bench/print_ratios.py OURS.txt PEER.txt [--target R] [--peer NAME]
"""
import sys


def main():
    ours_file, peer_file = sys.argv[1], sys.argv[2]
    target = float(sys.argv[sys.argv.index("--target") + 1]) if "--target" in sys.argv else None
    peer_name = sys.argv[sys.argv.index("--peer") + 1] if "--peer" in sys.argv else "PyTorch"
    ours = [l for l in open(ours_file) if l.rstrip().endswith(" ms")]
    peer = [l for l in open(peer_file) if l.rstrip().endswith(" ms")]
    for a, b in zip(ours, peer):
        ta, tb = float(a.split()[-2]), float(b.split()[-2])
        line = f"{a.rsplit(maxsplit=2)[0]:<58} lazytensor {ta:8.3f} ms  {peer_name} {tb:8.3f} ms  ratio {ta / tb:5.2f}"
        if target is not None:
            line += f"  target <= {target:g}: {'ok' if ta <= target * tb else 'MISS'}"
        print(line)


if __name__ == "__main__":
    main()
