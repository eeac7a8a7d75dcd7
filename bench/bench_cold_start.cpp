// SPDX-License-Identifier: MIT
// Cold start (issue 52): what a fresh process waits for before its first results on a device.
// Every measurement runs in a new process (this program with --child ...) with lazytensor's disk
// cache off (LAZYTENSOR_CACHE_DIR=off) and the drivers' caches in one of two states:
//   emptied   NVIDIA's and PoCL's caches enabled but in a new empty directory per process
//             (CUDA_CACHE_PATH, POCL_CACHE_DIR): a fresh machine's first run;
//   disabled  CUDA_CACHE_DISABLE=1, POCL_KERNEL_CACHE=0. On NVIDIA this also makes creating an
//             OpenCL context 1.3-1.5 s slower (the driver compiles its own code again).
//
//   bench_cold_start [--device opencl:0] [--runs 3]
//
// Children:
//   mlp   the 784-512-256-10 training step of batch 8192 (forward, lt::value_and_grad, SGD, one
//         realize): device setup, the parameters' creation, the first step, the first 20 steps,
//         a later step; compile_stats after the first step.
//   expr  a never-seen element-wise expression over 2^24 floats, after the device is set up and
//         one other kernel ran: time to its first result.
//   raw   raw OpenCL: context and queue creation; building a one-line kernel; building an
//         interpreter of a small instruction set (the size a tier-0 program would have) for one and
//         for four element types; loading that interpreter again from its binary (PTX on NVIDIA).
#include <lazytensor.hpp>

#include <CL/cl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace lt = lazytensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

const std::int64_t kSizes[] = {784, 512, 256, 10};

int child_mlp(lt::Device d) {
    auto t0 = Clock::now();
    lt::zeros<float>({1}, d).realize();  // device setup (context, queue) and one tiny kernel
    lt::synchronize(d);
    const double setup = ms_since(t0);
    const std::int64_t batch = 8192;
    t0 = Clock::now();
    std::vector<lt::Tensor<float>> params;
    for (int l = 0; l < 3; ++l) {
        params.push_back(lt::randn<float>({kSizes[l], kSizes[l + 1]}, 10 + l, d) * std::sqrt(2.0f / float(kSizes[l])));
        params.push_back(lt::zeros<float>({kSizes[l + 1]}, d));
    }
    const lt::Tensor<float> x = lt::rand<float>({batch, kSizes[0]}, 1, d).realize();
    const lt::Tensor<std::int64_t> labels = lt::randint<std::int64_t>(0, 10, {batch}, 2, d).realize();
    for (auto& p : params) p.realize();
    lt::synchronize(d);
    const double init = ms_since(t0);
    lt::Tensor<float> loss_value;
    auto step = [&] {
        auto [loss, grads] = lt::value_and_grad(
            [&](const std::vector<lt::Tensor<float>>& p) {
                lt::Tensor<float> h = lt::relu(x.matmul(p[0]) + p[1]);
                h = lt::relu(h.matmul(p[2]) + p[3]);
                return lt::cross_entropy(h.matmul(p[4]) + p[5], labels);
            },
            params);
        std::vector<lt::TensorRef> outputs{loss};
        for (std::size_t i = 0; i < params.size(); ++i) {
            params[i] = params[i] - grads[i] * 0.01f;
            outputs.emplace_back(params[i]);
        }
        lt::realize(outputs);
        loss_value = loss;
    };
    lt::reset_compile_stats(d);
    t0 = Clock::now();
    step();
    lt::synchronize(d);
    const double first = ms_since(t0);
    const lt::CompileStats s = lt::compile_stats(d);
    for (int i = 1; i < 20; ++i) step();
    lt::synchronize(d);
    const double twenty = ms_since(t0);
    t0 = Clock::now();
    for (int i = 0; i < 10; ++i) step();
    lt::synchronize(d);
    const double later = ms_since(t0) / 10;
    std::printf("RESULT mlp setup_ms=%.1f init_ms=%.1f first_ms=%.1f twenty_ms=%.1f later_ms=%.3f kernels=%zu programs=%zu "
                "compile_ms=%.1f loss=%.4f\n",
                setup, init, first, twenty, later, s.kernels_compiled, s.programs_built, s.compile_ms,
                static_cast<double>(loss_value.item()));
    return 0;
}

