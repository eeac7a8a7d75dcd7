// SPDX-License-Identifier: MIT
// Does a realize leave the calling thread slow for scalar libm code? On Intel CPUs, code that
// leaves the upper halves of the AVX registers dirty (no vzeroupper) makes later SSE code, such
// as glibc's tanh, pay a state transition on every instruction (issue: 25x slower after a
// realize). Times 2M calls of std::tanh on the calling thread before anything, after each kind
// of realize, and after an explicit vzeroupper; prints each against the first.
//
//   bench_scalar_after_realize [--devices host,opencl:0]
#include <lazytensor.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>
#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace lt = lazytensor;

namespace {

/// Median time (ns per call) of 2M std::tanh calls on this thread, of 5 runs.
double tanh_ns() {
    constexpr int kCalls = 2'000'000;
    std::vector<double> runs;
    volatile double sink = 0;
    for (int r = 0; r < 5; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        double x = 0.1, acc = 0;
        for (int i = 0; i < kCalls; ++i) {
            acc += std::tanh(x);
            x += 1e-7;
        }
        sink = sink + acc;
        runs.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kCalls);
    }
    std::sort(runs.begin(), runs.end());
    return runs[runs.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<lt::Device> devices{lt::Device::host()};
    if (argc == 3 && std::strcmp(argv[1], "--devices") == 0) {
        devices.clear();
        std::string list = argv[2];
        for (std::size_t at = 0; at <= list.size();) {
            const std::size_t comma = std::min(list.find(',', at), list.size());
            devices.push_back(lt::detail::parse_device(list.substr(at, comma - at)));
            at = comma + 1;
        }
    }
    const double base = tanh_ns();
    std::printf("%-58s %8.2f ns/call\n", "std::tanh before any realize", base);
    auto report = [&](const std::string& what) {
        const double t = tanh_ns();
        std::printf("%-58s %8.2f ns/call  %5.2fx\n", what.c_str(), t, t / base);
    };
    for (lt::Device d : devices) {
        const std::string on = " on " + d.str();
        lt::Tensor<float> a = lt::rand<float>({1 << 20}, 1, d), b = lt::rand<float>({1 << 20}, 2, d);
        a.realize();
        b.realize();
        report("after creating two tensors" + on);
        (lt::exp(a) * b + a * 0.5f - lt::tanh(a)).realize();  // a compiled loop on the host
        report("after an element-wise float realize" + on);
        lt::cast<double>(a).sum().realize();  // interpreted: a reduction
        report("after a reduction" + on);
        lt::softmax(a.reshape({1024, 1024}), -1).realize();
        report("after a softmax" + on);
        lt::matmul(a.reshape({1024, 1024}), b.reshape({1024, 1024})).realize();
        report("after a matmul" + on);
        (lt::sin(a) + 1.0f).to_vector();
        report("after reading a result" + on);
    }
#if defined(__AVX__)
    _mm256_zeroupper();
    report("after an explicit vzeroupper");
#endif
}
