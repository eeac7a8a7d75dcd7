// SPDX-License-Identifier: MIT
// The everyday functions of frontend/extra_functions.hpp (isclose, allclose, square, log10,
// roll, diff, meshgrid, diagonal, diag, trace, outer, tensordot, median, quantile,
// max_with_indices, min_with_indices, take, scatter, index_add, index_copy, searchsorted,
// bincount) on every test device: expected values by hand or computed by NumPy 1.24 (written
// here as constants; NumPy is not needed to run the tests), odd inputs (negative axes and
// shifts, shifts past the extent, empty tensors, integer and bool dtypes, NaN and inf, views of
// lazy and realized tensors), bad input, and gradients against central finite differences.
#include <functional>
#include <limits>

#include "common.hpp"

namespace everyday_functions_test {

constexpr double kNotANumber = std::numeric_limits<double>::quiet_NaN();
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// x's shape and values, exactly (NaN where `want` has NaN).
template <class T>
void check_exact(const lt::Tensor<T>& x, const lt::Shape& shape, const std::vector<double>& want) {
    REQUIRE(x.shape() == shape);
    const std::vector<T> got = x.to_vector();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("element " << i << ": got " << double(got[i]) << ", want " << want[i]);
        if (std::isnan(want[i])) CHECK(std::isnan(double(got[i])));
        else CHECK(double(got[i]) == want[i]);
    }
}

/// x's shape and values within a relative tolerance.
template <class T>
void check_near(const lt::Tensor<T>& x, const lt::Shape& shape, const std::vector<double>& want, double rtol = 1e-12) {
    REQUIRE(x.shape() == shape);
    const std::vector<T> got = x.to_vector();
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("element " << i << ": got " << double(got[i]) << ", want " << want[i]);
        if (std::isnan(want[i])) CHECK(std::isnan(double(got[i])));
        else CHECK(std::fabs(double(got[i]) - want[i]) <= rtol * (1 + std::fabs(want[i])));
    }
}

template <class T>
lt::Tensor<T> values(const std::vector<double>& v, const lt::Shape& shape) {
    std::vector<T> data;
    for (double d : v) data.push_back(static_cast<T>(d));
    return lt::tensor<T>(data, shape);
}

/// An index tensor.
lt::Tensor<std::int64_t> positions(const std::vector<std::int64_t>& v, const lt::Shape& shape) { return lt::tensor<std::int64_t>(v, shape); }

/// The 3 x 4 matrix 0, 1, ..., 11 (realized) and the same values computed lazily.
lt::Tensor<double> matrix_3x4() { return values<double>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4}); }

using Tensors = std::vector<lt::Tensor<double>>;
using Fn = std::function<lt::Tensor<double>(const Tensors&)>;

/// lt::vjp of f against central differences (common.hpp).
void check_gradient(const Fn& f, const std::vector<Ref>& inputs, double tol = 1e-6) { check_gradient_by_differences(f, inputs, tol); }

// The cases are in the namespace too, so that a unity build (LAZYTENSOR_TEST_UNITY) keeps
// these helpers out of the other files' way.

TEST_CASE("isclose and allclose: NumPy's rule, inf, NaN, broadcasting, integers") {
    for_each_device([](lt::Device) {
        // NumPy computed the expected flags (np.isclose with the same arguments).
        const std::vector<double> a = {1.0, 1.0 + 1e-6, kInfinity, -kInfinity, kInfinity, kNotANumber, kNotANumber, 0.0, 1e-9, 100.0, 100.0};
        const std::vector<double> b = {1.0, 1.0, kInfinity, kInfinity, 1e300, kNotANumber, 0.0, 1e-8, 0.0, 100.001, 100.002};
        const auto ta = values<double>(a, {11}), tb = values<double>(b, {11});
        check_exact(lt::isclose(ta, tb), {11}, {1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0});
        check_exact(lt::isclose(ta, tb, 1e-5, 1e-8, true), {11}, {1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0});
        check_exact(lt::isclose(ta, tb, 0, 0), {11}, {1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0});
        check_exact(lt::isclose(tb, ta), {11}, {1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0});
        // rtol scales |b| only: |a - b| = 1 is within 0.1 * 10 but not within 0.1 * 9.
        check_exact(lt::isclose(values<float>({9}, {1}), values<float>({10}, {1}), 0.1, 0), {1}, {1});
        check_exact(lt::isclose(values<float>({10}, {1}), values<float>({9}, {1}), 0.1, 0), {1}, {0});
        // Broadcast, mixed dtypes, a transposed lazy operand.
        const auto m = values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
        check_exact(lt::isclose(m.t() * 1.0f, values<double>({1, 4.5}, {2})), {3, 2}, {1, 0, 0, 0, 0, 0});
        // Integers compare in float64, as NumPy's (NumPy computed these: 2^53 + 1 and 2^53 count as equal).
        const auto big = lt::tensor<std::int64_t>({(std::int64_t(1) << 53) + 1, 7, -3});
        const auto big2 = lt::tensor<std::int64_t>({(std::int64_t(1) << 53), 7, -4});
        check_exact(lt::isclose(big, big2, 0, 0), {3}, {1, 1, 0});
        check_exact(lt::isclose(big, big2, 0, 1), {3}, {1, 1, 1});
        check_exact(lt::isclose(lt::tensor<bool>({true, false}), lt::tensor<bool>({true, true})), {2}, {1, 0});
        // Half: the tolerance in float32.
        check_exact(lt::isclose(values<lt::half>({1, 2}, {2}), values<lt::half>({1.0009765625, 2.5}, {2}), 1e-3), {2}, {1, 0});

        CHECK(lt::allclose(m, m + 1e-7f));
        CHECK_FALSE(lt::allclose(m, m + 1.0f));
        CHECK(lt::allclose(lt::zeros<float>({0, 3}), lt::zeros<float>({3})));  // empty: vacuously true
        CHECK_FALSE(lt::allclose(ta, ta));                                       // NaN
        CHECK(lt::allclose(ta, ta, 1e-5, 1e-8, true));
        CHECK_THROWS_AS(lt::isclose(m, values<float>({1, 2}, {2})), lt::ShapeError);
        CHECK_THROWS_WITH_AS(lt::isclose(m, m, -1.0), doctest::Contains("rtol = -1"), lt::ValueError);
        CHECK_THROWS_AS(lt::allclose(m, m, 1e-5, kNotANumber), lt::ValueError);
    });
}

