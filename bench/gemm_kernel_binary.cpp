// SPDX-License-Identifier: MIT
// Builds lazytensor's own GEMM kernel for one parameter set on the first GPU (else the first
// OpenCL device) and shows what the device compiler made of it:
//   gemm_kernel_binary SET [a_k_fast,b_n_fast] [--options "BUILD OPTIONS"] [--time N] [--ptx-directive "TEXT"]
// SET is bench_gemm_kernel's --params form (float32; A and B row-major unless told); its register
// cap, where it has one, is applied as the engine applies it (.maxnreg, NVIDIA only). The build
// log goes to stderr when it is not empty (on NVIDIA, --options -cl-nv-verbose makes it list
// each kernel's registers and spills). Without --time the device binary goes to stdout (on NVIDIA
// that binary is PTX text: `grep -c ld.shared.v4`); with --time N the kernel multiplies two
// row-major N x N matrices 15 times and the median device time (events) goes to stdout, after a
// check of 64 sampled results against a double-precision product. The build options let one
// process compare register caps (-cl-nv-maxrregcount) without touching the engine.
// --ptx-directive (NVIDIA) rebuilds the kernel from its PTX with TEXT among the entry's
// performance directives (".maxnreg 128", ".minnctapersm 2"), which NVIDIA's OpenCL C compiler
// cannot be asked for: the way to learn whether more resident warps would pay.
#include <CL/cl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <lazytensor/backend/opencl/gemm_kernel.hpp>

#include "opencl_tool.hpp"

namespace ocl = lazytensor::detail::opencl;

