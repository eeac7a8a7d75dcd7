// Writes the device binary of lazytensor's own GEMM kernel for one parameter set to stdout (on
// NVIDIA that binary is PTX text), to read what the device compiler made of the generated source,
// e.g. whether local-memory reads became vector loads:
//   gemm_kernel_binary "16,16,8,16,8,4,4,1,1,1" [a_k_fast,b_n_fast] > k.ptx; grep -c ld.shared.v4 k.ptx
// The set is bench_gemm_kernel's --params form (float32; A and B row-major unless told).
// The source goes to stderr. Uses the first GPU, else the first OpenCL device.
#include <CL/cl.h>

#include <cstdio>
#include <string>
#include <vector>

#include <lazytensor/backend/opencl/gemm_kernel.hpp>

namespace ocl = lazytensor::detail::opencl;

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: gemm_kernel_binary \"tm,tn,wm,wn,bk,v,gv,prefetch[,double_buffer[,fragments]]\" [a_k_fast,b_n_fast]\n");
        return 2;
    }
    ocl::GemmKernelParams p;
    int prefetch = 1, double_buffer = 0, fragments = 0, a_k_fast = 1, b_n_fast = 1;
    if (std::sscanf(argv[1], "%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", &p.tm, &p.tn, &p.wm, &p.wn, &p.bk, &p.v, &p.gv, &prefetch,
                    &double_buffer, &fragments) < 8 ||
        (argc > 2 && std::sscanf(argv[2], "%d,%d", &a_k_fast, &b_n_fast) != 2)) {
        std::fprintf(stderr, "gemm_kernel_binary: cannot read the parameter set or the layout\n");
        return 2;
    }
    p.prefetch = prefetch, p.double_buffer = double_buffer, p.fragments = fragments;
    ocl::GemmLayoutClass layout;
    layout.a_k_fast = a_k_fast, layout.b_n_fast = b_n_fast;
    try {
        const std::string source = ocl::gemm_kernel_source(lazytensor::DType::Float32, layout, p);
        std::fwrite(source.data(), 1, source.size(), stderr);
        cl_platform_id platforms[8];
        cl_uint count = 0;
        clGetPlatformIDs(8, platforms, &count);
        cl_device_id device = nullptr;
        for (cl_device_type type : {cl_device_type(CL_DEVICE_TYPE_GPU), cl_device_type(CL_DEVICE_TYPE_ALL)})
            for (cl_uint i = 0; i < count && !device; ++i)
                if (clGetDeviceIDs(platforms[i], type, 1, &device, nullptr) != CL_SUCCESS) device = nullptr;
        if (!device) {
            std::fprintf(stderr, "gemm_kernel_binary: no OpenCL device\n");
            return 1;
        }
        cl_int err = CL_SUCCESS;
        cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
        const char* text = source.c_str();
        cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
        if (clBuildProgram(program, 1, &device, "", nullptr, nullptr) != CL_SUCCESS) {
            std::vector<char> log(1 << 20);
            clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
            std::fprintf(stderr, "gemm_kernel_binary: the build failed:\n%s\n", log.data());
            return 1;
        }
        std::size_t size = 0;
        clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
        std::vector<unsigned char> binary(size);
        unsigned char* at = binary.data();
        clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr);
        std::fwrite(binary.data(), 1, binary.size(), stdout);
        clReleaseProgram(program);
        clReleaseContext(context);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "gemm_kernel_binary: %s\n", e.what());
        return 2;
    }
}