TEST_CASE("square and log10") {
    for_each_device([](lt::Device) {
        check_exact(lt::square(values<float>({-3, 0.5, 0, -0.0}, {4})), {4}, {9, 0.25, 0, 0});
        check_exact(lt::square(lt::tensor<std::int32_t>({-7, 46341})), {2}, {49, -2147479015.0});  // wraps, as NumPy's int32
        check_exact(lt::square(lt::tensor<std::uint8_t>({3, 16})), {2}, {9, 0});
        check_exact(lt::square(matrix_3x4().t().slice(0, 1, 3)), {2, 3}, {1, 25, 81, 4, 36, 100});
        // Exact at powers of 10 (NumPy's float32 log10 gives these too), inf, -inf, NaN.
        check_exact(lt::log10(values<float>({1, 10, 100, 1000, 1e-3f, 1e10f, 0, -1, kInfinity}, {9})), {9},
                    {0, 1, 2, 3, -3, 10, -kInfinity, kNotANumber, kInfinity});
        const std::vector<double> xs = {1e-30, 1e-7, 0.001, 0.5, 2, 3, 7.25, 1e5, 3e38};
        check_near(lt::log10(values<double>(xs, {9})), {9},
                   {-30, -7, -3, std::log10(0.5), std::log10(2.0), std::log10(3.0), std::log10(7.25), 5, std::log10(3e38)}, 4e-16);
        // float32 within 2 ulp of the exact value, over many magnitudes.
        std::vector<float> f;
        for (int i = 0; i < 400; ++i) f.push_back(static_cast<float>(std::pow(10.0, -30 + 0.17 * i) * (1 + 0.001 * i)));
        const std::vector<float> got = lt::log10(lt::tensor<float>(f, {400})).to_vector();
        for (std::size_t i = 0; i < f.size(); ++i) {
            const double want = std::log10(static_cast<double>(f[i]));
            const float w = static_cast<float>(std::fabs(want));
            const double ulp = std::nextafter(w, std::numeric_limits<float>::infinity()) - w;
            INFO("log10(" << f[i] << "): got " << got[i] << ", want " << want);
            CHECK(std::fabs(got[i] - want) <= 2 * ulp + 1e-45);
        }
        const auto h = values<lt::half>({3, 1, 100, 2}, {4});
        check_exact(lt::square(h), {4}, {9, 1, 10000, 4});
        check_exact(lt::log10(h), {4}, {0.47705078125, 0, 2, 0.301025390625});  // NumPy computed these (np.log10 in float16)
        lt::Tensor<float> ints = lt::log10(lt::tensor<std::int32_t>({1, 100}));  // integers give float32
        check_exact(ints, {2}, {0, 2});
    });
}

