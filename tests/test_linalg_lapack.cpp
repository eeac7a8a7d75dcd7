// SPDX-License-Identifier: MIT
// lt::linalg's solvers and decompositions (LAPACK) on every test device, float and double:
// checked by what defines them (A = L L^T, A X = B, A = Q R with Q^T Q = I and R triangular,
// A = U diag(S) Vh, A V = V diag(w), the Moore-Penrose conditions), computed here in double from
// the results, and against small cases worked out by hand; batched and broadcast, empty and
// 1x1 matrices, views; singular and indefinite input; bad input; gradients against central
// differences.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "common.hpp"

#if LAZYTENSOR_LAPACK
#include <lapacke.h>
#endif

namespace lapack_tests {

template <class T>
double lapack_tol() {
    return std::is_same_v<T, float> ? 3e-4 : 1e-10;
}

template <class T>
Ref lapack_values(const lt::Tensor<T>& t) {
    Ref r{t.shape(), {}};
    for (T x : t.to_vector()) r.v.push_back(static_cast<double>(x));
    return r;
}

/// The element (i, j) of matrix b of a [..., r, c] reference.
inline double& lapack_at(Ref& a, std::int64_t b, std::int64_t i, std::int64_t j) {
    const std::int64_t r = a.shape[a.shape.size() - 2], c = a.shape.back();
    return a.v[static_cast<std::size_t>(b * r * c + i * c + j)];
}
inline double lapack_at(const Ref& a, std::int64_t b, std::int64_t i, std::int64_t j) {
    return lapack_at(const_cast<Ref&>(a), b, i, j);
}
inline std::int64_t lapack_batches(const Ref& a) { return lt::numel(lt::Shape(a.shape.begin(), a.shape.end() - 2)); }

/// Batched a @ b (same batch shape), in long double.
inline Ref lapack_mm(const Ref& a, const Ref& b) {
    const std::size_t r = a.shape.size();
    const std::int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape.back();
    REQUIRE(b.shape[r - 2] == k);
    lt::Shape s = a.shape;
    s.back() = n;
    Ref out{s, std::vector<double>(static_cast<std::size_t>(lt::numel(s)))};
    for (std::int64_t q = 0; q < lapack_batches(a); ++q)
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                long double acc = 0;
                for (std::int64_t t = 0; t < k; ++t) acc += (long double)lapack_at(a, q, i, t) * lapack_at(b, q, t, j);
                lapack_at(out, q, i, j) = static_cast<double>(acc);
            }
    return out;
}

inline Ref lapack_transpose(const Ref& a) {
    const std::size_t r = a.shape.size();
    lt::Shape s = a.shape;
    std::swap(s[r - 2], s[r - 1]);
    Ref out{s, a.v};
    for (std::int64_t q = 0; q < lapack_batches(a); ++q)
        for (std::int64_t i = 0; i < a.shape[r - 2]; ++i)
            for (std::int64_t j = 0; j < a.shape[r - 1]; ++j) lapack_at(out, q, j, i) = lapack_at(a, q, i, j);
    return out;
}

inline Ref lapack_eye(const lt::Shape& batch, std::int64_t n) {
    lt::Shape s = batch;
    s.push_back(n);
    s.push_back(n);
    return ref_of(s, [](const std::vector<std::int64_t>& i) { return i[i.size() - 1] == i[i.size() - 2] ? 1.0 : 0.0; });
}

/// Every element within tol times the largest |want| (at least 1).
inline void lapack_close(const Ref& got, const Ref& want, double tol) {
    REQUIRE(got.shape == want.shape);
    double scale = 1;
    for (double w : want.v) scale = std::max(scale, std::fabs(w));
    int failures = 0;
    for (std::size_t i = 0; i < got.v.size() && failures < 5; ++i)
        if (!(std::fabs(got.v[i] - want.v[i]) <= tol * scale)) {
            ++failures;
            FAIL_CHECK("element " << i << " of shape " << want.shape << ": got " << got.v[i] << ", expected " << want.v[i]);
        }
}

/// Random values rounded to T.
template <class T>
Ref lapack_random(const lt::Shape& shape, unsigned seed, double lo = -1, double hi = 1) {
    return random_ref<T>(shape, seed, lo, hi);
}

/// A random symmetric positive definite batch: M M^T + n I, rounded to T.
template <class T>
Ref lapack_spd(const lt::Shape& batch, std::int64_t n, unsigned seed) {
    lt::Shape s = batch;
    s.push_back(n);
    s.push_back(n);
    const Ref m = lapack_random<T>(s, seed);
    Ref a = lapack_mm(m, lapack_transpose(m));
    const Ref id = lapack_eye(batch, n);
    for (std::size_t i = 0; i < a.v.size(); ++i) a.v[i] = static_cast<double>(static_cast<T>(a.v[i] + n * id.v[i]));
    return a;
}

/// Checks that a reference matrix batch is lower (or upper) triangular.
inline void lapack_triangular(const Ref& a, bool upper) {
    const std::size_t r = a.shape.size();
    for (std::int64_t q = 0; q < lapack_batches(a); ++q)
        for (std::int64_t i = 0; i < a.shape[r - 2]; ++i)
            for (std::int64_t j = 0; j < a.shape[r - 1]; ++j)
                if (upper ? i > j : i < j) CHECK(lapack_at(a, q, i, j) == 0);
}

/// det by Gaussian elimination with partial pivoting in long double (the reference).
inline double lapack_reference_det(std::vector<long double> m, std::int64_t n) {
    long double det = 1;
    for (std::int64_t c = 0; c < n; ++c) {
        std::int64_t p = c;
        for (std::int64_t r = c + 1; r < n; ++r)
            if (std::fabs(m[r * n + c]) > std::fabs(m[p * n + c])) p = r;
        if (m[p * n + c] == 0) return 0;
        if (p != c) {
            for (std::int64_t j = 0; j < n; ++j) std::swap(m[c * n + j], m[p * n + j]);
            det = -det;
        }
        det *= m[c * n + c];
        for (std::int64_t r = c + 1; r < n; ++r) {
            const long double f = m[r * n + c] / m[c * n + c];
            for (std::int64_t j = c; j < n; ++j) m[r * n + j] -= f * m[c * n + j];
        }
    }
    return static_cast<double>(det);
}

// ------------------------------------------------------------------ gradients (double, host)

using LapackFn = std::function<lt::Tensor<double>(const std::vector<lt::Tensor<double>>&)>;

void lapack_check_gradients(const LapackFn& f, const std::vector<Ref>& inputs, double tol = 1e-5) {
    check_gradient_by_differences(f, inputs, tol);
}

