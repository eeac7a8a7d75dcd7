// SPDX-License-Identifier: MIT
// lt::linalg: solvers and decompositions with PyTorch's names and semantics (torch.linalg):
// solve, inv, det, slogdet, cholesky, cholesky_solve, solve_triangular (and the older
// triangular_solve), qr, svd, svdvals, eigh, eigvalsh, lstsq, pinv, matrix_rank, matrix_power.
// float and double; batched over leading axes, which broadcast as matmul's do.
//
// Each routine is one linalg node (ir/linalg.hpp: LAPACK, on the host for every device in this
// version), whose results are lazy views that fuse with whatever reads them; the rest are
// compositions of those, of matmul and of element-wise ops. Gradients flow through all of them
// but lstsq (autodiff/linalg_rules.hpp). Shape and dtype mistakes are errors where the
// expression is written; a singular or not positive definite matrix is a LinAlgError from the
// realize that meets it (naming the batch element), and leaves every tensor as it was.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "../ir/linalg.hpp"
#include "creation.hpp"
#include "tensor.hpp"

namespace lazytensor {
namespace linalg {

/// lt::linalg::qr's results: A = Q R (auto [Q, R] = lt::linalg::qr(A)).
template <class T>
struct QR {
    ///@{
    /// Q: orthonormal columns (all of them in "complete" mode); R: upper triangular.
    Tensor<T> Q, R;
    ///@}
};
/// lt::linalg::svd's results: A = U diag(S) Vh, S descending.
template <class T>
struct SVD {
    ///@{
    /// U: the left singular vectors (columns); S: the singular values; Vh: the right ones (rows).
    Tensor<T> U, S, Vh;
    ///@}
};
/// lt::linalg::eigh's results: A = V diag(eigenvalues) V^T with V = eigenvectors (as columns),
/// the eigenvalues ascending.
template <class T>
struct Eigh {
    ///@{
    /// The eigenvalues (ascending) and the eigenvectors (as columns).
    Tensor<T> eigenvalues, eigenvectors;
    ///@}
};
/// lt::linalg::slogdet's results: det(A) = sign * exp(logabsdet).
template <class T>
struct Slogdet {
    ///@{
    /// The sign of the determinant (0 for a singular matrix) and the log of its absolute value.
    Tensor<T> sign, logabsdet;
    ///@}
};
/// lt::linalg::lstsq's results (NumPy's and PyTorch's names).
template <class T>
struct Lstsq {
    ///@{
    /// The least-squares solution, and the squared residuals per column (where m > n; else empty).
    Tensor<T> solution, residuals;
    ///@}
    Tensor<std::int64_t> rank;  ///< the effective rank of A
    Tensor<T> singular_values;  ///< A's singular values
};

namespace detail {

using lazytensor::detail::NodePtr;
using lazytensor::detail::LinalgOp;
namespace g = lazytensor::detail::graph;

template <class E>
using value_t = typename E::value_type;

template <class E>
NodePtr node_of(const E& x) {
    return Tensor<value_t<E>>(x).node_ptr();
}
inline NodePtr mT(const NodePtr& x) { return g::transpose(x, -2, -1); }
inline std::vector<NodePtr> run(LinalgOp op, int flags, const NodePtr& a, const NodePtr& b, const char* api) {
    return g::linalg(op, flags, a, b, api);
}
inline NodePtr triangular(const NodePtr& a, const NodePtr& b, bool upper, bool unit, const char* api) {
    const int flags = (upper ? lazytensor::detail::kLinalgUpper : 0) | (unit ? lazytensor::detail::kLinalgUnitDiagonal : 0);
    return run(LinalgOp::TriangularSolve, flags, a, b, api)[0];
}
inline void need_matrix(const NodePtr& x, const char* what, const char* api) {
    if (x->shape.size() < 2)
        lazytensor::detail::fail<ShapeError>(api, ": ", what, " must be a matrix or a batch of matrices ([..., rows, columns]), got shape ", x->shape);
}
/// B as PyTorch's solve reads it: a batch of vectors where B is 1-D or B's shape is A's without
/// its last axis; then the vectors are columns here, and `vector` says to drop that axis after.
inline NodePtr right_hand_side(const NodePtr& a, const NodePtr& b, bool& vector, const char* api) {
    need_matrix(a, "A", api);
    const Shape a_rows(a->shape.begin(), a->shape.end() - 1);
    vector = b->shape.size() == 1 || (b->shape.size() + 1 == a->shape.size() && b->shape == a_rows);
    if (!vector) return b;
    Shape column = b->shape;
    column.push_back(1);
    return g::reshape(b, column, api);
}
inline NodePtr drop_last(const NodePtr& x, bool vector, const char* api) {
    if (!vector) return x;
    return g::reshape(x, Shape(x->shape.begin(), x->shape.end() - 1), api);
}
/// Checks pinv's and matrix_rank's A and fills in the default relative tolerance, eps *
/// max(m, n) (PyTorch's), where rtol < 0; true where A has no singular values (an extent 0).
template <class T>
bool prepare_cutoff(const NodePtr& a, double& rtol, const char* api) {
    need_matrix(a, "A", api);
    const std::size_t r = a->shape.size();
    if (rtol < 0) rtol = std::numeric_limits<T>::epsilon() * static_cast<double>(std::max(a->shape[r - 2], a->shape[r - 1]));
    return a->shape[r - 2] == 0 || a->shape[r - 1] == 0;
}
/// s [..., k] (non-negative: singular values or |eigenvalues|) above rtol times their largest.
inline NodePtr above_cutoff(const NodePtr& s, double rtol, const char* api) {
    const int last = static_cast<int>(s->shape.size()) - 1;
    const NodePtr largest = g::reduce(ReduceOp::Max, s, Axes{last}, true, api);
    return g::binary(BinaryOp::Gt, s, g::binary(BinaryOp::Mul, largest, Scalar::of<double>(rtol)));
}
inline void check_uplo(const std::string& uplo, const char* api) {
    if (uplo != "L" && uplo != "U") lazytensor::detail::fail<ValueError>(api, ": UPLO must be \"L\" or \"U\", got \"", uplo, "\"");
}

}  // namespace detail

#define LAZYTENSOR_LINALG_TENSOR_LIKE(E) class E, class = std::enable_if_t<lazytensor::detail::is_tensor_like_v<E>>

/// L, lower triangular with a positive diagonal, with A = L L^T, from A's lower triangle (A
/// symmetric positive definite); with upper, U with A = U^T U from A's upper triangle (as
/// PyTorch: for a symmetric A, U = L^T). LinAlgError at realize where A is not positive
/// definite, naming the batch element and the order of the failing minor.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> cholesky(const E& A, bool upper = false) {
    const char* api = "lt::linalg::cholesky";
    const detail::NodePtr a = detail::node_of(A);
    detail::need_matrix(a, "A", api);
    // A's upper triangle is A^T's lower one: U = (cholesky of A^T)^T.
    const detail::NodePtr l = detail::run(detail::LinalgOp::Cholesky, 0, upper ? detail::mT(a) : a, nullptr, api)[0];
    return Tensor<detail::value_t<E>>(upper ? detail::mT(l) : l);
}

/// X with A X = B (left) or X A = B (left = false), A square; B [..., n, k], or a batch of
/// vectors [..., n] (B 1-D, or B's shape A's without its last axis: PyTorch's rule; left only).
/// LinAlgError at realize where A is singular.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(EA), LAZYTENSOR_LINALG_TENSOR_LIKE(EB)>
Tensor<detail::value_t<EA>> solve(const EA& A, const EB& B, bool left = true) {
    const char* api = "lt::linalg::solve";
    const detail::NodePtr a = detail::node_of(A), b0 = detail::node_of(B);
    if (!left) {
        detail::need_matrix(a, "A", api);
        detail::need_matrix(b0, "B", api);
        return Tensor<detail::value_t<EA>>(
            detail::mT(detail::run(detail::LinalgOp::Solve, 0, detail::mT(a), detail::mT(b0), api)[0]));
    }
    bool vector = false;
    const detail::NodePtr b = detail::right_hand_side(a, b0, vector, api);
    return Tensor<detail::value_t<EA>>(detail::drop_last(detail::run(detail::LinalgOp::Solve, 0, a, b, api)[0], vector, api));
}

/// A^-1 of a square A. LinAlgError at realize where A is singular.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> inv(const E& A) {
    return Tensor<detail::value_t<E>>(detail::run(detail::LinalgOp::Inverse, 0, detail::node_of(A), nullptr, "lt::linalg::inv")[0]);
}

