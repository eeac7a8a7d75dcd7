// SPDX-License-Identifier: MIT
// Batched small linear algebra on an OpenCL device (issue 47): Cholesky and solve of matrices of
// order at most 64, one work-group per matrix, the matrix (and the right-hand side) in local
// memory. LAPACK through host copies (the backend's default) pays two copies and a host pass
// per call, which for a batch of 4096 32x32 matrices is ~200x a kernel's time on a GPU.
//   - Cholesky: the Cholesky-Crout order (a column at a time: its diagonal from the row's
//     products, then the entries below it, one row per work-item); L's upper triangle is zero.
//     Only the lower triangle of A is read, as LAPACK's potrf('L').
//   - Solve: LU with partial pivoting (the first largest |a| of the column, as LAPACK's getrf),
//     the right-hand side's rows swapped and eliminated with A's (an element of the trailing
//     rows per work-item), then back substitution by columns of U (as trsm does).
// A matrix with a NaN or infinity gives NaN results (as the host's routines); a matrix that is
// not positive definite (Cholesky) or singular (a pivot exactly zero) is a LinAlgError naming the
// batch element, as LAPACK's info is on the host. Larger matrices (order above 64, or a
// right-hand side too wide for local memory) run recursively on the device's GEMM kernel
// (linalg_blocked.hpp). LAZYTENSOR_OPENCL_LINALG chooses: auto (these kernels on GPUs and
// accelerators; LAPACK on the host for CPU devices, where it is faster), device (wherever they
// apply), host (always LAPACK on the host).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/linalg.hpp"
#include "cl_api.hpp"
#include "gemm_routines.hpp"
#include "launch.hpp"
#include "linalg_blocked.hpp"
#include "programs.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

enum class LinalgChoice { Auto, Device, Host };

/// LAZYTENSOR_OPENCL_LINALG: auto (default), device or host; anything else is a ValueError.
inline LinalgChoice linalg_choice_from_env() {
    return static_cast<LinalgChoice>(env_choice("LAZYTENSOR_OPENCL_LINALG", {"auto", "device", "host"}, 0,
                                                "auto, device (batched kernels of small matrices) or host (LAPACK)"));
}

class LinalgRoutines {
public:
    LinalgRoutines(RoutineContext context, GemmRoutines& gemm) : c_(context), blocked_(context, gemm) {}

    /// Largest order the batched kernels take.
    static constexpr std::int64_t kMaxOrder = 64;

    /// Whether `L` runs on the device (else LAPACK on the host through copies).
    bool runs(const ir::Linalg& L) const {
        if (choice_ == LinalgChoice::Host) return false;
        if (choice_ == LinalgChoice::Auto && c_.device.type() == DeviceType::Cpu) return false;
        return batched(L) || blocked_.takes(L);
    }

    /// Whether `L` runs on the batched small kernels (else, where runs(L), recursively).
    bool batched(const ir::Linalg& L) const {
        const std::int64_t most = small_order_ ? small_order_ : kMaxOrder;
        if (L.op != LinalgOp::Cholesky && L.op != LinalgOp::Solve) return false;
        if (L.n < 1 || L.n > most || (L.op == LinalgOp::Solve && (L.k < 1 || L.k > kMaxOrder))) return false;
        if (L.dtype != DType::Float32 && !(L.dtype == DType::Float64 && c_.device.fp64())) return false;
        if (L.batch_count() < 1) return false;
        const std::size_t local = dtype_size(L.dtype) * static_cast<std::size_t>(L.n * L.n + (L.op == LinalgOp::Solve ? L.n * L.k : 0));
        return local + 256 <= c_.device.traits().local_memory;
    }