/// (x + x^T) / 2 + shift I: a symmetric matrix from any square x.
inline lt::Tensor<double> lapack_symmetric(const lt::Tensor<double>& x, double shift) {
    const std::int64_t n = x.shape().back();
    return lt::Tensor<double>((x + x.transpose(-2, -1)) * 0.5 + lt::eye<double>(n) * shift);
}


TEST_CASE_TEMPLATE("linalg: cholesky reconstructs A = L L^T, batched, lower and upper", T, float, double) {
    for_each_device([](lt::Device) {
        // By hand: [[4, 2], [2, 3]] = [[2, 0], [1, sqrt 2]] [[2, 1], [0, sqrt 2]].
        const lt::Tensor<T> small = lt::tensor<T>({4, 2, 2, 3}, {2, 2});
        lapack_close(lapack_values(lt::linalg::cholesky(small)), Ref{{2, 2}, {2, 0, 1, std::sqrt(2.0)}}, lapack_tol<T>());
        lapack_close(lapack_values(lt::linalg::cholesky(small, true)), Ref{{2, 2}, {2, 1, 0, std::sqrt(2.0)}}, lapack_tol<T>());

        const Ref a = lapack_spd<T>({2, 3}, 5, 11);
        const Ref l = lapack_values(lt::linalg::cholesky(make_tensor<T>(a)));
        lapack_triangular(l, false);
        lapack_close(lapack_mm(l, lapack_transpose(l)), a, lapack_tol<T>());
        for (std::int64_t q = 0; q < 6; ++q)
            for (std::int64_t i = 0; i < 5; ++i) CHECK(lapack_at(l, q, i, i) > 0);
        // Only the lower triangle is read: garbage above it changes nothing.
        Ref garbage = a;
        for (std::int64_t q = 0; q < 6; ++q) lapack_at(garbage, q, 0, 4) = 1e3;
        lapack_close(lapack_values(lt::linalg::cholesky(make_tensor<T>(garbage))), l, lapack_tol<T>());
        const Ref u = lapack_values(lt::linalg::cholesky(make_tensor<T>(a), true));
        lapack_triangular(u, true);
        lapack_close(lapack_mm(lapack_transpose(u), u), a, lapack_tol<T>());
        lapack_close(u, lapack_transpose(l), lapack_tol<T>());
        // With upper, only the upper triangle is read (PyTorch's choice).
        Ref below = a;
        for (std::int64_t q = 0; q < 6; ++q) lapack_at(below, q, 4, 0) = 1e3;
        lapack_close(lapack_values(lt::linalg::cholesky(make_tensor<T>(below), true)), u, lapack_tol<T>());
    });
}

TEST_CASE_TEMPLATE("linalg: solve, inv and cholesky_solve satisfy A X = B, with broadcasting", T, float, double) {
    for_each_device([](lt::Device) {
        // By hand: [[2, 1], [1, 3]] x = [3, 5] has x = [0.8, 1.4]; [[4, 7], [2, 6]]^-1 = [[0.6, -0.7], [-0.2, 0.4]].
        const lt::Tensor<T> x = lt::linalg::solve(lt::tensor<T>({2, 1, 1, 3}, {2, 2}), lt::tensor<T>({3, 5}, {2}));
        CHECK(x.shape() == lt::Shape{2});
        lapack_close(lapack_values(x), Ref{{2}, {0.8, 1.4}}, lapack_tol<T>());
        lapack_close(lapack_values(lt::linalg::inv(lt::tensor<T>({4, 7, 2, 6}, {2, 2}))), Ref{{2, 2}, {0.6, -0.7, -0.2, 0.4}},
                     lapack_tol<T>());

        // A [2, 1, 4, 4] and B [3, 4, 2] broadcast to X [2, 3, 4, 2].
        Ref a = lapack_random<T>({2, 1, 4, 4}, 3);
        for (std::int64_t q = 0; q < 2; ++q)
            for (std::int64_t i = 0; i < 4; ++i) lapack_at(a, q, i, i) += 4;  // well conditioned
        const Ref b = lapack_random<T>({3, 4, 2}, 4);
        const lt::Tensor<T> solved = lt::linalg::solve(make_tensor<T>(a), make_tensor<T>(b));
        REQUIRE(solved.shape() == lt::Shape{2, 3, 4, 2});
        const Ref ab = broadcast(a, {2, 3, 4, 4}), bb = broadcast(b, {2, 3, 4, 2});
        lapack_close(lapack_mm(ab, lapack_values(solved)), bb, lapack_tol<T>());
        // A batch of vectors: B's shape is A's without its last axis.
        const Ref v = lapack_random<T>({2, 1, 4}, 5);
        const lt::Tensor<T> xv = lt::linalg::solve(make_tensor<T>(a), make_tensor<T>(v));
        REQUIRE(xv.shape() == lt::Shape{2, 1, 4});
        Ref xcol = lapack_values(xv);
        xcol.shape = {2, 1, 4, 1};
        Ref vcol = v;
        vcol.shape = {2, 1, 4, 1};
        lapack_close(lapack_mm(a, xcol), vcol, lapack_tol<T>());
        // X A = B.
        const Ref br = lapack_random<T>({2, 1, 3, 4}, 6);
        const lt::Tensor<T> right = lt::linalg::solve(make_tensor<T>(a), make_tensor<T>(br), false);
        lapack_close(lapack_mm(lapack_values(right), a), br, lapack_tol<T>());

        const Ref inverse = lapack_values(lt::linalg::inv(make_tensor<T>(a)));
        lapack_close(lapack_mm(a, inverse), lapack_eye({2, 1}, 4), lapack_tol<T>());

        const Ref spd = lapack_spd<T>({3}, 4, 8);
        const lt::Tensor<T> l = lt::linalg::cholesky(make_tensor<T>(spd));
        const Ref rhs = lapack_random<T>({3, 4, 2}, 9);
        lapack_close(lapack_mm(spd, lapack_values(lt::linalg::cholesky_solve(make_tensor<T>(rhs), l))), rhs, lapack_tol<T>());
        lapack_close(lapack_mm(spd, lapack_values(lt::linalg::cholesky_solve(make_tensor<T>(rhs), l.transpose(-2, -1), true))), rhs,
                     lapack_tol<T>());
    });
}

