// SPDX-License-Identifier: MIT
// Reverse-mode rules of the linalg node (ir/linalg.hpp): PyTorch's formulas (TensorFlow's for
// QR), written as graphs of the forward routines, matrix products and element-wise ops, so the
// gradients are lazy like everything else. A node's cotangent is packed like its results; the
// rules unpack both with graph::linalg_results.
//
// Where the formulas divide by differences of eigenvalues or singular values, repeated ones give
// inf or NaN, as PyTorch documents. det's and slogdet's gradients use A's inverse: a singular A
// makes the realize that computes them throw LinAlgError. lstsq has no gradient here.
#pragma once

#include <cstdint>
#include <vector>

#include "../core/error.hpp"
#include "../ir/graph.hpp"
#include "../ir/linalg.hpp"

namespace lazytensor::detail::autodiff::linalg_rules {

namespace g = graph;

inline Scalar number(double v) { return Scalar::of<double>(v); }
inline NodePtr mT(const NodePtr& x) { return g::transpose(x, -2, -1); }
inline NodePtr mm(const NodePtr& a, const NodePtr& b) { return g::matmul(a, b); }
inline NodePtr plus(const NodePtr& a, const NodePtr& b) { return g::binary(BinaryOp::Add, a, b); }
inline NodePtr minus(const NodePtr& a, const NodePtr& b) { return g::binary(BinaryOp::Sub, a, b); }
inline NodePtr times(const g::Operand& a, const g::Operand& b) { return g::binary(BinaryOp::Mul, a, b); }

/// row - column at every element of a [..., r, c] shape.
inline NodePtr row_minus_column(const Shape& shape, Device device) {
    const int r = static_cast<int>(shape.size());
    return g::binary(BinaryOp::Sub, g::iota(shape, r - 2, device), g::iota(shape, r - 1, device));
}
/// x's elements on and below diagonal k (above it zero), or on and above it: tril and triu.
inline NodePtr tril(const NodePtr& x, std::int64_t k = 0) {
    return g::where(g::binary(BinaryOp::Ge, row_minus_column(x->shape, x->device), Scalar::of<std::int64_t>(-k)), x, number(0));
}
inline NodePtr triu(const NodePtr& x, std::int64_t k = 0) {
    return g::where(g::binary(BinaryOp::Le, row_minus_column(x->shape, x->device), Scalar::of<std::int64_t>(-k)), x, number(0));
}
inline NodePtr on_diagonal(const Shape& shape, Device device) {
    return g::binary(BinaryOp::Eq, row_minus_column(shape, device), Scalar::of<std::int64_t>(0));
}
/// v [..., k] as the rows (`column` false: v[j] at (i, j)) or columns (v[i] at (i, j)) of [..., k, k].
inline NodePtr spread(const NodePtr& v, bool column) {
    Shape s = v->shape, square = v->shape;
    s.insert(column ? s.size() : s.size() - 1, 1);
    square.push_back(v->shape.back());
    return g::expand(g::reshape(v, s, "grad"), square, "grad");
}
/// diag(v) for v [..., k].
inline NodePtr diag_embed(const NodePtr& v) {
    const NodePtr rows = spread(v, true);
    return g::where(on_diagonal(rows->shape, v->device), rows, number(0));
}
/// x [..., r, c] times diag(s) from the right (its columns scaled) or the left (its rows).
inline NodePtr scale_columns(const NodePtr& x, const NodePtr& s) {
    Shape t = s->shape;
    t.insert(t.size() - 1, 1);
    return times(x, g::reshape(s, t, "grad"));
}
inline NodePtr scale_rows(const NodePtr& x, const NodePtr& s) {
    Shape t = s->shape;
    t.push_back(1);
    return times(x, g::reshape(s, t, "grad"));
}
/// A scalar per matrix ([batch...]) as [batch..., 1, 1].
inline NodePtr per_matrix(const NodePtr& x) {
    Shape s = x->shape;
    s.push_back(1);
    s.push_back(1);
    return g::reshape(x, s, "grad");
}

inline NodePtr solve(const NodePtr& a, const NodePtr& b) { return g::linalg(LinalgOp::Solve, 0, a, b, "grad")[0]; }
inline NodePtr inverse(const NodePtr& a) { return g::linalg(LinalgOp::Inverse, 0, a, nullptr, "grad")[0]; }
/// X with A X = B for A's upper or lower triangle (unit: ones on its diagonal).
inline NodePtr solve_triangular(const NodePtr& a, const NodePtr& b, bool upper, bool unit = false) {
    const int flags = (upper ? kLinalgUpper : 0) | (unit ? kLinalgUnitDiagonal : 0);
    return g::linalg(LinalgOp::TriangularSolve, flags, a, b, "grad")[0];
}
/// X with X A = B.
inline NodePtr solve_triangular_right(const NodePtr& a, const NodePtr& b, bool upper) {
    return mT(solve_triangular(mT(a), mT(b), !upper));
}

/// x R^-T for an upper triangular R (TensorFlow's _TriangularSolve).
inline NodePtr times_inverse_transpose(const NodePtr& x, const NodePtr& r) { return mT(solve_triangular(r, mT(x), true)); }

/// The gradient of A = Q R (Q [m, n], R [n, n] square) from gQ and gR (TensorFlow's
/// _QrGradSquareAndDeepMatrices).
inline NodePtr qr_deep(const NodePtr& q, const NodePtr& r, const NodePtr& gq, const NodePtr& gr) {
    const NodePtr qdq = mm(mT(q), gq);
    const NodePtr rdr = mm(r, mT(gr));
    const NodePtr lower = tril(plus(minus(qdq, mT(qdq)), minus(rdr, mT(rdr))));
    const NodePtr through_r = mm(q, plus(gr, times_inverse_transpose(lower, r)));
    return plus(through_r, times_inverse_transpose(minus(gq, mm(q, qdq)), r));
}

/// The gradient of a linalg node n's operands from gy (its packed cotangent): emit(i, gradient).
template <class Emit, class Wanted>
void linalg_rule(const NodePtr& n, const NodePtr& gy, Wanted wanted, Emit emit) {
    const LinalgOp op = static_cast<LinalgOp>(n->params[0]);
    const int flags = static_cast<int>(n->params[1]);
    const std::int64_t m = n->params[2], cols = n->params[3];
    const NodePtr& a = n->src[0];
    const std::vector<NodePtr> out = g::linalg_results(*n, n), grad = g::linalg_results(*n, gy);
    const char* name = linalg_info(op).name;
    switch (op) {
        case LinalgOp::Cholesky: {  // PyTorch's cholesky_backward
            const NodePtr& l = out[0];
            NodePtr ga = tril(mm(mT(l), grad[0]));
            ga = times(plus(ga, mT(tril(ga, -1))), number(0.5));
            ga = solve_triangular(mT(l), ga, true);
            emit(0, solve_triangular_right(l, ga, false));
            break;
        }
        case LinalgOp::Solve: {
            const NodePtr gb = solve(mT(a), grad[0]);
            if (wanted(0)) emit(0, g::unary(UnaryOp::Neg, mm(gb, mT(out[0]))));
            if (wanted(1)) emit(1, gb);
            break;
        }
        case LinalgOp::Inverse: {
            const NodePtr inv_t = mT(out[0]);
            emit(0, g::unary(UnaryOp::Neg, mm(inv_t, mm(grad[0], inv_t))));
            break;
        }
        case LinalgOp::Determinant: {  // d det = det tr(A^-1 dA), d log|det| = tr(A^-1 dA)
            const NodePtr scale = plus(times(grad[0], out[0]), grad[2]);
            emit(0, times(per_matrix(scale), mT(inverse(a))));
            break;
        }
        case LinalgOp::TriangularSolve: {
            const bool upper = flags & kLinalgUpper, unit = flags & kLinalgUnitDiagonal;
            const NodePtr gb = solve_triangular(mT(a), grad[0], !upper, unit);
            if (wanted(0)) {
                const NodePtr full = g::unary(UnaryOp::Neg, mm(gb, mT(out[0])));
                emit(0, upper ? triu(full, unit ? 1 : 0) : tril(full, unit ? -1 : 0));
            }
            if (wanted(1)) emit(1, gb);
            break;
        }
        case LinalgOp::Qr: {
            if ((flags & kLinalgComplete) && m > cols)
                fail<ValueError>("grad: lt::linalg::qr with mode \"complete\" of a matrix with more rows than columns (", m, "x",
                                 cols, ") is not differentiable (its last columns of Q are not unique); use mode \"reduced\"");
            const bool vectors = flags & kLinalgVectors;
            const std::vector<NodePtr> qr = vectors ? out : g::linalg(LinalgOp::Qr, flags | kLinalgVectors, a, nullptr, "grad");
            const NodePtr &q = qr[0], &r = qr[1];
            const NodePtr gq = vectors ? grad[0] : g::constant(Scalar::of<std::int64_t>(0), q->dtype, q->shape, q->device);
            const NodePtr gr = grad[vectors ? 1 : 0];
            if (m >= cols) {
                emit(0, qr_deep(q, r, gq, gr));
                break;
            }
            // A wide A = [X Y] (X: its first m columns) = Q [U V]: X = Q U is square; Y = Q V
            // passes gQ + Y gV^T to X's rule and Q gV to Y (TensorFlow's _QrGrad).
            const std::size_t rank = a->shape.size();
            auto columns = [&](const NodePtr& x, std::int64_t from, std::int64_t to) {
                SmallVector<std::int64_t, 12> starts_steps;
                for (std::size_t d = 0; d + 1 < rank; ++d) {
                    starts_steps.push_back(0);
                    starts_steps.push_back(1);
                }
                starts_steps.push_back(from);
                starts_steps.push_back(1);
                Shape s = x->shape;
                s.back() = to - from;
                return g::window(x, starts_steps, s);
            };
            const NodePtr y = columns(a, m, cols), u = columns(r, 0, m), gv = columns(gr, m, cols);
            const NodePtr gx = qr_deep(q, u, plus(gq, mm(y, mT(gv))), columns(gr, 0, m));
            const NodePtr gy_part = mm(q, gv);
            Shape none(rank, 0), left = none, right = none;
            right.back() = cols - m;
            left.back() = m;
            emit(0, plus(g::pad(gx, none, right, number(0)), g::pad(gy_part, left, none, number(0))));
            break;
        }
        case LinalgOp::Eigh: {  // PyTorch's linalg_eig_backward for symmetric A
            const bool vectors = flags & kLinalgVectors;
            const std::vector<NodePtr> wv = vectors ? out : g::linalg(LinalgOp::Eigh, flags | kLinalgVectors, a, nullptr, "grad");
            const NodePtr &w = wv[0], &v = wv[1];
            NodePtr inner = diag_embed(grad[0]);
            if (vectors) {
                const NodePtr vgv = mm(mT(v), grad[1]);
                const NodePtr skew = times(minus(vgv, mT(vgv)), number(0.5));
                const NodePtr gaps = minus(spread(w, false), spread(w, true));  // w[j] - w[i] at (i, j)
                const NodePtr off = g::where(on_diagonal(gaps->shape, gaps->device), number(0), g::binary(BinaryOp::Div, skew, gaps));
                inner = plus(inner, off);
            }
            emit(0, mm(v, mm(inner, mT(v))));
            break;
        }
        case LinalgOp::Svd: {
            const bool vectors = flags & kLinalgVectors, complete = flags & kLinalgComplete;
            if (vectors && complete && m != cols)
                fail<ValueError>("grad: lt::linalg::svd with full_matrices of a non-square matrix (", m, "x", cols,
                                 ") is not differentiable (the extra singular vectors are not unique); use full_matrices = false");
            const std::vector<NodePtr> usv =
                vectors ? out : g::linalg(LinalgOp::Svd, kLinalgVectors, a, nullptr, "grad");
            const NodePtr &u = usv[0], &s = usv[1], v = mT(usv[2]);
            NodePtr inner = diag_embed(grad[vectors ? 1 : 0]);
            NodePtr ga;
            if (vectors) {  // Townsend's real SVD gradient
                const NodePtr gu = grad[0], gv = mT(grad[2]);
                const NodePtr s2 = times(s, s);
                const NodePtr gaps = minus(spread(s2, false), spread(s2, true));  // s[j]^2 - s[i]^2 at (i, j)
                auto over_gaps = [&](const NodePtr& x) {
                    return g::where(on_diagonal(gaps->shape, gaps->device), number(0), g::binary(BinaryOp::Div, x, gaps));
                };
                const NodePtr utgu = mm(mT(u), gu), vtgv = mm(mT(v), gv);
                inner = plus(inner, scale_columns(over_gaps(minus(utgu, mT(utgu))), s));
                inner = plus(inner, scale_rows(over_gaps(minus(vtgv, mT(vtgv))), s));
                ga = mm(u, mm(inner, mT(v)));
                const NodePtr inv_s = g::unary(UnaryOp::Reciprocal, s);
                if (m > cols)  // (I - U U^T) gU S^-1 V^T, zero where U is square
                    ga = plus(ga, mm(scale_columns(minus(gu, mm(u, utgu)), inv_s), mT(v)));
                if (cols > m)  // U S^-1 gV^T (I - V V^T)
                    ga = plus(ga, mm(scale_columns(u, inv_s), mT(minus(gv, mm(v, vtgv)))));
            } else {
                ga = mm(u, mm(inner, mT(v)));
            }
            emit(0, ga);
            break;
        }
        case LinalgOp::Lstsq:
            fail<ValueError>("grad: lt::linalg::", name, " has no gradient in lazytensor; differentiate lt::linalg::pinv(A) @ B "
                             "or a solve of the normal equations instead");
    }
}

}  // namespace lazytensor::detail::autodiff::linalg_rules