namespace {

bool ok(cl_int err, const char* what) {
    if (err != CL_SUCCESS) std::fprintf(stderr, "gemm_kernel_binary: %s failed (%d)\n", what, err);
    return err == CL_SUCCESS;
}

// Times the kernel on two N x N row-major matrices; returns the process's exit code.
int time_kernel(cl_context context, cl_device_id device, cl_program program, const ocl::GemmKernelParams& p,
                const std::string& set, const std::string& options, int N) {
    cl_int err = CL_SUCCESS;
    cl_command_queue queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
    if (!ok(err, "clCreateCommandQueue")) return 1;
    cl_kernel kernel = clCreateKernel(program, ocl::gemm_kernel_name(), &err);
    if (!ok(err, "clCreateKernel")) return 1;
    const std::size_t count = std::size_t(N) * N;
    std::vector<float> a(count), b(count), c(count);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    cl_mem da = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count * 4, a.data(), &err);
    cl_mem db = clCreateBuffer(context, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, count * 4, b.data(), &err);
    cl_mem dc = clCreateBuffer(context, CL_MEM_READ_WRITE, count * 4, nullptr, &err);
    if (!ok(err, "clCreateBuffer")) return 1;
    // The arguments as OpenCLBackend::own_gemm sets them for one row-major product (32-bit
    // indices: main refuses sizes that need 64); a mismatch with the kernel fails here.
    cl_uint arg = 0;
    bool args_ok = true;
    auto set_arg = [&](const auto& v) { args_ok = ok(clSetKernelArg(kernel, arg++, sizeof v, &v), "clSetKernelArg") && args_ok; };
    set_arg(dc), set_arg(da), set_arg(db), set_arg(dc);
    for (cl_int v : {N, N, N, N, 1, N, 1}) set_arg(v);  // m, n, k, A's and B's row and column strides
    for (cl_long v : {0, 0, 0, 0}) set_arg(v);          // offsets and batch strides
    set_arg(cl_int(0));                                 // per-matrix offsets: none
    set_arg(cl_long(0));                                // first matrix
    if (!args_ok) return 1;
    const std::size_t tiles = std::size_t((N + p.block_m() - 1) / p.block_m()) * ((N + p.block_n() - 1) / p.block_n());
    const std::size_t local[3] = {std::size_t(p.tn), std::size_t(p.tm), 1};
    const std::size_t global[3] = {tiles * local[0], local[1], 1};
    std::vector<double> ms;
    for (int rep = 0; rep < 16; ++rep) {
        cl_event event = nullptr;
        if (!ok(clEnqueueNDRangeKernel(queue, kernel, 3, nullptr, global, local, 0, nullptr, &event), "clEnqueueNDRangeKernel"))
            return 1;
        clWaitForEvents(1, &event);
        cl_ulong start = 0, end = 0;
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
        clReleaseEvent(event);
        if (rep > 0) ms.push_back((end - start) * 1e-6);  // the first launch warms up
    }
    clEnqueueReadBuffer(queue, dc, CL_TRUE, 0, count * 4, c.data(), 0, nullptr, nullptr);
    double worst = 0;
    std::uniform_int_distribution<int> pick(0, N - 1);
    for (int s = 0; s < 64; ++s) {
        const int i = pick(rng), j = pick(rng);
        double want = 0, scale = 0;
        for (int q = 0; q < N; ++q) want += double(a[std::size_t(i) * N + q]) * b[std::size_t(q) * N + j], scale += std::fabs(double(a[std::size_t(i) * N + q]) * b[std::size_t(q) * N + j]);
        worst = std::max(worst, std::fabs(c[std::size_t(i) * N + j] - want) / std::max(scale, 1e-30));
    }
    std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
    const double median = ms[ms.size() / 2];
    std::printf("%-28s %-36s %5d^3 %8.3f ms %6.1f TFLOP/s  relative error %.1e%s\n", set.c_str(),
                options.empty() ? "(no options)" : options.c_str(), N, median, 2.0 * N * N * double(N) / (median * 1e9),
                worst, worst < 1e-4 ? "" : "  WRONG");
    clReleaseMemObject(da), clReleaseMemObject(db), clReleaseMemObject(dc);
    clReleaseKernel(kernel);
    clReleaseCommandQueue(queue);
    return worst < 1e-4 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string usage = std::string("usage: gemm_kernel_binary \"") + ocl::gemm_params_form() +
                              "\" [a_k_fast,b_n_fast] [--options \"BUILD OPTIONS\"] [--time N] [--ptx-directive \"TEXT\"] [--whole-tiles]\n";
    if (argc < 2) {
        std::fprintf(stderr, "%s", usage.c_str());
        return 2;
    }
    const std::optional<ocl::GemmKernelParams> parsed = ocl::parse_gemm_params(argv[1]);
    if (!parsed) {
        std::fprintf(stderr, "gemm_kernel_binary: cannot read the parameter set '%s'\n%s", argv[1], usage.c_str());
        return 2;
    }
    const ocl::GemmKernelParams p = *parsed;
    int a_k_fast = 1, b_n_fast = 1, time_n = 0;
    bool timed = false, whole_tiles = false;
    std::string options, directive;
    for (int i = 2; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--options") && i + 1 < argc) options = argv[++i];
        else if (!std::strcmp(argv[i], "--ptx-directive") && i + 1 < argc) directive = argv[++i];
        else if (!std::strcmp(argv[i], "--time") && i + 1 < argc) time_n = std::atoi(argv[++i]), timed = true;
        else if (!std::strcmp(argv[i], "--whole-tiles")) whole_tiles = true;
        else if (std::sscanf(argv[i], "%d,%d", &a_k_fast, &b_n_fast) != 2) {
            std::fprintf(stderr, "gemm_kernel_binary: cannot read '%s'\n%s", argv[i], usage.c_str());
            return 2;
        }
    }
    // The set's register cap, as the engine applies it (where the binary is PTX), unless a directive is given.
    const bool cap_of_set = directive.empty() && p.max_registers;
    if (cap_of_set) directive = ".maxnreg " + std::to_string(p.max_registers);
    if (time_n > 0 && (!a_k_fast || !b_n_fast)) {
        std::fprintf(stderr, "gemm_kernel_binary: --time multiplies row-major matrices (layout 1,1)\n");
        return 2;
    }
    if (timed && (time_n < 1 || time_n > 32768)) {  // N^2 must fit the kernel's 32-bit element offsets
        std::fprintf(stderr, "gemm_kernel_binary: --time takes N from 1 to 32768, not %d\n", time_n);
        return 2;
    }
    ocl::GemmLayoutClass layout;
    layout.a_k_fast = a_k_fast, layout.b_n_fast = b_n_fast;
    if (whole_tiles && time_n > 0 && (time_n % p.block_m() || time_n % p.block_n() || time_n % p.bk)) {
        std::fprintf(stderr, "gemm_kernel_binary: --whole-tiles needs N a multiple of the tile (%dx%dx%d)\n", p.block_m(),
                     p.block_n(), p.bk);
        return 2;
    }
    layout.whole_tiles = whole_tiles;
    try {
        const std::string source = ocl::gemm_kernel_source(lazytensor::DType::Float32, layout, p);
        if (time_n == 0) std::fwrite(source.data(), 1, source.size(), stderr);
        cl_device_id device = first_gpu_or_device();
        if (!device) {
            std::fprintf(stderr, "gemm_kernel_binary: no OpenCL device\n");
            return 1;
        }
        cl_int err = CL_SUCCESS;
        cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
        const char* text = source.c_str();
        cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
        cl_int built = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
        if (built == CL_SUCCESS && !directive.empty()) {
            const std::vector<unsigned char> binary = binary_of(program);
            const std::optional<std::string> ptx = ocl::ptx_with_directive(std::string(binary.begin(), binary.end()), directive);
            if (!ptx && !cap_of_set) {
                std::fprintf(stderr, "gemm_kernel_binary: --ptx-directive needs a device whose binary is PTX text of one kernel without that directive\n");
                return 1;
            }
            if (!ptx) {
                directive.clear();  // not PTX: the engine ignores the set's cap too
            } else {
                clReleaseProgram(program);
                const unsigned char* data = reinterpret_cast<const unsigned char*>(ptx->data());
                const std::size_t size = ptx->size();
                cl_int status = CL_SUCCESS;
                program = clCreateProgramWithBinary(context, 1, &device, &size, &data, &status, &err);
                if (!ok(err, "clCreateProgramWithBinary") || !ok(status, "the PTX binary")) return 1;
                built = clBuildProgram(program, 1, &device, options.c_str(), nullptr, nullptr);
            }
        }
        std::vector<char> log(1 << 20);
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
        if (built != CL_SUCCESS) {
            std::fprintf(stderr, "gemm_kernel_binary: the build failed:\n%s\n", log.data());
            return 1;
        }
        if (log[0] && std::strspn(log.data(), " \r\n") != std::strlen(log.data()))
            std::fprintf(stderr, "build log of %s (%s):\n%s\n", argv[1], options.c_str(), log.data());
        int rc = 0;
        if (time_n > 0) {
            rc = time_kernel(context, device, program, p, std::string(argv[1]) + (whole_tiles ? " whole" : ""), directive.empty() ? options : options + " " + directive, time_n);
        } else {
            const std::vector<unsigned char> binary = binary_of(program);
            std::fwrite(binary.data(), 1, binary.size(), stdout);
        }
        clReleaseProgram(program);
        clReleaseContext(context);
        return rc;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gemm_kernel_binary: %s\n", e.what());
        return 2;
    }
}