TEST_CASE_TEMPLATE("linalg: det and slogdet, by hand, against elimination, and singular", T, float, double) {
    for_each_device([](lt::Device) {
        const lt::Tensor<T> a = lt::tensor<T>({1, 2, 3, 4}, {2, 2});
        CHECK(lt::linalg::det(a).item() == doctest::Approx(-2).epsilon(lapack_tol<T>()));
        auto [sign, logabsdet] = lt::linalg::slogdet(a);
        CHECK(sign.item() == -1);
        CHECK(logabsdet.item() == doctest::Approx(std::log(2.0)).epsilon(lapack_tol<T>()));
        // Singular: det 0, sign 0, log|det| -inf (PyTorch and NumPy).
        const lt::Tensor<T> singular = lt::tensor<T>({1, 2, 2, 4}, {2, 2});
        CHECK(lt::linalg::det(singular).item() == 0);
        auto [s0, l0] = lt::linalg::slogdet(singular);
        CHECK(s0.item() == 0);
        CHECK(l0.item() == -std::numeric_limits<T>::infinity());
        // A batch against Gaussian elimination in long double.
        const Ref m = lapack_random<T>({3, 2, 5, 5}, 21, -2, 2);
        const Ref got = lapack_values(lt::linalg::det(make_tensor<T>(m)));
        REQUIRE(got.shape == lt::Shape{3, 2});
        for (std::int64_t q = 0; q < 6; ++q) {
            std::vector<long double> one(m.v.begin() + q * 25, m.v.begin() + (q + 1) * 25);
            const double want = lapack_reference_det(one, 5);
            CHECK(got.v[static_cast<std::size_t>(q)] == doctest::Approx(want).epsilon(std::is_same_v<T, float> ? 1e-3 : 1e-9));
        }
        auto [sg, la] = lt::linalg::slogdet(make_tensor<T>(m));
        const Ref sv = lapack_values(sg), lv = lapack_values(la);
        for (std::int64_t q = 0; q < 6; ++q)
            CHECK(sv.v[static_cast<std::size_t>(q)] * std::exp(lv.v[static_cast<std::size_t>(q)]) ==
                  doctest::Approx(got.v[static_cast<std::size_t>(q)]).epsilon(std::is_same_v<T, float> ? 1e-3 : 1e-9));
        // 0x0: det 1 (an empty product); 1x1: the element.
        CHECK(lt::linalg::det(lt::zeros<T>({0, 0})).item() == 1);
        CHECK(lt::linalg::det(lt::tensor<T>({-3}, {1, 1})).item() == -3);
    });
}

TEST_CASE_TEMPLATE("linalg: triangular solves read one triangle, left and right, transposed, unit", T, float, double) {
    for_each_device([](lt::Device) {
        for (bool upper : {false, true})
            for (bool unit : {false, true}) {
                INFO("upper " << upper << ", unit diagonal " << unit);
                // The triangle with a strong diagonal; 100 in the other triangle (never read).
                const Ref raw = lapack_random<T>({2, 4, 4}, upper ? 31 : 32);
                Ref a = raw, clean = raw;
                for (std::int64_t q = 0; q < 2; ++q)
                    for (std::int64_t i = 0; i < 4; ++i)
                        for (std::int64_t j = 0; j < 4; ++j) {
                            const bool inside = upper ? i <= j : i >= j;
                            if (!inside) lapack_at(a, q, i, j) = 100, lapack_at(clean, q, i, j) = 0;
                            if (i == j) {
                                lapack_at(a, q, i, j) = unit ? 100 : 3 + raw.v[0];
                                lapack_at(clean, q, i, j) = unit ? 1 : 3 + raw.v[0];
                            }
                        }
                const Ref b = lapack_random<T>({2, 4, 3}, 33);
                const lt::Tensor<T> ta = make_tensor<T>(a), tb = make_tensor<T>(b);
                lapack_close(lapack_mm(clean, lapack_values(lt::linalg::solve_triangular(ta, tb, upper, true, unit))), b,
                             lapack_tol<T>());
                const Ref br = lapack_random<T>({2, 3, 4}, 34);
                lapack_close(
                    lapack_mm(lapack_values(lt::linalg::solve_triangular(ta, make_tensor<T>(br), upper, false, unit)), clean), br,
                    lapack_tol<T>());
                lapack_close(
                    lapack_mm(lapack_transpose(clean), lapack_values(lt::linalg::triangular_solve(tb, ta, upper, true, unit))), b,
                    lapack_tol<T>());
            }
    });
}

TEST_CASE_TEMPLATE("linalg: qr, reduced, complete and r, of tall, wide and square matrices", T, float, double) {
    for_each_device([](lt::Device) {
        for (lt::Shape shape : {lt::Shape{2, 5, 3}, lt::Shape{2, 3, 5}, lt::Shape{4, 4}, lt::Shape{1, 1}, lt::Shape{3, 0}}) {
            INFO("A of shape " << shape);
            const std::size_t r = shape.size();
            const std::int64_t m = shape[r - 2], n = shape[r - 1], k = std::min(m, n);
            const lt::Shape batch(shape.begin(), shape.end() - 2);
            const Ref a = lapack_random<T>(shape, 41);
            for (const char* mode : {"reduced", "complete"}) {
                INFO("mode " << mode);
                auto [q, rr] = lt::linalg::qr(make_tensor<T>(a), mode);
                const std::int64_t qc = std::string(mode) == "complete" ? m : k;
                lt::Shape qs = batch, rs = batch;
                qs.push_back(m);
                qs.push_back(qc);
                rs.push_back(qc);
                rs.push_back(n);
                REQUIRE(q.shape() == qs);
                REQUIRE(rr.shape() == rs);
                const Ref qv = lapack_values(q), rv = lapack_values(rr);
                lapack_triangular(rv, true);
                lapack_close(lapack_mm(lapack_transpose(qv), qv), lapack_eye(batch, qc), lapack_tol<T>());
                lapack_close(lapack_mm(qv, rv), a, lapack_tol<T>());
            }
            auto [none, r_only] = lt::linalg::qr(make_tensor<T>(a), "r");
            CHECK(none.shape() == lt::Shape{0});
            lapack_close(lapack_values(r_only), lapack_values(lt::linalg::qr(make_tensor<T>(a)).R), lapack_tol<T>());
        }
    });
}