TEST_CASE("roll: negative and large shifts, several axes, flattened, empty, bool, views") {
    for_each_device([](lt::Device) {
        const auto m = lt::tensor<std::int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {3, 4});
        // NumPy computed these (np.roll(np.arange(12).reshape(3, 4), (-5, 7), axis=(1, 0)), np.roll(..., -13)).
        check_exact(lt::roll(m, {-5, 7}, {1, 0}), {3, 4}, {9, 10, 11, 8, 1, 2, 3, 0, 5, 6, 7, 4});
        check_exact(lt::roll(m, -13), {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0});
        check_exact(lt::roll(m, 1, -1), {3, 4}, {3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10});
        check_exact(lt::roll(m, 12, 1), {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
        check_exact(lt::roll(m, {1, 1}, {0, 0}), {3, 4}, {4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3});  // an axis twice: shifts add
        // A transposed view of a lazy value.
        check_exact(lt::roll((m * 2).t(), 1, 0), {4, 3}, {6, 14, 22, 0, 8, 16, 2, 10, 18, 4, 12, 20});
        check_exact(lt::roll(lt::tensor<bool>({true, false, false}), -1), {3}, {0, 0, 1});
        check_exact(lt::roll(lt::zeros<float>({0, 3}), 5, 0), {0, 3}, {});
        check_exact(lt::roll(lt::full<float>({}, 4.0f), 3), {}, {4});
        CHECK_THROWS_AS(lt::roll(m, 1, 2), lt::AxisError);
        CHECK_THROWS_WITH_AS(lt::roll(m, {1, 2}, {0}), doctest::Contains("2 shift(s) but 1 axes"), lt::ValueError);
    });
}

TEST_CASE("diff: orders, axes, bool, unsigned wrap, empty, bad input") {
    for_each_device([](lt::Device) {
        // NumPy computed these (np.diff).
        const auto sq = lt::tensor<std::int32_t>({1, 4, 9, 16, 25, 36, 49, 64, 81}, {3, 3});
        check_exact(lt::diff(sq, 2, 0), {1, 3}, {18, 18, 18});
        check_exact(lt::diff(sq), {3, 2}, {3, 5, 9, 11, 15, 17});
        check_exact(lt::diff(sq, 0), {3, 3}, {1, 4, 9, 16, 25, 36, 49, 64, 81});
        check_exact(lt::diff(sq, 5, -2), {0, 3}, {});  // n past the extent: empty
        check_exact(lt::diff(lt::tensor<bool>({true, true, false, true})), {3}, {0, 1, 1});
        check_exact(lt::diff(lt::tensor<std::uint8_t>({5, 3, 250})), {2}, {254, 247});
        check_exact(lt::diff(values<float>({1, 4, 9, 16}, {2, 2}).t(), 1, 1), {2, 1}, {8, 12});  // a transposed view
        CHECK_THROWS_AS(lt::diff(sq, -1), lt::ValueError);
        CHECK_THROWS_AS(lt::diff(lt::full<float>({}, 1.0f)), lt::ValueError);
        CHECK_THROWS_AS(lt::diff(sq, 1, 2), lt::AxisError);
    });
}

TEST_CASE("meshgrid: xy and ij indexing, three tensors, 0-d, bad input") {
    for_each_device([](lt::Device) {
        const auto x = values<float>({1, 2, 3}, {3}), y = values<float>({4, 5}, {2}), z = values<float>({7, 8}, {2});
        auto xy = lt::meshgrid<float>({x, y});
        check_exact(xy[0], {2, 3}, {1, 2, 3, 1, 2, 3});
        check_exact(xy[1], {2, 3}, {4, 4, 4, 5, 5, 5});
        auto ij = lt::meshgrid<float>({x, y}, "ij");
        check_exact(ij[0], {3, 2}, {1, 1, 2, 2, 3, 3});
        check_exact(ij[1], {3, 2}, {4, 5, 4, 5, 4, 5});
        auto three = lt::meshgrid<float>({x, y, z});  // NumPy: shape (2, 3, 2)
        REQUIRE(three.size() == 3);
        check_exact(three[0], {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
        check_exact(three[1], {2, 3, 2}, {4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5});
        check_exact(three[2], {2, 3, 2}, {7, 8, 7, 8, 7, 8, 7, 8, 7, 8, 7, 8});
        auto one = lt::meshgrid<float>({x * 2.0f}, "ij");
        check_exact(one[0], {3}, {2, 4, 6});
        auto with_scalar = lt::meshgrid<float>({lt::full<float>({}, 9.0f), y}, "ij");
        check_exact(with_scalar[0], {1, 2}, {9, 9});
        CHECK_THROWS_AS(lt::meshgrid<float>({x, y}, "xyz"), lt::ValueError);
        CHECK_THROWS_AS(lt::meshgrid<float>(std::vector<lt::Tensor<float>>{}), lt::ValueError);
        CHECK_THROWS_AS(lt::meshgrid<float>({x, lt::zeros<float>({2, 2})}), lt::ShapeError);
    });
}

TEST_CASE("diagonal, diag and trace: offsets, axes, views, lazy inputs, empty") {
    for_each_device([](lt::Device) {
        const auto m = matrix_3x4();
        check_exact(lt::diag(m), {3}, {0, 5, 10});
        check_exact(lt::diag(m, 1), {3}, {1, 6, 11});
        check_exact(lt::diag(m, 3), {1}, {3});
        check_exact(lt::diag(m, -2), {1}, {8});
        check_exact(lt::diag(m, 4), {0}, {});
        check_exact(lt::diag(m, -3), {0}, {});
        check_exact(lt::diag(m.t(), 1), {2}, {4, 9});            // a transposed realized matrix: gathered
        check_exact(lt::diag(m.slice(1, 1, 4), 0), {3}, {1, 6, 11});  // a slice of one
        check_exact(lt::diag((m + 1.0).t(), -1), {3}, {2, 7, 12});  // a view of a lazy value
        // Of a realized row-major matrix, a strided view of its memory: no kernel.
        CHECK(lt::diag(m).node_ptr()->kind == lt::detail::NodeKind::Slice);
        check_exact(lt::diag(lt::tensor<std::int32_t>({1, 2}), 1), {3, 3}, {0, 1, 0, 0, 0, 2, 0, 0, 0});
        check_exact(lt::diag(lt::tensor<bool>({true, true}), -1), {3, 3}, {0, 0, 0, 1, 0, 0, 0, 1, 0});
        check_exact(lt::diag(values<float>({3}, {1}) * 2.0f), {1, 1}, {6});
        check_exact(lt::diag(lt::zeros<float>({0})), {0, 0}, {});
        // NumPy computed these (np.diagonal(m, 1, 2, 1), np.diagonal(m, -1, 0, 2), np.trace(m, 0, 1, 2), m = arange(24).reshape(2, 3, 4)).
        const auto m3 = lt::arange<double>(24).reshape({2, 3, 4});
        check_exact(lt::diagonal(m3, 1, 2, 1), {2, 2}, {4, 9, 16, 21});
        check_exact(lt::diagonal(m3, -1, 0, -1), {3, 1}, {12, 16, 20});
        check_exact(lt::diagonal(m3.permute({2, 0, 1}), 0, 0, 2), {2, 3}, {0, 5, 10, 12, 17, 22});
        check_exact(lt::trace(m3, 0, 1, 2), {2}, {15, 51});
        check_exact(lt::trace(m), {}, {15});
        lt::Tensor<std::int64_t> ti = lt::trace(lt::tensor<std::int32_t>({1, 2, 3, 4}, {2, 2}));  // int64, as sum
        check_exact(ti, {}, {5});
        check_exact(lt::trace(lt::zeros<float>({0, 3})), {}, {0});
        CHECK_THROWS_AS(lt::diag(m3), lt::ShapeError);
        CHECK_THROWS_AS(lt::diagonal(m3, 0, 1, -2), lt::AxisError);
        CHECK_THROWS_AS(lt::diagonal(m3, 0, 0, 3), lt::AxisError);
        CHECK_THROWS_AS(lt::trace(lt::zeros<float>({3})), lt::ShapeError);
    });
}

TEST_CASE("outer and tensordot") {
    for_each_device([](lt::Device) {
        check_exact(lt::outer(values<float>({1, 2}, {2}), lt::tensor<std::int32_t>({3, 4, 5})), {2, 3}, {3, 4, 5, 6, 8, 10});
        check_exact(lt::outer(matrix_3x4().slice(0, 0, 1), values<double>({1, -1}, {2})), {4, 2}, {0, 0, 1, -1, 2, -2, 3, -3});
        check_exact(lt::outer(lt::zeros<float>({0}), values<float>({1}, {1})), {0, 1}, {});
        // NumPy computed these (np.tensordot with m = arange(24.).reshape(2, 3, 4)).
        const auto m3 = lt::arange<float>(24).reshape({2, 3, 4});
        check_exact(lt::tensordot(m3, lt::arange<float>(12).reshape({3, 4})), {2}, {506, 1298});
        check_exact(lt::tensordot(m3, lt::arange<float>(8).reshape({4, 2}), {2}, {0}), {2, 3, 2},
                    {28, 34, 76, 98, 124, 162, 172, 226, 220, 290, 268, 354});
        check_exact(lt::tensordot(m3, lt::arange<float>(6).reshape({3, 2}), {1, 0}, {0, 1}), {4}, {200, 215, 230, 245});
        check_exact(lt::tensordot(m3, lt::arange<float>(6).reshape({2, 3}).t(), {-2, -3}, {0, 1}), {4},
                    {220, 235, 250, 265});
        check_exact(lt::tensordot(lt::tensor<std::int32_t>({1, 2}), lt::tensor<std::int32_t>({3, 4}), 0), {2, 2}, {3, 4, 6, 8});
        check_exact(lt::tensordot(values<float>({1, 2, 3}, {3}), values<float>({4, 5, 6}, {3}), 1), {}, {32});
        CHECK_THROWS_WITH_AS(lt::tensordot(m3, lt::zeros<float>({3, 3})), doctest::Contains("extent"), lt::ShapeError);
        CHECK_THROWS_AS(lt::tensordot(m3, m3, 4), lt::ValueError);
        CHECK_THROWS_AS(lt::tensordot(m3, m3, {0, 1}, {0}), lt::ValueError);
        CHECK_THROWS_AS(lt::tensordot(m3, m3, {0, 0}, {0, 0}), lt::AxisError);
    });
}

TEST_CASE("median, quantile: NumPy's values, interpolations, NaN, integers, keepdim, bad input") {
    for_each_device([](lt::Device) {
        const std::vector<double> data = {0.5, -1.25, 3.0, 2.0, 7.5, 4.0, 4.0, -2.0, 1.0, 0.25, 9.0, -3.5, 6.0, 6.0, 2.5};
        const auto x = values<double>(data, {3, 5});
        // NumPy computed these (np.quantile(x, q, axis=1) and np.quantile(x, [0.3, 0.5, 0.75], axis=0, method=...)).
        check_near(lt::quantile(x, 0.1, 1), {3}, {-0.5499999999999999, -1.1, -1.0999999999999996});
        check_near(lt::quantile(x, 0.9, -1), {3}, {5.7, 4.0, 7.800000000000001});
        check_near(lt::quantile(x, 0.0, 1), {3}, {-1.25, -2.0, -3.5});
        check_near(lt::quantile(x, 1.0, 1, true), {3, 1}, {7.5, 4.0, 9.0});
        const std::vector<double> qs = {0.3, 0.5, 0.75};
        check_near(lt::quantile(x, qs, 0), {3, 5},
                   {2.5999999999999996, -2.15, 1.0, 1.6, 1.6, 4.0, -1.25, 3.0, 2.0, 2.5, 6.5, 1.375, 4.5, 4.0, 5.0});
        check_exact(lt::quantile(x, qs, 0, false, "lower"), {3, 5},
                    {0.5, -3.5, -2.0, 1.0, 0.25, 4.0, -1.25, 3.0, 2.0, 2.5, 4.0, -1.25, 3.0, 2.0, 2.5});
        check_exact(lt::quantile(x, qs, 0, false, "higher"), {3, 5},
                    {4.0, -1.25, 3.0, 2.0, 2.5, 4.0, -1.25, 3.0, 2.0, 2.5, 9.0, 4.0, 6.0, 6.0, 7.5});
        check_exact(lt::quantile(x, qs, 0, true, "nearest"), {3, 1, 5},
                    {4.0, -1.25, 3.0, 2.0, 2.5, 4.0, -1.25, 3.0, 2.0, 2.5, 9.0, 4.0, 6.0, 6.0, 7.5});
        check_exact(lt::quantile(x, qs, 0, false, "midpoint"), {3, 5},
                    {2.25, -2.375, 0.5, 1.5, 1.375, 4.0, -1.25, 3.0, 2.0, 2.5, 6.5, 1.375, 4.5, 4.0, 5.0});
        check_near(lt::quantile(x, 0.4), {}, {1.6000000000000005});
        check_near(lt::quantile(x.t(), 0.4, "linear", true), {1, 1}, {1.6000000000000005});  // a view; all elements
        check_near(lt::quantile(x, std::vector<double>{0.4, 1.0}), {2}, {1.6000000000000005, 9.0});
        lt::Tensor<float> qi = lt::quantile(lt::tensor<std::int32_t>({3, 1, 4, 1, 5, 9, 2, 6}, {2, 4}), 0.5, 1);  // float32
        check_exact(qi, {2}, {2.0, 5.5});
        check_near(lt::quantile(values<float>({1, 2, 4, 8}, {4}) * 1.0f, 0.5), {}, {3.0}, 0);
        const auto xn = values<double>({1.0, kNotANumber, 3.0, 2.0, 0.5, 1.0}, {2, 3});
        check_exact(lt::quantile(xn, 0.5, 1), {2}, {kNotANumber, 1.0});

        // torch.median's lower median and its position; NumPy's median is quantile(x, 0.5).
        auto [mv, mi] = lt::median(x, 1);
        check_exact(mv, {3}, {2.0, 1.0, 6.0});
        check_exact(mi, {3}, {3, 3, 2});
        auto [ev, ei] = lt::median(values<float>({4, 1, 3, 2}, {4}), 0, true);  // even: the lower of 2 and 3
        check_exact(ev, {1}, {2});
        check_exact(ei, {1}, {3});
        auto [nv, ni] = lt::median(values<float>({3, kNotANumber, 1, kNotANumber, 2, 0, 5, 1}, {2, 4}), -1);
        check_exact(nv, {2}, {kNotANumber, 1});
        check_exact(ni, {2}, {1, 3});
        auto [iv, ii] = lt::median(lt::tensor<std::int64_t>({5, -2, 7, 7, 0, 1}, {2, 3}).t(), 0);
        check_exact(iv, {2}, {5, 1});
        check_exact(ii, {2}, {0, 2});
        check_exact(lt::median(x), {}, {2.5});
        auto [hv, hi] = lt::median(values<lt::half>({3, 1, 100, 2}, {4}), 0);  // half: sorted 1 2 3 100
        check_exact(hv, {}, {2});
        check_exact(hi, {}, {3});
        lt::Tensor<lt::half> hq = lt::quantile(values<lt::half>({3, 1, 100, 2}, {4}), 0.5, 0);  // in float32, rounded once
        check_exact(hq, {}, {2.5});
        check_exact(lt::median(xn), {}, {kNotANumber});

        CHECK_THROWS_WITH_AS(lt::quantile(x, 1.5, 1), doctest::Contains("[0, 1], got 1.5"), lt::ValueError);
        CHECK_THROWS_AS(lt::quantile(x, -0.1), lt::ValueError);
        CHECK_THROWS_AS(lt::quantile(x, kNotANumber, 0), lt::ValueError);
        CHECK_THROWS_AS(lt::quantile(x, 0.5, 0, false, "cubic"), lt::ValueError);
        CHECK_THROWS_AS(lt::quantile(x, 0.5, 2), lt::AxisError);
        CHECK_THROWS_AS(lt::quantile(x, std::vector<double>{}, 0), lt::ValueError);
        CHECK_THROWS_AS(lt::quantile(lt::zeros<float>({3, 0}), 0.5, 1), lt::ValueError);
        CHECK_THROWS_AS(lt::median(lt::zeros<float>({3, 0}), 1), lt::ValueError);
        CHECK_THROWS_AS(lt::median(x, -3), lt::AxisError);
    });
}

TEST_CASE("max_with_indices and min_with_indices") {
    for_each_device([](lt::Device) {
        const auto x = values<float>({3, 7, 7, -1, 2, 0, -1, 5}, {2, 4});
        auto [v, i] = lt::max_with_indices(x, 1);
        check_exact(v, {2}, {7, 5});
        check_exact(i, {2}, {1, 3});  // the first of tied maxima
        auto [w, j] = lt::min_with_indices(x, 0, true);
        check_exact(w, {1, 4}, {2, 0, -1, -1});
        check_exact(j, {1, 4}, {1, 1, 1, 0});
        auto [nv, ni] = lt::max_with_indices(values<double>({1, kNotANumber, 3, kNotANumber}, {4}), -1);
        check_exact(nv, {}, {kNotANumber});
        check_exact(ni, {}, {1});
        auto [bv, bi] = lt::max_with_indices(lt::tensor<std::uint8_t>({1, 200, 3, 200}, {2, 2}).t(), 1);
        check_exact(bv, {2}, {3, 200});
        check_exact(bi, {2}, {1, 0});
        // The values' gradient is max's: split between tied maxima (PyTorch's goes to the index alone).
        const lt::Tensor<double> t = values<double>({1, 4, 4, 2}, {1, 4});
        check_exact(lt::grad(lt::sum(lt::max_with_indices(t, 1).values), t), {1, 4}, {0, 0.5, 0.5, 0});
        CHECK_THROWS_AS(lt::max_with_indices(x, 2), lt::AxisError);
    });
}

TEST_CASE("take, scatter, index_add and index_copy") {
    for_each_device([](lt::Device) {
        const auto m = matrix_3x4();
        check_exact(lt::take(m, positions({0, 11, 5, 5}, {2, 2})), {2, 2}, {0, 11, 5, 5});
        check_exact(lt::take(m.t(), positions({1, 2, 11}, {3})), {3}, {4, 8, 11});  // row-major order of the view
        check_exact(lt::take(m * 2.0, positions({}, {0})), {0}, {});
        check_exact(lt::take(lt::tensor<bool>({false, true}), positions({1, 1, 0}, {3})), {3}, {1, 1, 0});
        CHECK_THROWS_WITH_AS(lt::take(m, positions({3, 12}, {2})), doctest::Contains("index 12 is out of range for a tensor of 12 elements"),
                             lt::IndexError);
        CHECK_THROWS_AS(lt::take(m, positions({-1}, {1})), lt::IndexError);

        // PyTorch's scatter; repeated positions: the last along the axis wins.
        const auto index = positions({0, 2, 0, 1, 0, 0}, {2, 3});
        const auto src = values<float>({1, 2, 3, 4, 5, 6}, {2, 3});
        check_exact(lt::scatter(lt::zeros<float>({3, 4}), 0, index, src), {3, 4}, {1, 5, 6, 0, 4, 0, 0, 0, 0, 2, 0, 0});
        check_exact(lt::scatter(lt::full<float>({3, 4}, -1.0f), -1, positions({3, 1}, {2, 1}), 7.0f), {3, 4},
                    {-1, -1, -1, 7, -1, 7, -1, -1, -1, -1, -1, -1});
        // src larger than index, a transposed src, integers.
        check_exact(lt::scatter(lt::zeros<std::int32_t>({2, 3}), 1, positions({2, 0}, {2, 1}), lt::tensor<std::int32_t>({8, 9, 10, 11}, {2, 2}).t()),
                    {2, 3}, {0, 0, 8, 9, 0, 0});
        check_exact(lt::scatter(lt::zeros<float>({2, 2}), 0, positions({}, {0, 2}), lt::zeros<float>({0, 2})), {2, 2}, {0, 0, 0, 0});
        CHECK_THROWS_WITH_AS(lt::scatter(lt::zeros<float>({3, 4}), 0, positions({3}, {1, 1}), src),
                             doctest::Contains("index 3 is out of range for axis 0 of extent 3"), lt::IndexError);
        CHECK_THROWS_AS(lt::scatter(lt::zeros<float>({3, 4}), 0, positions({0, 1, 2}, {3}), src), lt::ShapeError);
        CHECK_THROWS_AS(lt::scatter(lt::zeros<float>({3, 4}), 0, positions({0, 1, 2}, {1, 3}), values<float>({1, 2}, {1, 2})),
                        lt::ShapeError);
        CHECK_THROWS_AS(lt::scatter(lt::zeros<std::uint8_t>({3}), 0, positions({0}, {1}), 300), lt::ValueError);

        const auto idx = positions({2, 0, 2}, {3});
        const auto rows = values<double>({1, 2, 3, 4, 5, 6}, {3, 2});
        check_exact(lt::index_add(matrix_3x4().slice(1, 0, 2), 0, idx, rows), {3, 2}, {3, 5, 4, 5, 14, 17});
        // The base a view the user realized, before the scatter is built and after: the item copies it.
        auto before = matrix_3x4().slice(1, 0, 2);
        before.realize();
        check_exact(lt::index_add(before, 0, idx, rows), {3, 2}, {3, 5, 4, 5, 14, 17});
        auto after = matrix_3x4().slice(1, 0, 2);
        const auto added = lt::index_add(after, 0, idx, rows);
        after.realize();
        check_exact(added, {3, 2}, {3, 5, 4, 5, 14, 17});
        check_exact(lt::index_add(lt::zeros<double>({3, 2}), 0, idx, rows, -0.5), {3, 2}, {-1.5, -2, 0, 0, -3, -4});
        check_exact(lt::index_add(lt::zeros<std::int32_t>({2, 3}), 1, positions({1, 1}, {2}), lt::ones<std::int32_t>({2, 2}), 3), {2, 3},
                    {0, 6, 0, 0, 6, 0});
        check_exact(lt::index_copy(lt::zeros<double>({3, 2}), 0, idx, rows), {3, 2}, {3, 4, 0, 0, 5, 6});
        check_exact(lt::index_copy(matrix_3x4(), -1, positions({3, 0}, {2}), values<double>({-1, -2, -3, -4, -5, -6}, {3, 2})), {3, 4},
                    {-2, 1, 2, -1, -4, 5, 6, -3, -6, 9, 10, -5});
        CHECK_THROWS_WITH_AS(lt::index_add(lt::zeros<double>({3, 2}), 0, positions({0, 3, 1}, {3}), rows),
                             doctest::Contains("index 3 is out of range for axis 0 of extent 3"), lt::IndexError);
        CHECK_THROWS_AS(lt::index_add(lt::zeros<double>({3, 2}), 0, positions({0, 1}, {2}), rows), lt::ShapeError);
        CHECK_THROWS_AS(lt::index_add(lt::zeros<double>({3, 2}), 0, positions({0, 1, 2}, {3, 1}), rows), lt::ShapeError);
        CHECK_THROWS_AS(lt::index_add(lt::zeros<std::int32_t>({3, 2}), 0, idx, lt::ones<std::int32_t>({3, 2}), 0.5), lt::ValueError);
        CHECK_THROWS_AS(lt::index_copy(lt::zeros<double>({3, 2}), 2, idx, rows), lt::AxisError);
    });
}

TEST_CASE("searchsorted: left and right, NaN, batches of rows, empty") {
    for_each_device([](lt::Device) {
        const auto s = values<float>({1, 2, 2, 3, kNotANumber}, {5});
        const auto v = values<float>({0, 2, 2.5, 3, 4, kNotANumber, -kInfinity}, {7});
        check_exact(lt::searchsorted(s, v), {7}, {0, 1, 3, 3, 4, 4, 0});
        check_exact(lt::searchsorted(s, v, true), {7}, {0, 3, 3, 4, 4, 5, 0});
        check_exact(lt::searchsorted(s, values<double>({2, 1.5, 0.5, 9}, {2, 2})), {2, 2}, {1, 1, 0, 4});  // values of any shape
        // NumPy computed these (np.searchsorted row by row).
        const auto rows = lt::tensor<std::int32_t>({1, 3, 5, 7, 2, 2, 2, 8}, {2, 4});
        const auto want = lt::tensor<std::int64_t>({0, 3, 8, 2, 5, 9}, {2, 3});
        check_exact(lt::searchsorted(rows, want), {2, 3}, {0, 1, 4, 0, 3, 4});
        check_exact(lt::searchsorted(rows, want, true), {2, 3}, {0, 2, 4, 3, 3, 4});
        check_exact(lt::searchsorted(lt::arange<std::int64_t>(1000), lt::tensor<std::int64_t>({-5, 0, 517, 999, 1000})), {5},
                    {0, 0, 517, 999, 1000});
        check_exact(lt::searchsorted(lt::zeros<float>({0}), values<float>({1}, {1})), {1}, {0});
        check_exact(lt::searchsorted(s, lt::zeros<float>({0})), {0}, {});
        CHECK_THROWS_AS(lt::searchsorted(rows, values<float>({1, 2}, {2})), lt::ShapeError);
        CHECK_THROWS_AS(lt::searchsorted(lt::full<float>({}, 1.0f), v), lt::ShapeError);
    });
}

TEST_CASE("bincount: counts, weights, minlength, empty, bad input") {
    for_each_device([](lt::Device) {
        // NumPy computed these (np.bincount).
        check_exact(lt::bincount(lt::tensor<std::int64_t>({2, 5, 2, 0, 7, 5, 2}), 4), {8}, {1, 0, 3, 0, 0, 2, 0, 1});
        check_exact(lt::bincount(lt::tensor<std::uint8_t>({2, 5, 2, 0}), values<double>({0.5, 1.5, 2.0, -1.0}, {4}), 8), {8},
                    {-1, 0, 2.5, 0, 0, 1.5, 0, 0});
        check_exact(lt::bincount(lt::tensor<std::int32_t>({3, 1}) * 2), {7}, {0, 0, 1, 0, 0, 0, 1});  // a lazy x
        check_exact(lt::bincount(lt::zeros<std::int32_t>({0})), {0}, {});
        check_exact(lt::bincount(lt::zeros<std::int32_t>({0}), 3), {3}, {0, 0, 0});
        CHECK_THROWS_WITH_AS(lt::bincount(lt::tensor<std::int32_t>({1, -4})), doctest::Contains("negative value -4"), lt::ValueError);
        CHECK_THROWS_AS(lt::bincount(lt::tensor<std::int32_t>({1}), -1), lt::ValueError);
        CHECK_THROWS_AS(lt::bincount(lt::zeros<std::int32_t>({2, 2})), lt::ShapeError);
        CHECK_THROWS_AS(lt::bincount(lt::tensor<std::int32_t>({1}), lt::ones<float>({2})), lt::ShapeError);
        // A failed call leaves its inputs usable.
        const lt::Tensor<std::int32_t> x = lt::tensor<std::int32_t>({1, -4}) + 0;
        CHECK_THROWS_AS(lt::bincount(x), lt::ValueError);
        check_exact(x, {2}, {1, -4});
    });
}

TEST_CASE("gradients of the composites against finite differences") {
    using T = lt::Tensor<double>;
    for_each_device([](lt::Device) {
        const Ref a = random_ref<double>({3, 4}, 21), b = random_ref<double>({4, 2}, 22), v = random_ref<double>({3}, 23);
        check_gradient([](const Tensors& in) { return lt::roll(in[0], {-1, 5}, {0, 1}); }, {a});
        check_gradient([](const Tensors& in) { return lt::diff(in[0] * in[0], 2, 1); }, {a});
        check_gradient([](const Tensors& in) { return lt::diag(in[0], 1); }, {a});
        check_gradient([](const Tensors& in) { return lt::diag(in[0].t(), -1); }, {a});
        check_gradient([](const Tensors& in) { return lt::diag(in[0], -1); }, {v});
        check_gradient([](const Tensors& in) { return lt::trace(in[0] * 3.0); }, {a});
        check_gradient([](const Tensors& in) { return lt::outer(in[0], in[1]); }, {v, b});
        check_gradient([](const Tensors& in) { return lt::tensordot(in[0], in[1], 1); }, {a, b});
        check_gradient([](const Tensors& in) { return lt::index_add(in[0], 1, positions({3, 0, 3}, {3}), in[1], 2.0); },
                       {a, random_ref<double>({3, 3}, 24)});
        check_gradient([](const Tensors& in) { return lt::take(in[0], positions({5, 0, 5, 11}, {2, 2})); }, {a});
        check_gradient([](const Tensors& in) { return lt::median(in[0], 1).values; }, {a});
        check_gradient([](const Tensors& in) { return lt::quantile(in[0], std::vector<double>{0.3, 0.8}, 0); }, {a});
        check_gradient([](const Tensors& in) { return lt::scatter(in[0], 0, positions({2, 0, 2}, {3, 1}), in[1]); },
                       {a, random_ref<double>({3, 2}, 25)});
        check_gradient([](const Tensors& in) { return T(lt::square(in[0]) + lt::log10(lt::abs(in[0]) + 1.0)); }, {a});
        // The gradient of index_copy reaches x only where nothing was copied, and the last copy of a repeated position.
        T x = lt::zeros<double>({3}), src = values<double>({1, 2, 3}, {3});
        auto g = lt::grad(lt::sum(lt::index_copy(x, 0, positions({2, 0, 2}, {3}), src) * values<double>({10, 20, 30}, {3})), {x, src});
        check_exact(g[0], {3}, {0, 20, 0});
        check_exact(g[1], {3}, {0, 10, 30});
    });
}

}  // namespace everyday_functions_test

TEST_CASE("scatter and index_copy beyond 64 positions, index_add and bincount at length: one scatter pass") {
    for_each_device([](lt::Device) {
        // 200 rows copied into a 300-row table in reverse order of their positions (no repeats).
        std::vector<std::int64_t> at(200);
        std::vector<float> want(300 * 2, 0.0f);
        for (std::int64_t j = 0; j < 200; ++j) {
            at[static_cast<std::size_t>(j)] = 299 - j;
            want[static_cast<std::size_t>(2 * (299 - j))] = static_cast<float>(j);
            want[static_cast<std::size_t>(2 * (299 - j) + 1)] = static_cast<float>(-j);
        }
        const lt::Tensor<float> up = lt::arange<float>(200), down = -up;
        const auto src = lt::stack({up, down}, 1);
        const lt::Tensor<std::int64_t> positions = lt::tensor<std::int64_t>(at, {200});
        CHECK(lt::index_copy(lt::zeros<float>({300, 2}), 0, positions, src).to_vector() == want);
        CHECK(lt::scatter(lt::zeros<float>({300, 2}), 0, lt::stack({positions, positions}, 1), src).to_vector() == want);
        // index_add and bincount over 5000 repeated positions: integer sums, exact on every device.
        const lt::Tensor<std::int64_t> labels = lt::remainder(lt::arange<std::int64_t>(5000), std::int64_t(7));
        std::vector<std::int64_t> counts(7, 0);
        for (int i = 0; i < 5000; ++i) ++counts[static_cast<std::size_t>(i % 7)];
        CHECK(lt::bincount(labels).to_vector() == counts);
        const lt::Tensor<std::int32_t> added = lt::index_add(lt::zeros<std::int32_t>({7, 3}), 0, labels, lt::ones<std::int32_t>({5000, 3}));
        const std::vector<std::int32_t> a = added.to_vector();
        CHECK(a[0] == counts[0]);
        CHECK(a[20] == counts[6]);
    });
}
