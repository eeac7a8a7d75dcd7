// SPDX-License-Identifier: MIT
// Complex tensors (frontend/complex.hpp) against std::complex: arithmetic with complex and real
// tensors and scalars, broadcasting, the functions, reductions, products, views, printing and
// the errors. Runs on every test device.
#include <cmath>
#include <complex>
#include <limits>
#include <sstream>
#include <vector>

#include "common.hpp"

namespace {

template <class R>
std::vector<std::complex<R>> complex_values(std::size_t n, unsigned seed) {
    const Ref re = random_ref<double>({static_cast<std::int64_t>(n)}, seed, -3, 3);
    const Ref im = random_ref<double>({static_cast<std::int64_t>(n)}, seed + 1, -3, 3);
    std::vector<std::complex<R>> out;
    for (std::size_t i = 0; i < n; ++i) out.emplace_back(static_cast<R>(re.v[i]), static_cast<R>(im.v[i]));
    return out;
}

template <class R, class F>
void check_each(const lt::Tensor<std::complex<R>>& got, std::size_t n, F&& want, double rtol) {
    const std::vector<std::complex<R>> g = got.to_vector();
    REQUIRE(g.size() == n);
    for (std::size_t i = 0; i < n; ++i) {
        const std::complex<double> w = want(i);
        INFO("element " << i << ": got " << g[i] << ", want " << w);
        CHECK(std::abs(std::complex<double>(g[i]) - w) <= rtol * (std::abs(w) + 1e-30));
    }
}

}  // namespace

TEST_CASE("complex arithmetic matches std::complex") {
    for_each_device([](lt::Device) {
        const auto a = complex_values<double>(12, 1), b = complex_values<double>(12, 3);
        const auto za = lt::tensor<std::complex<double>>(a, {3, 4}), zb = lt::tensor<std::complex<double>>(b, {3, 4});
        CHECK(za.dtype() == lt::DType::Complex128);
        CHECK(lt::dtype_name(za.dtype()) == std::string("complex128"));
        check_each(za + zb, 12, [&](std::size_t i) { return a[i] + b[i]; }, 1e-15);
        check_each(za - zb, 12, [&](std::size_t i) { return a[i] - b[i]; }, 1e-15);
        check_each(za * zb, 12, [&](std::size_t i) { return a[i] * b[i]; }, 1e-15);
        check_each(za / zb, 12, [&](std::size_t i) { return a[i] / b[i]; }, 1e-15);
        check_each(-za, 12, [&](std::size_t i) { return -a[i]; }, 0);
        // Real tensors (and expressions) and scalars on either side.
        const Ref r = random_ref<double>({3, 4}, 5, 0.5, 2);
        const auto rt = make_tensor<double>(r);
        check_each(za * rt, 12, [&](std::size_t i) { return a[i] * r.v[i]; }, 1e-15);
        check_each(rt / za, 12, [&](std::size_t i) { return r.v[i] / a[i]; }, 1e-15);
        check_each(za / (rt + 1.0), 12, [&](std::size_t i) { return a[i] / (r.v[i] + 1); }, 1e-15);
        check_each(rt - za, 12, [&](std::size_t i) { return r.v[i] - a[i]; }, 1e-15);
        check_each(za * 2.5, 12, [&](std::size_t i) { return a[i] * 2.5; }, 1e-15);
        check_each(1.0 - za, 12, [&](std::size_t i) { return 1.0 - a[i]; }, 1e-15);
        const std::complex<double> s(0.5, -2);
        check_each(za * s, 12, [&](std::size_t i) { return a[i] * s; }, 1e-15);
        check_each(s / za, 12, [&](std::size_t i) { return s / a[i]; }, 1e-15);
        check_each(za / s, 12, [&](std::size_t i) { return a[i] / s; }, 1e-15);
        // Broadcasting: a row of 4 against [3, 4].
        const auto row = lt::tensor<std::complex<double>>(std::vector<std::complex<double>>(b.begin(), b.begin() + 4), {4});
        check_each(za * row, 12, [&](std::size_t i) { return a[i] * b[i % 4]; }, 1e-15);
        // complex64 with a float64 tensor gives complex128; a scalar does not widen.
        const auto zf = lt::tensor<std::complex<float>>(complex_values<float>(12, 1), {3, 4});
        static_assert(std::is_same_v<decltype(zf * rt), lt::Tensor<std::complex<double>>>);
        static_assert(std::is_same_v<decltype(zf * 2.0), lt::Tensor<std::complex<float>>>);
        static_assert(std::is_same_v<decltype(zf * std::complex<double>(1, 1)), lt::Tensor<std::complex<float>>>);
        static_assert(std::is_same_v<decltype(zf + za), lt::Tensor<std::complex<double>>>);
        check_each(zf * zf, 12, [&](std::size_t i) {
            const std::complex<float> v = complex_values<float>(12, 1)[i];
            return std::complex<double>(v * v);
        }, 1e-6);
    });
}