    LinalgChoice choice() const { return choice_; }
    void set_choice(LinalgChoice choice) { choice_ = choice; }
    /// The recursive routines' leaf order (BlockedLinalg::set_block).
    void set_block(int block) { blocked_.set_block(block); }
    int block() const { return blocked_.block(); }
    void set_local_swaps(bool on) { blocked_.set_local_swaps(on); }
    /// The largest order the batched kernels take (0: kMaxOrder); tests lower it so that small
    /// matrices run the recursive routines.
    void set_small_order(std::int64_t order) {
        if (order < 0 || order > kMaxOrder) fail<ValueError>("the batched linalg kernels take orders up to ", kMaxOrder, ", not ", order);
        small_order_ = order;
    }
    std::int64_t small_order() const { return small_order_; }

    /// Runs `L` (runs(L)): operands[0] is A, operands[1] B; `out` the packed results.
    void run(const ir::Linalg& L, const std::vector<const Buffer*>& operands, Buffer& out) {
        if (!batched(L)) {
            blocked_.run(L, operands, out, [&](std::int64_t b, int info) { failed(L, b, info, blocked_.routine(L)); });
            return;
        }
        const std::int64_t batch = L.batch_count();
        const std::shared_ptr<ProgramOwner> program = c_.programs.build(source(L));
        const KernelOwner kernel = c_.programs.make_kernel(*program, "lt_linalg");
        const BufferPtr info = c_.backend.allocate(DType::Int32, batch);
        const std::size_t group = kGroup;
        if (L.op == LinalgOp::Cholesky)
            c_.launcher.run(kernel, "lt_linalg", static_cast<std::size_t>(batch) * group, group, *operands[0], out, *info);
        else
            c_.launcher.run(kernel, "lt_linalg", static_cast<std::size_t>(batch) * group, group, *operands[0], *operands[1], out, *info);
        std::vector<std::int32_t> codes(static_cast<std::size_t>(batch));
        c_.backend.read(*info, 0, codes.data(), codes.size() * sizeof(std::int32_t));
        for (std::int64_t b = 0; b < batch; ++b)
            if (codes[static_cast<std::size_t>(b)] > 0)
                failed(L, b, codes[static_cast<std::size_t>(b)], concat("lazytensor's batched kernel on ", c_.device.describe()));
    }

    /// How run() runs `L`.
    std::string routine(const ir::Linalg& L) const {
        if (!batched(L)) return blocked_.routine(L);
        return concat("lazytensor's batched ", L.op == LinalgOp::Cholesky ? "Cholesky" : "LU solve", " kernel on ",
                      c_.device.describe(), " (one work-group per ", L.n, "x", L.n, " matrix, in local memory)");
    }

