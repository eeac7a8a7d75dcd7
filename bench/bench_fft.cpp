// SPDX-License-Identifier: MIT
// lt::fft through the whole library (graph, schedule, a fresh result buffer per call) on issue
// 48's shapes, on any device. Each line is "name  T ms": the median of 15 realizes after a
// warm-up (bench/median_ms.hpp: wall clock and a synchronize of the device), inputs realized on
// the device first (complex ones as interleaved pairs, as lt::tensor of std::complex makes them).
// bench/fft_peer.py (numpy.fft) prints the host lines, bench/fft_torch_peer.py (torch.fft, cuFFT)
// the GPU ones; bench/print_ratios.py divides them.
//
//   bench_fft [device] [--gpu]     device: host (default) or opencl:N; threads: LAZYTENSOR_THREADS
//   host shapes: c2c 1-D 2^20, rfft2 1024x1024, batched 1024 x c2c 1024, c2c prime 100003, 3^12
//   --gpu shapes: c2c 1-D 2^24, rfft2 4096x4096, batched 16384 x c2c 1024 (complex64 / float32)
#include <lazytensor.hpp>

#include <complex>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "median_ms.hpp"

namespace lt = lazytensor;

template <class T>
static lt::Tensor<std::complex<T>> random_complex(const lt::Shape& shape, lt::Device d) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<T> u(0, 1);
    std::vector<std::complex<T>> v(static_cast<std::size_t>(lt::numel(shape)));
    for (auto& c : v) c = {u(gen), u(gen)};
    return lt::tensor<std::complex<T>>(v, shape, d);
}

template <class T>
static lt::Tensor<T> random_real(const lt::Shape& shape, lt::Device d) {
    return lt::rand<T>(shape, 7, d).realize();
}

static void line(const std::string& name, double ms) { std::printf("%-52s %10.3f ms\n", name.c_str(), ms); }

/// The time of realizing z (a lazy transform, rebuilt by make() on every call).
template <class F>
static double time_of(lt::Device d, F&& make) {
    return median_ms(d, [&] { make().realize(); });
}

template <class T>
static void host_shapes(lt::Device d, const char* cname, const char* rname) {
    const auto x = random_complex<T>({1 << 20}, d);
    line(std::string("c2c 1-D 2^20 ") + cname, time_of(d, [&] { return lt::fft::fft(x); }));
    const auto r = random_real<T>({1024, 1024}, d);
    line(std::string("rfft2 1024x1024 ") + rname, time_of(d, [&] { return lt::fft::rfft2(r); }));
    const auto b = random_complex<T>({1024, 1024}, d);
    line(std::string("batched 1024 x c2c 1024 ") + cname, time_of(d, [&] { return lt::fft::fft(b); }));
    const auto p = random_complex<T>({100003}, d);
    line(std::string("c2c 1-D prime 100003 ") + cname, time_of(d, [&] { return lt::fft::fft(p); }));
    const auto t = random_complex<T>({531441}, d);
    line(std::string("c2c 1-D 3^12 ") + cname, time_of(d, [&] { return lt::fft::fft(t); }));
}

static void gpu_shapes(lt::Device d) {
    const auto x = random_complex<float>({1 << 24}, d);
    line("c2c 1-D 2^24 complex64", time_of(d, [&] { return lt::fft::fft(x); }));
    const auto r = random_real<float>({4096, 4096}, d);
    line("rfft2 4096x4096 float32", time_of(d, [&] { return lt::fft::rfft2(r); }));
    const auto b = random_complex<float>({16384, 1024}, d);
    line("batched 16384 x c2c 1024 complex64", time_of(d, [&] { return lt::fft::fft(b); }));
}

int main(int argc, char** argv) {
    lt::Device d = lt::Device::host();
    bool gpu = false;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--gpu") == 0) gpu = true;
        else d = lt::detail::parse_device(argv[i]);
    }
    std::printf("bench_fft on %s (%d host threads)\n", d.str().c_str(), lt::num_threads());
    if (gpu) {
        gpu_shapes(d);
    } else {
        host_shapes<float>(d, "complex64", "float32");
        host_shapes<double>(d, "complex128", "float64");
    }
}
