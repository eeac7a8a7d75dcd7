// An experiment toward issue 18's moonshot: attention softmax(q @ k^T * scale) @ v as one
// streaming OpenCL kernel (online softmax over blocks of keys; the T x S scores never reach
// global memory). The engine's kernel (backend/opencl/attention_kernel.hpp) grew from this
// one; this tool keeps the variants it tried. It builds the kernel on the first GPU (else the
// first OpenCL device), checks sampled rows against a double-precision reference and times it.
// (--warp: on NVIDIA a NaN in one query row changed the other rows of its warp, which the engine's
// tests found; the engine's kernel has no warp shuffles.)
//
//   attention_kernel [--batch B] [--t T] [--s S] [--d D] [--dv DV] [--bm BM] [--bn BN] [--tx TX] [--ty TY]
//                    [--prefetch] [--max-registers N] [--warp] [--reps R] [--print-source]
//
// Q [B, T, D], K [B, S, D] and V [B, S, DV] are row-major float32, D a multiple of 4, DV of 4 TX;
// O [B, T, DV]. A work-group of TX x TY work-items (8 x 16) takes BM query rows (BM / TY each: ty +
// TY i) and walks the keys in blocks of BN: the block's scores in registers (BN / TX keys each:
// tx + TX j), the rows' running maxima agreed through local memory, P written to local memory,
// then O += P V with DV / TX output columns each. The scores and P never leave the work-group.
// --warp (NVIDIA only: inline PTX) lets a row's 8 work-items agree through warp shuffles instead
// of local memory and barriers. Fastest on the H200 (2026-11-28): --warp --bm 128 --bn 64 --ty 32,
// 0.31 ms at 32 x 1024 x 64 (its 104 KB of local memory is more than the 48 KB NVIDIA reports,
// and its compiler accepts it; bench/README.md).
// Exit status: 0, 1 when a result is wrong, 2 on an error.
#include <CL/cl.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <lazytensor/backend/opencl/gemm_kernel.hpp>  // ptx_with_register_cap, as the engine caps its GEMM

#include "opencl_tool.hpp"