TEST_CASE_TEMPLATE("linalg: svd reconstructs A = U diag(S) Vh, orthonormal, descending; svdvals", T, float, double) {
    for_each_device([](lt::Device) {
        // By hand: the singular values of [[3, 0], [0, -4]] are 4 and 3.
        lapack_close(lapack_values(lt::linalg::svdvals(lt::tensor<T>({3, 0, 0, -4}, {2, 2}))), Ref{{2}, {4, 3}}, lapack_tol<T>());
        for (lt::Shape shape : {lt::Shape{3, 6, 4}, lt::Shape{4, 6}, lt::Shape{5, 5}}) {
            INFO("A of shape " << shape);
            const std::size_t r = shape.size();
            const std::int64_t m = shape[r - 2], n = shape[r - 1], k = std::min(m, n);
            const lt::Shape batch(shape.begin(), shape.end() - 2);
            const Ref a = lapack_random<T>(shape, 51);
            for (bool full : {false, true}) {
                INFO("full_matrices " << full);
                auto [u, s, vh] = lt::linalg::svd(make_tensor<T>(a), full);
                const Ref uv = lapack_values(u), sv = lapack_values(s), vv = lapack_values(vh);
                lapack_close(lapack_mm(lapack_transpose(uv), uv), lapack_eye(batch, full ? m : k), lapack_tol<T>());
                lapack_close(lapack_mm(vv, lapack_transpose(vv)), lapack_eye(batch, full ? n : k), lapack_tol<T>());
                // U[:, :k] diag(S) Vh[:k, :]
                Ref scaled{lt::Shape(batch), {}};
                scaled.shape.push_back(m);
                scaled.shape.push_back(k);
                scaled.v.resize(static_cast<std::size_t>(lt::numel(scaled.shape)));
                Ref top = scaled;
                top.shape[top.shape.size() - 2] = k;
                top.shape.back() = n;
                top.v.resize(static_cast<std::size_t>(lt::numel(top.shape)));
                for (std::int64_t q = 0; q < lt::numel(batch); ++q) {
                    for (std::int64_t i = 0; i < m; ++i)
                        for (std::int64_t j = 0; j < k; ++j)
                            lapack_at(scaled, q, i, j) = lapack_at(uv, q, i, j) * sv.v[static_cast<std::size_t>(q * k + j)];
                    for (std::int64_t i = 0; i < k; ++i)
                        for (std::int64_t j = 0; j < n; ++j) lapack_at(top, q, i, j) = lapack_at(vv, q, i, j);
                    for (std::int64_t j = 0; j + 1 < k; ++j)
                        CHECK(sv.v[static_cast<std::size_t>(q * k + j)] >= sv.v[static_cast<std::size_t>(q * k + j + 1)]);
                }
                lapack_close(lapack_mm(scaled, top), a, lapack_tol<T>());
                lapack_close(lapack_values(lt::linalg::svdvals(make_tensor<T>(a))), sv, lapack_tol<T>());
            }
        }
    });
}

TEST_CASE_TEMPLATE("linalg: eigh gives A V = V diag(w), ascending, from either triangle; eigvalsh", T, float, double) {
    for_each_device([](lt::Device) {
        lapack_close(lapack_values(lt::linalg::eigvalsh(lt::tensor<T>({2, 1, 1, 2}, {2, 2}))), Ref{{2}, {1, 3}}, lapack_tol<T>());
        const Ref raw = lapack_random<T>({3, 5, 5}, 61);
        const Ref sym = lapack_mm(raw, lapack_transpose(raw));
        for (const char* uplo : {"L", "U"}) {
            INFO("UPLO " << uplo);
            Ref a = sym;  // the other triangle holds garbage: it must not be read
            for (std::int64_t q = 0; q < 3; ++q)
                for (std::int64_t i = 0; i < 5; ++i)
                    for (std::int64_t j = 0; j < 5; ++j)
                        if (std::string(uplo) == "L" ? i < j : i > j) lapack_at(a, q, i, j) = 50;
            auto [w, v] = lt::linalg::eigh(make_tensor<T>(a), uplo);
            const Ref wv = lapack_values(w), vv = lapack_values(v);
            lapack_close(lapack_mm(lapack_transpose(vv), vv), lapack_eye({3}, 5), lapack_tol<T>());
            Ref scaled = vv;
            for (std::int64_t q = 0; q < 3; ++q)
                for (std::int64_t i = 0; i < 5; ++i)
                    for (std::int64_t j = 0; j < 5; ++j) lapack_at(scaled, q, i, j) *= wv.v[static_cast<std::size_t>(q * 5 + j)];
            lapack_close(lapack_mm(sym, vv), scaled, 10 * lapack_tol<T>());
            for (std::int64_t q = 0; q < 3; ++q)
                for (std::int64_t j = 0; j < 4; ++j) CHECK(wv.v[static_cast<std::size_t>(q * 5 + j)] <= wv.v[static_cast<std::size_t>(q * 5 + j + 1)]);
            lapack_close(lapack_values(lt::linalg::eigvalsh(make_tensor<T>(a), uplo)), wv, 10 * lapack_tol<T>());
        }
    });
}

TEST_CASE_TEMPLATE("linalg: lstsq, pinv, matrix_rank and matrix_power", T, float, double) {
    for_each_device([](lt::Device) {
        // By hand: the line through (0, 1), (1, 3), (2, 4) by least squares is 1.1667 + 1.5 x.
        const lt::Tensor<T> design = lt::tensor<T>({1, 0, 1, 1, 1, 2}, {3, 2});
        auto fit = lt::linalg::lstsq(design, lt::tensor<T>({1, 3, 4}, {3}));
        lapack_close(lapack_values(fit.solution), Ref{{2}, {7.0 / 6.0, 1.5}}, lapack_tol<T>());
        // residual: (1 - 7/6)^2 + (3 - 8/3)^2 + (4 - 25/6)^2 = 1/36 + 4/36 + 1/36
        CHECK(fit.residuals.item() == doctest::Approx(1.0 / 6.0).epsilon(lapack_tol<T>()));
        CHECK(fit.rank.item() == 2);
        // A rank-2 4x4 matrix: u1 v1^T + u2 v2^T.
        const Ref u = lapack_random<T>({4, 2}, 71), v = lapack_random<T>({2, 4}, 72);
        const Ref low = lapack_mm(u, v);
        const lt::Tensor<T> tl = make_tensor<T>(low);
        CHECK(lt::linalg::matrix_rank(tl).item() == 2);
        CHECK(lt::linalg::matrix_rank(lt::eye<T>(3)).item() == 3);
        CHECK(lt::linalg::matrix_rank(lt::zeros<T>({3, 2})).item() == 0);
        CHECK(lt::linalg::lstsq(tl, make_tensor<T>(lapack_random<T>({4, 2}, 73))).rank.to_vector() == std::vector<std::int64_t>{2});
        // The Moore-Penrose conditions: A P A = A, P A P = P, A P and P A symmetric.
        const double tol = std::is_same_v<T, float> ? 2e-3 : 1e-9;
        for (bool hermitian : {false, true}) {
            INFO("hermitian " << hermitian);
            const Ref a = hermitian ? lapack_mm(u, lapack_transpose(u)) : low;
            const Ref p = lapack_values(lt::linalg::pinv(make_tensor<T>(a), -1, hermitian));
            lapack_close(lapack_mm(lapack_mm(a, p), a), a, tol);
            lapack_close(lapack_mm(lapack_mm(p, a), p), p, tol);
            const Ref ap = lapack_mm(a, p), pa = lapack_mm(p, a);
            lapack_close(ap, lapack_transpose(ap), tol);
            lapack_close(pa, lapack_transpose(pa), tol);
            CHECK(lt::linalg::matrix_rank(make_tensor<T>(a), -1, hermitian).item() == 2);
        }
        // matrix_power: 0 is the identity, 3 three products, -2 the inverse's square.
        const Ref m = lapack_random<T>({2, 3, 3}, 74);
        const lt::Tensor<T> tm = make_tensor<T>(m);
        lapack_close(lapack_values(lt::linalg::matrix_power(tm, 0)), lapack_eye({2}, 3), 0);
        lapack_close(lapack_values(lt::linalg::matrix_power(tm, 1)), m, 0);
        lapack_close(lapack_values(lt::linalg::matrix_power(tm, 3)), lapack_mm(lapack_mm(m, m), m), lapack_tol<T>());
        const Ref inv2 = lapack_values(lt::linalg::matrix_power(tm, -2));
        lapack_close(lapack_mm(lapack_mm(m, m), inv2), lapack_eye({2}, 3), 100 * lapack_tol<T>());
    });
}

