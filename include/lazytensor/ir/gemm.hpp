// SPDX-License-Identifier: MIT
// A matrix product as a schedule item: C[b..., m, n] = sum_k A[b..., m, k] * B[b..., k, n].
//
// The scheduler gives every matmul node an item of its own (as ug does). Its operands are
// read in place through whatever strides their views have (a transposed operand is a
// column-major matrix, a broadcast batch axis a zero stride); C is a fresh contiguous buffer.
// Backends run it: the host with a packed GEMM, OpenCL with its own kernel or CLBlast. Where
// the backend can, the product's element-wise consumer runs in the product's stores
// (fits_as_epilogue): relu(x @ w + b) is one kernel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "fusion.hpp"
#include "kernel.hpp"

namespace lazytensor::detail::ir {

/// Where the elements of one operand are: element (i, j) of batch index (b_0, b_1, ...) is at
/// offset + sum_t b_t * batch_strides[t] + i * row_stride + j * col_stride.
struct MatrixLayout {
    std::int64_t offset = 0;
    std::int64_t row_stride = 0;
    std::int64_t col_stride = 0;
    Strides batch_strides;
};

struct Gemm {
    DType dtype = DType::Float32;
    Shape batch;  // batch extents; C is contiguous [batch..., m, n]
    std::int64_t m = 0, n = 0, k = 0;
    MatrixLayout a;  // m x k
    MatrixLayout b;  // k x n

    std::int64_t batch_count() const { return numel(batch); }

