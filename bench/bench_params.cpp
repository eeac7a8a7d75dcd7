// SPDX-License-Identifier: MIT
// Scalars and seeds as kernel parameters: what a loop that changes them costs per step, against
// the same loop with fixed values (the ratio must stay near 1: nothing is compiled after the
// first step); the host time of a small cached realize, against the raw OpenCL enqueue of an
// equivalent hand-written kernel; and the first realize of a schedule of several new kernels
// (built as one program) against one new kernel; and a row softmax whose batch size changes every
// step (no program is built after the first: the count of rows is a kernel argument).
// bench/params_peer.py runs the same loops in PyTorch for the GPU comparison.
//
//   bench_params [--device host|opencl:N] [--steps N]
//
// Each loop step is `y = y * 0.99f + x * alpha; y.realize();` over 2^16 floats (the seed loop:
// `y = y * 0.5f + lt::rand<float>(shape, seed)`); per-step time is the wall time of N steps,
// then a synchronize, divided by N, best of 5 such runs, after a warm-up step.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#endif
#include <string>
#include <vector>

namespace lt = lazytensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// Best per-step time (ms) of `steps` calls of step(i), then a synchronize.
double per_step_ms(lt::Device d, int steps, const std::function<void(int)>& step) {
    step(0);  // warm-up: the first step compiles
    lt::synchronize(d);
    double best = 1e300;
    int next = 1;
    for (int run = 0; run < 5; ++run) {
        const auto t0 = Clock::now();
        for (int i = 0; i < steps; ++i) step(next++);
        lt::synchronize(d);
        best = std::min(best, ms_since(t0) / steps);
    }
    return best;
}

void row(const char* name, double value, const char* unit, double target, bool lower_is_better = true) {
    const bool ok = lower_is_better ? value <= target : value >= target;
    std::printf("%-62s %10.4f %-3s  target %s %.2f  %s\n", name, value, unit, lower_is_better ? "<=" : ">=", target,
                ok ? "ok" : "MISS");
}

#if LAZYTENSOR_OPENCL
/// The raw cost of launching y = a * b + 1 - a on 1024 floats with a hand-written kernel:
/// clSetKernelArg for three buffers and clEnqueueNDRangeKernel, per launch (µs).
double raw_enqueue_us(int index) {
    auto& be = lt::detail::opencl::opencl_backend(index);
    const char* src =
        "__kernel void f(__global const float* a, __global const float* b, __global float* y) {\n"
        "    const int i = get_global_id(0); y[i] = a[i] * b[i] + 1.0f - a[i]; }\n";
    cl_int err = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(be.context(), 1, &src, nullptr, &err);
    cl_device_id dev = be.device_id();
    clBuildProgram(p, 1, &dev, "", nullptr, nullptr);
    cl_kernel k = clCreateKernel(p, "f", &err);
    cl_mem m[3];
    for (auto& x : m) x = clCreateBuffer(be.context(), CL_MEM_READ_WRITE, 4096, nullptr, &err);
    const std::size_t global = 1024, local = 256;
    auto launch = [&] {
        for (cl_uint i = 0; i < 3; ++i) clSetKernelArg(k, i, sizeof(cl_mem), &m[i]);
        clEnqueueNDRangeKernel(be.queue(), k, 1, nullptr, &global, &local, 0, nullptr, nullptr);
    };
    launch();
    clFinish(be.queue());
    double best = 1e300;
    for (int run = 0; run < 5; ++run) {
        const auto t0 = Clock::now();
        for (int i = 0; i < 2000; ++i) launch();
        clFinish(be.queue());
        best = std::min(best, ms_since(t0) * 1000 / 2000);
    }
    for (auto& x : m) clReleaseMemObject(x);
    clReleaseKernel(k);
    clReleaseProgram(p);
    return best;
}
#endif

}  // namespace

