// SPDX-License-Identifier: MIT
// Large Cholesky and LU solve on an OpenCL device (issue 47): recursive algorithms whose flops
// are nearly all matrix products on the device's GEMM kernel, updating blocks of one buffer in
// place (gemm_routines.hpp's own_block: offsets and leading dimensions, no copies), with small
// kernels of our own at the leaves. The host only walks the recursion and enqueues; it waits
// once per call, to read each matrix's flags.
//   - Cholesky (A = L L^T from A's lower triangle, as potrf('L')), in the packed result itself:
//     chol(A11); A21 := A21 L11^-T (a triangular solve, recursive into GEMMs); A22 -= A21 A21^T
//     (a SYRK: recursive into GEMMs, the diagonal blocks as GEMMs that store their lower triangle
//     only); chol(A22). The leaves: one work-group factors a block of order <= nb in local memory.
//   - Solve (A X = B): LU with partial pivoting by Toledo's recursion over columns (the panel's
//     left half, its row swaps applied to the right half, a unit-lower triangular solve and a
//     GEMM update, the right half, its swaps applied back to the left half) in a copy of A; the
//     leaves are panels of at most nb columns factored by one work-group (the first largest |a|
//     of each column, as getrf). Then B's rows are swapped as the pivots say and the two
//     triangular solves run on B in the result, recursive into GEMMs like the above.
// A matrix with a NaN or an infinity (either operand) gives NaN results, as LAPACK's path; a
// matrix that is not positive definite, or singular (a pivot exactly zero), records its first
// failing order (getrf's and potrf's info) on the device and is a LinAlgError at the end.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../ir/gemm.hpp"
#include "../../ir/linalg.hpp"
#include "cl_api.hpp"
#include "fused_code.hpp"
#include "gemm_routines.hpp"
#include "launch.hpp"
#include "programs.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

class BlockedLinalg {
public:
    BlockedLinalg(RoutineContext context, GemmRoutines& gemm) : c_(context), gemm_(gemm) {}

    /// Whether the recursive routines take `L` (Cholesky or solve, float32, or float64 where the
    /// device has it).
    bool takes(const ir::Linalg& L) const {
        if (L.op != LinalgOp::Cholesky && L.op != LinalgOp::Solve) return false;
        if (L.n < 1 || L.batch_count() < 1 || (L.op == LinalgOp::Solve && L.k < 1)) return false;
        return L.dtype == DType::Float32 || (L.dtype == DType::Float64 && c_.device.fp64());
    }

    /// The order of the leaves from now on (0: the largest the device's local memory allows, at
    /// most 64). Tests force small ones, so that small matrices run several levels.
    void set_block(int block) {
        if (block < 0 || block == 1 || block > 64)
            fail<ValueError>("the OpenCL linalg block order is 0 (the default) or 2 to 64, not ", block);
        block_ = block;
    }
    int block() const { return block_; }
    /// Tests: whether row swaps may follow the pivot chain in local memory (else along each
    /// column, as for orders beyond local memory).
    void set_local_swaps(bool on) { local_swaps_ = on; }

