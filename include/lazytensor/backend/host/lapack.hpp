// SPDX-License-Identifier: MIT
// Linear algebra on the host: LAPACK through LAPACKE, one routine call per matrix of the batch
// (ir/linalg.hpp), the matrices of a batch in parallel over the thread pool (a single large
// matrix is threaded by the LAPACK library itself, OpenBLAS where it is installed).
//
// Each matrix is copied into a column-major work array (LAPACK overwrites its input, and the
// operand may be any strided view), the routine runs, and its results are written row-major
// into the packed output. A matrix holding NaN or infinity gives NaN results: LAPACKE rejects
// such input (its NaN check), and NumPy's routines give NaN or fail for it.
//
// Devices other than the host run the same code on host copies of their operands
// (run_linalg_staged): their items are documented and listed as running on the host.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/device.hpp"
#include "../../core/error.hpp"
#include "../../ir/linalg.hpp"
#include "thread_pool.hpp"

#if LAZYTENSOR_LAPACK
#include <lapacke.h>
#endif

namespace lazytensor::detail::host {

#if LAZYTENSOR_LAPACK

namespace lapack {

// LAPACKE's routines by element type (column-major; the triangle read is always the lower).
#define LAZYTENSOR_LAPACK_PAIR(T, P)                                                                                      \
    inline lapack_int potrf(lapack_int n, T* a, lapack_int lda) { return LAPACKE_##P##potrf(LAPACK_COL_MAJOR, 'L', n, a, lda); } \
    inline lapack_int getrf(lapack_int n, T* a, lapack_int lda, lapack_int* ipiv) {                                    \
        return LAPACKE_##P##getrf(LAPACK_COL_MAJOR, n, n, a, lda, ipiv);                                                \
    }                                                                                                                   \
    inline lapack_int getrs(lapack_int n, lapack_int nrhs, const T* a, lapack_int lda, const lapack_int* ipiv, T* b,    \
                            lapack_int ldb) {                                                                           \
        return LAPACKE_##P##getrs(LAPACK_COL_MAJOR, 'N', n, nrhs, a, lda, ipiv, b, ldb);                                \
    }                                                                                                                   \
    inline lapack_int getri(lapack_int n, T* a, lapack_int lda, const lapack_int* ipiv) {                               \
        return LAPACKE_##P##getri(LAPACK_COL_MAJOR, n, a, lda, ipiv);                                                   \
    }                                                                                                                   \
    inline lapack_int trtrs(char uplo, char diag, lapack_int n, lapack_int nrhs, const T* a, lapack_int lda, T* b,      \
                            lapack_int ldb) {                                                                           \
        return LAPACKE_##P##trtrs(LAPACK_COL_MAJOR, uplo, 'N', diag, n, nrhs, a, lda, b, ldb);                          \
    }                                                                                                                   \
    inline lapack_int geqrf(lapack_int m, lapack_int n, T* a, lapack_int lda, T* tau) {                                 \
        return LAPACKE_##P##geqrf(LAPACK_COL_MAJOR, m, n, a, lda, tau);                                                 \
    }                                                                                                                   \
    inline lapack_int orgqr(lapack_int m, lapack_int n, lapack_int k, T* a, lapack_int lda, const T* tau) {             \
        return LAPACKE_##P##orgqr(LAPACK_COL_MAJOR, m, n, k, a, lda, tau);                                              \
    }                                                                                                                   \
    inline lapack_int gesdd(char jobz, lapack_int m, lapack_int n, T* a, lapack_int lda, T* s, T* u, lapack_int ldu,    \
                            T* vt, lapack_int ldvt) {                                                                   \
        return LAPACKE_##P##gesdd(LAPACK_COL_MAJOR, jobz, m, n, a, lda, s, u, ldu, vt, ldvt);                           \
    }                                                                                                                   \
    inline lapack_int syevd(char jobz, lapack_int n, T* a, lapack_int lda, T* w) {                                      \
        return LAPACKE_##P##syevd(LAPACK_COL_MAJOR, jobz, 'L', n, a, lda, w);                                           \
    }                                                                                                                   \
    inline lapack_int gelsd(lapack_int m, lapack_int n, lapack_int nrhs, T* a, lapack_int lda, T* b, lapack_int ldb,    \
                            T* s, T rcond, lapack_int* rank) {                                                          \
        return LAPACKE_##P##gelsd(LAPACK_COL_MAJOR, m, n, nrhs, a, lda, b, ldb, s, rcond, rank);                        \
    }
LAZYTENSOR_LAPACK_PAIR(float, s)
LAZYTENSOR_LAPACK_PAIR(double, d)
#undef LAZYTENSOR_LAPACK_PAIR

}  // namespace lapack

namespace linalg_detail {

/// Which part of a matrix a routine reads: the whole, the lower or the upper triangle (with or
/// without the diagonal, which a unit-diagonal solve does not read: ones stand there).
enum class Reads { Whole, Lower, Upper, StrictLower, StrictUpper };

/// Copies run over square tiles: a row-major matrix into column-major memory is a transpose,
/// which element by element misses the cache on every read (a 1024 x 1024 solve took 1.2x
/// NumPy's time that way).
constexpr std::int64_t kTile = 32;

/// Matrix (rows x cols) of an operand at element `at`, into column-major `dst` with leading
/// dimension ld (zeros outside what the routine reads, and below row `rows` up to ld). False if
/// what it reads holds a NaN or an infinity.
template <class T>
bool load(const T* base, std::int64_t at, const Strides& strides, std::int64_t rows, std::int64_t cols, std::int64_t ld,
          std::int64_t columns, Reads reads, std::vector<T>& dst) {
    dst.assign(static_cast<std::size_t>(std::max<std::int64_t>(1, ld * columns)), T(0));
    const std::int64_t rs = strides[strides.size() - 2], cs = strides[strides.size() - 1];
    bool finite = true;
    for (std::int64_t i0 = 0; i0 < rows; i0 += kTile)
        for (std::int64_t j0 = 0; j0 < cols; j0 += kTile)
            for (std::int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
                for (std::int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) {
                    const bool read = reads == Reads::Whole || (reads == Reads::Lower && i >= j) ||
                                      (reads == Reads::Upper && i <= j) || (reads == Reads::StrictLower && i > j) ||
                                      (reads == Reads::StrictUpper && i < j);
                    if (!read) {
                        if (i == j) dst[static_cast<std::size_t>(i + j * ld)] = T(1);
                        continue;
                    }
                    const T v = base[at + i * rs + j * cs];
                    finite = finite && std::isfinite(v);
                    dst[static_cast<std::size_t>(i + j * ld)] = v;
                }
    return finite;
}

/// Column-major `src` (leading dimension ld), rows x cols of it, row-major into `out`.
template <class T>
void store(const std::vector<T>& src, std::int64_t ld, std::int64_t rows, std::int64_t cols, T* out) {
    for (std::int64_t i0 = 0; i0 < rows; i0 += kTile)
        for (std::int64_t j0 = 0; j0 < cols; j0 += kTile)
            for (std::int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
                for (std::int64_t j = j0; j < std::min(cols, j0 + kTile); ++j)
                    out[i * cols + j] = src[static_cast<std::size_t>(i + j * ld)];
}

inline lapack_int dim(std::int64_t v) { return static_cast<lapack_int>(std::max<std::int64_t>(1, v)); }

/// What one matrix's routine reports: LAPACK's info (> 0: the routine stopped, e.g. at a zero
/// pivot; < 0: lazytensor called it wrongly).
template <class T>
lapack_int run_one(const ir::Linalg& L, const std::vector<LinalgPart>& parts, const T* const operands[2],
                   const std::int64_t at[2], T* out) {
    using namespace lapack;
    const std::int64_t m = L.m, n = L.n, k = L.k, small = std::min(m, n);
    const bool vectors = L.flags & kLinalgVectors, complete = L.flags & kLinalgComplete;
    std::vector<T> a, b;
    auto part = [&](std::size_t i) { return out + parts[i].offset; };
    auto fill_nan = [&] {
        std::fill(out, out + L.total(), std::numeric_limits<T>::quiet_NaN());
        return lapack_int(0);
    };
    auto load_a = [&](std::int64_t ld, std::int64_t columns, Reads reads) {
        return load(operands[0], at[0], L.operands[0].strides, m, n, ld, columns, reads, a);
    };
    auto load_b = [&](std::int64_t ld) { return load(operands[1], at[1], L.operands[1].strides, m, k, ld, k, Reads::Whole, b); };
    const lapack_int ln = dim(n), lm = dim(m);
    switch (L.op) {
        case LinalgOp::Cholesky: {
            if (!load_a(n, n, Reads::Lower)) return fill_nan();
            if (const lapack_int info = potrf(static_cast<lapack_int>(n), a.data(), ln)) return info;
            for (std::int64_t j = 0; j < n; ++j)
                for (std::int64_t i = 0; i < j; ++i) a[static_cast<std::size_t>(i + j * n)] = T(0);
            store(a, n, n, n, part(0));
            return 0;
        }
        case LinalgOp::Solve:
        case LinalgOp::Inverse: {
            const bool solve = L.op == LinalgOp::Solve;
            if (!load_a(n, n, Reads::Whole) || (solve && !load_b(n))) return fill_nan();
            std::vector<lapack_int> pivots(static_cast<std::size_t>(std::max<std::int64_t>(1, n)));
            if (const lapack_int info = getrf(static_cast<lapack_int>(n), a.data(), ln, pivots.data())) return info;
            if (solve) {
                if (const lapack_int info = getrs(static_cast<lapack_int>(n), static_cast<lapack_int>(k), a.data(), ln,
                                                  pivots.data(), b.data(), ln))
                    return info;
                store(b, n, n, k, part(0));
            } else {
                if (const lapack_int info = getri(static_cast<lapack_int>(n), a.data(), ln, pivots.data())) return info;
                store(a, n, n, n, part(0));
            }
            return 0;
        }
        case LinalgOp::Determinant: {
            if (!load_a(n, n, Reads::Whole)) return fill_nan();
            std::vector<lapack_int> pivots(static_cast<std::size_t>(std::max<std::int64_t>(1, n)));
            const lapack_int info = getrf(static_cast<lapack_int>(n), a.data(), ln, pivots.data());
            if (info < 0) return info;
            // det = (-1)^(row swaps) * prod(U's diagonal); a zero on it (info > 0): det 0,
            // sign 0, log|det| -inf (PyTorch's slogdet).
            T sign = T(1), det = T(1), logabs = T(0);
            for (std::int64_t i = 0; i < n; ++i) {
                const T u = a[static_cast<std::size_t>(i + i * n)];
                if (pivots[static_cast<std::size_t>(i)] != i + 1) sign = -sign;
                det *= u;
                sign *= u < 0 ? T(-1) : T(1);
                logabs += std::log(std::abs(u));
            }
            if (info > 0) sign = T(0), det = T(0), logabs = -std::numeric_limits<T>::infinity();
            else det = std::copysign(std::abs(det), sign);
            *part(0) = det;
            *part(1) = sign;
            *part(2) = logabs;
            return 0;
        }
        case LinalgOp::TriangularSolve: {
            const bool upper = L.flags & kLinalgUpper, unit = L.flags & kLinalgUnitDiagonal;
            const Reads reads = upper ? (unit ? Reads::StrictUpper : Reads::Upper) : (unit ? Reads::StrictLower : Reads::Lower);
            if (!load_a(n, n, reads) || !load_b(n)) return fill_nan();
            if (const lapack_int info = trtrs(upper ? 'U' : 'L', unit ? 'U' : 'N', static_cast<lapack_int>(n),
                                              static_cast<lapack_int>(k), a.data(), ln, b.data(), ln))
                return info;
            store(b, n, n, k, part(0));
            return 0;
        }
        case LinalgOp::Qr: {
            const std::int64_t q = complete ? m : small;
            if (!load_a(m, std::max(n, q), Reads::Whole)) return fill_nan();
            std::vector<T> tau(static_cast<std::size_t>(std::max<std::int64_t>(1, small)));
            if (const lapack_int info = geqrf(static_cast<lapack_int>(m), static_cast<lapack_int>(n), a.data(), lm, tau.data()))
                return info;
            T* r = part(vectors ? 1 : 0);
            for (std::int64_t i = 0; i < q; ++i)
                for (std::int64_t j = 0; j < n; ++j) r[i * n + j] = i <= j ? a[static_cast<std::size_t>(i + j * m)] : T(0);
            if (vectors) {
                if (const lapack_int info = orgqr(static_cast<lapack_int>(m), static_cast<lapack_int>(q),
                                                  static_cast<lapack_int>(small), a.data(), lm, tau.data()))
                    return info;
                store(a, m, m, q, part(0));
            }
            return 0;
        }
        case LinalgOp::Svd: {
            if (!load_a(m, n, Reads::Whole)) return fill_nan();
            const std::int64_t ucols = complete ? m : small, vrows = complete ? n : small;
            std::vector<T> s(static_cast<std::size_t>(std::max<std::int64_t>(1, small)));
            // Identity where gesdd returns at once (an empty A) and a full U or Vh is wanted.
            std::vector<T> u(static_cast<std::size_t>(std::max<std::int64_t>(1, m * ucols)), T(0));
            std::vector<T> vt(static_cast<std::size_t>(std::max<std::int64_t>(1, vrows * n)), T(0));
            for (std::int64_t i = 0; i < std::min(m, ucols); ++i) u[static_cast<std::size_t>(i + i * m)] = T(1);
            for (std::int64_t i = 0; i < std::min(vrows, n); ++i) vt[static_cast<std::size_t>(i + i * vrows)] = T(1);
            const char jobz = !vectors ? 'N' : complete ? 'A' : 'S';
            if (const lapack_int info = gesdd(jobz, static_cast<lapack_int>(m), static_cast<lapack_int>(n), a.data(), lm,
                                              s.data(), u.data(), lm, vt.data(), dim(vrows)))
                return info;
            const std::size_t at_s = vectors ? 1 : 0;
            std::copy(s.begin(), s.begin() + small, part(at_s));
            if (vectors) {
                store(u, m, m, ucols, part(0));
                store(vt, vrows, vrows, n, part(2));
            }
            return 0;
        }
        case LinalgOp::Eigh: {
            if (!load_a(n, n, Reads::Lower)) return fill_nan();
            std::vector<T> w(static_cast<std::size_t>(std::max<std::int64_t>(1, n)));
            if (const lapack_int info = syevd(vectors ? 'V' : 'N', static_cast<lapack_int>(n), a.data(), ln, w.data())) return info;
            std::copy(w.begin(), w.begin() + n, part(0));
            if (vectors) store(a, n, n, n, part(1));
            return 0;
        }
        case LinalgOp::Lstsq: {
            const std::int64_t ldb = std::max(m, n);
            if (!load_a(m, n, Reads::Whole) || !load(operands[1], at[1], L.operands[1].strides, m, k, ldb, k, Reads::Whole, b))
                return fill_nan();
            std::vector<T> s(static_cast<std::size_t>(std::max<std::int64_t>(1, small)));
            lapack_int rank = 0;
            const T rcond = std::numeric_limits<T>::epsilon() * static_cast<T>(std::max(m, n));
            if (small > 0)
                if (const lapack_int info = gelsd(static_cast<lapack_int>(m), static_cast<lapack_int>(n),
                                                  static_cast<lapack_int>(k), a.data(), lm, b.data(), dim(ldb), s.data(),
                                                  rcond, &rank))
                    return info;
            if (small == 0) std::fill(b.begin(), b.end(), T(0));  // the least-norm solution of an empty system
            store(b, ldb, n, k, part(0));
            std::copy(s.begin(), s.begin() + small, part(1));
            *part(2) = static_cast<T>(rank);
            return 0;
        }
    }
    return 0;
}

/// Batch element b's position in the batch, for messages.
inline std::string batch_element(const Shape& batch, std::int64_t b) {
    if (batch.empty()) return std::string();
    Shape index(batch.size(), 0);
    std::int64_t rest = b;
    for (std::size_t d = batch.size(); d-- > 0;) {
        index[d] = rest % batch[d];
        rest /= batch[d];
    }
    return concat(" (batch element ", index, " of batch shape ", batch, ")");
}

/// Why a routine stopped at batch element b (info > 0), in the user's terms, as PyTorch says it.
[[noreturn]] inline void linalg_failed(const ir::Linalg& L, std::int64_t b, lapack_int info) {
    const std::string where = concat("lt::linalg::", linalg_info(L.op).name, batch_element(L.batch, b), ": ");
    const std::string routine = concat("LAPACK ", L.dtype == DType::Float64 ? "d" : "s", linalg_info(L.op).routines, " info ", info);
    if (info < 0)
        fail<Error>("lazytensor internal error: ", where, "argument ", -info, " of the LAPACK call is invalid (", routine, ")");
    switch (L.op) {
        case LinalgOp::Cholesky:
            fail<LinAlgError>(where, "the matrix is not positive definite: the factorization stopped at its leading minor of order ",
                              info, " (", routine, ")");
        case LinalgOp::Solve:
        case LinalgOp::Inverse:
            fail<LinAlgError>(where, "the matrix is singular: U[", info - 1, ", ", info - 1,
                              "] of its LU factorization with partial pivoting is exactly zero (", routine, ")");
        case LinalgOp::TriangularSolve:
            fail<LinAlgError>(where, "the triangular matrix is singular: its diagonal element ", info - 1, " is zero (", routine, ")");
        default: fail<LinAlgError>(where, "the algorithm did not converge (", routine, ")");
    }
}

}  // namespace linalg_detail

/// Runs L over every matrix of its batch: operands[o] points at operand o's elements (its layout
/// is L.operands[o]), `out` at the packed results. LinAlgError for the first matrix (in batch
/// order) whose routine stopped, after all have run.
template <class T>
void run_linalg(const ir::Linalg& L, const T* const operands[2], T* out, ThreadPool& pool) {
    const std::int64_t batches = L.batch_count(), total = L.total();
    const std::vector<LinalgPart> parts = linalg_parts(L.op, L.flags, L.m, L.n, L.k);
    std::vector<lapack_int> infos(static_cast<std::size_t>(batches), 0);
    auto one = [&](std::int64_t b, int) {
        std::int64_t at[2] = {L.operands[0].offset, L.operands[1].offset};
        std::int64_t rest = b;
        for (std::size_t d = L.batch.size(); d-- > 0;) {
            const std::int64_t i = rest % L.batch[d];
            rest /= L.batch[d];
            for (int o = 0; o < L.operand_count(); ++o) at[o] += i * L.operands[o].strides[d];
        }
        infos[static_cast<std::size_t>(b)] = linalg_detail::run_one<T>(L, parts, operands, at, out + b * total);
    };
    if (batches == 1) one(0, 0);
    else pool.parallel_for(batches, one);
    for (std::int64_t b = 0; b < batches; ++b)
        if (infos[static_cast<std::size_t>(b)] != 0) linalg_detail::linalg_failed(L, b, infos[static_cast<std::size_t>(b)]);
}

/// run_linalg over buffers in host memory.
inline void run_linalg(const ir::Linalg& L, const std::vector<const Buffer*>& operands, Buffer& out, ThreadPool& pool) {
    if (L.dtype == DType::Float64) {
        const double* in[2] = {static_cast<const double*>(operands[0]->handle()),
                               operands.size() > 1 ? static_cast<const double*>(operands[1]->handle()) : nullptr};
        run_linalg<double>(L, in, static_cast<double*>(out.handle()), pool);
    } else {
        const float* in[2] = {static_cast<const float*>(operands[0]->handle()),
                              operands.size() > 1 ? static_cast<const float*>(operands[1]->handle()) : nullptr};
        run_linalg<float>(L, in, static_cast<float*>(out.handle()), pool);
    }
}

/// run_linalg for a device whose memory the host cannot read in place: the elements each operand
/// spans are read into host memory (read(buffer, byte offset, destination, bytes)), the routines
/// run here, and the results are written back (write(out, source, bytes)).
template <class Read, class Write>
void run_linalg_staged(const ir::Linalg& L, const std::vector<const Buffer*>& operands, Buffer& out, Read read, Write write) {
    ThreadPool& pool = staging_pool();
    const std::size_t size = dtype_size(L.dtype);
    ir::Linalg here = L;
    std::vector<std::vector<char>> copies(operands.size());
    const void* in[2] = {nullptr, nullptr};
    for (std::size_t o = 0; o < operands.size(); ++o) {
        ir::LinalgOperand& operand = here.operands[o];
        Shape shape = L.batch;
        shape.push_back(L.m);
        shape.push_back(o == 0 ? L.n : L.k);
        std::int64_t lo = operand.offset, hi = operand.offset;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            const std::int64_t reach = (shape[d] - 1) * operand.strides[d];
            (reach < 0 ? lo : hi) += reach;
        }
        copies[o].resize(static_cast<std::size_t>(hi - lo + 1) * size);
        if (numel(shape) > 0) read(*operands[o], static_cast<std::size_t>(lo) * size, copies[o].data(), copies[o].size());
        operand.offset -= lo;
        in[o] = copies[o].data();
    }
    std::vector<char> results(static_cast<std::size_t>(out.numel()) * size);
    if (L.dtype == DType::Float64) {
        const double* typed[2] = {static_cast<const double*>(in[0]), static_cast<const double*>(in[1])};
        run_linalg<double>(here, typed, reinterpret_cast<double*>(results.data()), pool);
    } else {
        const float* typed[2] = {static_cast<const float*>(in[0]), static_cast<const float*>(in[1])};
        run_linalg<float>(here, typed, reinterpret_cast<float*>(results.data()), pool);
    }
    write(out, results.data(), results.size());
}

#else

inline void run_linalg(const ir::Linalg& L, const std::vector<const Buffer*>&, Buffer&, ThreadPool&) {
    fail<Error>("lt::linalg::", linalg_info(L.op).name, ": needs LAPACK through LAPACKE, and this lazytensor was built without it");
}
template <class Read, class Write>
void run_linalg_staged(const ir::Linalg& L, const std::vector<const Buffer*>&, Buffer&, Read, Write) {
    fail<Error>("lt::linalg::", linalg_info(L.op).name, ": needs LAPACK through LAPACKE, and this lazytensor was built without it");
}

#endif

}  // namespace lazytensor::detail::host
