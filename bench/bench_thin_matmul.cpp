// SPDX-License-Identifier: MIT
// Thin matrix products (issue 54): matrix x vector, vector x matrix, a few columns, batched
// matrix-vector products and outer products, on one device. Each line: the wall clock of one
// realize and a synchronize (median of 15 after a warm-up, bench/median_ms.hpp), the rate in
// GFLOP/s (2 m n k per product) and in GB/s (operands read once, the result written once), and
// how the product runs (the schedule's items: "matmul (<routine>)" for the backend's GEMM,
// "kernel" for a reduction kernel).
//
//   bench_thin_matmul [--device host|opencl|opencl:N] [--small]
//
// --small divides the long extents by 10 (a smoke run).
#include <lazytensor.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "median_ms.hpp"

namespace lt = lazytensor;

namespace {

struct Case {
    std::string name;
    lt::Shape a, b;      // operand shapes
    bool a_transposed;   // a is the transpose of a tensor of the reversed shape (a strided view)
};

std::string how(const std::vector<lt::ScheduleItem>& items) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += " + ";
        out += lt::to_string(item.kind);
    }
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    lt::Device device = lt::Device::host();
    std::int64_t scale = 1;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--small")) scale = 10;
        else {
            std::fprintf(stderr, "usage: bench_thin_matmul [--device host|opencl|opencl:N] [--small]\n");
            return 2;
        }
    }
    const std::int64_t m = 100000 / scale;
    const std::vector<Case> cases = {
        {"matrix x vector [m,64] x [64]", {m, 64}, {64}, false},
        {"matrix x vector, A a transposed view", {m, 64}, {64}, true},
        {"vector x matrix [64] x [64,m]", {64}, {64, m}, false},
        {"matrix x [64,2]", {m, 64}, {64, 2}, false},
        {"matrix x [64,4]", {m, 64}, {64, 4}, false},
        {"matrix x [64,8]", {m, 64}, {64, 8}, false},
        {"matrix x [64,16]", {m, 64}, {64, 16}, false},
        {"matrix x [64,64]", {m, 64}, {64, 64}, false},
        {"batched [64,m/64,64] x [64,64,1]", {64, m / 64, 64}, {64, 64, 1}, false},
        {"outer product [2000,1] x [1,2000]", {2000, 1}, {1, 2000}, false},
        {"matrix x vector [1000,1000] x [1000]", {1000, 1000}, {1000}, false},
    };
    std::printf("device %s\n", device.str().c_str());
    std::printf("%-40s %10s %10s %10s  %s\n", "case", "ms", "GFLOP/s", "GB/s", "runs as");
    for (const Case& c : cases) {
        lt::Shape stored = c.a;
        if (c.a_transposed) std::swap(stored[0], stored[1]);
        auto a_base = lt::rand<float>(stored, 1, device);
        auto b = lt::rand<float>(c.b, 2, device);
        a_base.realize();
        b.realize();
        const lt::Tensor<float> a = c.a_transposed ? lt::Tensor<float>(a_base.t()) : a_base;
        auto product = [&] { return lt::matmul(a, b); };
        const auto items = lt::schedule(product());
        const lt::Shape out = product().shape();
        const std::int64_t k = c.a.back();
        const double flops = 2.0 * double(lt::numel(out)) * double(k);
        const double bytes = 4.0 * double(lt::numel(c.a) + lt::numel(c.b) + lt::numel(out));
        const double ms = median_ms(device, [&] { product().realize(); });
        std::printf("%-40s %10.3f %10.2f %10.2f  %s\n", c.name.c_str(), ms, flops / ms / 1e6, bytes / ms / 1e6,
                    how(items).c_str());
        std::fflush(stdout);
    }
    return 0;
}