    /// Runs `L` (takes(L)): operands[0] is A, operands[1] B; `out` the packed results. The
    /// LinAlgError of the first failing matrix, in batch order, after all have run: `failed`.
    template <class Failed>
    void run(const ir::Linalg& L, const std::vector<const Buffer*>& operands, Buffer& out, Failed&& failed) {
        dtype_ = L.dtype;
        kernels_ = &kernels_for(L.dtype);
        nb_ = block_ ? std::min<int>(block_, kernels_->max_order) : kernels_->max_order;
        const std::int64_t batch = L.batch_count(), n = L.n, k = L.k, r = static_cast<std::int64_t>(L.batch.size());
        const bool chol = L.op == LinalgOp::Cholesky;
        // Per matrix: a flag (an operand holds NaN or infinity), then the routine's info.
        const BufferPtr flags = c_.backend.allocate(DType::Int32, 2 * batch);
        std::vector<std::int32_t> codes(static_cast<std::size_t>(2 * batch), 0);
        c_.backend.write(*flags, 0, codes.data(), codes.size() * sizeof(std::int32_t));
        BufferPtr work, pivots;
        if (!chol) {
            work = c_.backend.allocate(L.dtype, n * n);
            pivots = c_.backend.allocate(DType::Int32, n);
        }
        const std::int64_t total = L.total();
        for (std::int64_t b = 0; b < batch; ++b) {
            std::int64_t at[2] = {L.operands[0].offset, L.operands[1].offset}, rest = b;
            for (std::int64_t d = r; d-- > 0;) {
                const std::int64_t i = rest % L.batch[static_cast<std::size_t>(d)];
                rest /= L.batch[static_cast<std::size_t>(d)];
                for (int o = 0; o < L.operand_count(); ++o) at[o] += i * L.operands[o].strides[static_cast<std::size_t>(d)];
            }
            const Strides& sa = L.operands[0].strides;
            const cl_int slot = static_cast<cl_int>(2 * b);
            if (chol) {
                Matrix m{&out, b * total, n};
                copy(out, m.offset, n, n, n, *operands[0], at[0], sa[r], sa[r + 1], true, *flags, slot);
                potrf(m, 0, n, *flags, slot + 1);
            } else {
                const Strides& sb = L.operands[1].strides;
                Matrix w{work.get(), 0, n}, x{&out, b * total, k};
                copy(*work, 0, n, n, n, *operands[0], at[0], sa[r], sa[r + 1], false, *flags, slot);
                copy(out, x.offset, k, n, k, *operands[1], at[1], sb[r], sb[r + 1], false, *flags, slot);
                getrf(w, 0, n, *pivots, *flags, slot + 1);
                laswp(x, n, 0, k, *pivots, 0, n);
                trsm_left(w, 0, n, false, true, x, 0, k);
                trsm_left(w, 0, n, true, false, x, 0, k);
            }
        }
        c_.backend.read(*flags, 0, codes.data(), codes.size() * sizeof(std::int32_t));
        for (std::int64_t b = 0; b < batch; ++b)
            if (codes[static_cast<std::size_t>(2 * b)] != 0) {
                const cl_long offset = b * total, count = total;
                launch(kernels_->nan, "lt_la_nan", static_cast<std::size_t>(total), out, offset, count);
            }
        for (std::int64_t b = 0; b < batch; ++b) {
            const std::int32_t info = codes[static_cast<std::size_t>(2 * b + 1)];
            if (codes[static_cast<std::size_t>(2 * b)] == 0 && info > 0) failed(b, info);
        }
    }

    /// How run() runs `L`.
    std::string routine(const ir::Linalg& L) const {
        const int nb = block_ ? block_ : 64;
        return concat("lazytensor's recursive ", L.op == LinalgOp::Cholesky ? "Cholesky" : "LU solve (partial pivoting)", " on ",
                      c_.device.describe(), ": GEMMs on the device's own GEMM kernel, leaves of order ", nb,
                      " or less in kernels of its own");
    }

private:
    /// A row-major matrix in a buffer: element (i, j) at offset + i * ld + j.
    struct Matrix {
        Buffer* buffer;
        std::int64_t offset, ld;
        std::int64_t at(std::int64_t i, std::int64_t j) const { return offset + i * ld + j; }
    };
    struct Kernels {
        std::shared_ptr<ProgramOwner> program;
        KernelOwner copy, nan, potrf, trsm, getf2, laswp, moves, gather, scatter;
        int max_order = 64;
        std::size_t potrf_group = 0, getf2_group = 0, moves_group = 0;  // work-groups of the single-group kernels
    };
    static constexpr int kTrsmColumns = 32;   // right-hand sides per work-group of lt_la_trsm
    static constexpr int kGroup = 1024;       // work-items of lt_la_getf2 (at most)

    template <class... Args>
    void launch(const KernelOwner& kernel, const char* name, std::size_t work, const Args&... args) {
        const std::size_t group = 64;
        c_.launcher.run(kernel, name, (work + group - 1) / group * group, group, args...);
    }

    /// Halves `s` (> nb) at a multiple of nb.
    std::int64_t split(std::int64_t s) const { return (s / 2 + nb_ - 1) / nb_ * nb_; }

    /// A batch of `count` products, each the next's operands and result `strides` further on (c's,
    /// a's, b's).
    struct Batch {
        std::int64_t count = 1, c = 0, a = 0, b = 0;
    };