    /// The program of `L` (its layouts and sizes written in).
    static std::string source(const ir::Linalg& L) {
        const bool f64 = L.dtype == DType::Float64, chol = L.op == LinalgOp::Cholesky;
        const std::string T = f64 ? "double" : "float";
        std::string s = f64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
        s += concat("#define N ", L.n, "\n#define K ", chol ? 1 : L.k, "\n#define G ", kGroup, "\ntypedef ", T, " T;\n");
        // Batch element b's offsets: its index along each batch axis times each operand's stride.
        std::string offsets = concat("    long rest = b, a0 = ", L.operands[0].offset, "L, b0 = ", chol ? 0 : L.operands[1].offset, "L;\n");
        for (std::size_t d = L.batch.size(); d-- > 0;) {
            offsets += concat("    { const long i = rest % ", L.batch[d], "L; rest /= ", L.batch[d], "L; a0 += i * ",
                              L.operands[0].strides[d], "L;");
            if (!chol) offsets += concat(" b0 += i * ", L.operands[1].strides[d], "L;");
            offsets += " }\n";
        }
        const std::size_t r = L.batch.size();
        const std::string ars = concat(L.operands[0].strides[r], "L"), acs = concat(L.operands[0].strides[r + 1], "L");
        if (chol) {
            s += "__kernel __attribute__((reqd_work_group_size(G, 1, 1)))\n"
                 "void lt_linalg(__global const T* a, __global T* out, __global int* info) {\n"
                 "    __local T A[N * N];\n    __local int bad;\n"
                 "    const long b = get_group_id(0);\n    const int t = get_local_id(0);\n" +
                 offsets +
                 "    if (t == 0) bad = 0;\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
                 "    for (int e = t; e < N * N; e += G) {\n"
                 "        const int i = e / N, j = e % N;\n"
                 "        T v = 0;\n"
                 "        if (i >= j) {\n            v = a[a0 + i * " + ars + " + j * " + acs + "];\n"
                 "            if (!isfinite(v)) bad = -1;\n        }\n"
                 "        A[e] = v;\n    }\n"
                 "    barrier(CLK_LOCAL_MEM_FENCE);\n"
                 "    if (bad == 0) {\n"
                 "        for (int j = 0; j < N; ++j) {\n"
                 "            if (t == 0) {\n"
                 "                T d = A[j * N + j];\n"
                 "                for (int k = 0; k < j; ++k) d -= A[j * N + k] * A[j * N + k];\n"
                 "                if (!(d > 0)) bad = j + 1;\n"
                 "                A[j * N + j] = sqrt(d);\n"
                 "            }\n"
                 "            barrier(CLK_LOCAL_MEM_FENCE);\n"
                 "            if (bad != 0) break;\n"
                 "            for (int i = j + 1 + t; i < N; i += G) {\n"
                 "                T v = A[i * N + j];\n"
                 "                for (int k = 0; k < j; ++k) v -= A[i * N + k] * A[j * N + k];\n"
                 "                A[i * N + j] = v / A[j * N + j];\n"
                 "            }\n"
                 "            barrier(CLK_LOCAL_MEM_FENCE);\n"
                 "        }\n"
                 "    }\n"
                 "    for (int e = t; e < N * N; e += G)\n"
                 "        out[b * (N * N) + e] = bad == -1 ? (T)NAN : (e / N >= e % N ? A[e] : (T)0);\n"
                 "    if (t == 0) info[b] = bad > 0 ? bad : 0;\n"
                 "}\n";
            return s;
        }
        const std::string brs = concat(L.operands[1].strides[r], "L"), bcs = concat(L.operands[1].strides[r + 1], "L");
        s += "__kernel __attribute__((reqd_work_group_size(G, 1, 1)))\n"
             "void lt_linalg(__global const T* a, __global const T* rhs, __global T* out, __global int* info) {\n"
             "    __local T A[N * N];\n    __local T B[N * K];\n    __local int bad, pivot;\n"
             "    const long b = get_group_id(0);\n    const int t = get_local_id(0);\n" +
             offsets +
             "    if (t == 0) bad = 0;\n    barrier(CLK_LOCAL_MEM_FENCE);\n"
             "    for (int e = t; e < N * N; e += G) {\n"
             "        const T v = a[a0 + (e / N) * " + ars + " + (e % N) * " + acs + "];\n"
             "        if (!isfinite(v)) bad = -1;\n        A[e] = v;\n    }\n"
             "    for (int e = t; e < N * K; e += G) {\n"
             "        const T v = rhs[b0 + (e / K) * " + brs + " + (e % K) * " + bcs + "];\n"
             "        if (!isfinite(v)) bad = -1;\n        B[e] = v;\n    }\n"
             "    barrier(CLK_LOCAL_MEM_FENCE);\n"
             "    if (bad == 0) {\n"
             "        for (int j = 0; j < N; ++j) {\n"
             "            if (t == 0) {  // the first largest |a| of the column, as getrf\n"
             "                int p = j;\n"
             "                T best = fabs(A[j * N + j]);\n"
             "                for (int i = j + 1; i < N; ++i)\n"
             "                    if (fabs(A[i * N + j]) > best) { best = fabs(A[i * N + j]); p = i; }\n"
             "                pivot = p;\n"
             "                if (best == 0) bad = j + 1;\n"
             "            }\n"
             "            barrier(CLK_LOCAL_MEM_FENCE);\n"
             "            if (bad != 0) break;\n"
             "            const int p = pivot;\n"
             "            if (p != j) {\n"
             "                for (int c = t; c < N; c += G) { const T x = A[j * N + c]; A[j * N + c] = A[p * N + c]; A[p * N + c] = x; }\n"
             "                for (int c = t; c < K; c += G) { const T x = B[j * K + c]; B[j * K + c] = B[p * K + c]; B[p * K + c] = x; }\n"
             "            }\n"
             "            barrier(CLK_LOCAL_MEM_FENCE);\n"
             "            for (int i = j + 1 + t; i < N; i += G) A[i * N + j] /= A[j * N + j];  // the multipliers\n"
             "            barrier(CLK_LOCAL_MEM_FENCE);\n"
             "            // The trailing rows, an element of A's or B's remaining columns per work-item.\n"
             "            const int rows = N - j - 1, columns = N - j - 1 + K;\n"
             "            for (int e = t; e < rows * columns; e += G) {\n"
             "                const int i = j + 1 + e / columns, c = e % columns;\n"
             "                const T l = A[i * N + j];\n"
             "                if (c < N - j - 1) A[i * N + j + 1 + c] -= l * A[j * N + j + 1 + c];\n"
             "                else B[i * K + c - (N - j - 1)] -= l * B[j * K + c - (N - j - 1)];\n"
             "            }\n"
             "            barrier(CLK_LOCAL_MEM_FENCE);\n"
             "        }\n"
             "        if (bad == 0)\n"
             "            for (int j = N - 1; j >= 0; --j) {  // back substitution by columns of U, as trsm\n"
             "                for (int c = t; c < K; c += G) B[j * K + c] /= A[j * N + j];\n"
             "                barrier(CLK_LOCAL_MEM_FENCE);\n"
             "                for (int e = t; e < j * K; e += G) B[(e / K) * K + e % K] -= A[(e / K) * N + j] * B[j * K + e % K];\n"
             "                barrier(CLK_LOCAL_MEM_FENCE);\n"
             "            }\n"
             "        barrier(CLK_LOCAL_MEM_FENCE);\n"
             "    }\n"
             "    for (int e = t; e < N * K; e += G) out[b * (N * K) + e] = bad == -1 ? (T)NAN : B[e];\n"
             "    if (t == 0) info[b] = bad > 0 ? bad : 0;\n"
             "}\n";
        return s;
    }

private:
    static constexpr std::size_t kGroup = 64;