#if LAZYTENSOR_LAPACK
TEST_CASE("linalg: singular values, eigenvalues and LU against LAPACKE called directly (row-major)") {
    for_each_device([](lt::Device) {
        const Ref a = lapack_random<double>({3, 6, 4}, 111);
        const Ref s = lapack_values(lt::linalg::svdvals(make_tensor<double>(a)));
        const Ref raw = lapack_random<double>({3, 5, 5}, 112);
        const Ref sym = lapack_mm(raw, lapack_transpose(raw));
        const Ref w = lapack_values(lt::linalg::eigvalsh(make_tensor<double>(sym)));
        const Ref x = lapack_values(lt::linalg::solve(make_tensor<double>(raw), make_tensor<double>(lapack_random<double>({3, 5, 2}, 113))));
        const Ref b = lapack_random<double>({3, 5, 2}, 113);
        for (std::int64_t q = 0; q < 3; ++q) {
            std::vector<double> m(a.v.begin() + q * 24, a.v.begin() + (q + 1) * 24), sv(4), u(36), vt(16);
            REQUIRE(LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'N', 6, 4, m.data(), 4, sv.data(), u.data(), 6, vt.data(), 4) == 0);
            for (int i = 0; i < 4; ++i) CHECK(s.v[static_cast<std::size_t>(q * 4 + i)] == doctest::Approx(sv[i]).epsilon(1e-12));
            std::vector<double> e(sym.v.begin() + q * 25, sym.v.begin() + (q + 1) * 25), ev(5);
            REQUIRE(LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'N', 'L', 5, e.data(), 5, ev.data()) == 0);
            for (int i = 0; i < 5; ++i) CHECK(w.v[static_cast<std::size_t>(q * 5 + i)] == doctest::Approx(ev[i]).epsilon(1e-12));
            std::vector<double> lu(raw.v.begin() + q * 25, raw.v.begin() + (q + 1) * 25), rhs(b.v.begin() + q * 10, b.v.begin() + (q + 1) * 10);
            std::vector<lapack_int> pivots(5);
            REQUIRE(LAPACKE_dgesv(LAPACK_ROW_MAJOR, 5, 2, lu.data(), 5, pivots.data(), rhs.data(), 2) == 0);
            for (int i = 0; i < 10; ++i) CHECK(x.v[static_cast<std::size_t>(q * 10 + i)] == doctest::Approx(rhs[static_cast<std::size_t>(i)]).epsilon(1e-9));
        }
    });
}
#endif

TEST_CASE("linalg: results are lazy views that fuse; the schedule says where LAPACK runs") {
    for_each_device([](lt::Device d) {
        const lt::Tensor<double> a = make_tensor<double>(lapack_spd<double>({}, 3, 81));
        const lt::Tensor<double> y = lt::linalg::inv(a) * 2.0 + 1.0;
        const auto items = lt::schedule(y);
        REQUIRE(items.size() == 2);  // the routine, then one kernel reading its result
        CHECK(items[0].kind == lt::ScheduleItem::Kind::Linalg);
        CHECK(items[1].kind == lt::ScheduleItem::Kind::Kernel);
        CHECK(items[0].ir.find("getrf") != std::string::npos);
        CHECK((items[0].ir.find("LAPACK on the host") != std::string::npos) == (d.kind != lt::Device::Kind::Host));
        // One routine for both results, read through views.
        auto [q, r] = lt::linalg::qr(a);
        const lt::Tensor<double> both = lt::matmul(q, r);
        int routines = 0;
        for (const auto& item : lt::schedule(both)) routines += item.kind == lt::ScheduleItem::Kind::Linalg;
        CHECK(routines == 1);
        lapack_close(lapack_values(both), lapack_values(a), 1e-12);
        // A lazy, transposed, sliced operand.
        const lt::Tensor<double> big = make_tensor<double>(lapack_random<double>({4, 5}, 82)) + 0.0;
        const lt::Tensor<double> part = big.transpose(0, 1).slice(0, 1, 5);  // [4, 4] of a lazy expression
        // The lazy tensor under the view is computed once, and the routine reads the view in place.
        const auto operand_items = lt::schedule(lt::linalg::det(part));
        REQUIRE(operand_items.size() >= 2);
        CHECK(operand_items[0].kind == lt::ScheduleItem::Kind::Kernel);
        CHECK(operand_items[0].reason == "operand of a linear-algebra routine");
        CHECK(operand_items[0].output == "float64[4, 5]");
        CHECK(operand_items[1].kind == lt::ScheduleItem::Kind::Linalg);
        const Ref pv = lapack_values(lt::Tensor<double>(part + 0.0));
        lapack_close(lapack_values(lt::linalg::det(part).reshape({1, 1})),
                     Ref{{1, 1}, {lapack_reference_det(std::vector<long double>(pv.v.begin(), pv.v.end()), 4)}}, 1e-10);
        // Empty batches and matrices.
        CHECK(lt::linalg::inv(lt::zeros<double>({0, 3, 3})).shape() == lt::Shape{0, 3, 3});
        CHECK(lt::linalg::cholesky(lt::zeros<double>({2, 0, 0})).to_vector().empty());
        CHECK(lt::linalg::det(lt::zeros<double>({2, 0, 0})).to_vector() == std::vector<double>{1, 1});
        CHECK(lt::linalg::svdvals(lt::zeros<double>({3, 0})).shape() == lt::Shape{0});
        CHECK(lt::linalg::pinv(lt::zeros<double>({2, 3, 0})).shape() == lt::Shape{2, 0, 3});
        CHECK(lt::linalg::matrix_rank(lt::zeros<double>({2, 0, 4})).to_vector() == std::vector<std::int64_t>{0, 0});
        auto [q0, r0] = lt::linalg::qr(lt::zeros<double>({3, 0}), "complete");  // Q is I, R empty
        lapack_close(lapack_values(q0), lapack_eye({}, 3), 0);
        CHECK(r0.shape() == lt::Shape{3, 0});
        // 1x1: the element's own factorizations.
        CHECK(lt::linalg::cholesky(lt::tensor<double>({9}, {1, 1})).item() == 3);
        CHECK(lt::linalg::inv(lt::tensor<double>({4}, {1, 1})).item() == 0.25);
        CHECK(lt::linalg::eigvalsh(lt::tensor<double>({-2}, {1, 1})).item() == -2);
    });
}