    void gemm_minus(const Matrix& c, std::int64_t rows, std::int64_t cols, std::int64_t inner, const Buffer& a, std::int64_t a_offset,
                    std::int64_t a_rs, std::int64_t a_cs, const Buffer& b, std::int64_t b_offset, std::int64_t b_rs, std::int64_t b_cs,
                    bool lower) {
        gemm_minus(c, rows, cols, inner, a, a_offset, a_rs, a_cs, b, b_offset, b_rs, b_cs, lower, Batch{1, 0, 0, 0});
    }
    /// c (rows x cols, a block of a row-major matrix) -= a b, a (rows x inner) and b (inner x cols)
    /// read through their strides; `lower`: only c's elements on or below its diagonal change.
    void gemm_minus(const Matrix& c, std::int64_t rows, std::int64_t cols, std::int64_t inner, const Buffer& a, std::int64_t a_offset,
                    std::int64_t a_rs, std::int64_t a_cs, const Buffer& b, std::int64_t b_offset, std::int64_t b_rs, std::int64_t b_cs,
                    bool lower, Batch batch) {
        if (rows == 0 || cols == 0 || inner == 0 || batch.count == 0) return;
        ir::Gemm g;
        g.dtype = dtype_;
        g.m = rows, g.n = cols, g.k = inner;
        g.a = ir::MatrixLayout{a_offset, a_rs, a_cs, {}};
        g.b = ir::MatrixLayout{b_offset, b_rs, b_cs, {}};
        if (batch.count > 1) {
            g.batch = Shape{batch.count};
            g.a.batch_strides = Strides{batch.a};
            g.b.batch_strides = Strides{batch.b};
        }
        // One program for both: `lower` is an argument (fewer builds: PoCL takes seconds for each).
        FusedEpilogue epilogue;
        epilogue.parameters = ", const int lt_lower";
        epilogue.code = "v = lt_lower && row < col ? out[col] : out[col] - v;";
        FusedArgs args;
        args.values.push_back(ScalarArg(Scalar::of<std::int32_t>(lower ? 1 : 0), DType::Int32));
        gemm_.own_block(g, a, b, *c.buffer, GemmRoutines::CBlock{c.offset, c.ld, batch.c}, epilogue, args);
    }

    /// Copies a rows x cols operand (offset, strides) into block `offset` (rows `ld` apart) of
    /// `dst`, only its lower triangle (zeros above) with `lower`; flags[slot] = 1 where it holds
    /// a NaN or an infinity.
    void copy(Buffer& dst, std::int64_t offset, std::int64_t ld, std::int64_t rows, std::int64_t cols, const Buffer& src,
              std::int64_t src_offset, std::int64_t rs, std::int64_t cs, bool lower, Buffer& flags, cl_int slot) {
        launch(kernels_->copy, "lt_la_copy", static_cast<std::size_t>(rows * cols), dst, src, flags, slot, cl_long(offset),
               cl_long(ld), cl_long(rows), cl_long(cols), cl_long(src_offset), cl_long(rs), cl_long(cs), cl_int(lower));
    }

    /// Cholesky of the order-s diagonal block of `m` at (p, p), in place (lower triangle).
    void potrf(const Matrix& m, std::int64_t p, std::int64_t s, Buffer& flags, cl_int slot) {
        if (s <= nb_) {
            const std::size_t group = kernels_->potrf_group;
            c_.launcher.run(kernels_->potrf, "lt_la_potrf", group, group, *m.buffer, flags, slot, cl_long(m.at(p, p)), cl_long(m.ld),
                            cl_int(s), cl_int(p), cl_int(group));
            return;
        }
        const std::int64_t s1 = split(s), s2 = s - s1;
        potrf(m, p, s1, flags, slot);
        trsm_right_lower_t(m, p, s1, p + s1, s2);
        syrk(m, p + s1, s2, p, s1);
        potrf(m, p + s1, s2, flags, slot);
    }

    /// X L^T = B for the order-s lower triangle L of `m` at (t, t) and X the rows r0..r0+rows of
    /// columns t..t+s of `m`, in place.
    void trsm_right_lower_t(const Matrix& m, std::int64_t t, std::int64_t s, std::int64_t r0, std::int64_t rows) {
        if (rows == 0) return;
        if (s <= nb_) {  // L X^T = B^T: X^T's element (i, c) is m's (r0 + c, t + i)
            trsm_leaf(*m.buffer, m.at(t, t), m.ld, s, *m.buffer, m.at(r0, t), 1, m.ld, rows, false, false);
            return;
        }
        const std::int64_t s1 = split(s), s2 = s - s1;
        trsm_right_lower_t(m, t, s1, r0, rows);
        // B2 -= X1 L21^T
        gemm_minus(Matrix{m.buffer, m.at(r0, t + s1), m.ld}, rows, s2, s1, *m.buffer, m.at(r0, t), m.ld, 1, *m.buffer,
                   m.at(t + s1, t), 1, m.ld, false);
        trsm_right_lower_t(m, t + s1, s2, r0, rows);
    }

