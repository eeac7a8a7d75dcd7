// SPDX-License-Identifier: MIT
// Experiment behind bench/README's first-realize note (not built by CMake): does an OpenCL
// driver build programs in parallel, from threads on one context or on contexts of their own?
// Builds the sources of 16 new lazytensor kernels with raw OpenCL calls and prints the times.
//
//   g++ -std=c++17 -O1 -Iinclude -DLAZYTENSOR_OPENCL=1 bench/build_experiment.cpp -lOpenCL -lpthread
//   LAZYTENSOR_CACHE_DIR=off ./a.out
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#include <lazytensor/runtime/plan.hpp>
#endif
#include <chrono>
#include <cstdio>
#include <thread>
namespace lt = lazytensor;
using Clock = std::chrono::steady_clock;
static double ms(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

int main() {
    auto& be = lt::detail::opencl::opencl_backend(0);
    std::vector<std::string> srcs;
    for (int trial = 0; trial < 4; ++trial) {
        const std::int64_t n = 3000 + 29 * trial + (Clock::now().time_since_epoch().count() % 1000);
        lt::Tensor<float> v = lt::rand<float>({8, n}, 5, lt::Device::opencl(0));
        v.realize();
        lt::Tensor<float> k0 = lt::exp(v * 2.0f).sum(1), k1 = lt::tanh(v + 1.0f).max(0), k2 = (v * v - 3.0f).min(1),
                          k3 = lt::sqrt(v * v + 2.0f) * 0.5f;
        std::vector<lt::detail::Node*> nodes{k0.node_ptr().get(), k1.node_ptr().get(), k2.node_ptr().get(), k3.node_ptr().get()};
        auto w = lt::detail::walk_graph(nodes);
        auto plan = lt::detail::make_plan(w);
        for (auto& it : plan.items)
            if (const lt::detail::ir::Kernel* kernel = it.own_kernel())
                srcs.push_back(lt::detail::opencl::render(*kernel, be.traits()).source);
    }
    std::printf("%zu sources\n", srcs.size());
    cl_device_id dev = be.device_id();
    auto build = [&](cl_context ctx, const std::string& s) {
        const char* t = s.c_str();
        cl_int err;
        cl_program p = clCreateProgramWithSource(ctx, 1, &t, nullptr, &err);
        err = clBuildProgram(p, 1, &dev, be.build_options().c_str(), nullptr, nullptr);
        if (err) std::printf("build error %d\n", err);
        return p;
    };
    std::vector<cl_context> ctx(4);
    for (auto& c : ctx) { cl_int e; c = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &e); }
    // (a) one program alone, (b) 4 one after another, (c) 4 threads one context, (d) 4 threads 4 contexts
    auto t0 = Clock::now(); build(ctx[0], srcs[0]); std::printf("one: %.1f ms\n", ms(t0));
    t0 = Clock::now(); for (int i = 1; i < 5; ++i) build(ctx[0], srcs[i]); std::printf("4 serial: %.1f ms\n", ms(t0));
    t0 = Clock::now();
    { std::vector<std::thread> th; for (int i = 5; i < 9; ++i) th.emplace_back([&, i] { build(ctx[0], srcs[i]); }); for (auto& x : th) x.join(); }
    std::printf("4 threads, one context: %.1f ms\n", ms(t0));
    t0 = Clock::now();
    std::vector<cl_program> ps(4);
    { std::vector<std::thread> th; for (int i = 0; i < 4; ++i) th.emplace_back([&, i] { ps[i] = build(ctx[i], srcs[9 + i]); }); for (auto& x : th) x.join(); }
    std::printf("4 threads, 4 contexts: %.1f ms\n", ms(t0));
    // binaries from the other contexts loaded into context 0
    t0 = Clock::now();
    for (int i = 0; i < 4; ++i) {
        size_t sz; clGetProgramInfo(ps[i], CL_PROGRAM_BINARY_SIZES, sizeof sz, &sz, nullptr);
        std::vector<unsigned char> bin(sz); unsigned char* b = bin.data();
        clGetProgramInfo(ps[i], CL_PROGRAM_BINARIES, sizeof b, &b, nullptr);
        const unsigned char* cb = bin.data(); cl_int st, e;
        cl_program q = clCreateProgramWithBinary(ctx[0], 1, &dev, &sz, &cb, &st, &e);
        clBuildProgram(q, 1, &dev, be.build_options().c_str(), nullptr, nullptr);
        cl_kernel k = clCreateKernel(q, "lt_kernel", &e);
        if (e) std::printf("kernel error %d\n", e);
        else clReleaseKernel(k);
    }
    std::printf("load 4 binaries into context 0: %.1f ms\n", ms(t0));
}
