// SPDX-License-Identifier: MIT
// Dense linear algebra as one node kind (NodeKind::Linalg) and one kind of schedule item
// (items/linalg_item.hpp), run by LAPACK (backend/host/lapack.hpp): the routines, each op's
// results and where they lie, defined here once.
//
// A linalg node computes every result of its routine for each matrix of a batch: Q and R, U, S
// and Vh, eigenvalues and eigenvectors. They are packed one after another along the node's last
// axis ([batch..., total]); each result the user sees is a view of it (graph::linalg returns
// them), so one routine call serves all of them, and what reads a result fuses with that view
// like with any buffer. Operands are read in place through their views (transposed, sliced,
// batch-broadcast: LAPACK's input is copied per matrix anyway).
//
// Options that are only a different view of the operand (cholesky or eigh of the upper
// triangle, a right-hand or transposed triangular solve) are left to the front end: the
// routines here read the lower triangle and solve from the left.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "graph.hpp"

namespace lazytensor::detail {

// The ops: name, operands (A, or A and the right-hand side B), the LAPACK routines.
//   - Cholesky: L of A = L L^T from A's lower triangle (potrf); LinAlgError where A is not
//     positive definite.
//   - Solve: X with A X = B (getrf, getrs); LinAlgError where A is singular.
//   - Inverse: A^-1 (getrf, getri); LinAlgError where A is singular.
//   - Determinant: det, sign and log|det| of A from its LU factors (getrf); a singular A gives
//     0, 0 and -inf.
//   - TriangularSolve: X with A X = B for A's lower (or, with kUpper, upper) triangle, with
//     kUnitDiagonal ones on the diagonal (trtrs); LinAlgError at a zero on the diagonal.
//   - Qr: A = Q R, Q with orthonormal columns (geqrf, orgqr): reduced (Q [m, min], R [min, n])
//     or, with kComplete, complete (Q [m, m], R [m, n]); Q only with kVectors.
//   - Svd: A = U diag(S) Vh (gesdd): reduced or, with kComplete, full; U and Vh only with
//     kVectors. S descending.
//   - Eigh: eigenvalues w (ascending) of the symmetric A from its lower triangle and, with
//     kVectors, eigenvectors V as columns, A = V diag(w) V^T (syevd).
//   - Lstsq: the X of least ||A X - B||, the singular values of A and its rank (gelsd, rcond
//     max(m, n) * eps, as PyTorch).
#define LAZYTENSOR_LINALG_OPS(X)                                       \
    X(Cholesky, "cholesky", 1, "potrf")                                \
    X(Solve, "solve", 2, "getrf+getrs")                                \
    X(Inverse, "inv", 1, "getrf+getri")                                \
    X(Determinant, "slogdet", 1, "getrf")                              \
    X(TriangularSolve, "solve_triangular", 2, "trtrs")                 \
    X(Qr, "qr", 1, "geqrf+orgqr")                                      \
    X(Svd, "svd", 1, "gesdd")                                          \
    X(Eigh, "eigh", 1, "syevd")                                        \
    X(Lstsq, "lstsq", 2, "gelsd")

enum class LinalgOp : std::uint8_t {
#define LAZYTENSOR_X(name, text, operands, routine) name,
    LAZYTENSOR_LINALG_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

/// An op's name (the lt::linalg function it serves), operand count and LAPACK routines.
struct LinalgOpInfo {
    const char* name;
    int operands;
    const char* routines;
};

inline const LinalgOpInfo& linalg_info(LinalgOp op) {
    static const LinalgOpInfo table[] = {
#define LAZYTENSOR_X(name, text, operands, routine) {text, operands, routine},
        LAZYTENSOR_LINALG_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    };
    return table[static_cast<int>(op)];
}

/// The options of an op (bits of `flags`).
enum LinalgFlag : int {
    kLinalgUpper = 1,          // TriangularSolve: the upper triangle
    kLinalgUnitDiagonal = 2,   // TriangularSolve: ones on the diagonal, not read
    kLinalgComplete = 4,       // Qr: complete; Svd: full matrices
    kLinalgVectors = 8,        // Qr: Q too; Svd: U and Vh too; Eigh: the eigenvectors too
};

/// One result of an op, per matrix of the batch: its name and its shape (a matrix, a vector or
/// a scalar), at `offset` elements into the packed results of that matrix.
struct LinalgPart {
    const char* name;
    Shape shape;
    std::int64_t offset = 0;
};

/// An op's results for A [m, n] (and B [rows, k]), in packing order.
inline std::vector<LinalgPart> linalg_parts(LinalgOp op, int flags, std::int64_t m, std::int64_t n, std::int64_t k) {
    const std::int64_t small = m < n ? m : n;
    const bool vectors = flags & kLinalgVectors, complete = flags & kLinalgComplete;
    std::vector<LinalgPart> parts;
    auto part = [&](const char* name, Shape shape) { parts.push_back(LinalgPart{name, std::move(shape), 0}); };
    switch (op) {
        case LinalgOp::Cholesky: part("L", {n, n}); break;
        case LinalgOp::Solve:
        case LinalgOp::TriangularSolve: part("X", {n, k}); break;
        case LinalgOp::Inverse: part("inverse", {n, n}); break;
        case LinalgOp::Determinant:
            part("det", {});
            part("sign", {});
            part("logabsdet", {});
            break;
        case LinalgOp::Qr: {
            const std::int64_t q = complete ? m : small;
            if (vectors) part("Q", {m, q});
            part("R", {q, n});
            break;
        }
        case LinalgOp::Svd:
            if (vectors) part("U", {m, complete ? m : small});
            part("S", {small});
            if (vectors) part("Vh", {complete ? n : small, n});
            break;
        case LinalgOp::Eigh:
            part("eigenvalues", {n});
            if (vectors) part("eigenvectors", {n, n});
            break;
        case LinalgOp::Lstsq:
            part("solution", {n, k});
            part("singular_values", {small});
            part("rank", {});
            break;
    }
    std::int64_t at = 0;
    for (LinalgPart& p : parts) {
        p.offset = at;
        at += numel(p.shape);
    }
    return parts;
}

namespace ir {

/// One operand as the routine reads it: element (batch..., i, j) at offset + the batch
/// strides' sum + i * strides[-2] + j * strides[-1] (any strides: copied per matrix).
struct LinalgOperand {
    std::int64_t offset = 0;
    Strides strides;  // [batch..., rows, cols]
};

/// A linalg item: `op` over every matrix of `batch`, A [m, n] and B [rows, k] (rows: m), into
/// the packed results ([batch..., total], contiguous).
struct Linalg {
    LinalgOp op = LinalgOp::Cholesky;
    int flags = 0;
    DType dtype = DType::Float64;  // float32 or float64
    Shape batch;
    std::int64_t m = 0, n = 0, k = 0;
    LinalgOperand operands[2];

