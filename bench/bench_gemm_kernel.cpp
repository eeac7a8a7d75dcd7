// SPDX-License-Identifier: MIT
// Issue 18's matrix products on an OpenCL device: lazytensor's own GEMM kernel
// (backend/opencl/gemm_kernel.hpp) vs CLBlast, both through lt::matmul, and what
// LAZYTENSOR_OPENCL_GEMM=auto chooses.
//
//   bench_gemm_kernel [--device N] [--reps R] [--sweep]
//                     [--params "tm,tn,wm,wn,bk,v,gv,prefetch[,double_buffer[,fragments[,max_registers]]];..."]
//                     [--divide D]   (every extent divided by D: a quick check on a slow device)
//                     [--attention-params "bm,bn,tx,ty;..."]   (attention also timed with each)
//
// Timing as the table: the wall clock of building a fresh `lt::matmul(a, b)`,
// realizing it and synchronizing the device, median of R (15) runs after 3 warm-up runs.
// Each shape's own and CLBlast results are compared (largest difference relative to the largest
// element). --sweep times the own kernel the same way with each parameter set of a list
// (--params, else a built-in list) on every shape, for tuning gemm_params_for; a time marked
// "!" is of a wrong result.
// Exit status: 0, or 1 when a result is wrong, 2 on an error.
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#endif
#include <lazytensor/backend/opencl/opencl_backend.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace lt = lazytensor;
namespace ocl = lazytensor::detail::opencl;
using Clock = std::chrono::steady_clock;

namespace {

struct Shape {
    const char* name;
    std::int64_t batch, m, k, n;
    bool b_transposed;  // B is stored [batch, n, k] and read as its transpose
};

Shape kShapes[] = {
    {"GEMM 8192x784 @ 784x512", 1, 8192, 784, 512, false},
    {"GEMM 8192x512 @ 512x256", 1, 8192, 512, 256, false},
    {"batched 32 x (1024x64 @ 64x1024), B transposed", 32, 1024, 64, 1024, true},
    {"batched 32 x (1024x1024 @ 1024x64)", 32, 1024, 1024, 64, false},
    {"GEMM 1024^3", 1, 1024, 1024, 1024, false},
    {"GEMM 4096^3", 1, 4096, 4096, 4096, false},
    {"GEMM 8192^3 (no target)", 1, 8192, 8192, 8192, false},
    {"GEMM 8192x256 @ 256x10 (the MLP's last layer)", 1, 8192, 256, 10, false},
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

struct Operands {
    lt::Tensor<float> a, b;
};

Operands make_operands(const Shape& s, lt::Device dev) {
    auto dims = [&](std::int64_t r, std::int64_t c) { return s.batch == 1 ? lt::Shape{r, c} : lt::Shape{s.batch, r, c}; };
    Operands o{lt::rand<float>(dims(s.m, s.k), 1, dev) * 2.0f - 1.0f,
               lt::rand<float>(s.b_transposed ? dims(s.n, s.k) : dims(s.k, s.n), 2, dev) * 2.0f - 1.0f};
    o.a.realize();
    o.b.realize();
    if (s.b_transposed) o.b = o.b.mT();
    return o;
}

/// Median wall time of a fresh product, realized and synchronized.
double time_ms(const Operands& o, lt::Device dev, int reps) {
    std::vector<double> ms;
    for (int r = -3; r < reps; ++r) {
        const auto t0 = Clock::now();
        lt::Tensor<float> c = lt::matmul(o.a, o.b);
        c.realize();
        lt::synchronize(dev);
        if (r >= 0) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return median(ms);
}

std::vector<ocl::GemmKernelParams> parse_params(const std::string& text) {
    std::vector<ocl::GemmKernelParams> out;
    std::stringstream list(text);
    for (std::string item; std::getline(list, item, ';');) {
        const std::optional<ocl::GemmKernelParams> p = ocl::parse_gemm_params(item);
        if (!p) {
            std::fprintf(stderr, "bad --params entry '%s': expected %s\n", item.c_str(), ocl::gemm_params_form());
            std::exit(2);
        }
        out.push_back(*p);
    }
    return out;
}

const char* kSweep =  // the device's sets first, then others, with and without reading the next k step early
    "16,16,8,16,8,4,4,1,1,1;16,16,8,16,8,4,4,1,1,0;8,16,8,8,16,4,4,1,1,1;32,8,4,8,16,4,4,1,1,0;32,4,2,4,16,2,2,1,1,0;"
    "16,16,16,8,8,4,4,1,1,1;16,16,16,8,8,4,4,1,1,0;8,32,16,8,8,4,4,1,1,1;16,16,8,8,16,4,4,1,1,1;16,16,8,8,16,4,4,1,1,0;"
    "16,8,8,16,8,4,4,1,1,1;16,8,8,8,16,4,4,1,1,1;32,8,4,8,16,4,4,1,1,1;16,16,8,8,8,4,4,1,1,1;"
    // narrow tiles for narrow products (more work-groups)
    "8,4,4,4,16,4,4,1,1;16,4,4,4,16,4,4,1,1;16,8,4,4,16,4,4,1,1;8,8,4,4,16,4,4,1,1;8,8,8,8,16,4,4,1,1,1";

std::string describe(const ocl::GemmKernelParams& p) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s (%dx%d)", p.str().c_str(), p.block_m(), p.block_n());
    return buf;
}

/// The largest |x - y| relative to the largest |y|.
double relative_difference(const std::vector<float>& x, const std::vector<float>& y) {
    double diff = 0, scale = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        diff = std::max(diff, std::fabs(double(x[i]) - double(y[i])));
        scale = std::max(scale, std::fabs(double(y[i])));
    }
    return scale > 0 ? diff / scale : diff;
}

}  // namespace

