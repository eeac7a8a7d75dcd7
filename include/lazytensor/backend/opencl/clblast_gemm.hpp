// SPDX-License-Identifier: MIT
// Matrix products on OpenCL through CLBlast, enqueued on the backend's queue.
//
// One product (no batch) is a Gemm; a batch along one axis with constant strides (zero for a
// shared operand) a GemmStridedBatched; any other batch a GemmBatched with per-matrix offsets.
// Operands are read in place in BLAS layouts: row-major, or column-major as a transpose flag,
// with the leading dimension their views give. CLBlast compiles its kernels on first use of a
// routine in a process (seconds on some devices); the backend reports that in LAZYTENSOR_DEBUG.
#pragma once

#include "../../core/config.hpp"

#if LAZYTENSOR_OPENCL && LAZYTENSOR_CLBLAST

#include <clblast.h>

#include <string>
#include <vector>

#include "../../ir/gemm.hpp"
#include "cl_api.hpp"

namespace lazytensor::detail::opencl {

/// The name of a CLBlast status; OpenCL's own codes by their CL_ names.
inline std::string clblast_status_name(clblast::StatusCode status) {
    using S = clblast::StatusCode;
    switch (status) {
        case S::kNotImplemented: return "CLBlast kNotImplemented";
        case S::kInvalidMatrixA: return "CLBlast kInvalidMatrixA";
        case S::kInvalidMatrixB: return "CLBlast kInvalidMatrixB";
        case S::kInvalidMatrixC: return "CLBlast kInvalidMatrixC";
        case S::kInvalidDimension: return "CLBlast kInvalidDimension";
        case S::kInvalidLeadDimA: return "CLBlast kInvalidLeadDimA";
        case S::kInvalidLeadDimB: return "CLBlast kInvalidLeadDimB";
        case S::kInvalidLeadDimC: return "CLBlast kInvalidLeadDimC";
        case S::kInsufficientMemoryA: return "CLBlast kInsufficientMemoryA";
        case S::kInsufficientMemoryB: return "CLBlast kInsufficientMemoryB";
        case S::kInsufficientMemoryC: return "CLBlast kInsufficientMemoryC";
        case S::kInsufficientMemoryTemp: return "CLBlast kInsufficientMemoryTemp";
        case S::kInvalidBatchCount: return "CLBlast kInvalidBatchCount";
        case S::kInvalidOverrideKernel: return "CLBlast kInvalidOverrideKernel";
        case S::kMissingOverrideParameter: return "CLBlast kMissingOverrideParameter";
        case S::kInvalidLocalMemUsage: return "CLBlast kInvalidLocalMemUsage";
        case S::kNoDoublePrecision: return "CLBlast kNoDoublePrecision";
        case S::kDatabaseError: return "CLBlast kDatabaseError";
        case S::kUnknownError: return "CLBlast kUnknownError";
        case S::kUnexpectedError: return "CLBlast kUnexpectedError";
        default: break;
    }
    const int code = static_cast<int>(status);
    return code > -1000 ? status_name(code) : "CLBlast status";
}

/// The CLBlast routine a product runs as.
inline const char* clblast_routine(const ir::Gemm& g) {
    if (g.batch_count() == 1) return "Gemm";
    return g.batch.size() == 1 ? "GemmStridedBatched" : "GemmBatched";
}

/// Enqueues c = a x b (every operand in a BLAS layout; c contiguous) on `queue`; `event` gets
/// the event of CLBlast's last kernel.
template <class T>
clblast::StatusCode clblast_gemm(const ir::Gemm& g, cl_mem a, cl_mem b, cl_mem c, cl_command_queue queue,
                                 cl_event* event) {
    using clblast::Transpose;
    const ir::BlasOperand oa = *ir::blas_operand(g.a, g.m, g.k), ob = *ir::blas_operand(g.b, g.k, g.n);
    const Transpose ta = oa.transposed ? Transpose::kYes : Transpose::kNo;
    const Transpose tb = ob.transposed ? Transpose::kYes : Transpose::kNo;
    const auto layout = clblast::Layout::kRowMajor;
    const auto m = static_cast<std::size_t>(g.m), n = static_cast<std::size_t>(g.n), k = static_cast<std::size_t>(g.k);
    const auto lda = static_cast<std::size_t>(oa.ld), ldb = static_cast<std::size_t>(ob.ld);
    auto size = [](std::int64_t v) { return static_cast<std::size_t>(v); };
    const std::int64_t count = g.batch_count();
    if (count == 1)
        return clblast::Gemm<T>(layout, ta, tb, m, n, k, T(1), a, size(g.a.offset), lda, b, size(g.b.offset), ldb, T(0),
                                c, 0, n, &queue, event);
    if (g.batch.size() == 1)
        return clblast::GemmStridedBatched<T>(layout, ta, tb, m, n, k, T(1), a, size(g.a.offset), lda,
                                              size(g.a.batch_strides[0]), b, size(g.b.offset), ldb,
                                              size(g.b.batch_strides[0]), T(0), c, 0, n, m * n, size(count), &queue,
                                              event);
    std::vector<std::int64_t> a_offsets, b_offsets;
    g.batch_offsets(a_offsets, b_offsets);
    std::vector<std::size_t> ao(a_offsets.begin(), a_offsets.end()), bo(b_offsets.begin(), b_offsets.end()), co;
    for (std::int64_t i = 0; i < count; ++i) co.push_back(size(i) * m * n);
    const std::vector<T> alphas(size(count), T(1)), betas(size(count), T(0));
    return clblast::GemmBatched<T>(layout, ta, tb, m, n, k, alphas.data(), a, ao.data(), lda, b, bo.data(), ldb,
                                   betas.data(), c, co.data(), n, size(count), &queue, event);
}

}  // namespace lazytensor::detail::opencl

#endif
