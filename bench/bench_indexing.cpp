// SPDX-License-Identifier: MIT
// Subscripts and the scatter beneath them (issue 50): a gather of rows by an index tensor,
// index_put with accumulate (a scatter-add), a mask write, masked_select, nonzero and unique.
// Each timing is the wall clock of one call realizing what it returns and a synchronize, median
// of 15 after a warm-up call, on inputs already realized on the device (median_ms.hpp).
// bench/indexing_peer.py times PyTorch the same way; bench/run_indexing_gpu.sh runs both.
//
//   bench_indexing [--device host|opencl:N] [--quick]
#include <cstdio>
#include <cstring>
#include <lazytensor.hpp>

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
        if (info.device == d) std::printf("bench_indexing on %s (%s)\n", d.str().c_str(), info.name.c_str());
    const std::int64_t rows = quick ? 1 << 16 : 1 << 20, n = quick ? 1 << 20 : 1 << 24, bins = 1 << 16;
    const lt::Tensor<float> table = lt::rand<float>({rows, 16}, 1, d).realize();
    const lt::Tensor<std::int64_t> idx = lt::randint<std::int64_t>(0, rows, {rows}, 2, d).realize();
    const lt::Tensor<std::int64_t> bin_idx = lt::randint<std::int64_t>(0, bins, {rows}, 3, d).realize();
    const lt::Tensor<float> values = lt::rand<float>({rows, 16}, 4, d).realize();
    const lt::Tensor<float> x = (lt::rand<float>({n}, 5, d) - 0.5f).realize();
    const lt::Tensor<bool> mask = (x > 0.0f).realize();
    const lt::Tensor<std::int32_t> small = lt::randint<std::int32_t>(0, 1000, {n / 4}, 6, d).realize();
    std::printf("gather rows x[idx], %lld x 16 floats                %9.3f ms\n", static_cast<long long>(rows),
                median_ms(d, [&] { table.index({idx}).realize(); }));
    lt::Tensor<float> acc = lt::zeros<float>({bins, 16}, d).realize();
    std::printf("index_put accumulate, %lld rows into %lld            %9.3f ms\n", static_cast<long long>(rows),
                static_cast<long long>(bins), median_ms(d, [&] { acc.index_put({bin_idx}, values, true); }));
    lt::Tensor<float> y = x.realize();
    std::printf("mask write x[x > 0] = 0, %lld floats                %9.3f ms\n", static_cast<long long>(n),
                median_ms(d, [&] {
                    y = lt::Tensor<float>(x * 1.0f).realize();
                    y.index_put({mask}, 0.0f);
                }));
    std::printf("masked_select, %lld floats                          %9.3f ms\n", static_cast<long long>(n),
                median_ms(d, [&] { lt::masked_select(x, mask).realize(); }));
    std::printf("nonzero, %lld bools                                 %9.3f ms\n", static_cast<long long>(n),
                median_ms(d, [&] { lt::nonzero(mask).realize(); }));
    std::printf("unique, %lld int32 in [0, 1000)                     %9.3f ms\n", static_cast<long long>(n / 4),
                median_ms(d, [&] { lt::unique(small).realize(); }));
}
