#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""numpy.fft on bench_fft_host's lines, timed the same way: wall clock of one call, median of 15
after a warm-up call, on the same shapes and dtypes (complex64 / float32 inputs, then
complex128 / float64). NumPy 1.24 (Debian 12) runs pocketfft's C code on one thread and
computes in double whatever the input: a complex64 input is converted to complex128 and the
result is complex128.

    /usr/bin/python3 bench/fft_peer.py
"""
import statistics
import time

import numpy as np


def median_ms(f, runs=15):
    f()
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def line(name, ms):
    print(f"{name:<52} {ms:10.3f} ms")


def run(cdtype, rdtype, cname, rname, rng):
    def rand_complex(*shape):
        return (rng.random(shape) + 1j * rng.random(shape)).astype(cdtype)

    x = rand_complex(1 << 20)
    line(f"c2c 1-D 2^20 {cname}", median_ms(lambda: np.fft.fft(x)))
    r = rng.random((1024, 1024)).astype(rdtype)
    line(f"rfft2 1024x1024 {rname}", median_ms(lambda: np.fft.rfft2(r)))
    b = rand_complex(1024, 1024)
    line(f"batched 1024 x c2c 1024 {cname}", median_ms(lambda: np.fft.fft(b, axis=-1)))
    p = rand_complex(100003)
    line(f"c2c 1-D prime 100003 {cname}", median_ms(lambda: np.fft.fft(p)))
    t = rand_complex(3 ** 12)
    line(f"c2c 1-D 3^12 {cname}", median_ms(lambda: np.fft.fft(t)))


def main():
    rng = np.random.default_rng(7)
    print(f"fft_peer: NumPy {np.__version__} (numpy.fft: pocketfft, one thread, computes in double)")
    run(np.complex64, np.float32, "complex64", "float32", rng)
    run(np.complex128, np.float64, "complex128", "float64", rng)


if __name__ == "__main__":
    main()
