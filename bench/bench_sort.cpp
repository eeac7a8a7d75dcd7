// SPDX-License-Identifier: MIT
// Sorting and selection (issue 21's targets): lt::sort of 2^24 floats and lt::topk(k = 8) over
// the rows of an 8192 x 8192 float matrix, plus argsort along rows. Each timing is the wall
// clock of one call, realizing what it returns (values and indices together: one sort item that
// stores both), and a synchronize, median of 15 after a warm-up call, on an input already
// realized on the device. bench/sort_peer.py times PyTorch the same
// way; bench/run_sort_gpu.sh runs both and prints the ratios.
//
//   bench_sort [--device host|opencl:N] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <lazytensor.hpp>
#include <string>
#include <vector>

#include "median_ms.hpp"

namespace lt = lazytensor;

int main(int argc, char** argv) {
    lt::Device d = lt::Device::host();
    bool quick = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) d = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--quick")) quick = true;
    }
    for (const auto& info : lt::devices())
        if (info.device == d) std::printf("bench_sort on %s (%s)\n", d.str().c_str(), info.name.c_str());
    const std::int64_t n = quick ? 1 << 20 : 1 << 24, side = quick ? 1024 : 8192;
    const lt::Tensor<float> x = lt::rand<float>({n}, 1, d).realize();
    const lt::Tensor<float> m = lt::rand<float>({side, side}, 2, d).realize();
    std::printf("sort 1-D, %lld floats (values and indices)             %9.3f ms\n", static_cast<long long>(n),
                median_ms(d, [&] {
                    auto [values, indices] = lt::sort(x);
                    lt::realize({values, indices});
                }));
    std::printf("topk k=8 along rows, %lldx%lld floats                  %9.3f ms\n", static_cast<long long>(side),
                static_cast<long long>(side), median_ms(d, [&] {
                    auto [values, indices] = lt::topk(m, 8);
                    lt::realize({values, indices});
                }));
    std::printf("argsort along rows, %lldx%lld floats                   %9.3f ms\n", static_cast<long long>(side),
                static_cast<long long>(side), median_ms(d, [&] { lt::argsort(m).realize(); }));
}
