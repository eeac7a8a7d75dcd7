// SPDX-License-Identifier: MIT
// The host FFT engine (backend/host/fft.hpp) on issue 48's host shapes, called directly (no
// graph): c2c 1-D 2^20, rfft2 of 1024 x 1024 (r2c along rows, then c2c along columns), 1024
// batched c2c of 1024, a prime length (100003, Bluestein) and 3^12; complex64 / float32 (the
// issue's target) and complex128 / float64 (the precision NumPy 1.24 computes in). Each line is
// "name  T ms", the median of 15 calls after a warm-up (bench/median_ms.hpp's method, without
// its device synchronize: these calls return when done). bench/fft_peer.py times numpy.fft on
// the same lines; bench/run_fft_host.sh runs both and prints the ratios.
//
//   bench_fft_host [threads]      (default: LAZYTENSOR_THREADS, else 1)
#include <lazytensor/backend/host/fft.hpp>

#include <algorithm>
#include <chrono>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <random>
#include <vector>

namespace fft = lazytensor::detail::host::fft;
using lazytensor::detail::host::ThreadPool;
using Index = std::int64_t;

static double median_ms(const std::function<void()>& f, int runs = 15) {
    using Clock = std::chrono::steady_clock;
    f();
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

static void line(const char* name, double ms) { std::printf("%-52s %10.3f ms\n", name, ms); }

template <class T>
static std::vector<std::complex<T>> random_complex(Index n) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<T> d(0, 1);
    std::vector<std::complex<T>> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = {d(gen), d(gen)};
    return x;
}

template <class T>
static void run(const char* cname, const char* rname, ThreadPool* pool) {
    char name[128];
    const auto fwd = fft::Direction::forward;
    {
        const Index n = Index(1) << 20;
        auto x = random_complex<T>(n);
        std::vector<std::complex<T>> y(x.size());
        std::snprintf(name, sizeof name, "c2c 1-D 2^20 %s", cname);
        line(name, median_ms([&] { fft::c2c<T>(x.data(), 1, n, y.data(), 1, n, n, 1, fwd, T(1), pool); }));
    }
    {
        std::mt19937 gen(7);
        std::uniform_real_distribution<T> d(0, 1);
        std::vector<T> x(1024 * 1024);
        for (auto& v : x) v = d(gen);
        std::vector<std::complex<T>> y(1024 * 513);
        const fft::Layout real{{1024, 1024}, {1024, 1}}, half{{1024, 513}, {513, 1}};
        std::snprintf(name, sizeof name, "rfft2 1024x1024 %s", rname);
        line(name, median_ms([&] { fft::r2c_axes<T>(x.data(), real, y.data(), half, {0, 1}, T(1), pool); }));
    }
    {
        auto x = random_complex<T>(1024 * 1024);
        std::vector<std::complex<T>> y(x.size());
        std::snprintf(name, sizeof name, "batched 1024 x c2c 1024 %s", cname);
        line(name, median_ms([&] { fft::c2c<T>(x.data(), 1, 1024, y.data(), 1, 1024, 1024, 1024, fwd, T(1), pool); }));
    }
    for (Index n : {Index(100003), Index(531441)}) {
        auto x = random_complex<T>(n);
        std::vector<std::complex<T>> y(x.size());
        std::snprintf(name, sizeof name, "c2c 1-D %s %s", n == 100003 ? "prime 100003" : "3^12", cname);
        line(name, median_ms([&] { fft::c2c<T>(x.data(), 1, n, y.data(), 1, n, n, 1, fwd, T(1), pool); }));
    }
}

int main(int argc, char** argv) {
    int threads = 1;
    if (const char* env = std::getenv("LAZYTENSOR_THREADS")) threads = std::atoi(env);
    if (argc > 1) threads = std::atoi(argv[1]);
    std::unique_ptr<ThreadPool> pool;
    if (threads > 1) pool = std::make_unique<ThreadPool>(threads);
    std::printf("bench_fft_host: %d thread%s, xsimd %s\n", threads, threads > 1 ? "s" : "",
                lazytensor::detail::host::simd_arch::name());
    run<float>("complex64", "float32", pool.get());
    run<double>("complex128", "float64", pool.get());
}
