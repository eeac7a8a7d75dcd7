// SPDX-License-Identifier: MIT
// Lists the devices this build can run on and runs the same expression on each: the data is
// moved there with .to(device), the expression is compiled for it (a fused host kernel or a
// generated OpenCL C kernel), and the result is read back and compared with the host's.
//
//   ./devices [elements]
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <lazytensor.hpp>
#include <vector>

namespace lt = lazytensor;

namespace {
double ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}
}  // namespace

int main(int argc, char** argv) {
    const std::int64_t n = argc > 1 ? std::atoll(argv[1]) : std::int64_t(1) << 22;
    const std::vector<lt::DeviceInfo> devices = lt::devices();
    std::printf("lazytensor %s: %zu device(s)\n", lt::version(), devices.size());
    for (const lt::DeviceInfo& d : devices) std::printf("  %s: %s [%s]\n", d.device.str().c_str(), d.name.c_str(), d.kind.c_str());

    // The input, made on the host from counter-based random numbers (the same on every device).
    const lt::Tensor<float> x_host = lt::randn<float>({n}, /*seed=*/3, lt::Device::host());
    x_host.realize();
    double host_value = 0;
    bool all_match = true;
    for (const lt::DeviceInfo& d : devices) {
        lt::Tensor<float> x = x_host.to(d.device);
        lt::synchronize(d.device);
        // One fused kernel: the element-wise chain feeds the sum directly. Each call builds the
        // expression anew (a realized tensor keeps its value, so reusing one would time nothing).
        auto compute = [&x] { return lt::sum(lt::tanh(x) * 0.5f + lt::sqrt(lt::abs(x)) - lt::sigmoid(x * x)).item(); };

        auto start = std::chrono::steady_clock::now();
        const float first = compute();  // schedules, compiles, runs, reads the result back
        const double first_ms = ms_since(start);
        const int repeats = 20;
        start = std::chrono::steady_clock::now();
        float value = 0;
        for (int r = 0; r < repeats; ++r) value = compute();  // the cached plan and kernel
        const double warm_ms = ms_since(start) / repeats;

        if (d.device == lt::Device::host()) host_value = value;
        const double relative = std::fabs(value - host_value) / std::fabs(host_value);
        const bool match = value == first && relative < 1e-4;
        all_match = all_match && match;
        std::printf("%s: sum = %.6g; first run %.1f ms (including any compile), then %.3f ms per run, %.1f GB/s; "
                    "matches the host: %s\n",
                    d.device.str().c_str(), value, first_ms, warm_ms, double(n) * sizeof(float) / (warm_ms * 1e6),
                    match ? "yes" : "no");
    }
    return all_match ? 0 : 1;
}
