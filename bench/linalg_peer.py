#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""NumPy running bench_linalg's routines, timed the same way: wall clock of one call, median of
`runs` after a warm-up call, on the same kinds of matrices (M M^T / n + I, M uniform in [0, 1)).
Debian's NumPy calls the system LAPACK (liblapack.so.3: OpenBLAS's where it is installed), the
same that LAPACKE calls for lazytensor.

    /usr/bin/python3 bench/linalg_peer.py [--quick]
"""
import statistics
import sys
import time

import numpy as np


def median_ms(f, runs):
    f()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def spd(batch, n, rng):
    m = rng.random(batch + (n, n))
    return m @ np.swapaxes(m, -1, -2) / n + np.eye(n)


def line(name, ms):
    print(f"{name:<52} {ms:10.3f} ms")


def main():
    quick = "--quick" in sys.argv
    n, batch, runs = (256, 256, 3) if quick else (1024, 4096, 7)
    rng = np.random.default_rng(7)
    print(f"linalg_peer: NumPy {np.__version__}")
    a = spd((), n, rng)
    b = rng.random(n)
    line("cholesky 1024x1024 double", median_ms(lambda: np.linalg.cholesky(a), runs))
    line("solve 1024x1024 double, one right-hand side", median_ms(lambda: np.linalg.solve(a, b), runs))
    line("qr 1024x1024 double (Q and R)", median_ms(lambda: np.linalg.qr(a), runs))
    line("svd 1024x1024 double (U, S, Vh)", median_ms(lambda: np.linalg.svd(a), runs))
    line("eigh 1024x1024 double (eigenvalues and vectors)", median_ms(lambda: np.linalg.eigh(a), runs))
    small = spd((batch,), 32, rng)
    rhs = rng.random((batch, 32, 1))
    line("cholesky 4096 x (32x32) double", median_ms(lambda: np.linalg.cholesky(small), runs))
    line("solve 4096 x (32x32) double, one right-hand side", median_ms(lambda: np.linalg.solve(small, rhs), runs))


if __name__ == "__main__":
    main()