/// det(A) of a square A ([...]), from its LU factorization; 0 for a singular A.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> det(const E& A) {
    return Tensor<detail::value_t<E>>(detail::run(detail::LinalgOp::Determinant, 0, detail::node_of(A), nullptr, "lt::linalg::det")[0]);
}

/// The sign of det(A) and log|det(A)| (auto [sign, logabsdet] = ...): sign 0 and logabsdet -inf
/// for a singular A.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Slogdet<detail::value_t<E>> slogdet(const E& A) {
    using T = detail::value_t<E>;
    const auto parts = detail::run(detail::LinalgOp::Determinant, 0, detail::node_of(A), nullptr, "lt::linalg::slogdet");
    return {Tensor<T>(parts[1]), Tensor<T>(parts[2])};
}

/// X with A X = B (left) or X A = B, reading only A's upper or lower triangle (unitriangular:
/// ones on its diagonal, not read). LinAlgError at realize at a zero on the diagonal (SciPy's
/// solve_triangular; PyTorch's gives inf or NaN there).
template <LAZYTENSOR_LINALG_TENSOR_LIKE(EA), LAZYTENSOR_LINALG_TENSOR_LIKE(EB)>
Tensor<detail::value_t<EA>> solve_triangular(const EA& A, const EB& B, bool upper, bool left = true, bool unitriangular = false) {
    const char* api = "lt::linalg::solve_triangular";
    const detail::NodePtr a = detail::node_of(A), b = detail::node_of(B);
    detail::need_matrix(a, "A", api);
    detail::need_matrix(b, "B", api);
    if (left) return Tensor<detail::value_t<EA>>(detail::triangular(a, b, upper, unitriangular, api));
    return Tensor<detail::value_t<EA>>(detail::mT(detail::triangular(detail::mT(a), detail::mT(b), !upper, unitriangular, api)));
}