TEST_CASE("complex division does not overflow, and a real operand is one with imaginary part 0") {
    for_each_device([](lt::Device) {
        // |c|^2 overflows float: Smith's division does not.
        const auto num = lt::tensor<std::complex<float>>({{1e30f, 1e30f}, {1, 0}}, {2});
        const auto den = lt::tensor<std::complex<float>>({{3e30f, -1e30f}, {0, 1e-30f}}, {2});
        const std::vector<std::complex<float>> q = (num / den).to_vector();
        CHECK(std::fabs(q[0].real() - 0.2f) <= 1e-6f);
        CHECK(std::fabs(q[0].imag() - 0.4f) <= 1e-6f);
        CHECK(std::fabs(q[1].real()) <= 1e-6f);
        CHECK(std::fabs(q[1].imag() + 1e30f) <= 1e24f);
        // A zero divisor as NumPy's: (a / |c|) + i (b / |d|).
        const auto by_zero = (lt::tensor<std::complex<float>>({{1, -1}, {0, 0}}, {2}) /
                              lt::tensor<std::complex<float>>({{0, 0}, {0, 0}}, {2})).to_vector();
        CHECK(by_zero[0].real() == std::numeric_limits<float>::infinity());
        CHECK(by_zero[0].imag() == -std::numeric_limits<float>::infinity());
        CHECK(std::isnan(by_zero[1].real()));
        CHECK(std::isnan(by_zero[1].imag()));
        // (inf + 0j) * 2 as NumPy: 2 is 2 + 0j, so the imaginary part is inf * 0 = NaN.
        const float inf = std::numeric_limits<float>::infinity();
        const auto v = (lt::tensor<std::complex<float>>({{inf, 0}}, {1}) * lt::tensor<float>({2.0f})).to_vector();
        CHECK(std::isinf(v[0].real()));
        CHECK(std::isnan(v[0].imag()));
    });
}