TEST_CASE("linalg: singular and indefinite matrices throw LinAlgError at realize, naming the batch element") {
    for_each_device([](lt::Device) {
        Ref batch = lapack_spd<double>({2, 2}, 3, 91);
        lapack_at(batch, 3, 2, 2) = -50;  // batch element [1, 1] is not positive definite
        const lt::Tensor<double> a = make_tensor<double>(batch);
        const lt::Tensor<double> l = lt::linalg::cholesky(a);
        const std::string message = message_of<lt::LinAlgError>([&] { l.realize(); });
        CHECK(message.find("lt::linalg::cholesky") != std::string::npos);
        CHECK(message.find("batch element [1, 1]") != std::string::npos);
        CHECK(message.find("order 3") != std::string::npos);
        // Every tensor is still usable, the failed one too once its input is fixed elsewhere.
        CHECK(a.to_vector() == batch.v);
        CHECK(lt::sum(a).item() == doctest::Approx(std::accumulate(batch.v.begin(), batch.v.end(), 0.0)));
        CHECK_THROWS_AS(l.to_vector(), lt::LinAlgError);

        const lt::Tensor<double> singular = lt::tensor<double>({1, 0, 0, 1, 1, 2, 2, 4}, {2, 2, 2});
        const std::string inv_message = message_of<lt::LinAlgError>([&] { lt::linalg::inv(singular).realize(); });
        CHECK(inv_message.find("lt::linalg::inv (batch element [1]") != std::string::npos);
        CHECK(inv_message.find("singular") != std::string::npos);
        CHECK_THROWS_AS(lt::linalg::solve(singular, lt::ones<double>({2, 2, 1})).realize(), lt::LinAlgError);
        CHECK_THROWS_AS(lt::linalg::solve_triangular(lt::zeros<double>({2, 2}), lt::ones<double>({2, 1}), false).realize(),
                        lt::LinAlgError);
        // det of a singular matrix is 0; NaN in, NaN out.
        CHECK(lt::linalg::det(singular).to_vector() == std::vector<double>{1, 0});
        const double nan = std::numeric_limits<double>::quiet_NaN();
        CHECK(std::isnan(lt::linalg::inv(lt::tensor<double>({nan, 1, 1, 1}, {2, 2})).to_vector()[0]));
        // Ill-conditioned but regular: the Hilbert matrix of order 8 (condition ~1.5e10) is
        // inverted to its known integer inverse's accuracy: A A^-1 = I within cond * eps.
        const Ref hilbert = ref_of({8, 8}, [](const std::vector<std::int64_t>& i) { return 1.0 / double(i[0] + i[1] + 1); });
        const Ref hinv = lapack_values(lt::linalg::inv(make_tensor<double>(hilbert)));
        lapack_close(lapack_mm(hilbert, hinv), lapack_eye({}, 8), 1e-5);
        CHECK(lapack_at(hinv, 0, 0, 0) == doctest::Approx(64).epsilon(1e-5));  // (H_8^-1)[0, 0] = 64
    });
}

#if LAZYTENSOR_OPENCL
TEST_CASE_TEMPLATE("linalg: batched small cholesky and solve in OpenCL kernels match LAPACK on the host", T, float, double) {
    namespace ocl = lazytensor::detail::opencl;
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        if (std::is_same_v<T, double> && !lt::detail::supports_float64(d)) continue;
        INFO("device: " << d.str());
        ocl::OpenCLBackend& backend = ocl::opencl_backend(d.index);
        const ocl::LinalgChoice old = backend.linalg_choice();
        backend.set_linalg_choice(ocl::LinalgChoice::Device);  // CPU devices (PoCL) use LAPACK by default
        const double tol = lapack_tol<T>();
        // Cholesky of a [3, 2] batch of 7x7 SPD matrices, one of 64x64, and 1x1: the kernel's
        // factors against LAPACK's on the host (the same inputs, independent code).
        for (std::int64_t n : {7, 64, 1}) {
            INFO("n = " << n);
            const Ref spd = lapack_spd<T>(n == 7 ? lt::Shape{3, 2} : lt::Shape{2}, n, 120 + static_cast<unsigned>(n));
            const lt::Tensor<T> host_l = lt::linalg::cholesky(make_tensor<T>(spd, lt::Device::host()));
            lapack_close(lapack_values(lt::linalg::cholesky(make_tensor<T>(spd, d)).to(lt::Device::host())), lapack_values(host_l), tol);
        }
        // Solve with a transposed A and a right-hand side broadcast over the batch.
        const Ref a = lapack_random<T>({4, 6, 6}, 131), rhs = lapack_random<T>({6, 3}, 132);
        const lt::Tensor<T> ad = make_tensor<T>(a, d), ah = make_tensor<T>(a, lt::Device::host());
        const lt::Tensor<T> x = lt::linalg::solve(ad.mT(), make_tensor<T>(rhs, d));
        const lt::Tensor<T> xh = lt::linalg::solve(ah.mT(), make_tensor<T>(rhs, lt::Device::host()));
        lapack_close(lapack_values(x.to(lt::Device::host())), lapack_values(xh), tol * 10);
        // A row swap is needed at the first column (a zero on the diagonal): partial pivoting.
        const lt::Tensor<T> swap = lt::tensor<T>({0, 1, 1, 0}, {2, 2}, d);
        CHECK(lt::linalg::solve(swap, lt::tensor<T>({2, 3}, {2, 1}, d)).to_vector() == std::vector<T>{3, 2});
        // Failures name the batch element and the kernel; NaN in, NaN out.
        Ref bad = lapack_spd<T>({2, 2}, 3, 133);
        lapack_at(bad, 3, 2, 2) = -50;
        const std::string chol = message_of<lt::LinAlgError>([&] { lt::linalg::cholesky(make_tensor<T>(bad, d)).realize(); });
        CHECK(chol.find("lt::linalg::cholesky (batch element [1, 1] of batch shape [2, 2]): the matrix is not positive definite: "
                        "the factorization stopped at its leading minor of order 3 (lazytensor's batched kernel") == 0);
        const lt::Tensor<T> singular = lt::tensor<T>({1, 0, 0, 1, 1, 2, 2, 4}, {2, 2, 2}, d);
        const std::string solve = message_of<lt::LinAlgError>([&] { lt::linalg::solve(singular, lt::ones<T>({2, 2, 1}, d)).realize(); });
        CHECK(solve.find("lt::linalg::solve (batch element [1] of batch shape [2]): the matrix is singular: U[1, 1]") == 0);
        CHECK(solve.find("batched kernel") != std::string::npos);
        const T nan = std::numeric_limits<T>::quiet_NaN();
        CHECK(std::isnan(lt::linalg::cholesky(lt::tensor<T>({4, nan, nan, 4}, {2, 2}, d)).to_vector()[0]));
        CHECK(std::isnan(lt::linalg::solve(lt::tensor<T>({1, 0, 0, 1}, {2, 2}, d), lt::tensor<T>({nan, 1}, {2, 1}, d)).to_vector()[1]));
        backend.set_linalg_choice(old);
    }
}

