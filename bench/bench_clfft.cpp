// SPDX-License-Identifier: MIT
// clFFT (Debian libclfft-dev, Apache-2.0) called directly on issue 48's GPU shapes, the other
// OpenCL FFT library the issue names: the measurement behind choosing VkFFT. Out of place,
// complex64 / float32, on the first GPU (else the first OpenCL device); each line is the wall
// clock of clfftEnqueueTransform and clFinish, median of 15 after a warm-up (bench_fft's and
// fft_torch_peer.py's method), the plan baked once beforehand. Not built by CMake (it is run
// once, on the GPU machine, where libclfft-dev is carried):
//
//   g++ -O2 -std=c++17 bench/bench_clfft.cpp -o /tmp/bench_clfft -lclFFT -lOpenCL && /tmp/bench_clfft
#define CL_TARGET_OPENCL_VERSION 120
#include <clFFT.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "opencl_tool.hpp"

namespace {

void check(cl_int err, const char* what) {
    if (err != CL_SUCCESS) {
        std::fprintf(stderr, "%s failed: %d\n", what, err);
        std::exit(1);
    }
}

struct Context {
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
};

double time_plan(const Context& c, clfftPlanHandle plan, cl_mem in, cl_mem out) {
    check(clfftBakePlan(plan, 1, const_cast<cl_command_queue*>(&c.queue), nullptr, nullptr), "clfftBakePlan");
    size_t tmp_size = 0;
    check(clfftGetTmpBufSize(plan, &tmp_size), "clfftGetTmpBufSize");
    cl_int err = CL_SUCCESS;
    cl_mem tmp = tmp_size ? clCreateBuffer(c.context, CL_MEM_READ_WRITE, tmp_size, nullptr, &err) : nullptr;
    check(err, "clCreateBuffer(tmp)");
    auto once = [&] {
        check(clfftEnqueueTransform(plan, CLFFT_FORWARD, 1, const_cast<cl_command_queue*>(&c.queue), 0, nullptr, nullptr, &in, &out, tmp),
              "clfftEnqueueTransform");
        check(clFinish(c.queue), "clFinish");
    };
    once();
    std::vector<double> t;
    for (int i = 0; i < 15; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        once();
        t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    if (tmp) clReleaseMemObject(tmp);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

cl_mem buffer(const Context& c, size_t bytes) {
    cl_int err = CL_SUCCESS;
    cl_mem b = clCreateBuffer(c.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    check(err, "clCreateBuffer");
    std::vector<float> ones(bytes / sizeof(float), 0.5f);
    check(clEnqueueWriteBuffer(c.queue, b, CL_TRUE, 0, bytes, ones.data(), 0, nullptr, nullptr), "clEnqueueWriteBuffer");
    return b;
}

void line(const char* name, double ms) { std::printf("%-52s %10.3f ms\n", name, ms); }

}  // namespace

int main() {
    Context c{};
    c.device = first_gpu_or_device();
    if (!c.device) {
        std::fprintf(stderr, "no OpenCL device\n");
        return 1;
    }
    cl_int err = CL_SUCCESS;
    c.context = clCreateContext(nullptr, 1, &c.device, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    c.queue = clCreateCommandQueue(c.context, c.device, 0, &err);
    check(err, "clCreateCommandQueue");
    char name[256] = {};
    clGetDeviceInfo(c.device, CL_DEVICE_NAME, sizeof name, name, nullptr);
    cl_uint major = 0, minor = 0, patch = 0;
    clfftGetVersion(&major, &minor, &patch);
    std::printf("bench_clfft on %s (clFFT %u.%u.%u)\n", name, major, minor, patch);
    clfftSetupData setup;
    check(clfftInitSetupData(&setup), "clfftInitSetupData");
    check(clfftSetup(&setup), "clfftSetup");

    {  // c2c 1-D 2^24
        const size_t n = size_t(1) << 24;
        cl_mem in = buffer(c, n * 8), out = buffer(c, n * 8);
        clfftPlanHandle plan;
        size_t lengths[1] = {n};
        check(clfftCreateDefaultPlan(&plan, c.context, CLFFT_1D, lengths), "clfftCreateDefaultPlan");
        clfftSetPlanPrecision(plan, CLFFT_SINGLE);
        clfftSetLayout(plan, CLFFT_COMPLEX_INTERLEAVED, CLFFT_COMPLEX_INTERLEAVED);
        clfftSetResultLocation(plan, CLFFT_OUTOFPLACE);
        line("c2c 1-D 2^24 complex64", time_plan(c, plan, in, out));
        clfftDestroyPlan(&plan);
        clReleaseMemObject(in);
        clReleaseMemObject(out);
    }
    {  // r2c 2-D 4096 x 4096
        const size_t n = 4096, half = n / 2 + 1;
        cl_mem in = buffer(c, n * n * 4), out = buffer(c, n * half * 8);
        clfftPlanHandle plan;
        size_t lengths[2] = {n, n};
        check(clfftCreateDefaultPlan(&plan, c.context, CLFFT_2D, lengths), "clfftCreateDefaultPlan");
        clfftSetPlanPrecision(plan, CLFFT_SINGLE);
        clfftSetLayout(plan, CLFFT_REAL, CLFFT_HERMITIAN_INTERLEAVED);
        clfftSetResultLocation(plan, CLFFT_OUTOFPLACE);
        size_t in_strides[2] = {1, n}, out_strides[2] = {1, half};
        clfftSetPlanInStride(plan, CLFFT_2D, in_strides);
        clfftSetPlanOutStride(plan, CLFFT_2D, out_strides);
        clfftSetPlanDistance(plan, n * n, n * half);
        line("rfft2 4096x4096 float32", time_plan(c, plan, in, out));
        clfftDestroyPlan(&plan);
        clReleaseMemObject(in);
        clReleaseMemObject(out);
    }
    {  // 16384 batched c2c of 1024
        const size_t n = 1024, batch = 16384;
        cl_mem in = buffer(c, n * batch * 8), out = buffer(c, n * batch * 8);
        clfftPlanHandle plan;
        size_t lengths[1] = {n};
        check(clfftCreateDefaultPlan(&plan, c.context, CLFFT_1D, lengths), "clfftCreateDefaultPlan");
        clfftSetPlanPrecision(plan, CLFFT_SINGLE);
        clfftSetLayout(plan, CLFFT_COMPLEX_INTERLEAVED, CLFFT_COMPLEX_INTERLEAVED);
        clfftSetResultLocation(plan, CLFFT_OUTOFPLACE);
        clfftSetPlanBatchSize(plan, batch);
        clfftSetPlanDistance(plan, n, n);
        line("batched 16384 x c2c 1024 complex64", time_plan(c, plan, in, out));
        clfftDestroyPlan(&plan);
        clReleaseMemObject(in);
        clReleaseMemObject(out);
    }
    clfftTeardown();
    return 0;
}