TEST_CASE("complex functions, reductions, products and views") {
    for_each_device([](lt::Device) {
        const auto a = complex_values<double>(6, 7);
        const auto z = lt::tensor<std::complex<double>>(a, {2, 3});
        const std::vector<double> absolute = z.abs().to_vector(), angle = lt::angle(z).to_vector();
        const std::vector<double> re = lt::real(z).to_vector(), im = lt::imag(z).to_vector();
        for (std::size_t i = 0; i < 6; ++i) {
            CHECK(absolute[i] == doctest::Approx(std::abs(a[i])).epsilon(1e-15));
            CHECK(angle[i] == doctest::Approx(std::arg(a[i])).epsilon(1e-15));
            CHECK(re[i] == a[i].real());
            CHECK(im[i] == a[i].imag());
        }
        check_each(lt::conj(z), 6, [&](std::size_t i) { return std::conj(a[i]); }, 0);
        check_each(lt::exp(z), 6, [&](std::size_t i) { return std::exp(a[i]); }, 1e-14);
        check_each(lt::log(z), 6, [&](std::size_t i) { return std::log(a[i]); }, 1e-14);
        check_each(lt::polar(z.abs(), z.angle()), 6, [&](std::size_t i) { return a[i]; }, 1e-14);
        // |z| of huge parts does not overflow (hypot).
        const auto big = lt::tensor<std::complex<float>>({{3e30f, 4e30f}}, {1});
        CHECK(big.abs().item() == doctest::Approx(5e30f).epsilon(1e-6));
        // Real tensors: real, imag, conj, angle.
        const auto x = lt::tensor<float>({-2, 0, 3}, {3});
        CHECK(lt::imag(x).to_vector() == std::vector<float>{0, 0, 0});
        CHECK(lt::conj(x).to_vector() == x.to_vector());
        CHECK(lt::angle(x).to_vector() == std::vector<float>{3.14159265f, 0, 0});
        // Sums and means over axes.
        check_each(z.sum(1), 2, [&](std::size_t i) { return a[3 * i] + a[3 * i + 1] + a[3 * i + 2]; }, 1e-15);
        check_each(z.mean(), 1, [&](std::size_t) {
            std::complex<double> s = 0;
            for (const auto& c : a) s += c;
            return s / 6.0;
        }, 1e-15);
        // Matrix products: [2, 3] x [3, 2].
        const auto b = complex_values<double>(6, 9);
        const auto w = lt::tensor<std::complex<double>>(b, {3, 2});
        check_each(lt::matmul(z, w), 4, [&](std::size_t e) {
            const std::size_t i = e / 2, j = e % 2;
            std::complex<double> s = 0;
            for (std::size_t k = 0; k < 3; ++k) s += a[i * 3 + k] * b[k * 2 + j];
            return s;
        }, 1e-14);
        // Views of both planes: a transpose, a slice and an index.
        check_each(z.t(), 6, [&](std::size_t e) { return a[(e % 2) * 3 + e / 2]; }, 0);
        check_each(z.slice(1, 1, 3), 4, [&](std::size_t e) { return a[(e / 2) * 3 + 1 + e % 2]; }, 0);
        CHECK(z(1, 2).item() == a[5]);
        CHECK(z.reshape({3, 2}).shape() == lt::Shape{3, 2});
    });
}

TEST_CASE("complex tensors print as PyTorch's, and bad operands are errors") {
    const auto z = lt::tensor<std::complex<float>>({{1.5f, 2}, {-3, -0.25f}}, {2});
    std::ostringstream out;
    out << z;
    CHECK(out.str() == "tensor([ 1.5000+2.0000j, -3.0000-0.2500j], shape=[2], dtype=complex64, device=host)");
    // One notation for both parts.
    std::ostringstream wide;
    wide << lt::tensor<std::complex<double>>({{2e6, 0}, {-1, 0.5}}, {2});
    CHECK(wide.str() == "tensor([ 2.0000e+06+0.0000e+00j, -1.0000e+00+5.0000e-01j], shape=[2], dtype=complex128, device=host)");
    CHECK(message_of<lt::ShapeError>([] {
              lt::Tensor<std::complex<float>>(lt::zeros<float>({2}), lt::zeros<float>({3}));
          }) == "complex tensor: the real part has shape [2] and the imaginary part [3]; they must have one shape");
    CHECK(message_of<lt::DTypeError>([] { lt::complex(lt::tensor<int32_t>({1}), lt::tensor<int32_t>({2})); }) ==
          "lt::complex: the real and imaginary parts must be floating tensors, got int32 and int32; cast them first "
          "(lt::cast<float>(x))");
    CHECK(message_of<lt::ShapeError>([] { lt::complex(lt::zeros<float>({2}), lt::zeros<float>({3})); }).find("lt::complex") == 0);
    // lt::complex broadcasts its parts.
    CHECK(lt::complex(lt::zeros<float>({2, 1}), lt::ones<float>({3})).shape() == lt::Shape{2, 3});
}