    /// The lower triangle of the order-s diagonal block of `m` at (q, q) -= A A^T, A the rows
    /// q..q+s of columns a0..a0+inner of `m`: diagonal blocks as GEMMs storing their lower
    /// triangle, the blocks below them as GEMMs. Where s is a power of two times the diagonal
    /// blocks' order, the products of each level of the recursion are one batched GEMM (the
    /// blocks of a level are alike), so that small blocks still fill the device.
    void syrk(const Matrix& m, std::int64_t q, std::int64_t s, std::int64_t a0, std::int64_t inner) {
        const std::int64_t diagonal = 4 * nb_;
        if (s > diagonal && s % diagonal == 0 && ((s / diagonal) & (s / diagonal - 1)) == 0) {
            for (std::int64_t h = s / 2; h >= diagonal; h /= 2) {
                // blocks (q + h + 2hi, q + 2hi) of order h -= A's rows there times A's rows q + 2hi transposed
                const std::int64_t step = 2 * h * m.ld;
                gemm_minus(Matrix{m.buffer, m.at(q + h, q), m.ld}, h, h, inner, *m.buffer, m.at(q + h, a0), m.ld, 1, *m.buffer,
                           m.at(q, a0), 1, m.ld, false, Batch{s / (2 * h), step + 2 * h, step, step});
            }
            const std::int64_t step = diagonal * m.ld;
            gemm_minus(Matrix{m.buffer, m.at(q, q), m.ld}, diagonal, diagonal, inner, *m.buffer, m.at(q, a0), m.ld, 1, *m.buffer,
                       m.at(q, a0), 1, m.ld, true, Batch{s / diagonal, step + diagonal, step, step});
            return;
        }
        if (s <= diagonal) {
            gemm_minus(Matrix{m.buffer, m.at(q, q), m.ld}, s, s, inner, *m.buffer, m.at(q, a0), m.ld, 1, *m.buffer, m.at(q, a0), 1,
                       m.ld, true);
            return;
        }
        const std::int64_t s1 = split(s), s2 = s - s1;
        syrk(m, q, s1, a0, inner);
        gemm_minus(Matrix{m.buffer, m.at(q + s1, q), m.ld}, s2, s1, inner, *m.buffer, m.at(q + s1, a0), m.ld, 1, *m.buffer,
                   m.at(q, a0), 1, m.ld, false);
        syrk(m, q + s1, s2, a0, inner);
    }

    /// T X = B in place for the order-s triangle of `t` at (t0, t0): lower or upper, unit
    /// diagonal or not; X's rows are those of `x` from row x0, `cols` wide.
    void trsm_left(const Matrix& t, std::int64_t t0, std::int64_t s, bool upper, bool unit, const Matrix& x, std::int64_t x0,
                   std::int64_t cols) {
        if (s <= nb_) {
            trsm_leaf(*t.buffer, t.at(t0, t0), t.ld, s, *x.buffer, x.at(x0, 0), x.ld, 1, cols, upper, unit);
            return;
        }
        const std::int64_t s1 = split(s), s2 = s - s1;
        if (!upper) {
            trsm_left(t, t0, s1, upper, unit, x, x0, cols);
            gemm_minus(Matrix{x.buffer, x.at(x0 + s1, 0), x.ld}, s2, cols, s1, *t.buffer, t.at(t0 + s1, t0), t.ld, 1, *x.buffer,
                       x.at(x0, 0), x.ld, 1, false);
            trsm_left(t, t0 + s1, s2, upper, unit, x, x0 + s1, cols);
        } else {
            trsm_left(t, t0 + s1, s2, upper, unit, x, x0 + s1, cols);
            gemm_minus(Matrix{x.buffer, x.at(x0, 0), x.ld}, s1, cols, s2, *t.buffer, t.at(t0, t0 + s1), t.ld, 1, *x.buffer,
                       x.at(x0 + s1, 0), x.ld, 1, false);
            trsm_left(t, t0, s1, upper, unit, x, x0, cols);
        }
    }