int child_expr(lt::Device d) {
    auto t0 = Clock::now();
    const lt::Tensor<float> a = lt::rand<float>({1 << 24}, 3, d).realize(), b = lt::rand<float>({1 << 24}, 4, d).realize();
    lt::synchronize(d);
    const double setup = ms_since(t0);
    // A salt in the expression's structure (not a scalar: scalars are kernel arguments) so that
    // no earlier run of this program can have built it.
    const int salt = static_cast<int>(getpid() % 5);
    t0 = Clock::now();
    lt::Tensor<float> y = lt::exp(a * 0.5f) + b;
    for (int i = 0; i < salt + 1; ++i) y = lt::sqrt(y * y + 1.0f);
    y.realize();
    lt::synchronize(d);
    const double first = ms_since(t0);
    t0 = Clock::now();
    lt::Tensor<float> z = lt::exp(a * 0.25f) + b;
    for (int i = 0; i < salt + 1; ++i) z = lt::sqrt(z * z + 2.0f);
    z.realize();
    lt::synchronize(d);
    const double again = ms_since(t0);
    std::printf("RESULT expr setup_ms=%.1f first_ms=%.1f cached_ms=%.3f y0=%.4f\n", setup, first, again,
                static_cast<double>(y.to_vector()[0]));
    return 0;
}

/// An interpreter of a small instruction set over `types` element types: one work-item per
/// element, a register file in private memory, a switch per instruction. The size of program a
/// tier-0 path would build once per device.
std::string interpreter_source(const std::vector<std::string>& types) {
    static const char* unary[] = {"-a", "exp(a)", "log(a)", "sqrt(a)", "rsqrt(a)", "sin(a)", "cos(a)", "tanh(a)", "fabs(a)",
                                  "floor(a)", "ceil(a)", "round(a)", "exp2(a)", "log2(a)", "erf(a)", "1/(1+exp(-a))"};
    static const char* binary[] = {"a+b", "a-b", "a*b", "a/b", "fmax(a,b)", "fmin(a,b)", "pow(a,b)", "fmod(a,b)",
                                   "atan2(a,b)", "(a<b)", "(a==b)", "(a>b)", "copysign(a,b)", "hypot(a,b)"};
    std::string s;
    for (const std::string& t : types) {
        const bool fp = t == "float" || t == "double";
        s += "__kernel void interp_" + t + "(__global const int4* code, int n_code, __global " + t + "* out, __global const " +
             t + "* in0, __global const " + t + "* in1, __global const " + t + "* in2, " + t + " k0, long n) {\n";
        s += "  long i = get_global_id(0); if (i >= n) return;\n  " + t + " r[16];\n";
        s += "  for (int pc = 0; pc < n_code; ++pc) {\n    int4 c = code[pc];\n    " + t + " a = r[c.z & 15], b = r[c.w & 15], v;\n";
        s += "    switch (c.x) {\n";
        int op = 0;
        s += "      case " + std::to_string(op++) + ": v = in0[i]; break;\n";
        s += "      case " + std::to_string(op++) + ": v = in1[i]; break;\n";
        s += "      case " + std::to_string(op++) + ": v = in2[i]; break;\n";
        s += "      case " + std::to_string(op++) + ": v = k0; break;\n";
        s += "      case " + std::to_string(op++) + ": v = (r[c.z & 15] != 0) ? b : r[(c.z >> 4) & 15]; break;\n";
        for (const char* u : unary) {
            std::string e = u;
            if (!fp) e = std::string(u).find('(') == std::string::npos || std::string(u) == "-a" ? u : "a";
            s += "      case " + std::to_string(op++) + ": v = (" + t + ")(" + e + "); break;\n";
        }
        for (const char* bi : binary) {
            std::string e = bi;
            if (!fp && std::string(bi).find('(') != std::string::npos && std::string(bi)[0] != '(') e = "a*b+1";
            s += "      case " + std::to_string(op++) + ": v = (" + t + ")(" + e + "); break;\n";
        }
        s += "      default: v = a;\n    }\n    r[c.y & 15] = v;\n  }\n  out[i] = r[0];\n}\n";
    }
    return s;
}

cl_program build(cl_context ctx, cl_device_id dev, const std::string& src, double& ms) {
    const auto t0 = Clock::now();
    const char* text = src.c_str();
    cl_int err = CL_SUCCESS;
    cl_program p = clCreateProgramWithSource(ctx, 1, &text, nullptr, &err);
    err = clBuildProgram(p, 1, &dev, "-cl-std=CL1.2", nullptr, nullptr);
    ms = ms_since(t0);
    if (err != CL_SUCCESS) {
        std::size_t n = 0;
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
        std::string log(n, '\0');
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
        std::printf("build failed (%d): %s\n", err, log.c_str());
    }
    return p;
}