int main(int argc, char** argv) {
    lt::Device d = lt::default_device();
    int steps = 200;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) d = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    }
    lt::set_default_device(d);
    std::printf("bench_params on %s (%s)\n\n", d.str().c_str(), lt::detail::backend_for(d).name().c_str());

    const lt::Shape shape{1 << 16};
    lt::Tensor<float> x = lt::rand<float>(shape, 1);
    x.realize();
    lt::Tensor<float> y = lt::zeros<float>(shape);
    y.realize();

    // 1. The time-stepping loop, alpha fixed and alpha changing.
    const lt::CompileStats before = lt::compile_stats(d);
    const double fixed = per_step_ms(d, steps, [&](int) {
        y = y * 0.99f + x * 0.5f;
        y.realize();
    });
    const double changing = per_step_ms(d, steps, [&](int i) {
        y = y * 0.99f + x * (0.5f + 1e-3f * static_cast<float>(i));
        y.realize();
    });
    // 2. A new random seed each step, against a fixed seed.
    const double fixed_seed = per_step_ms(d, steps, [&](int) {
        y = y * 0.5f + lt::rand<float>(shape, 7);
        y.realize();
    });
    const double new_seed = per_step_ms(d, steps, [&](int i) {
        y = y * 0.5f + lt::rand<float>(shape, 7 + static_cast<std::uint64_t>(i));
        y.realize();
    });
    const lt::CompileStats after = lt::compile_stats(d);
    std::printf("y = y*0.99 + x*alpha, 2^16 floats: %.4f ms/step fixed, %.4f ms/step changing\n", fixed, changing);
    std::printf("y = y*0.5 + rand(seed), 2^16 floats: %.4f ms/step fixed seed, %.4f ms/step new seed\n", fixed_seed,
                new_seed);
    std::printf("kernels compiled over %d loop steps: %zu (programs built from source: %zu)\n\n", 4 * (5 * steps + 1),
                after.kernels_compiled - before.kernels_compiled, after.programs_built - before.programs_built);
    row("changing-scalar step / fixed-scalar step", changing / fixed, "x", 1.2);
    row("new-seed step / fixed-seed step", new_seed / fixed_seed, "x", 1.2);

    // 3. A cached 3-op expression on 1024 floats: host wall time per realize (enqueue only on
    // OpenCL; the device finishes them in the background), against the raw enqueue.
    {
        lt::Tensor<float> a = lt::rand<float>({1024}, 2), b = lt::rand<float>({1024}, 3);
        lt::realize({a, b});
        lt::Tensor<float> out;
        const double us = 1000 * per_step_ms(d, 20000, [&](int) { out = (a * b + 1.0f - a).realize(); });
        row("cached (a*b + 1 - a).realize(), 1024 floats, per realize", us, "us", 8.0);
#if LAZYTENSOR_OPENCL
        if (d.kind == lt::Device::Kind::OpenCL)
            std::printf("  (the raw OpenCL enqueue of a hand-written kernel for it: %.2f us)\n", raw_enqueue_us(d.index));
#endif
    }

    // 5. A batch whose size changes every step: a row softmax of the first B rows of a realized
    // [B_max, 256] matrix, B = 1024 fixed, and B one row more each step.
    {
        const int max_rows = 1024 + 6 * steps + 8;
        lt::Tensor<float> big = lt::rand<float>({max_rows, 256}, 6);
        big.realize();
        lt::Tensor<float> out;
        const double fixed_rows = per_step_ms(d, steps, [&](int) { out = lt::softmax(big.slice(0, 0, 1024), -1).realize(); });
        const lt::CompileStats before_rows = lt::compile_stats(d);
        const double new_rows =
            per_step_ms(d, steps, [&](int i) { out = lt::softmax(big.slice(0, 0, 1024 + i), -1).realize(); });
        const lt::CompileStats after_rows = lt::compile_stats(d);
        std::printf("\nsoftmax of B x 256 floats: %.4f ms/step with B = 1024, %.4f ms/step with a new B each step\n",
                    fixed_rows, new_rows);
        std::printf("new B each step, over %d steps: %zu kernels made (plans of a new shape), %zu programs built from "
                    "source, %zu loaded from disk\n",
                    5 * steps + 1, after_rows.kernels_compiled - before_rows.kernels_compiled,
                    after_rows.programs_built - before_rows.programs_built, after_rows.disk_hits - before_rows.disk_hits);
    }

    // 4. First realize of new kernels: one, and four in one schedule (built as one program).
    // New structures each time (the shape is part of a kernel), with the disk cache off.
#if LAZYTENSOR_OPENCL
    if (d.kind == lt::Device::Kind::OpenCL) lt::detail::opencl::opencl_backend(d.index).disk_cache().set_directory("");
#endif
    double one = 1e300, four = 1e300;
    for (int trial = 0; trial < 3; ++trial) {
        const std::int64_t n = 1000 + 17 * trial;
        lt::Tensor<float> u = lt::rand<float>({8, n}, 4), v = lt::rand<float>({8, n + 1}, 5);
        lt::realize({u, v});
        lt::synchronize(d);
        auto t0 = Clock::now();
        lt::Tensor<float> single = lt::exp(u * 2.0f).sum(1);
        single.realize();
        lt::synchronize(d);
        one = std::min(one, ms_since(t0));
        t0 = Clock::now();
        lt::Tensor<float> k0 = lt::exp(v * 2.0f).sum(1), k1 = lt::tanh(v + 1.0f).max(0), k2 = (v * v - 3.0f).min(1),
                          k3 = lt::sqrt(v * v + 2.0f) * 0.5f;
        lt::realize({k0, k1, k2, k3});
        lt::synchronize(d);
        four = std::min(four, ms_since(t0));
    }
    std::printf("\nfirst realize: one new kernel %.2f ms, four new kernels in one schedule %.2f ms\n", one, four);
    if (d.kind == lt::Device::Kind::OpenCL) row("first realize of 4 new kernels / of 1 new kernel", four / one, "x", 1.5);
    return 0;
}