/// torch.triangular_solve's argument order and options: X with A X = B, or A^T X = B with
/// transpose. Returns the solution only (PyTorch also returns a copy of A).
template <LAZYTENSOR_LINALG_TENSOR_LIKE(EB), LAZYTENSOR_LINALG_TENSOR_LIKE(EA)>
Tensor<detail::value_t<EA>> triangular_solve(const EB& B, const EA& A, bool upper = true, bool transpose = false,
                                             bool unitriangular = false) {
    const char* api = "lt::linalg::triangular_solve";
    const detail::NodePtr a = detail::node_of(A), b = detail::node_of(B);
    detail::need_matrix(a, "A", api);
    detail::need_matrix(b, "B", api);
    return Tensor<detail::value_t<EA>>(
        transpose ? detail::triangular(detail::mT(a), b, !upper, unitriangular, api) : detail::triangular(a, b, upper, unitriangular, api));
}

/// X with A X = B, given A's Cholesky factor: L (A = L L^T) or, with upper, U (A = U^T U);
/// torch.cholesky_solve's argument order. Two triangular solves.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(EB), LAZYTENSOR_LINALG_TENSOR_LIKE(EL)>
Tensor<detail::value_t<EL>> cholesky_solve(const EB& B, const EL& L, bool upper = false) {
    const char* api = "lt::linalg::cholesky_solve";
    const detail::NodePtr l = detail::node_of(L), b = detail::node_of(B);
    detail::need_matrix(l, "L", api);
    detail::need_matrix(b, "B", api);
    const detail::NodePtr lower = upper ? detail::mT(l) : l;  // A = lower lower^T
    const detail::NodePtr y = detail::triangular(lower, b, false, false, api);
    return Tensor<detail::value_t<EL>>(detail::triangular(detail::mT(lower), y, true, false, api));
}

/// A = Q R with mode "reduced" (Q [m, min(m, n)], R [min(m, n), n]), "complete" (Q [m, m],
/// R [m, n]) or "r" (R as in "reduced", Q empty), as PyTorch. R's diagonal may be negative
/// (LAPACK's geqrf, as NumPy and PyTorch).
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
QR<detail::value_t<E>> qr(const E& A, const std::string& mode = "reduced") {
    using T = detail::value_t<E>;
    const char* api = "lt::linalg::qr";
    if (mode != "reduced" && mode != "complete" && mode != "r")
        lazytensor::detail::fail<ValueError>(api, ": mode must be \"reduced\", \"complete\" or \"r\", got \"", mode, "\"");
    const detail::NodePtr a = detail::node_of(A);
    using lazytensor::detail::kLinalgComplete;
    using lazytensor::detail::kLinalgVectors;
    const int flags = (mode == "complete" ? kLinalgComplete : 0) | (mode == "r" ? 0 : kLinalgVectors);
    const auto parts = detail::run(detail::LinalgOp::Qr, flags, a, nullptr, api);
    if (mode == "r") return {zeros<T>({0}, a->device), Tensor<T>(parts[0])};
    return {Tensor<T>(parts[0]), Tensor<T>(parts[1])};
}