    void trsm_leaf(const Buffer& t, std::int64_t t_offset, std::int64_t ldt, std::int64_t s, Buffer& x, std::int64_t x_offset,
                   std::int64_t rs, std::int64_t cs, std::int64_t cols, bool upper, bool unit) {
        const std::size_t groups = static_cast<std::size_t>((cols + kTrsmColumns - 1) / kTrsmColumns);
        c_.launcher.run(kernels_->trsm, "lt_la_trsm", groups * kTrsmColumns, kTrsmColumns, t, x, cl_long(t_offset), cl_long(ldt),
                        cl_int(s), cl_long(x_offset), cl_long(rs), cl_long(cs), cl_long(cols), cl_int(upper), cl_int(unit));
    }

    /// LU with partial pivoting of columns c0..c0+w of the n x n matrix `m` (rows c0..n):
    /// Toledo's recursion. pivots[i]: the row swapped with row i (0-based, as ipiv - 1).
    void getrf(const Matrix& m, std::int64_t c0, std::int64_t w, Buffer& pivots, Buffer& flags, cl_int slot) {
        const std::int64_t n = m.ld;
        if (w <= nb_) {
            const std::size_t group = kernels_->getf2_group;  // a power of two (its reduction halves it)
            c_.launcher.run(kernels_->getf2, "lt_la_getf2", group, group, *m.buffer, pivots, flags, slot, cl_long(m.at(c0, c0)),
                            cl_long(m.ld), cl_int(c0), cl_int(n - c0), cl_int(w), cl_int(group));
            return;
        }
        const std::int64_t w1 = split(w), w2 = w - w1;
        getrf(m, c0, w1, pivots, flags, slot);
        laswp(m, n, c0 + w1, w2, pivots, c0, c0 + w1);
        trsm_left(m, c0, w1, false, true, Matrix{m.buffer, m.offset + c0 + w1, m.ld}, c0, w2);
        gemm_minus(Matrix{m.buffer, m.at(c0 + w1, c0 + w1), m.ld}, n - c0 - w1, w2, w1, *m.buffer, m.at(c0 + w1, c0), m.ld, 1,
                   *m.buffer, m.at(c0, c0 + w1), m.ld, 1, false);
        getrf(m, c0 + w1, w2, pivots, flags, slot);
        laswp(m, n, c0, w1, pivots, c0 + w1, c0 + w);
    }

    /// Swaps rows i and pivots[i] of columns col..col+cols of `m` (rows = its order), for i from
    /// k1 to k2. Swapping in that order along each column is a chain of dependent accesses, a
    /// memory latency each; where the rows from k1 on fit local memory, one work-group follows the
    /// chain there instead and lists each row that moves with the row it gets, and two parallel
    /// kernels move them (through a copy).
    void laswp(const Matrix& m, std::int64_t rows, std::int64_t col, std::int64_t cols, Buffer& pivots, std::int64_t k1,
               std::int64_t k2) {
        if (cols == 0 || k1 == k2) return;
        const std::size_t local = c_.device.traits().local_memory, span = static_cast<std::size_t>(rows - k1);
        if (!local_swaps_ || span * sizeof(cl_int) + 1024 > local) {  // (about 12000 rows in 48 KiB) the chain along each column
            launch(kernels_->laswp, "lt_la_laswp", static_cast<std::size_t>(cols), *m.buffer, pivots, cl_long(m.offset + col),
                   cl_long(m.ld), cl_long(cols), cl_int(k1), cl_int(k2));
            return;
        }
        const std::int64_t most = std::min<std::int64_t>(2 * (k2 - k1), rows - k1);  // rows that can move
        const BufferPtr moves = c_.backend.allocate(DType::Int32, 2 * most + 1), copy = c_.backend.allocate(dtype_, most * cols);
        const std::size_t group = kernels_->moves_group;
        c_.launcher.run(kernels_->moves, "lt_la_moves", group, group, pivots, *moves, cl_int(k1), cl_int(k2), cl_int(rows), cl_int(most),
                        LocalBytes{span * sizeof(cl_int)});
        const std::size_t work = static_cast<std::size_t>(most * cols);
        launch(kernels_->gather, "lt_la_gather", work, *m.buffer, *copy, *moves, cl_long(m.offset + col), cl_long(m.ld), cl_long(cols),
               cl_int(most));
        launch(kernels_->scatter, "lt_la_scatter", work, *m.buffer, *copy, *moves, cl_long(m.offset + col), cl_long(m.ld),
               cl_long(cols), cl_int(most));
    }

