// SPDX-License-Identifier: MIT
// Scans (issue 18's targets): cumsum along the rows and along the columns of an 8192 x 8192
// float matrix and over 2^26 floats, beside a copy of the same matrix (the memory-speed floor:
// one read and one write, as a scan makes). Each timing is the wall clock of a realize and a
// synchronize, median of 15 after a warm-up, on an input already realized on the device.
// bench/scan_peer.py times PyTorch the same way; bench/run_scan_gpu.sh runs both and prints
// the ratios. On the host the sizes are 4096 x 4096 and 2^24. The last lines time a scan with
// an element-wise producer and consumer (one item on OpenCL), and an int32 operand; on OpenCL
// they are timed again with fusion off.
//
//   bench_scan [--device host|opencl:N] [--quick]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <lazytensor.hpp>
#if LAZYTENSOR_OPENCL  // fusion turned off for the A/B lines
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#endif
#include <lazytensor/backend/opencl/opencl_backend.hpp>
#endif
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
        if (info.device == d) std::printf("bench_scan on %s (%s)\n", d.str().c_str(), info.name.c_str());
    const bool host = d == lt::Device::host();
    const std::int64_t side = quick ? 1024 : host ? 4096 : 8192, n = quick ? 1 << 20 : host ? 1 << 24 : 1 << 26;
    const lt::Tensor<float> m = lt::rand<float>({side, side}, 1, d).realize();
    const lt::Tensor<float> x = lt::rand<float>({n}, 2, d).realize();
    lt::Tensor<float> y;
    auto line = [&](const std::string& name, double ms) { std::printf("%-52s %9.3f ms\n", name.c_str(), ms); };
    const std::string matrix = std::to_string(side) + "x" + std::to_string(side);
    line("copy, " + matrix + " floats", median_ms(d, [&] { y = (m * 1.0f).realize(); }));
    line("cumsum along rows, " + matrix + " floats", median_ms(d, [&] { y = m.cumsum(1).realize(); }));
    line("cumsum along columns, " + matrix + " floats", median_ms(d, [&] { y = m.cumsum(0).realize(); }));
    line("cumsum 1-D, " + std::to_string(n) + " floats", median_ms(d, [&] { y = x.cumsum(0).realize(); }));
    line("cumprod along rows, " + matrix + " floats", median_ms(d, [&] { y = m.cumprod(1).realize(); }));
    // A producer and a consumer around the scan (on OpenCL one item: they run in its loads and
    // stores), and a cast in its loads.
    const lt::Tensor<std::int32_t> mi = lt::cast<std::int32_t>(m * 100.0f).realize();
    lt::Tensor<std::int64_t> yi;
    auto fused_rows = [&] {
        line("exp(cumsum(m * 0.01, 1)), " + matrix + " floats", median_ms(d, [&] { y = lt::exp(lt::cumsum(m * 0.01f, 1)).realize(); }));
        line("cumsum(m * 0.01, 1), " + matrix + " floats", median_ms(d, [&] { y = lt::cumsum(m * 0.01f, 1).realize(); }));
        line("exp(cumsum(m, 1)), " + matrix + " floats", median_ms(d, [&] { y = lt::exp(lt::cumsum(m, 1)).realize(); }));
        line("exp(cumsum(m * 0.01, 0)), " + matrix + " floats", median_ms(d, [&] { y = lt::exp(lt::cumsum(m * 0.01f, 0)).realize(); }));
        line("cumsum along rows, " + matrix + " int32 -> int64", median_ms(d, [&] { yi = mi.cumsum(1).realize(); }));
    };
    fused_rows();
#if LAZYTENSOR_OPENCL
    if (d.kind == lt::Device::Kind::OpenCL) {  // the same, each kernel on its own (not compared with the peer)
        std::printf("the last five with fusion off (LAZYTENSOR_GEMM_EPILOGUE=0):\n");
        lt::detail::opencl::opencl_backend(d.index).set_fuse_epilogues(false);
        fused_rows();
        lt::detail::opencl::opencl_backend(d.index).set_fuse_epilogues(true);
    }
#endif
}