/// A = U diag(S) Vh, S descending (LAPACK's gesdd): full_matrices (PyTorch's default) gives
/// U [m, m] and Vh [n, n], else U [m, k] and Vh [k, n] with k = min(m, n).
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
SVD<detail::value_t<E>> svd(const E& A, bool full_matrices = true) {
    using T = detail::value_t<E>;
    using lazytensor::detail::kLinalgComplete;
    using lazytensor::detail::kLinalgVectors;
    const auto parts = detail::run(detail::LinalgOp::Svd, kLinalgVectors | (full_matrices ? kLinalgComplete : 0),
                                   detail::node_of(A), nullptr, "lt::linalg::svd");
    return {Tensor<T>(parts[0]), Tensor<T>(parts[1]), Tensor<T>(parts[2])};
}

/// The singular values of A [..., k], descending.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> svdvals(const E& A) {
    return Tensor<detail::value_t<E>>(detail::run(detail::LinalgOp::Svd, 0, detail::node_of(A), nullptr, "lt::linalg::svdvals")[0]);
}

/// The eigenvalues (ascending) and eigenvectors (columns) of a symmetric A, from its lower
/// (UPLO "L") or upper ("U") triangle.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Eigh<detail::value_t<E>> eigh(const E& A, const std::string& UPLO = "L") {
    using T = detail::value_t<E>;
    const char* api = "lt::linalg::eigh";
    detail::check_uplo(UPLO, api);
    detail::NodePtr a = detail::node_of(A);
    detail::need_matrix(a, "A", api);
    if (UPLO == "U") a = detail::mT(a);  // its upper triangle is A^T's lower
    const auto parts = detail::run(detail::LinalgOp::Eigh, lazytensor::detail::kLinalgVectors, a, nullptr, api);
    return {Tensor<T>(parts[0]), Tensor<T>(parts[1])};
}

/// The eigenvalues of a symmetric A, ascending.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> eigvalsh(const E& A, const std::string& UPLO = "L") {
    const char* api = "lt::linalg::eigvalsh";
    detail::check_uplo(UPLO, api);
    detail::NodePtr a = detail::node_of(A);
    detail::need_matrix(a, "A", api);
    if (UPLO == "U") a = detail::mT(a);
    return Tensor<detail::value_t<E>>(detail::run(detail::LinalgOp::Eigh, 0, a, nullptr, api)[0]);
}

/// The X of least ||A X - B|| (the least-norm one where A is rank deficient), through LAPACK's
/// gelsd (singular values below max(m, n) * eps times the largest count as zero); B [..., m, k]
/// or [m]. residuals: the squared residual of each column of X where m > n (NumPy and PyTorch
/// give it only where A also has full rank), else empty; rank and the singular values of A.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(EA), LAZYTENSOR_LINALG_TENSOR_LIKE(EB)>
Lstsq<detail::value_t<EA>> lstsq(const EA& A, const EB& B) {
    using T = detail::value_t<EA>;
    const char* api = "lt::linalg::lstsq";
    const detail::NodePtr a = detail::node_of(A), b0 = detail::node_of(B);
    detail::need_matrix(a, "A", api);
    const bool vector = b0->shape.size() == 1;
    const detail::NodePtr b = vector ? detail::g::reshape(b0, Shape{b0->shape[0], 1}, api) : b0;
    const auto parts = detail::run(detail::LinalgOp::Lstsq, 0, a, b, api);
    const std::size_t r = a->shape.size();
    const std::int64_t m = a->shape[r - 2], n = a->shape[r - 1];
    Lstsq<T> out;
    out.solution = Tensor<T>(detail::drop_last(parts[0], vector, api));
    if (m > n) {
        const detail::NodePtr misfit = detail::g::binary(BinaryOp::Sub, detail::g::matmul(a, parts[0]), b);
        const int rows = static_cast<int>(misfit->shape.size()) - 2;
        const detail::NodePtr squares = detail::g::reduce(ReduceOp::Sum, detail::g::binary(BinaryOp::Mul, misfit, misfit),
                                                          Axes{rows}, false, api);
        out.residuals = Tensor<T>(vector ? detail::g::reshape(squares, Shape(squares->shape.begin(), squares->shape.end() - 1), api)
                                         : squares);
    } else {
        out.residuals = zeros<T>({0}, a->device);
    }
    out.rank = Tensor<std::int64_t>(detail::g::cast(parts[2], DType::Int64));
    out.singular_values = Tensor<T>(parts[1]);
    return out;
}