    /// The element offsets of A and B for every batch index, in row-major order of `batch`
    /// (C's batch i starts at i * m * n).
    void batch_offsets(std::vector<std::int64_t>& a_offsets, std::vector<std::int64_t>& b_offsets) const {
        const std::int64_t count = batch_count();
        a_offsets.assign(static_cast<std::size_t>(count), a.offset);
        b_offsets.assign(static_cast<std::size_t>(count), b.offset);
        std::int64_t period = 1;  // how many consecutive batches share one index of axis t
        for (std::size_t t = batch.size(); t-- > 0;) {
            const std::int64_t extent = batch[t];
            for (std::int64_t i = 0; i < count; ++i) {
                const std::int64_t index = (i / period) % extent;
                a_offsets[static_cast<std::size_t>(i)] += index * a.batch_strides[t];
                b_offsets[static_cast<std::size_t>(i)] += index * b.batch_strides[t];
            }
            period *= extent;
        }
    }
};

/// How a BLAS library reads one operand: a row-major matrix with leading dimension `ld`, or
/// (transposed) a column-major one.
struct BlasOperand {
    bool transposed = false;
    std::int64_t ld = 1;
};

/// The BLAS form of a rows x cols operand, if it has one (one of its strides is 1 and the other
/// at least the extent it steps over). The stride of an extent-1 axis is free.
inline std::optional<BlasOperand> blas_operand(const MatrixLayout& l, std::int64_t rows, std::int64_t cols) {
    const std::int64_t min_ld_rows = std::max<std::int64_t>(1, cols), min_ld_cols = std::max<std::int64_t>(1, rows);
    if ((cols == 1 || l.col_stride == 1) && (rows == 1 || l.row_stride >= min_ld_rows))
        return BlasOperand{false, rows == 1 ? min_ld_rows : l.row_stride};
    if ((rows == 1 || l.row_stride == 1) && (cols == 1 || l.col_stride >= min_ld_cols))
        return BlasOperand{true, cols == 1 ? min_ld_cols : l.col_stride};
    return std::nullopt;
}

inline bool blas_readable(const Gemm& g) { return blas_operand(g.a, g.m, g.k) && blas_operand(g.b, g.k, g.n); }

/// Simplifies the batch: drops extent-1 axes, merges axes that both operands walk as one, and
/// folds the batch into the rows of A where B is shared by every batch (x[b, m, k] @ w[k, n]
/// is one GEMM of b*m rows). With `blas`, a fold that BLAS could not read is not made.
inline void normalize(Gemm& g, bool blas) {
    for (std::size_t t = g.batch.size(); t-- > 0;) {
        if (g.batch[t] != 1) continue;
        g.batch.erase(t);
        g.a.batch_strides.erase(t);
        g.b.batch_strides.erase(t);
    }
    for (std::size_t t = g.batch.size(); t-- > 1;) {  // merge axis t-1 into t (C always allows it)
        const std::int64_t e = g.batch[t];
        if (g.a.batch_strides[t - 1] != g.a.batch_strides[t] * e || g.b.batch_strides[t - 1] != g.b.batch_strides[t] * e)
            continue;
        g.batch[t - 1] *= e;
        g.batch.erase(t);
        g.a.batch_strides.erase(t - 1);
        g.b.batch_strides.erase(t - 1);
    }
    if (g.batch.size() != 1 || g.b.batch_strides[0] != 0) return;
    const std::int64_t stride = g.a.batch_strides[0];
    if (g.m != 1 && stride != g.m * g.a.row_stride) return;
    Gemm folded = g;
    folded.m = g.m * g.batch[0];
    if (g.m == 1) folded.a.row_stride = stride;
    folded.batch.clear();
    folded.a.batch_strides.clear();
    folded.b.batch_strides.clear();
    if (!blas || blas_readable(folded) || !blas_readable(g)) g = std::move(folded);
}

/// A kernel copying one operand ([batch..., rows, cols] as `layout` says) into a contiguous
/// buffer, and the operand's layout there: how a GEMM that needs BLAS layouts reads any other.
inline Kernel contiguous_copy(DType dtype, const Shape& batch, std::int64_t rows, std::int64_t cols,
                              MatrixLayout& layout) {
    Shape shape = batch;
    shape.push_back(rows);
    shape.push_back(cols);
    Strides strides = layout.batch_strides;
    strides.push_back(layout.row_stride);
    strides.push_back(layout.col_stride);
    Kernel k = contiguous_copy(dtype, shape, Access{layout.offset, strides});
    const Strides dense = contiguous_strides(shape);
    layout = MatrixLayout{0, cols, 1, Strides(dense.begin(), dense.end() - 2)};
    return k;
}

/// Whether kernel `k` can run as the epilogue of product `g` (ir::fits_as_epilogue), reading it
/// as parameter `product_param`. Its result must be of a floating dtype (a cast to another is an
/// epilogue too): an integer or bool result stays a kernel of its own, so that check mode
/// compares it exactly with the host's from the same product.
inline bool fits_as_epilogue(const Gemm& g, const Kernel& k, int product_param) {
    return fits_as_epilogue(g.dtype, g.batch_count() * g.m * g.n, k, product_param) && is_floating(k.params.back().dtype);
}

/// Whether kernel `k` can run as the prologue of an operand of product `g` (ir::fits_as_prologue)
/// from a float16, float32 or float64 input (a bfloat16 input is cast in a kernel of its own).
inline bool fits_as_prologue(const Gemm& g, const Kernel& k) {
    if (!fits_as_prologue(g.dtype, k)) return false;
    const DType in = k.params[0].dtype;
    return in == DType::Float16 || in == DType::Float32 || in == DType::Float64;
}

/// A GEMM's shape and operand layouts, as LAZYTENSOR_DEBUG=2 lists them.
inline std::string to_string(const Gemm& g) {
    std::ostringstream out;
    auto layout = [&](const char* name, const MatrixLayout& l) {
        out << "    " << name << ": offset " << l.offset << ", row stride " << l.row_stride << ", column stride "
            << l.col_stride;
        if (!l.batch_strides.empty()) out << ", batch strides " << l.batch_strides;
        out << "\n";
    };
    out << "    gemm " << g.dtype << ": batch " << g.batch << ", m " << g.m << ", n " << g.n << ", k " << g.k << "\n";
    layout("A", g.a);
    layout("B", g.b);
    return out.str();
}

}  // namespace lazytensor::detail::ir