    int operand_count() const { return linalg_info(op).operands; }
    std::int64_t batch_count() const { return numel(batch); }
    /// The packed results of one matrix.
    std::int64_t total() const {
        std::int64_t t = 0;
        for (const LinalgPart& p : linalg_parts(op, flags, m, n, k)) t += numel(p.shape);
        return t;
    }
};

inline std::string to_string(const Linalg& L) {
    std::string options;
    if (L.op == LinalgOp::TriangularSolve)
        options = concat(L.flags & kLinalgUpper ? ", upper" : ", lower", L.flags & kLinalgUnitDiagonal ? ", unit diagonal" : "");
    if (L.op == LinalgOp::Qr || L.op == LinalgOp::Svd)
        options = concat(L.flags & kLinalgComplete ? ", complete" : ", reduced", L.flags & kLinalgVectors ? "" : ", values only");
    if (L.op == LinalgOp::Eigh && !(L.flags & kLinalgVectors)) options = ", values only";
    std::string out = concat("    ", linalg_info(L.op).name, " (LAPACK ", L.dtype == DType::Float64 ? "d" : "s",
                             linalg_info(L.op).routines, options, ") of ", L.batch_count(), " matrices ", L.m, "x", L.n,
                             " of ", L.dtype);
    if (L.operand_count() == 2) out += concat(", right-hand side ", L.m, "x", L.k);
    out += concat(" (batch ", L.batch, ")\n");
    for (int o = 0; o < L.operand_count(); ++o)
        out += concat("      operand ", o, ": offset ", L.operands[o].offset, ", strides ", L.operands[o].strides, "\n");
    return out;
}

}  // namespace ir

namespace graph {

/// The results of `op` (linalg_parts) for A (and B, where the op has two operands: else null),
/// each of shape [batch..., part's shape]: views of one Linalg node. Batch axes broadcast as
/// matmul's do. DTypeError unless A (and B) are float32 or float64 of one dtype; ShapeError,
/// naming `api` and the shapes, for a non-square A where the op needs one, a B whose rows are
/// not A's, batch axes that do not broadcast; Error where lazytensor was built without LAPACKE.
LAZYTENSOR_ENGINE_API std::vector<NodePtr> linalg(LinalgOp op, int flags, const NodePtr& a, const NodePtr& b, const char* api);

/// The results of linalg node `node` (or of a tensor of its shape, such as its gradient), as
/// graph::linalg returns them.
LAZYTENSOR_ENGINE_API std::vector<NodePtr> linalg_results(const Node& node, const NodePtr& packed);

}  // namespace graph
}  // namespace lazytensor::detail

#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "linalg_definitions.hpp"
#endif