int main(int argc, char** argv) {
    int device = 0, reps = 15, divide = 1;
    bool sweep = false;
    std::string params = kSweep;
    std::string attention_params;  // "bm,bn,tx,ty;...": attention timed with each
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--device" && i + 1 < argc) device = std::atoi(argv[++i]);
        else if (a == "--reps" && i + 1 < argc) reps = std::max(1, std::atoi(argv[++i]));
        else if (a == "--sweep") sweep = true;
        else if (a == "--divide" && i + 1 < argc) divide = std::max(1, std::atoi(argv[++i]));
        else if (a == "--params" && i + 1 < argc) params = argv[++i], sweep = true;
        else if (a == "--attention-params" && i + 1 < argc) attention_params = argv[++i];
        else {
            std::fprintf(stderr, "usage: bench_gemm_kernel [--device N] [--reps R] [--sweep] [--divide D] "
                                 "[--params \"SET;...\"] (SET: tm,tn,wm,wn,bk,v,gv,prefetch[,double_buffer[,fragments[,max_registers]]])\n");
            return 2;
        }
    }
    for (Shape& s : kShapes)
        for (std::int64_t* extent : {&s.m, &s.k, &s.n}) *extent = std::max<std::int64_t>(1, *extent / divide);
    try {
        const lt::Device dev = lt::Device::opencl(device);
        ocl::OpenCLBackend& be = ocl::opencl_backend(device);
        std::printf("device: %s; float32; wall clock of matmul + realize + synchronize, median of %d\n", be.name().c_str(), reps);
        int status = 0;
        for (const Shape& s : kShapes) {
            const Operands o = make_operands(s, dev);
            const double flops = 2.0 * double(s.batch) * double(s.m) * double(s.n) * double(s.k);
            auto tflops = [&](double ms) { return flops / (ms * 1e-3) / 1e12; };
            be.set_gemm_choice(ocl::GemmChoice::Own);
            be.set_gemm_params(std::nullopt);
            const double own = time_ms(o, dev, reps);
            const std::vector<float> own_c = lt::matmul(o.a, o.b).to_vector();
            std::printf("%-48s own %8.3f ms %6.1f TFLOP/s", s.name, own, tflops(own));
#if LAZYTENSOR_CLBLAST
            be.set_gemm_choice(ocl::GemmChoice::CLBlast);
            const double blas = time_ms(o, dev, reps);
            const double diff = relative_difference(own_c, lt::matmul(o.a, o.b).to_vector());
            be.set_gemm_choice(ocl::GemmChoice::Auto);
            const double chosen = time_ms(o, dev, reps);
            const lt::detail::ir::Gemm form = [&] {
                lt::detail::ir::Gemm g;  // the product as the scheduler hands it over
                g.m = s.m, g.n = s.n, g.k = s.k;
                g.a = {0, s.k, 1, {}};
                g.b = s.b_transposed ? lt::detail::ir::MatrixLayout{0, 1, s.k, {}} : lt::detail::ir::MatrixLayout{0, s.n, 1, {}};
                if (s.batch > 1) {
                    g.batch = lt::Shape{s.batch};
                    g.a.batch_strides = {s.m * s.k};
                    g.b.batch_strides = {s.k * s.n};
                }
                return g;
            }();
            std::printf(" | clblast %8.3f ms %6.1f TFLOP/s | auto %8.3f ms (%s) | own/clblast %.2f | diff %.1e | %s\n",
                        blas, tflops(blas), chosen, be.uses_own_gemm(form) ? "own" : "clblast", own / blas, diff,
                        be.gemm_routine(form).c_str());
            if (!(diff < 1e-4)) status = 1;
#else
            std::printf("\n");
#endif
            std::fflush(stdout);
        }
        {  // The workloads built on products, as LAZYTENSOR_OPENCL_GEMM=auto runs them.
            be.set_gemm_choice(ocl::GemmChoice::Auto);
            be.set_gemm_params(std::nullopt);
            auto fresh_ms = [&](const auto& make) {  // make(): a fresh expression
                std::vector<double> ms;
                for (int r = -3; r < reps; ++r) {
                    const auto t0 = Clock::now();
                    make().realize();
                    lt::synchronize(dev);
                    if (r >= 0) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
                }
                return median(ms);
            };
            const std::int64_t batch = std::max<std::int64_t>(1, 8192 / divide), t = std::max<std::int64_t>(1, 1024 / divide);
            auto uniform = [&](lt::Shape shape, std::uint64_t seed, float scale) {
                return (lt::rand<float>(shape, seed, dev) * (2.0f * scale) - scale).realize();
            };
            const lt::Tensor<float> x = uniform({batch, 784}, 11, 1.0f), w1 = uniform({784, 512}, 12, 0.05f),
                                    b1 = uniform({512}, 13, 0.05f), w2 = uniform({512, 256}, 14, 0.05f),
                                    b2 = uniform({256}, 15, 0.05f), w3 = uniform({256, 10}, 16, 0.05f),
                                    b3 = uniform({10}, 17, 0.05f);
            auto mlp_expr = [&] {
                lt::Tensor<float> h = lt::relu(lt::matmul(lt::relu(lt::matmul(x, w1) + b1), w2) + b2);
                return lt::softmax(lt::matmul(h, w3) + b3, -1);
            };
            auto linear_relu = [&] { return lt::relu(lt::matmul(x, w1) + b1); };
            // A float16 batch: its cast runs in the product's loads (a prologue).
            const lt::Tensor<lt::half> x16 = x.cast<lt::half>().realize();
            auto linear_half = [&] { return lt::relu(lt::matmul(x16.cast<float>(), w1) + b1); };
            // A float16 result: the cast runs in the product's stores (an epilogue).
            auto linear_to_half = [&] { return (lt::matmul(x, w1) + b1).cast<lt::half>(); };
            // Each with its products' consumers fused into their stores (the default), then not
            // (the lines the ratio script skips: they do not end in "ms").
            const bool fused_before = be.fuse_epilogues();
            be.set_fuse_epilogues(true);
            const double mlp = fresh_ms(mlp_expr), linear = fresh_ms(linear_relu), half_in = fresh_ms(linear_half);
            be.set_fuse_epilogues(false);
            const double mlp_unfused = fresh_ms(mlp_expr), linear_unfused = fresh_ms(linear_relu);
            const double half_unfused = fresh_ms(linear_half);
            be.set_fuse_epilogues(true);
            const double to_half = fresh_ms(linear_to_half);
            be.set_fuse_epilogues(false);
            const double to_half_unfused = fresh_ms(linear_to_half);
            be.set_fuse_epilogues(fused_before);
            std::printf("MLP 784-512-256-10 inference, batch %-6lld                      %9.3f ms\n",
                        static_cast<long long>(batch), mlp);
            std::printf("  (its products' consumers not fused: %.3f ms)\n", mlp_unfused);
            std::printf("relu(x @ w1 + b1), 8192x784 @ 784x512                          %9.3f ms\n", linear);
            std::printf("  (not fused: %.3f ms)\n", linear_unfused);
            std::printf("relu(x16.float() @ w1 + b1), a float16 batch                   %9.3f ms\n", half_in);
            std::printf("  (cast and consumer not fused: %.3f ms)\n", half_unfused);
            std::printf("(x @ w1 + b1).half(), a float16 result                         %9.3f ms\n", to_half);
            std::printf("  (not fused: %.3f ms)\n", to_half_unfused);
            // LAZYTENSOR_DEBUG=3's schedule and item times of one realize, without the kernel sources it also prints.
            auto print_items = [&](const char* what, const auto& make) {
                std::ostringstream log;
                std::streambuf* old = std::cerr.rdbuf(log.rdbuf());
                lt::set_debug_level(3);
                make().realize();
                lt::set_debug_level(0);
                std::cerr.rdbuf(old);
                std::istringstream lines(log.str());
                std::printf("  one %s realize, LAZYTENSOR_DEBUG=3 (schedule, then each item's device time):\n", what);
                for (std::string line; std::getline(lines, line);)
                    if (line.rfind("[lazytensor] schedule", 0) == 0 || line.rfind("  kernel ", 0) == 0 ||
                        line.rfind("  matmul ", 0) == 0 || line.rfind("  attention ", 0) == 0)
                        if (line.find(" on opencl") == std::string::npos) std::printf("  %s\n", line.c_str());
            };
            print_items("MLP", mlp_expr);
            const lt::Tensor<float> q = uniform({32, t, 64}, 21, 1.0f), k = uniform({32, t, 64}, 22, 1.0f),
                                    v = uniform({32, t, 64}, 23, 1.0f);
            auto attention_expr = [&] { return lt::matmul(lt::softmax(lt::matmul(q, k.mT()) * 0.125f, -1), v); };
            // One attention kernel (the default), then the three items (scores product, softmax, product).
            be.set_fuse_attention(true);
            const double attention = fresh_ms(attention_expr);
            const std::vector<float> fused_values = attention_expr().to_vector();
            be.set_fuse_attention(false);
            const double attention_unfused = fresh_ms(attention_expr);
            const double attention_difference = relative_difference(fused_values, attention_expr().to_vector());
            be.set_fuse_attention(true);
            if (!(attention_difference < 1e-4)) status = 1;
            std::printf("attention, batch*heads 32, T %-5lld d 64                        %9.3f ms\n",
                        static_cast<long long>(t), attention);
            std::printf("  (not fused: %.3f ms; fused against not, relative difference %.2g)\n", attention_unfused,
                        attention_difference);
            print_items("attention", attention_expr);
            std::stringstream sets(attention_params);
            for (std::string set; std::getline(sets, set, ';');) {
                ocl::AttentionParams p;
                if (std::sscanf(set.c_str(), "%d,%d,%d,%d", &p.bm, &p.bn, &p.tx, &p.ty) != 4) {
                    std::fprintf(stderr, "--attention-params: \"%s\" is not bm,bn,tx,ty\n", set.c_str());
                    return 2;
                }
                try {
                    be.set_attention_params(p);
                    const double ms = fresh_ms(attention_expr);
                    const double difference = relative_difference(fused_values, attention_expr().to_vector());
                    if (!(difference < 1e-4)) status = 1;
                    std::printf("  attention kernel %dx%d, %dx%d work-items: %.3f ms (against the default set: %.2g)\n", p.bm,
                                p.bn, p.tx, p.ty, ms, difference);
                } catch (const std::exception& e) {
                    std::printf("  attention kernel %s: failed: %s\n", set.c_str(), e.what());
                }
                be.set_attention_params(std::nullopt);
            }
            std::fflush(stdout);
        }
        if (sweep) {
            std::printf("\nsweep: own kernel per parameter set (%s), ms, median of %d\n", ocl::gemm_params_form(), reps);
            std::vector<Operands> operands;
            std::vector<std::vector<float>> expected;  // the device's default set's results
            be.set_gemm_choice(ocl::GemmChoice::Own);
            be.set_gemm_params(std::nullopt);
            for (const Shape& s : kShapes) {
                operands.push_back(make_operands(s, dev));
                expected.push_back(lt::matmul(operands.back().a, operands.back().b).to_vector());
            }
            for (const ocl::GemmKernelParams& p : parse_params(params)) {
                std::printf("%-36s", describe(p).c_str());
                for (std::size_t i = 0; i < operands.size(); ++i) {
                    const Operands& o = operands[i];
                    try {
                        be.set_gemm_params(p);
                        const double ms = time_ms(o, dev, reps);
                        const bool right = relative_difference(lt::matmul(o.a, o.b).to_vector(), expected[i]) < 1e-4;
                        if (!right) status = 1;
                        std::printf(" %8.3f%s", ms, right ? " " : "!");
                    } catch (const std::exception& e) {
                        std::printf(" failed");
                        std::fprintf(stderr, "%s: %s\n", describe(p).c_str(), e.what());
                    }
                    std::fflush(stdout);
                }
                std::printf("\n");
            }
            be.set_gemm_params(std::nullopt);
        }
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
}