TEST_CASE_TEMPLATE("linalg: large cholesky and solve run recursively on OpenCL GEMMs and match LAPACK on the host", T, float, double) {
    namespace ocl = lazytensor::detail::opencl;
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        if (std::is_same_v<T, double> && !lt::detail::supports_float64(d)) continue;
        INFO("device: " << d.str());
        ocl::OpenCLBackend& backend = ocl::opencl_backend(d.index);
        const ocl::LinalgChoice old = backend.linalg_choice();
        backend.set_linalg_choice(ocl::LinalgChoice::Device);  // CPU devices (PoCL) use LAPACK by default
        backend.set_linalg_block(8);  // leaves of order 8: orders 65 to 256 run four to six levels
        const double tol = lapack_tol<T>();
        const lt::Device host = lt::Device::host();
        // Cholesky: a batch of two of order 100 (uneven halves), and one of order 256 read
        // transposed (A^T = A, other strides; its SYRKs run as batched GEMMs of 2 and 4 blocks),
        // against LAPACK's potrf on the same inputs.
        const Ref spd = lapack_spd<T>({2}, 100, 140), big = lapack_spd<T>({}, 256, 141);
        lapack_close(lapack_values(lt::linalg::cholesky(make_tensor<T>(spd, d)).to(host)),
                     lapack_values(lt::linalg::cholesky(make_tensor<T>(spd, host))), tol);
        lapack_close(lapack_values(lt::linalg::cholesky(make_tensor<T>(big, d).mT()).to(host)),
                     lapack_values(lt::linalg::cholesky(make_tensor<T>(big, host).mT())), tol);
        // Solve: a batch of two of order 65 transposed, the right-hand side [65, 3] broadcast;
        // order 130 with a zero at A[0, 0] (a row swap at the first column), two right-hand sides.
        const Ref a = lapack_random<T>({2, 65, 65}, 142), rhs = lapack_random<T>({65, 3}, 143);
        lapack_close(lapack_values(lt::linalg::solve(make_tensor<T>(a, d).mT(), make_tensor<T>(rhs, d)).to(host)),
                     lapack_values(lt::linalg::solve(make_tensor<T>(a, host).mT(), make_tensor<T>(rhs, host))), tol * 30);
        Ref swap = lapack_random<T>({130, 130}, 144);
        lapack_at(swap, 0, 0, 0) = 0;
        const Ref rhs2 = lapack_random<T>({130, 2}, 145);
        const Ref x_host = lapack_values(lt::linalg::solve(make_tensor<T>(swap, host), make_tensor<T>(rhs2, host)));
        lapack_close(lapack_values(lt::linalg::solve(make_tensor<T>(swap, d), make_tensor<T>(rhs2, d)).to(host)), x_host, tol * 30);
        backend.set_linalg_local_swaps(false);  // the swaps along each column, as for orders beyond local memory
        lapack_close(lapack_values(lt::linalg::solve(make_tensor<T>(swap, d), make_tensor<T>(rhs2, d)).to(host)), x_host, tol * 30);
        backend.set_linalg_local_swaps(true);
        // Failures: the order LAPACK reports, and the batch element. A[70, 70] of the second
        // matrix made very negative: its leading minor of order 71 is not positive definite.
        Ref indefinite = spd;
        lapack_at(indefinite, 1, 70, 70) = -1e4;
        const std::string chol = message_of<lt::LinAlgError>([&] { lt::linalg::cholesky(make_tensor<T>(indefinite, d)).realize(); });
        const std::string chol_host = message_of<lt::LinAlgError>([&] { lt::linalg::cholesky(make_tensor<T>(indefinite, host)).realize(); });
        CHECK(chol_host.find("(batch element [1] of batch shape [2]): the matrix is not positive definite: the factorization "
                             "stopped at its leading minor of order 71 (") != std::string::npos);
        CHECK(chol.find("lt::linalg::cholesky (batch element [1] of batch shape [2]): the matrix is not positive definite: the "
                        "factorization stopped at its leading minor of order 71 (lazytensor's recursive Cholesky") == 0);
        // A zero column 37 of the second matrix: U[37, 37] is exactly zero (getrf's info 38).
        Ref singular = a;
        for (std::int64_t i = 0; i < 65; ++i) lapack_at(singular, 1, i, 37) = 0;
        const std::string solve = message_of<lt::LinAlgError>([&] { lt::linalg::solve(make_tensor<T>(singular, d), make_tensor<T>(rhs, d)).realize(); });
        const std::string solve_host = message_of<lt::LinAlgError>([&] { lt::linalg::solve(make_tensor<T>(singular, host), make_tensor<T>(rhs, host)).realize(); });
        CHECK(solve_host.find("(batch element [1] of batch shape [2]): the matrix is singular: U[37, 37]") != std::string::npos);
        CHECK(solve.find("lt::linalg::solve (batch element [1] of batch shape [2]): the matrix is singular: U[37, 37] of its LU "
                         "factorization with partial pivoting is exactly zero (lazytensor's recursive LU solve") == 0);
        // NaN in, NaN out (every result of that matrix), the other matrix as LAPACK's.
        Ref with_nan = spd;
        lapack_at(with_nan, 0, 80, 3) = std::numeric_limits<double>::quiet_NaN();
        const Ref l = lapack_values(lt::linalg::cholesky(make_tensor<T>(with_nan, d)).to(host));
        CHECK(std::all_of(l.v.begin(), l.v.begin() + 100 * 100, [](double v) { return std::isnan(v); }));
        CHECK(std::none_of(l.v.begin() + 100 * 100, l.v.end(), [](double v) { return std::isnan(v); }));
        Ref rhs_nan = rhs2;
        lapack_at(rhs_nan, 0, 129, 1) = std::numeric_limits<double>::infinity();
        const std::vector<T> x = lt::linalg::solve(make_tensor<T>(swap, d), make_tensor<T>(rhs_nan, d)).to_vector();
        CHECK(std::all_of(x.begin(), x.end(), [](T v) { return std::isnan(v); }));
        backend.set_linalg_block(0);
        backend.set_linalg_choice(old);
    }
}
#endif