    /// The LinAlgError of batch element b, as the host's LAPACK path words it.
    [[noreturn]] void failed(const ir::Linalg& L, std::int64_t b, int info, const std::string& how) const {
        std::string where = concat("lt::linalg::", linalg_info(L.op).name);
        if (!L.batch.empty()) {
            Shape index(L.batch.size(), 0);
            std::int64_t rest = b;
            for (std::size_t d = L.batch.size(); d-- > 0;) {
                index[d] = rest % L.batch[d];
                rest /= L.batch[d];
            }
            where += concat(" (batch element ", index, " of batch shape ", L.batch, ")");
        }
        const std::string routine = concat(how, ", info ", info);
        if (L.op == LinalgOp::Cholesky)
            fail<LinAlgError>(where, ": the matrix is not positive definite: the factorization stopped at its leading minor of order ",
                              info, " (", routine, ")");
        fail<LinAlgError>(where, ": the matrix is singular: U[", info - 1, ", ", info - 1,
                          "] of its LU factorization with partial pivoting is exactly zero (", routine, ")");
    }

    RoutineContext c_;
    BlockedLinalg blocked_;
    LinalgChoice choice_ = linalg_choice_from_env();
    std::int64_t small_order_ = 0;
};

}  // namespace lazytensor::detail::opencl