/// The Moore-Penrose pseudo-inverse through the SVD (or, hermitian, eigh): singular values at
/// most rtol times the largest count as zero; rtol < 0 (the default) is max(m, n) * eps.
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> pinv(const E& A, double rtol = -1, bool hermitian = false) {
    using T = detail::value_t<E>;
    namespace g = detail::g;
    const char* api = "lt::linalg::pinv";
    const detail::NodePtr a = detail::node_of(A);
    if (detail::prepare_cutoff<T>(a, rtol, api)) return zeros<T>(detail::mT(a)->shape, a->device);
    auto inverted = [&](const detail::NodePtr& magnitudes, const detail::NodePtr& values) {
        // 1 / value where |value| is above the cutoff, else 0, as a row to scale columns by
        Shape row = values->shape;
        row.insert(row.size() - 1, 1);
        const detail::NodePtr kept = detail::above_cutoff(magnitudes, rtol, api);
        return g::reshape(g::where(kept, g::unary(UnaryOp::Reciprocal, values), Scalar::of<double>(0)), row, api);
    };
    if (hermitian) {
        const auto wv = detail::run(detail::LinalgOp::Eigh, lazytensor::detail::kLinalgVectors, a, nullptr, api);
        const detail::NodePtr scaled = g::binary(BinaryOp::Mul, wv[1], inverted(g::unary(UnaryOp::Abs, wv[0]), wv[0]));
        return Tensor<T>(g::matmul(scaled, detail::mT(wv[1])));
    }
    const auto usv = detail::run(detail::LinalgOp::Svd, lazytensor::detail::kLinalgVectors, a, nullptr, api);
    const detail::NodePtr v_scaled = g::binary(BinaryOp::Mul, detail::mT(usv[2]), inverted(usv[1], usv[1]));
    return Tensor<T>(g::matmul(v_scaled, detail::mT(usv[0])));
}

/// The number of singular values (or, hermitian, |eigenvalues|) above rtol times the largest
/// (rtol < 0: max(m, n) * eps), int64 [...].
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<std::int64_t> matrix_rank(const E& A, double rtol = -1, bool hermitian = false) {
    using T = detail::value_t<E>;
    namespace g = detail::g;
    const char* api = "lt::linalg::matrix_rank";
    const detail::NodePtr a = detail::node_of(A);
    if (detail::prepare_cutoff<T>(a, rtol, api)) return zeros<std::int64_t>(Shape(a->shape.begin(), a->shape.end() - 2), a->device);
    const detail::NodePtr values =
        hermitian ? g::unary(UnaryOp::Abs, detail::run(detail::LinalgOp::Eigh, 0, a, nullptr, api)[0])
                  : detail::run(detail::LinalgOp::Svd, 0, a, nullptr, api)[0];
    const int last = static_cast<int>(values->shape.size()) - 1;
    return Tensor<std::int64_t>(
        g::reduce(ReduceOp::Sum, g::cast(detail::above_cutoff(values, rtol, api), DType::Int64), Axes{last}, false, api));
}

/// A^n for a square A by repeated squaring (matrix products); n = 0 gives the identity, n < 0
/// the inverse's power (float and double only).
template <LAZYTENSOR_LINALG_TENSOR_LIKE(E)>
Tensor<detail::value_t<E>> matrix_power(const E& A, std::int64_t n) {
    using T = detail::value_t<E>;
    namespace g = detail::g;
    const char* api = "lt::linalg::matrix_power";
    detail::NodePtr a = detail::node_of(A);
    detail::need_matrix(a, "A", api);
    const std::size_t r = a->shape.size();
    if (a->shape[r - 2] != a->shape[r - 1])
        lazytensor::detail::fail<ShapeError>(api, ": needs square matrices, but A has shape ", a->shape);
    if (n < 0) {
        a = detail::run(detail::LinalgOp::Inverse, 0, a, nullptr, api)[0];
        n = -n;
    }
    detail::NodePtr result;  // null: the identity
    for (detail::NodePtr square = a; n > 0; n >>= 1) {
        if (n & 1) result = result ? g::matmul(result, square) : square == a ? g::copy(square) : square;
        if (n > 1) square = g::matmul(square, square);
    }
    if (!result) {
        const std::int64_t k = a->shape[r - 1];
        result = g::expand(eye<T>(k, k, a->device).node_ptr(), a->shape, api);
    }
    return Tensor<T>(result);
}

#undef LAZYTENSOR_LINALG_TENSOR_LIKE

}  // namespace linalg
}  // namespace lazytensor