TEST_CASE("linalg: bad input is an error where the expression is written, naming the shapes") {
    const lt::Tensor<double> rect = lt::zeros<double>({2, 3});
    const std::string square = message_of<lt::ShapeError>([&] { (void)lt::linalg::inv(rect); });
    CHECK(square.find("square") != std::string::npos);
    CHECK(square.find("[2, 3]") != std::string::npos);
    CHECK_THROWS_AS((void)lt::linalg::cholesky(rect), lt::ShapeError);
    CHECK_THROWS_AS((void)lt::linalg::det(lt::zeros<double>({3})), lt::ShapeError);
    const std::string rows = message_of<lt::ShapeError>([&] { (void)lt::linalg::solve(lt::eye<double>(3), lt::zeros<double>({4, 2})); });
    CHECK(rows.find("[4, 2]") != std::string::npos);
    CHECK(rows.find("[3, 3]") != std::string::npos);
    const std::string batch =
        message_of<lt::ShapeError>([&] { (void)lt::linalg::solve(lt::zeros<double>({2, 3, 3}), lt::zeros<double>({4, 3, 1})); });
    CHECK(batch.find("cannot be broadcast") != std::string::npos);
    const std::string ints = message_of<lt::DTypeError>([&] { (void)lt::linalg::inv(lt::zeros<std::int32_t>({2, 2})); });
    CHECK(ints.find("int32") != std::string::npos);
    CHECK_THROWS_AS((void)lt::linalg::solve(lt::eye<float>(2), lt::ones<double>({2, 1})), lt::DTypeError);
    CHECK_THROWS_AS((void)lt::linalg::qr(rect, "economic"), lt::ValueError);
    CHECK_THROWS_AS((void)lt::linalg::eigh(lt::eye<double>(2), "X"), lt::ValueError);
    CHECK_THROWS_AS((void)lt::linalg::matrix_power(rect, 2), lt::ShapeError);
}

using LapackTensors = std::vector<lt::Tensor<double>>;

/// A batch of two well-conditioned 3x3 matrices and a right-hand side for them.
inline Ref lapack_square_input() {
    Ref a = lapack_random<double>({2, 3, 3}, 101);
    for (std::int64_t q = 0; q < 2; ++q)
        for (std::int64_t i = 0; i < 3; ++i) lapack_at(a, q, i, i) += 3;
    return a;
}

TEST_CASE("linalg: gradients of solve, inv, det and slogdet against central differences") {
    using Ts = LapackTensors;
    const Ref sq = lapack_square_input(), rhs = lapack_random<double>({2, 3, 2}, 102);
    for_each_device([&](lt::Device) {
        lapack_check_gradients([](const Ts& x) { return lt::linalg::solve(x[0], x[1]); }, {sq, rhs});
        lapack_check_gradients([](const Ts& x) { return lt::linalg::inv(x[0]); }, {sq});
        lapack_check_gradients([](const Ts& x) { return lt::linalg::det(x[0]); }, {sq});
        lapack_check_gradients([](const Ts& x) { return lt::linalg::slogdet(x[0]).logabsdet; }, {sq});
    });
}

TEST_CASE("linalg: gradients of cholesky and solve_triangular against central differences") {
    using Ts = LapackTensors;
    const Ref sq = lapack_square_input(), rhs = lapack_random<double>({2, 3, 2}, 102);
    for_each_device([&](lt::Device) {
        // Through a symmetrization, as cholesky reads one triangle of a symmetric matrix.
        lapack_check_gradients([](const Ts& x) { return lt::linalg::cholesky(lapack_symmetric(x[0], 4)); }, {sq});
        lapack_check_gradients([](const Ts& x) { return lt::linalg::cholesky(lapack_symmetric(x[0], 4), true); }, {sq});
        for (bool upper : {false, true})
            for (bool unit : {false, true}) {
                INFO("upper " << upper << ", unit diagonal " << unit);
                lapack_check_gradients([&](const Ts& x) { return lt::linalg::solve_triangular(x[0], x[1], upper, true, unit); },
                                       {sq, rhs});
            }
    });
}

TEST_CASE("linalg: gradients of qr and eigh against central differences") {
    using Ts = LapackTensors;
    const Ref sq = lapack_square_input();
    for_each_device([&](lt::Device) {
        for (lt::Shape shape : {lt::Shape{4, 3}, lt::Shape{3, 3}, lt::Shape{2, 4}}) {
            INFO("A of shape " << shape);
            const Ref a = lapack_random<double>(shape, 103);
            lapack_check_gradients([](const Ts& x) { return lt::linalg::qr(x[0]).Q; }, {a});
            lapack_check_gradients([](const Ts& x) { return lt::linalg::qr(x[0]).R; }, {a});
        }
        // Eigenvalues, and a function of the eigenvectors that does not depend on their signs.
        lapack_check_gradients([](const Ts& x) { return lt::linalg::eigvalsh(lapack_symmetric(x[0], 0)); }, {sq});
        lapack_check_gradients(
            [](const Ts& x) { return lt::Tensor<double>(lt::abs(lt::linalg::eigh(lapack_symmetric(x[0], 0)).eigenvectors)); }, {sq});
        lapack_check_gradients(
            [](const Ts& x) { return lt::Tensor<double>(lt::abs(lt::linalg::eigh(lapack_symmetric(x[0], 0), "U").eigenvectors)); }, {sq});
    });
}

TEST_CASE("linalg: gradients of svd, svdvals and pinv against central differences") {
    using Ts = LapackTensors;
    for_each_device([&](lt::Device) {
        for (lt::Shape shape : {lt::Shape{4, 3}, lt::Shape{3, 4}, lt::Shape{3, 3}}) {
            INFO("A of shape " << shape);
            const Ref a = lapack_random<double>(shape, 104);
            lapack_check_gradients([](const Ts& x) { return lt::linalg::svdvals(x[0]); }, {a});
            lapack_check_gradients([](const Ts& x) { return lt::Tensor<double>(lt::abs(lt::linalg::svd(x[0], false).U)); }, {a});
            lapack_check_gradients([](const Ts& x) { return lt::Tensor<double>(lt::abs(lt::linalg::svd(x[0], false).Vh)); }, {a});
            lapack_check_gradients([](const Ts& x) { return lt::linalg::pinv(x[0]); }, {a});
        }
    });
}

}  // namespace lapack_tests