    Kernels& kernels_for(DType dtype) {
        std::unique_ptr<Kernels>& k = dtype == DType::Float64 ? f64_ : f32_;
        if (k) return *k;
        // The largest leaf whose tiles fit local memory (lt_la_trsm's are the largest).
        const std::size_t elem = dtype_size(dtype), local = c_.device.traits().local_memory;
        int order = 64;
        while (order > 8 && (std::size_t(order) * order + std::size_t(order) * (kTrsmColumns + 1)) * elem + 1024 > local) order /= 2;
        std::shared_ptr<ProgramOwner> program = c_.programs.build(source(dtype, order));
        auto make = [&](const char* name) { return c_.programs.make_kernel(*program, name); };
        k.reset(new Kernels{program, make("lt_la_copy"), make("lt_la_nan"), make("lt_la_potrf"), make("lt_la_trsm"),
                            make("lt_la_getf2"), make("lt_la_laswp"), make("lt_la_moves"), make("lt_la_gather"),
                            make("lt_la_scatter"), order});
        // The largest power of two up to `most` that the device and the kernel (its registers) allow.
        auto group = [&](const KernelOwner& kernel, std::size_t most) {
            std::size_t fits = 0;
            check(clGetKernelWorkGroupInfo(kernel.kernel, c_.device.id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof fits, &fits, nullptr),
                  "clGetKernelWorkGroupInfo");
            fits = std::min(fits, c_.device.traits().max_work_group);
            while (most > 1 && most > fits) most /= 2;
            return most;
        };
        k->potrf_group = group(k->potrf, 256);
        k->getf2_group = group(k->getf2, kGroup);
        k->moves_group = group(k->moves, 256);
        if (group(k->trsm, kTrsmColumns) != kTrsmColumns)
            fail<DeviceError>(c_.device.describe(), " cannot run lazytensor's triangular-solve kernel in work-groups of ", kTrsmColumns);
        return *k;
    }

public:
    /// The program of the leaves for `dtype`, leaves of order at most `order`.
    static std::string source(DType dtype, int order) {
        const bool f64 = dtype == DType::Float64;
        std::string s = f64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
        s += concat("typedef ", f64 ? "double" : "float", " T;\n#define NB ", order, "\n#define CG ", kTrsmColumns, "\n#define PG ", kGroup,
                    "\n");
        s += R"CL(
// dst's block (rows x cols at dst_off, rows ldd apart) = src through its strides (only the lower
// triangle, zeros above, with lower); flags[slot] = 1 at a NaN or an infinity.
__kernel void lt_la_copy(__global T* dst, __global const T* src, __global int* flags, const int slot, const long dst_off,
                         const long ldd, const long rows, const long cols, const long src_off, const long rs, const long cs,
                         const int lower) {
    const long e = get_global_id(0);
    if (e >= rows * cols) return;
    const long i = e / cols, j = e % cols;
    T v = 0;
    if (!lower || j <= i) {
        v = src[src_off + i * rs + j * cs];
        if (!isfinite(v)) flags[slot] = 1;
    }
    dst[dst_off + i * ldd + j] = v;
}

__kernel void lt_la_nan(__global T* dst, const long off, const long count) {
    const long e = get_global_id(0);
    if (e < count) dst[off + e] = (T)NAN;
}

// Cholesky of the order-nb block at off (rows ld apart) in local memory, right-looking; its
// first non-positive pivot j sets flags[slot] = base + j + 1 (the leading minor's order). Does
// nothing once flags[slot] is set (a failure earlier in the recursion).
__kernel void lt_la_potrf(__global T* a, __global int* flags, const int slot, const long off, const long ld, const int nb,
                          const int base, const int G) {
    __local T A[NB * NB];
    __local int bad;
    const int t = get_local_id(0);
    if (flags[slot] != 0) return;
    if (t == 0) bad = 0;
    for (int e = t; e < nb * nb; e += G) {
        const int i = e / nb, j = e % nb;
        A[i * NB + j] = i >= j ? a[off + i * ld + j] : 0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = 0; j < nb; ++j) {
        if (t == 0) {
            const T d = A[j * NB + j];
            if (!(d > 0)) bad = j + 1;
            else A[j * NB + j] = sqrt(d);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (bad != 0) break;
        const T d = A[j * NB + j];
        for (int i = j + 1 + t; i < nb; i += G) A[i * NB + j] /= d;
        barrier(CLK_LOCAL_MEM_FENCE);
        const int r = nb - j - 1;
        for (int e = t; e < r * r; e += G) {
            const int i = j + 1 + e / r, c = j + 1 + e % r;
            if (c <= i) A[i * NB + c] -= A[i * NB + j] * A[c * NB + j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (bad != 0) {
        if (t == 0) flags[slot] = base + bad;
        return;
    }
    for (int e = t; e < nb * nb; e += G) {
        const int i = e / nb, j = e % nb;
        if (i >= j) a[off + i * ld + j] = A[i * NB + j];
    }
}

// T X = B in place: T the order-nb triangle at t_off (rows ldt apart; lower or upper, unit
// diagonal or not), X's element (i, c) at x_off + i * rs + c * cs for c < cols. CG right-hand
// sides per work-group, one per work-item, staged in local memory (loads and stores walk the
// unit-stride axis).
__kernel __attribute__((reqd_work_group_size(CG, 1, 1)))
void lt_la_trsm(__global const T* tm, __global T* x, const long t_off, const long ldt, const int nb, const long x_off,
                const long rs, const long cs, const long cols, const int upper, const int unit) {
    __local T Ts[NB * NB];
    __local T Xs[NB * (CG + 1)];
    const int t = get_local_id(0);
    const long c0 = (long)get_group_id(0) * CG;
    for (int e = t; e < nb * nb; e += CG) {
        const int i = e / nb, j = e % nb;
        Ts[i * NB + j] = tm[t_off + i * ldt + j];
    }
    for (int e = t; e < nb * CG; e += CG) {
        const int i = cs == 1 ? e / CG : e % nb, c = cs == 1 ? e % CG : e / nb;
        if (c0 + c < cols) Xs[i * (CG + 1) + c] = x[x_off + i * rs + (c0 + c) * cs];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (c0 + t < cols) {
        if (upper) {
            for (int i = nb - 1; i >= 0; --i) {
                T v = Xs[i * (CG + 1) + t];
                if (!unit) v /= Ts[i * NB + i];
                Xs[i * (CG + 1) + t] = v;
                for (int r = 0; r < i; ++r) Xs[r * (CG + 1) + t] -= Ts[r * NB + i] * v;
            }
        } else {
            for (int i = 0; i < nb; ++i) {
                T v = Xs[i * (CG + 1) + t];
                if (!unit) v /= Ts[i * NB + i];
                Xs[i * (CG + 1) + t] = v;
                for (int r = i + 1; r < nb; ++r) Xs[r * (CG + 1) + t] -= Ts[r * NB + i] * v;
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int e = t; e < nb * CG; e += CG) {
        const int i = cs == 1 ? e / CG : e % nb, c = cs == 1 ? e % CG : e / nb;
        if (c0 + c < cols) x[x_off + i * rs + (c0 + c) * cs] = Xs[i * (CG + 1) + c];
    }
}

// LU with partial pivoting of a rows x w panel at off (rows ld apart; its first row is row c0 of
// the matrix), one work-group of G (a power of two, <= PG): for each column, the first largest
// |a| at or below the diagonal (getrf's pivot), its row swapped within the panel, the
// multipliers, and the panel's trailing columns updated. pivots[c0 + j]: the matrix row swapped
// with row c0 + j. A zero pivot sets flags[slot] = c0 + j + 1 where it is still 0 (getrf's info)
// and the column is left unscaled, as getf2.
__kernel void lt_la_getf2(__global T* a, __global int* pivots, __global int* flags, const int slot, const long off, const long ld,
                          const int c0, const int rows, const int w, const int G) {
    __local T best[PG];
    __local int where[PG];
    const int t = get_local_id(0);
    for (int j = 0; j < w; ++j) {
        T b = -1;
        int p = rows;
        for (int i = j + t; i < rows; i += G) {
            const T v = fabs(a[off + i * ld + j]);
            if (v > b) { b = v; p = i; }
        }
        best[t] = b;
        where[t] = p;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int h = G / 2; h > 0; h >>= 1) {
            if (t < h) {
                const T o = best[t + h];
                const int q = where[t + h];
                if (o > best[t] || (o == best[t] && q < where[t])) { best[t] = o; where[t] = q; }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        p = where[0];
        const T pivot = best[0];
        if (t == 0) {
            pivots[c0 + j] = c0 + p;
            if (pivot == 0 && flags[slot] == 0) flags[slot] = c0 + j + 1;
        }
        if (p != j)
            for (int c = t; c < w; c += G) {
                const T x = a[off + j * ld + c];
                a[off + j * ld + c] = a[off + p * ld + c];
                a[off + p * ld + c] = x;
            }
        barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
        if (pivot != 0) {
            const T d = a[off + j * ld + j];
            for (int i = j + 1 + t; i < rows; i += G) a[off + i * ld + j] /= d;
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
        const int r = rows - j - 1, cc = w - j - 1;
        for (long e = t; e < (long)r * cc; e += G) {
            const int i = j + 1 + (int)(e / cc), c = j + 1 + (int)(e % cc);
            a[off + i * ld + c] -= a[off + i * ld + j] * a[off + j * ld + c];
        }
        barrier(CLK_GLOBAL_MEM_FENCE);
    }
}

// Row swaps (laswp): for i from k1 to k2, rows i and pivots[i] of the columns at off .. off + cols
// (rows ld apart), one column per work-item.
__kernel void lt_la_laswp(__global T* a, __global const int* pivots, const long off, const long ld, const long cols,
                          const int k1, const int k2) {
    const long c = get_global_id(0);
    if (c >= cols) return;
    for (int i = k1; i < k2; ++i) {
        const int p = pivots[i];
        if (p != i) {
            const T x = a[off + (long)i * ld + c];
            a[off + (long)i * ld + c] = a[off + (long)p * ld + c];
            a[off + (long)p * ld + c] = x;
        }
    }
}

// The moves of laswp's swaps (pivots k1..k2 over rows k1..rows): the chain followed by one
// work-item in local memory (origin[r - k1]: the row whose elements row r ends with), then every
// row that moves listed as (r, origin) pairs, their number at moves[2 * most].
__kernel void lt_la_moves(__global const int* pivots, __global int* moves, const int k1, const int k2, const int rows,
                          const int most, __local int* origin) {
    __local int count;
    const int t = get_local_id(0), G = get_local_size(0);
    for (int r = k1 + t; r < rows; r += G) origin[r - k1] = r;
    if (t == 0) count = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0)
        for (int i = k1; i < k2; ++i) {
            const int p = pivots[i] - k1, x = origin[i - k1];
            origin[i - k1] = origin[p];
            origin[p] = x;
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = k1 + t; r < rows; r += G)
        if (origin[r - k1] != r) {
            const int at = atomic_inc(&count);
            moves[2 * at] = r;
            moves[2 * at + 1] = origin[r - k1];
        }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) moves[2 * most] = count;
}

// copy[s] = the row moves[s] gets (moves[2s + 1]), then that row = copy[s]: `cols` columns at off.
__kernel void lt_la_gather(__global const T* a, __global T* copy, __global const int* moves, const long off, const long ld,
                           const long cols, const int most) {
    const long e = get_global_id(0), s = e / cols, c = e % cols;
    if (s >= moves[2 * most]) return;
    copy[e] = a[off + (long)moves[2 * s + 1] * ld + c];
}
__kernel void lt_la_scatter(__global T* a, __global const T* copy, __global const int* moves, const long off, const long ld,
                            const long cols, const int most) {
    const long e = get_global_id(0), s = e / cols, c = e % cols;
    if (s >= moves[2 * most]) return;
    a[off + (long)moves[2 * s] * ld + c] = copy[e];
}
)CL";
        return s;
    }

private:
    RoutineContext c_;
    GemmRoutines& gemm_;
    int block_ = 0;
    bool local_swaps_ = true;
    // The call being run.
    DType dtype_ = DType::Float32;
    Kernels* kernels_ = nullptr;
    int nb_ = 64;
    std::unique_ptr<Kernels> f32_, f64_;
};

}  // namespace lazytensor::detail::opencl
