// SPDX-License-Identifier: MIT
// Estimates pi by throwing random points at the unit square and counting those inside the
// quarter circle. The random numbers are counter-based (Philox): each element's value depends
// only on the seed and its index, so the points are made inside the counting kernel itself
// (no memory for them) and the count is the same on every device and thread count.
//
//   ./monte_carlo_pi [points]        (LAZYTENSOR_DEVICE=opencl:0 runs it on an OpenCL device)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <lazytensor.hpp>

namespace lt = lazytensor;

int main(int argc, char** argv) {
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : std::int64_t(1) << 24;
    const lt::Device device = lt::default_device();

    // Two independent streams of uniform [0, 1) floats: same counters, different keys (seeds).
    lt::Tensor<float> x = lt::rand<float>({n}, /*seed=*/2026, device);
    lt::Tensor<float> y = lt::rand<float>({n}, /*seed=*/1111, device);
    // A bool per point, summed as int64: random numbers, the test and the count fuse into one
    // kernel that makes a single pass over the counters.
    lt::Tensor<std::int64_t> inside = lt::sum(x * x + y * y < 1.0f);
    std::printf("%lld points on %s, kernels: %zu\n", static_cast<long long>(n), device.str().c_str(),
                lt::kernel_count(lt::schedule(inside)));

    const auto start = std::chrono::steady_clock::now();
    const std::int64_t hits = inside.item();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

    // The count is binomial: the estimate's standard error is 4 sqrt(p (1 - p) / n).
    const double p = static_cast<double>(hits) / static_cast<double>(n);
    const double estimate = 4.0 * p;
    const double standard_error = 4.0 * std::sqrt(p * (1.0 - p) / static_cast<double>(n));
    const double error = estimate - 3.14159265358979323846;
    std::printf("inside the circle: %lld\n", static_cast<long long>(hits));
    std::printf("pi ~ %.6f, error %+.6f, standard error %.6f\n", estimate, error, standard_error);
    std::printf("within 4 standard errors: %s\n", std::fabs(error) <= 4 * standard_error ? "yes" : "no");
    std::printf("time: %.1f ms (first run: includes compiling the kernel)\n", ms);
    return std::fabs(error) <= 4 * standard_error ? 0 : 1;
}