namespace {

struct Shape {
    int batch = 32, t = 1024, s = 1024, d = 64, dv = 64;
    int bm = 64, bn = 32;
    int tx = 8, ty = 16;  // work-items along keys (and output columns) and along query rows
    bool prefetch = false;  // load the next blocks of K and V into registers while this one is multiplied
    int max_registers = 0;  // NVIDIA: rebuild from the PTX with .maxnreg (0: the compiler's choice)
    bool warp = false;  // NVIDIA: a row's 8 work-items agree through warp shuffles (inline PTX), not barriers
};

std::string attention_source(const Shape& sh) {
    auto n = [](int x) { return std::to_string(x); };
    std::string s = "#define D " + n(sh.d) + "\n#define DV " + n(sh.dv) + "\n#define BM " + n(sh.bm) + "\n#define BN " + n(sh.bn) +
                    "\n#define TX " + n(sh.tx) + "\n#define TY " + n(sh.ty) + "\n#define RM (BM / TY)\n#define RN (BN / TX)\n#define CN (DV / TX)\n"
                    "#define LDQ (D + 4)\n#define LDK (D + 4)\n#define LDV (DV + 4)\n#define LDP (BN + 4)\n"
                    "#define KV_FLOATS (BN * (LDK > LDV ? LDK : LDV))\n#define NT (TX * TY)\n#define PREFETCH " +
                    n(sh.prefetch) + "\n#define WARP " + n(sh.warp) + "\n";
    // WARP (NVIDIA): the TX = 8 work-items of a row are consecutive lanes of one warp, so they
    // agree on its maximum and total through shuffles, and P, which only that warp reads, needs a
    // warp barrier; K and V get buffers of their own. Two work-group barriers a block of keys, not four.
    s += R"CL(
// The maximum as lazytensor's reductions take it: NaN wins.
#define LT_MAX(a, b) (((b) > (a) || isnan(b)) ? (b) : (a))
#if WARP
inline float lt_shfl_xor(float v, int mask) {
    float r;
    asm volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=f"(r) : "f"(v), "r"(mask));
    return r;
}
#define WARP_SYNC() asm volatile("bar.warp.sync 0xffffffff;" ::: "memory")
#endif

// One block's share of rows of X (W floats each, rows first..first+BN of S) to local memory at LD.
#define LOAD_BLOCK(dst, X, W, LD, first)                                                                    \
    for (int e = lid; e < BN * W / 4; e += NT) {                                                            \
        const int j = e / (W / 4), c = e % (W / 4) * 4;                                                     \
        *(__local float4*)(dst + j * LD + c) = (first) + j < S ? vload4(0, X + (long)((first) + j) * W + c) \
                                                               : (float4)(0.0f);                            \
    }

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void lt_attention(__global float* restrict O, __global const float* restrict Q, __global const float* restrict K,
                  __global const float* restrict V, const int T, const int S, const float scale) {
    __local float Qs[BM * LDQ] __attribute__((aligned(16)));
#if WARP
    __local float Ks[BN * LDK] __attribute__((aligned(16)));
    __local float Vs[BN * LDV] __attribute__((aligned(16)));
#else
    __local float KV[KV_FLOATS] __attribute__((aligned(16)));  // the block of K, then of V
    #define Ks KV
    #define Vs KV
#endif
    __local float Ps[BM * LDP] __attribute__((aligned(16)));   // (without WARP, the rows' partial maxima first) P
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * TX + tx;
    const int row0 = get_group_id(0) * BM;
    const long b = get_group_id(1);
    Q += b * (long)T * D;
    K += b * (long)S * D;
    V += b * (long)S * DV;
    O += b * (long)T * DV;
    for (int e = lid; e < BM * D / 4; e += NT) {
        const int r = e / (D / 4), c = e % (D / 4) * 4;
        *(__local float4*)(Qs + r * LDQ + c) = row0 + r < T ? vload4(0, Q + (long)(row0 + r) * D + c) : (float4)(0.0f);
    }
    float o[RM][CN], m[RM], l[RM];
    #pragma unroll
    for (int i = 0; i < RM; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        #pragma unroll
        for (int c = 0; c < CN; ++c) o[i][c] = 0.0f;
    }
#if PREFETCH
    // This work-item's share of a block of K (of V): BN * D / 4 / NT vectors, in registers.
    float4 kr[BN * D / 4 / NT], vr[BN * DV / 4 / NT];
    #define LOAD_SHARE(reg, X, W, first)                                                             \
        _Pragma("unroll") for (int x = 0; x < BN * W / 4 / NT; ++x) {                               \
            const int e = lid + x * NT, j = e / (W / 4), c = e % (W / 4) * 4;                       \
            reg[x] = (first) + j < S ? vload4(0, X + (long)((first) + j) * W + c) : (float4)(0.0f); \
        }
    #define STORE_SHARE(reg, W, LD)                                                                  \
        _Pragma("unroll") for (int x = 0; x < BN * W / 4 / NT; ++x) {                               \
            const int e = lid + x * NT, j = e / (W / 4), c = e % (W / 4) * 4;                       \
            *(__local float4*)(KV + j * LD + c) = reg[x];                                           \
        }
    LOAD_SHARE(kr, K, D, 0)
#endif
    for (int j0 = 0; j0 < S; j0 += BN) {
        barrier(CLK_LOCAL_MEM_FENCE);  // every warp has read the previous K and V
#if PREFETCH
        STORE_SHARE(kr, D, LDK)
        LOAD_SHARE(vr, V, DV, j0)
#else
        LOAD_BLOCK(Ks, K, D, LDK, j0)
#endif
#if WARP
        LOAD_BLOCK(Vs, V, DV, LDV, j0)
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        float sc[RM][RN];
        #pragma unroll
        for (int i = 0; i < RM; ++i)
            #pragma unroll
            for (int j = 0; j < RN; ++j) sc[i][j] = 0.0f;
        for (int c = 0; c < D; c += 4) {
            float4 qv[RM], kv[RN];
            #pragma unroll
            for (int i = 0; i < RM; ++i) qv[i] = *(__local const float4*)(Qs + (ty + TY * i) * LDQ + c);
            #pragma unroll
            for (int j = 0; j < RN; ++j) kv[j] = *(__local const float4*)(Ks + (tx + TX * j) * LDK + c);
            #pragma unroll
            for (int i = 0; i < RM; ++i)
                #pragma unroll
                for (int j = 0; j < RN; ++j)
                    sc[i][j] = fma(qv[i].w, kv[j].w, fma(qv[i].z, kv[j].z, fma(qv[i].y, kv[j].y, fma(qv[i].x, kv[j].x, sc[i][j]))));
        }
        // Scale, mask the keys past S, and agree on each row's maximum.
        float next[RM];
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            float part = m[i];
            #pragma unroll
            for (int j = 0; j < RN; ++j) {
                sc[i][j] = j0 + tx + TX * j < S ? sc[i][j] * scale : -INFINITY;
                part = LT_MAX(part, sc[i][j]);
            }
#if WARP
            part = LT_MAX(part, lt_shfl_xor(part, 1));
            part = LT_MAX(part, lt_shfl_xor(part, 2));
            part = LT_MAX(part, lt_shfl_xor(part, 4));
            next[i] = part;
#else
            Ps[(ty + TY * i) * TX + tx] = part;
#endif
        }
#if !WARP
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            float mx = m[i];
            #pragma unroll
            for (int t = 0; t < TX; t += 4) {
                const float4 w = *(__local const float4*)(Ps + (ty + TY * i) * TX + t);
                mx = LT_MAX(LT_MAX(LT_MAX(LT_MAX(mx, w.x), w.y), w.z), w.w);
            }
            next[i] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the maxima and K are read: P and V overwrite them
#endif
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            // A row whose scores so far are all -inf keeps weights 0 (exp(-inf - 0)), not NaN.
            const float shift = next[i] == -INFINITY ? 0.0f : next[i];
            const float alpha = exp(m[i] - shift);
            m[i] = next[i];
            l[i] *= alpha;
            #pragma unroll
            for (int c = 0; c < CN; ++c) o[i][c] *= alpha;
            #pragma unroll
            for (int j = 0; j < RN; ++j) {
                const float p = exp(sc[i][j] - shift);
                l[i] += p;
                Ps[(ty + TY * i) * LDP + tx + TX * j] = p;
            }
        }
#if WARP
        WARP_SYNC();  // this warp's rows of P are written
#elif PREFETCH
        STORE_SHARE(vr, DV, LDV)
        if (j0 + BN < S) {
            LOAD_SHARE(kr, K, D, j0 + BN)
        }
        barrier(CLK_LOCAL_MEM_FENCE);
#else
        LOAD_BLOCK(Vs, V, DV, LDV, j0)
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        for (int j = 0; j < BN; j += 4) {
            float4 pv[RM], vv[4][CN / 4];
            #pragma unroll
            for (int i = 0; i < RM; ++i) pv[i] = *(__local const float4*)(Ps + (ty + TY * i) * LDP + j);
            #pragma unroll
            for (int t = 0; t < 4; ++t)
                #pragma unroll
                for (int c = 0; c < CN / 4; ++c) vv[t][c] = *(__local const float4*)(Vs + (j + t) * LDV + c * 4 * TX + tx * 4);
            #pragma unroll
            for (int i = 0; i < RM; ++i)
                #pragma unroll
                for (int c = 0; c < CN / 4; ++c) {
                    float4 acc = (float4)(o[i][4 * c], o[i][4 * c + 1], o[i][4 * c + 2], o[i][4 * c + 3]);
                    acc = fma((float4)(pv[i].x), vv[0][c], acc);
                    acc = fma((float4)(pv[i].y), vv[1][c], acc);
                    acc = fma((float4)(pv[i].z), vv[2][c], acc);
                    acc = fma((float4)(pv[i].w), vv[3][c], acc);
                    o[i][4 * c] = acc.x, o[i][4 * c + 1] = acc.y, o[i][4 * c + 2] = acc.z, o[i][4 * c + 3] = acc.w;
                }
        }
#if WARP
        WARP_SYNC();  // P is read before the next block writes it
#endif
    }
    // Each work-item summed the weights of its own keys: the rows' totals.
#if !WARP
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int i = 0; i < RM; ++i) Ps[(ty + TY * i) * TX + tx] = l[i];
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    #pragma unroll
    for (int i = 0; i < RM; ++i) {
#if WARP
        float total = l[i];
        total += lt_shfl_xor(total, 1);
        total += lt_shfl_xor(total, 2);
        total += lt_shfl_xor(total, 4);
#else
        float total = 0.0f;
        #pragma unroll
        for (int t = 0; t < TX; t += 4) {
            const float4 w = *(__local const float4*)(Ps + (ty + TY * i) * TX + t);
            total += w.x + w.y + w.z + w.w;
        }
#endif
        const int row = row0 + ty + TY * i;
        if (row >= T) continue;
        #pragma unroll
        for (int c = 0; c < CN / 4; ++c)
            vstore4((float4)(o[i][4 * c], o[i][4 * c + 1], o[i][4 * c + 2], o[i][4 * c + 3]) / total, 0,
                    O + (long)row * DV + c * 4 * TX + tx * 4);
    }
}
)CL";
    return s;
}