int child_raw() {
    auto t0 = Clock::now();
    cl_platform_id platforms[8];
    cl_uint count = 0;
    clGetPlatformIDs(8, platforms, &count);
    cl_device_id dev = nullptr;
    for (cl_device_type type : {cl_device_type(CL_DEVICE_TYPE_GPU), cl_device_type(CL_DEVICE_TYPE_ALL)})
        for (cl_uint i = 0; i < count && !dev; ++i)
            if (clGetDeviceIDs(platforms[i], type, 1, &dev, nullptr) != CL_SUCCESS) dev = nullptr;
    const double platform_ms = ms_since(t0);
    t0 = Clock::now();
    cl_int err = CL_SUCCESS;
    cl_context ctx = clCreateContext(nullptr, 1, &dev, nullptr, nullptr, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    const double context_ms = ms_since(t0);
    double trivial = 0, trivial2 = 0, one = 0, four = 0, reload = 0;
    build(ctx, dev, "__kernel void k(__global float* x) { x[get_global_id(0)] += 1.0f; }", trivial);
    build(ctx, dev, "__kernel void k2(__global float* x) { x[get_global_id(0)] *= 3.0f; }", trivial2);
    build(ctx, dev, interpreter_source({"float"}), one);
    cl_program p4 = build(ctx, dev, interpreter_source({"float", "int", "long", "uchar"}), four);
    std::size_t size = 0;
    clGetProgramInfo(p4, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
    std::vector<unsigned char> bin(size);
    unsigned char* at = bin.data();
    clGetProgramInfo(p4, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr);
    t0 = Clock::now();
    const unsigned char* data = bin.data();
    cl_int status = CL_SUCCESS;
    cl_program again = clCreateProgramWithBinary(ctx, 1, &dev, &size, &data, &status, &err);
    err = clBuildProgram(again, 1, &dev, "", nullptr, nullptr);
    reload = ms_since(t0);
    std::printf("RESULT raw platform_ms=%.1f context_ms=%.1f trivial_ms=%.1f trivial2_ms=%.1f interp1_ms=%.1f interp4_ms=%.1f "
                "reload4_ms=%.1f binary_bytes=%zu reload_err=%d\n",
                platform_ms, context_ms, trivial, trivial2, one, four, reload, size, static_cast<int>(err));
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}

std::string self_path(const char* argv0) {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string(argv0);
}

std::string run(const std::string& cmd) {
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return out;
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) out += buf;
    pclose(p);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::string device = "opencl:0", child;
    int runs = 3;
    bool debug = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = argv[++i];
        else if (!std::strcmp(argv[i], "--child") && i + 1 < argc) child = argv[++i];
        else if (!std::strcmp(argv[i], "--runs") && i + 1 < argc) runs = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--debug")) debug = true;
    }
    const lt::Device d = lt::detail::parse_device(device);
    if (child == "mlp") return child_mlp(d);
    if (child == "expr") return child_expr(d);
    if (child == "raw") return child_raw();
    const std::string exe = self_path(argv[0]);
    char tmpl[] = "/tmp/lazytensor-cold-start-XXXXXX";
    if (!mkdtemp(tmpl)) return 1;
    const std::string dir = tmpl;
    int fresh = 0;
    // The environment of one child: lazytensor's cache off, the drivers' caches emptied (a new
    // directory each time) or disabled.
    auto env = [&](bool disabled) {
        if (disabled) return std::string("LAZYTENSOR_CACHE_DIR=off CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0 ");
        const std::string d = dir + "/" + std::to_string(fresh++);
        return "LAZYTENSOR_CACHE_DIR=off CUDA_CACHE_PATH=" + d + "/nv POCL_CACHE_DIR=" + d + "/pocl ";
    };
    std::printf("bench_cold_start on %s; every line a new process, lazytensor's disk cache off\n", device.c_str());
    for (bool disabled : {false, true}) {
        std::printf("--- drivers' caches %s ---\n", disabled ? "disabled" : "emptied (a new directory per process)");
        for (const char* what : {"raw", "expr", "mlp"})
            for (int r = 0; r < runs; ++r) std::printf("%s", run(env(disabled) + exe + " --device " + device + " --child " + what + " 2>&1").c_str());
    }
    if (debug) {
        std::printf("--- one mlp child with LAZYTENSOR_DEBUG=1, drivers' caches emptied ---\n");
        std::printf("%s", run(env(false) + "LAZYTENSOR_DEBUG=1 " + exe + " --device " + device + " --child mlp 2>&1").c_str());
    }
    std::printf("%s", run("rm -rf " + dir).c_str());
    return 0;
}