bool ok(cl_int err, const char* what) {
    if (err != CL_SUCCESS) std::fprintf(stderr, "attention_kernel: %s failed (%d)\n", what, err);
    return err == CL_SUCCESS;
}

}  // namespace

int main(int argc, char** argv) {
    Shape sh;
    int reps = 15;
    bool print_source = false;
    for (int i = 1; i < argc; ++i) {
        auto value = [&](int& into) {
            if (i + 1 >= argc) return false;
            into = std::atoi(argv[++i]);
            return true;
        };
        const std::string a = argv[i];
        const bool read = a == "--batch" ? value(sh.batch) : a == "--t" ? value(sh.t) : a == "--s" ? value(sh.s)
                        : a == "--d" ? value(sh.d) : a == "--dv" ? value(sh.dv) : a == "--bm" ? value(sh.bm)
                        : a == "--bn" ? value(sh.bn) : a == "--tx" ? value(sh.tx) : a == "--ty" ? value(sh.ty)
                        : a == "--max-registers" ? value(sh.max_registers) : a == "--prefetch" ? (sh.prefetch = true)
                        : a == "--warp" ? (sh.warp = true) : a == "--reps" ? value(reps) : a == "--print-source" ? (print_source = true)
                        : false;
        if (!read) {
            std::fprintf(stderr, "usage: attention_kernel [--batch B] [--t T] [--s S] [--d D] [--dv DV] [--bm BM] [--bn BN] "
                                 "[--tx TX] [--ty TY] [--prefetch] [--max-registers N] [--warp] [--reps R] [--print-source]\n");
            return 2;
        }
    }
    const int threads = sh.tx * sh.ty;
    if (sh.prefetch && ((sh.bn * sh.d / 4) % threads || (sh.bn * sh.dv / 4) % threads)) {
        std::fprintf(stderr, "attention_kernel: --prefetch needs BN * D / 4 and BN * DV / 4 multiples of TX * TY\n");
        return 2;
    }
    if (reps < 1) {
        std::fprintf(stderr, "attention_kernel: --reps takes at least 1\n");
        return 2;
    }
    if (sh.warp && (sh.tx != 8 || sh.prefetch)) {
        std::fprintf(stderr, "attention_kernel: --warp needs TX 8 (a row's work-items: 8 lanes of a warp), no --prefetch\n");
        return 2;
    }
    if (sh.tx % 4 || sh.ty < 1 || sh.d % 4 || sh.dv % (4 * sh.tx) || sh.bm % sh.ty || sh.bn % sh.tx || sh.bn % 4 ||
        sh.batch < 1 || sh.t < 1 || sh.s < 1) {
        std::fprintf(stderr, "attention_kernel: TX must be a multiple of 4, D of 4, DV of 4 TX, BM of TY, BN of TX and 4\n");
        return 2;
    }
    const std::string source = attention_source(sh);
    if (print_source) std::fputs(source.c_str(), stdout);
    cl_device_id device = first_gpu_or_device();
    if (!device) {
        std::fprintf(stderr, "attention_kernel: no OpenCL device\n");
        return 2;
    }
    char name[256] = {};
    clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof name, name, nullptr);
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    if (!ok(err, "clCreateContext")) return 2;
    const char* text = source.c_str();
    cl_program program = clCreateProgramWithSource(context, 1, &text, nullptr, &err);
    char vendor[256] = {};
    clGetDeviceInfo(device, CL_DEVICE_VENDOR, sizeof vendor, vendor, nullptr);
    const bool nvidia = std::strstr(vendor, "NVIDIA") != nullptr;
    err = clBuildProgram(program, 1, &device, nvidia ? "-cl-nv-verbose" : "", nullptr, nullptr);
    std::vector<char> log(1 << 16);
    clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
    if (err != CL_SUCCESS) {
        std::fprintf(stderr, "attention_kernel: build failed (%d):\n%s\n", err, log.data());
        return 2;
    }
    if (nvidia && sh.max_registers > 0) {  // the cap NVIDIA's OpenCL C compiler has no option for, through the PTX
        const std::vector<unsigned char> binary = binary_of(program);
        const std::optional<std::string> capped =
            lazytensor::detail::opencl::ptx_with_register_cap(std::string(binary.begin(), binary.end()), sh.max_registers);
        if (!capped) {
            std::fprintf(stderr, "attention_kernel: the binary is not PTX of one kernel without a register cap\n");
            return 2;
        }
        const std::string& ptx = *capped;
        const unsigned char* bytes = reinterpret_cast<const unsigned char*>(ptx.data());
        const std::size_t length = ptx.size();
        clReleaseProgram(program);
        program = clCreateProgramWithBinary(context, 1, &device, &length, &bytes, nullptr, &err);
        if (!ok(err, "clCreateProgramWithBinary")) return 2;
        err = clBuildProgram(program, 1, &device, "-cl-nv-verbose", nullptr, nullptr);
        clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, log.size(), log.data(), nullptr);
        if (err != CL_SUCCESS) {
            std::fprintf(stderr, "attention_kernel: the capped build failed (%d):\n%s\n", err, log.data());
            return 2;
        }
    }
    std::string registers;
    for (const char* at = std::strstr(log.data(), "Used "); at; at = std::strstr(at + 1, "Used "))
        registers = std::string(at, std::strcspn(at, "\n"));
    cl_kernel kernel = clCreateKernel(program, "lt_attention", &err);
    if (!ok(err, "clCreateKernel")) return 2;
    const std::size_t nq = std::size_t(sh.batch) * sh.t * sh.d, nk = std::size_t(sh.batch) * sh.s * sh.d,
                      nv = std::size_t(sh.batch) * sh.s * sh.dv, no = std::size_t(sh.batch) * sh.t * sh.dv;
    std::vector<float> q(nq), k(nk), v(nv), o(no);
    std::mt19937 rng(11);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (float& x : q) x = dist(rng);
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    const float scale = 1.0f / std::sqrt(float(sh.d));
    auto buffer = [&](std::vector<float>& host, cl_mem_flags flags) {
        return clCreateBuffer(context, flags | CL_MEM_COPY_HOST_PTR, host.size() * 4, host.data(), &err);
    };
    cl_mem dq = buffer(q, CL_MEM_READ_ONLY), dk = buffer(k, CL_MEM_READ_ONLY), dv = buffer(v, CL_MEM_READ_ONLY),
           dout = buffer(o, CL_MEM_WRITE_ONLY);
    if (!ok(err, "clCreateBuffer")) return 2;
    cl_command_queue queue = clCreateCommandQueue(context, device, CL_QUEUE_PROFILING_ENABLE, &err);
    cl_uint arg = 0;
    for (cl_mem mem : {dout, dq, dk, dv}) clSetKernelArg(kernel, arg++, sizeof mem, &mem);
    clSetKernelArg(kernel, arg++, sizeof(cl_int), &sh.t);
    clSetKernelArg(kernel, arg++, sizeof(cl_int), &sh.s);
    clSetKernelArg(kernel, arg++, sizeof(float), &scale);
    const std::size_t local[2] = {std::size_t(sh.tx), std::size_t(sh.ty)};
    const std::size_t global[2] = {std::size_t((sh.t + sh.bm - 1) / sh.bm) * sh.tx, std::size_t(sh.batch) * sh.ty};
    std::vector<double> ms;
    for (int rep = -1; rep < reps; ++rep) {
        cl_event event = nullptr;
        if (!ok(clEnqueueNDRangeKernel(queue, kernel, 2, nullptr, global, local, 0, nullptr, &event), "clEnqueueNDRangeKernel"))
            return 2;
        clWaitForEvents(1, &event);
        cl_ulong start = 0, end = 0;
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
        clReleaseEvent(event);
        if (rep >= 0) ms.push_back((end - start) * 1e-6);
    }
    clEnqueueReadBuffer(queue, dout, CL_TRUE, 0, no * 4, o.data(), 0, nullptr, nullptr);
    // Sampled rows against softmax(q k^T * scale) v in double.
    double worst = 0;
    std::uniform_int_distribution<int> pick_b(0, sh.batch - 1), pick_t(0, sh.t - 1);
    for (int sample = 0; sample < 32; ++sample) {
        const int b = sample == 0 ? sh.batch - 1 : pick_b(rng), t = sample == 0 ? sh.t - 1 : pick_t(rng);
        std::vector<double> score(std::size_t(sh.s));
        double most = -INFINITY, total = 0;
        for (int j = 0; j < sh.s; ++j) {
            double dot = 0;
            for (int c = 0; c < sh.d; ++c)
                dot += double(q[(std::size_t(b) * sh.t + t) * sh.d + c]) * k[(std::size_t(b) * sh.s + j) * sh.d + c];
            score[std::size_t(j)] = dot * scale;
            most = std::max(most, score[std::size_t(j)]);
        }
        for (double& x : score) total += x = std::exp(x - most);
        for (int c = 0; c < sh.dv; ++c) {
            double want = 0, magnitude = 0;
            for (int j = 0; j < sh.s; ++j) {
                want += score[std::size_t(j)] / total * v[(std::size_t(b) * sh.s + j) * sh.dv + c];
                magnitude += std::fabs(score[std::size_t(j)] / total * v[(std::size_t(b) * sh.s + j) * sh.dv + c]);
            }
            worst = std::max(worst, std::fabs(o[(std::size_t(b) * sh.t + t) * sh.dv + c] - want) / std::max(magnitude, 1e-30));
        }
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    const double flops = 2.0 * 2.0 * sh.batch * double(sh.t) * sh.s * (sh.d + sh.dv) / 2.0;
    std::printf("%s: attention %d x T %d x S %d, d %d, dv %d, tiles %dx%d, %dx%d work-items%s%s, cap %d: %.3f ms (min %.3f), %.1f TFLOP/s, relative error %.1e%s  %s\n",
                name, sh.batch, sh.t, sh.s, sh.d, sh.dv, sh.bm, sh.bn, sh.tx, sh.ty, sh.prefetch ? ", prefetch" : "", sh.warp ? ", warp shuffles" : "", sh.max_registers, median, ms.front(), flops / (median * 1e9), worst,
                worst < 1e-4 ? "" : "  WRONG", registers.c_str());
    return worst < 1e-4 ? 0 : 1;
}
