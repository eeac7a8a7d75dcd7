// SPDX-License-Identifier: MIT
// lt::fft against a direct O(n^2) DFT in double (every length class: powers of two, mixed
// radix, primes through Bluestein, 1), along axes in any order, with NumPy's n / s and norms,
// on real and complex, lazy and strided inputs; round trips of long transforms; gradients
// against central differences; the errors. Runs on every test device.
#include <cmath>
#include <complex>
#include <vector>

#include "common.hpp"

namespace {

using C = std::complex<double>;

/// A row-major complex array and its shape: the reference.
struct CRef {
    lt::Shape shape;
    std::vector<C> v;
};

CRef random_complex(const lt::Shape& shape, unsigned seed) {
    const Ref re = random_ref<double>(shape, seed), im = random_ref<double>(shape, seed + 101);
    CRef r{shape, {}};
    for (std::size_t i = 0; i < re.v.size(); ++i) r.v.emplace_back(re.v[i], im.v[i]);
    return r;
}

/// The direct DFT of x along `axis` (sign -1 forward, +1 inverse), unnormalized.
CRef dft_along(const CRef& x, int axis, int sign) {
    const auto a = static_cast<std::size_t>(axis);
    const std::int64_t n = x.shape[a];
    std::int64_t inner = 1;
    for (std::size_t d = a + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const std::int64_t outer = lt::numel(x.shape) / (n * inner);
    CRef y{x.shape, std::vector<C>(x.v.size())};
    const double pi = std::acos(-1.0);
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i)
            for (std::int64_t k = 0; k < n; ++k) {
                C s = 0;
                for (std::int64_t j = 0; j < n; ++j)
                    s += x.v[static_cast<std::size_t>((o * n + j) * inner + i)] *
                         std::polar(1.0, sign * 2 * pi * static_cast<double>((j * k) % n) / static_cast<double>(n));
                y.v[static_cast<std::size_t>((o * n + k) * inner + i)] = s;
            }
    return y;
}

CRef dft(CRef x, const std::vector<int>& axes, int sign, double scale) {
    for (int a : axes) x = dft_along(x, a, sign);
    for (C& c : x.v) c *= scale;
    return x;
}

/// x cropped or zero-padded at the end of `axis` to n.
CRef fit(const CRef& x, int axis, std::int64_t n) {
    CRef y{x.shape, {}};
    y.shape[static_cast<std::size_t>(axis)] = n;
    y.v.assign(static_cast<std::size_t>(lt::numel(y.shape)), C(0));
    for (std::int64_t e = 0; e < lt::numel(y.shape); ++e) {
        std::vector<std::int64_t> idx = unravel(e, y.shape);
        if (idx[static_cast<std::size_t>(axis)] >= x.shape[static_cast<std::size_t>(axis)]) continue;
        std::int64_t src = 0;
        for (std::size_t d = 0; d < idx.size(); ++d) src = src * x.shape[d] + idx[d];
        y.v[static_cast<std::size_t>(e)] = x.v[static_cast<std::size_t>(src)];
    }
    return y;
}

template <class R>
lt::Tensor<std::complex<R>> make_complex(const CRef& r) {
    std::vector<std::complex<R>> v;
    for (const C& c : r.v) v.emplace_back(static_cast<R>(c.real()), static_cast<R>(c.imag()));
    return lt::tensor<std::complex<R>>(v, r.shape);
}

template <class R>
void check_complex(const lt::Tensor<std::complex<R>>& got, const CRef& want) {
    REQUIRE(got.shape() == want.shape);
    const std::vector<std::complex<R>> g = got.to_vector();
    double scale = 0;
    for (const C& c : want.v) scale = std::max(scale, std::abs(c));
    const double tol = (std::is_same_v<R, float> ? 2e-6 : 1e-13) * (scale + 1);
    for (std::size_t i = 0; i < g.size(); ++i) {
        INFO("element " << i << ": got " << g[i] << ", want " << want.v[i]);
        CHECK(std::abs(C(g[i]) - want.v[i]) <= tol);
    }
}

template <class R>
void check_real(const lt::Tensor<R>& got, const CRef& want) {
    REQUIRE(got.shape() == want.shape);
    const std::vector<R> g = got.to_vector();
    double scale = 0;
    for (const C& c : want.v) scale = std::max(scale, std::abs(c));
    const double tol = (std::is_same_v<R, float> ? 2e-6 : 1e-13) * (scale + 1);
    for (std::size_t i = 0; i < g.size(); ++i) {
        INFO("element " << i << ": got " << g[i] << ", want " << want.v[i].real());
        CHECK(std::fabs(static_cast<double>(g[i]) - want.v[i].real()) <= tol);
    }
}

CRef real_part(const CRef& x) {
    CRef y = x;
    for (C& c : y.v) c = C(c.real(), 0);
    return y;
}

/// The first n/2 + 1 bins along `axis`.
CRef half_spectrum(const CRef& x, int axis) { return fit(x, axis, x.shape[static_cast<std::size_t>(axis)] / 2 + 1); }

/// NumPy's irfftn of a half spectrum (along `axes`, the last halved, real length n): inverse
/// DFTs along the other axes, then the real inverse along the last.
CRef irfft_reference(const CRef& spectrum, const std::vector<int>& axes, std::int64_t n, double scale) {
    CRef x = spectrum;
    for (std::size_t i = 0; i + 1 < axes.size(); ++i) x = dft_along(x, axes[i], +1);
    const auto a = static_cast<std::size_t>(axes.back());
    const std::int64_t bins = spectrum.shape[a];
    CRef full{x.shape, {}};
    full.shape[a] = n;
    full.v.assign(static_cast<std::size_t>(lt::numel(full.shape)), C(0));
    // y_j = sum_k w_k Re(X_k e^{+2 pi i jk/n}), w = 1 at bin 0 (and n/2), 2 between, the
    // imaginary parts of bins 0 and n/2 ignored.
    std::int64_t inner = 1;
    for (std::size_t d = a + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
    const std::int64_t outer = lt::numel(x.shape) / (bins * inner);
    const double pi = std::acos(-1.0);
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t i = 0; i < inner; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double s = 0;
                for (std::int64_t k = 0; k < bins && k <= n / 2; ++k) {
                    C X = x.v[static_cast<std::size_t>((o * bins + k) * inner + i)];
                    const bool edge = k == 0 || (n % 2 == 0 && k == n / 2);
                    if (edge) X = C(X.real(), 0);
                    s += (edge ? 1.0 : 2.0) * (X * std::polar(1.0, 2 * pi * static_cast<double>((j * k) % n) / static_cast<double>(n))).real();
                }
                full.v[static_cast<std::size_t>((o * n + j) * inner + i)] = C(s * scale, 0);
            }
    return full;
}

}  // namespace

TEST_CASE("fft and ifft match the direct DFT for every length class") {
    for_each_device([](lt::Device) {
        for (std::int64_t n : {1, 2, 7, 8, 12, 17, 30, 64}) {
            INFO("n = " << n);
            const CRef x = random_complex({3, n}, static_cast<unsigned>(n));
            check_complex(lt::fft::fft(make_complex<float>(x)), dft(x, {1}, -1, 1));
            check_complex(lt::fft::ifft(make_complex<float>(x)), dft(x, {1}, +1, 1.0 / static_cast<double>(n)));
            check_complex(lt::fft::fft(make_complex<double>(x)), dft(x, {1}, -1, 1));
            // A real input is a complex one with imaginary part 0.
            const CRef r = real_part(x);
            const Ref plain{{3, n}, [&] {
                                std::vector<double> v;
                                for (const C& c : r.v) v.push_back(c.real());
                                return v;
                            }()};
            check_complex(lt::fft::fft(make_tensor<double>(plain)), dft(r, {1}, -1, 1));
        }
    });
}

TEST_CASE("rfft and irfft match the direct DFT, with n cropping or padding") {
    for_each_device([](lt::Device) {
        for (std::int64_t n : {1, 2, 5, 8, 12, 19}) {
            INFO("n = " << n);
            const Ref xr = random_ref<double>({2, n}, static_cast<unsigned>(n) + 3);
            CRef x{{2, n}, {}};
            for (double v : xr.v) x.v.emplace_back(v, 0);
            check_complex(lt::fft::rfft(make_tensor<float>(xr)), half_spectrum(dft(x, {1}, -1, 1), 1));
            check_complex(lt::fft::rfft(make_tensor<double>(xr)), half_spectrum(dft(x, {1}, -1, 1), 1));
            // n longer (zero-padded) and shorter (cropped).
            check_complex(lt::fft::rfft(make_tensor<double>(xr), n + 3), half_spectrum(dft(fit(x, 1, n + 3), {1}, -1, 1), 1));
            if (n > 1)
                check_complex(lt::fft::rfft(make_tensor<double>(xr), n - 1), half_spectrum(dft(fit(x, 1, n - 1), {1}, -1, 1), 1));
            // irfft of an arbitrary half spectrum (its bins 0 and n/2 not real): NumPy's result.
            const CRef spectrum = random_complex({2, n / 2 + 1}, static_cast<unsigned>(n) + 9);
            check_real(lt::fft::irfft(make_complex<double>(spectrum), n), irfft_reference(spectrum, {1}, n, 1.0 / static_cast<double>(n)));
            check_real(lt::fft::irfft(make_complex<float>(spectrum), n), irfft_reference(spectrum, {1}, n, 1.0 / static_cast<double>(n)));
            // The round trip.
            const std::vector<float> back = lt::fft::irfft(lt::fft::rfft(make_tensor<float>(xr)), n).to_vector();
            for (std::size_t i = 0; i < back.size(); ++i) CHECK(std::fabs(back[i] - xr.v[i]) <= 1e-5);
        }
        // irfft's default length is 2 (m - 1).
        const CRef s = random_complex({5}, 4);
        CHECK(lt::fft::irfft(make_complex<double>(s)).shape() == lt::Shape{8});
    });
}

TEST_CASE("fftn, rfftn and irfftn along axes in any order, and more than three axes") {
    for_each_device([](lt::Device) {
        const CRef x = random_complex({4, 3, 5}, 11);
        check_complex(lt::fft::fftn(make_complex<double>(x)), dft(x, {0, 1, 2}, -1, 1));
        check_complex(lt::fft::fftn(make_complex<float>(x), std::nullopt, lt::Axes{2, 0}), dft(x, {2, 0}, -1, 1));
        check_complex(lt::fft::fft(make_complex<double>(x), std::nullopt, 1), dft(x, {1}, -1, 1));  // a middle axis
        check_complex(lt::fft::ifft2(make_complex<double>(x)), dft(x, {1, 2}, +1, 1.0 / 15));
        check_complex(lt::fft::fft2(make_complex<double>(x), lt::Shape{6, 2}), dft(fit(fit(x, 1, 6), 2, 2), {1, 2}, -1, 1));
        // Four axes: two nodes.
        const CRef y = random_complex({2, 3, 2, 4}, 12);
        check_complex(lt::fft::fftn(make_complex<double>(y)), dft(y, {0, 1, 2, 3}, -1, 1));
        check_complex(lt::fft::ifftn(make_complex<double>(y), std::nullopt, std::nullopt, "forward"), dft(y, {0, 1, 2, 3}, +1, 1));
        // rfftn halves the last axis given; irfftn inverts it.
        CRef xr = real_part(x);
        Ref plain{{4, 3, 5}, {}};
        for (const C& c : xr.v) plain.v.push_back(c.real());
        check_complex(lt::fft::rfftn(make_tensor<double>(plain)), half_spectrum(dft(xr, {0, 1, 2}, -1, 1), 2));
        check_complex(lt::fft::rfftn(make_tensor<double>(plain), std::nullopt, lt::Axes{2, 0}),
                      half_spectrum(dft(xr, {2, 0}, -1, 1), 0));
        check_complex(lt::fft::rfft2(make_tensor<float>(plain)), half_spectrum(dft(xr, {1, 2}, -1, 1), 2));
        Ref plain4{{2, 3, 2, 4}, {}};
        CRef y4 = real_part(y);
        for (const C& c : y4.v) plain4.v.push_back(c.real());
        check_complex(lt::fft::rfftn(make_tensor<double>(plain4)), half_spectrum(dft(y4, {0, 1, 2, 3}, -1, 1), 3));
        const CRef spectrum = random_complex({4, 3, 3}, 13);
        check_real(lt::fft::irfftn(make_complex<double>(spectrum), lt::Shape{4, 3, 5}),
                   irfft_reference(spectrum, {0, 1, 2}, 5, 1.0 / 60));
        const CRef spectrum4 = random_complex({2, 3, 2, 3}, 14);
        check_real(lt::fft::irfftn(make_complex<double>(spectrum4)), irfft_reference(spectrum4, {0, 1, 2, 3}, 4, 1.0 / 48));
        const std::vector<double> round = lt::fft::irfft2(lt::fft::rfft2(make_tensor<double>(plain)), lt::Shape{3, 5}).to_vector();
        for (std::size_t i = 0; i < round.size(); ++i) CHECK(std::fabs(round[i] - plain.v[i]) <= 1e-12);
    });
}

TEST_CASE("fft norms, lazy and strided inputs, and dtypes as NumPy's") {
    for_each_device([](lt::Device) {
        const CRef x = random_complex({6, 4}, 21);
        const auto z = make_complex<double>(x);
        check_complex(lt::fft::fft(z, std::nullopt, -1, "ortho"), dft(x, {1}, -1, 0.5));
        check_complex(lt::fft::fft(z, std::nullopt, -1, "forward"), dft(x, {1}, -1, 0.25));
        check_complex(lt::fft::ifft(z, std::nullopt, -1, "ortho"), dft(x, {1}, +1, 0.5));
        check_complex(lt::fft::ifft(z, std::nullopt, -1, "forward"), dft(x, {1}, +1, 1));
        // A transposed view and a lazy expression: the same as their values.
        CRef xt{{4, 6}, std::vector<C>(24)};
        for (int i = 0; i < 6; ++i)
            for (int j = 0; j < 4; ++j) xt.v[static_cast<std::size_t>(j * 6 + i)] = x.v[static_cast<std::size_t>(i * 4 + j)];
        check_complex(lt::fft::fft(z.t()), dft(xt, {1}, -1, 1));
        CRef twice = x;
        for (C& c : twice.v) c = c * 2.0 + 1.0;
        check_complex(lt::fft::fft(z * 2.0 + 1.0, std::nullopt, 0), dft(twice, {0}, -1, 1));
        // fft(fft) reads the first result's pairs in place; a slice of a result is read in a copy.
        check_complex(lt::fft::ifft(lt::fft::fft(z)), x);
        const CRef spectrum = dft(x, {1}, -1, 1);
        CRef rows{{4, 4}, {}};
        for (std::size_t i = 4; i < 20; ++i) rows.v.push_back(spectrum.v[i]);
        check_complex(lt::fft::fft(lt::fft::fft(z).slice(0, 1, 5), std::nullopt, 0), dft(rows, {0}, -1, 1));
        // Dtypes: float32 and float16 give complex64; float64, integers and bool complex128.
        static_assert(std::is_same_v<decltype(lt::fft::fft(lt::tensor<float>({1.0f}))), lt::Tensor<std::complex<float>>>);
        static_assert(std::is_same_v<decltype(lt::fft::fft(lt::tensor<lt::half>({lt::half(1.0f)}))), lt::Tensor<std::complex<float>>>);
        static_assert(std::is_same_v<decltype(lt::fft::rfft(lt::tensor<int32_t>({1}))), lt::Tensor<std::complex<double>>>);
        static_assert(std::is_same_v<decltype(lt::fft::rfft(lt::tensor<lt::bfloat16>({lt::bfloat16(1.0f)}))), lt::Tensor<std::complex<float>>>);
        static_assert(std::is_same_v<decltype(lt::fft::irfft(lt::tensor<float>({1.0f}))), lt::Tensor<float>>);
        const auto zi = lt::fft::fft(lt::tensor<int32_t>({1, 2, 3, 4}));
        CHECK(zi.dtype() == lt::DType::Complex128);
        CHECK(zi.to_vector() == std::vector<std::complex<double>>{{10, 0}, {-2, 2}, {-2, 0}, {-2, -2}});
        // Views the user realized, before the transform is built or after: the item copies them
        // into contiguous memory itself.
        const Ref m = random_ref<float>({3, 4}, 24);
        CRef mt{{4, 3}, {}};
        for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 3; ++i) mt.v.emplace_back(m.v[static_cast<std::size_t>(i * 4 + j)], 0);
        const auto mf = make_tensor<float>(m);
        auto before = mf.t();
        before.realize();
        check_complex(lt::fft::rfft(before), half_spectrum(dft(mt, {1}, -1, 1), 1));
        auto after = mf.t();
        const auto spectrum_after = lt::fft::rfft(after);
        after.realize();
        check_complex(spectrum_after, half_spectrum(dft(mt, {1}, -1, 1), 1));
        auto columns = mf.slice(1, 1, 3);
        const auto sliced = lt::fft::fft(columns, std::nullopt, 0);
        columns.realize();
        CRef cols{{3, 2}, {}};
        for (int i = 0; i < 3; ++i)
            for (int j = 1; j < 3; ++j) cols.v.emplace_back(m.v[static_cast<std::size_t>(i * 4 + j)], 0);
        check_complex(sliced, dft(cols, {0}, -1, 1));
        // An empty batch gives an empty result.
        CHECK(lt::fft::fft(lt::zeros<float>({0, 4})).shape() == lt::Shape{0, 4});
    });
}

TEST_CASE("a long round trip stays within a few ulps times log2 n") {
    for_each_device([](lt::Device) {
        const std::int64_t n = 3 * 4096;  // four-step, mixed radix
        const Ref x = random_ref<float>({n}, 31);
        const auto t = make_tensor<float>(x);
        const std::vector<float> back = lt::fft::irfft(lt::fft::rfft(t), n).to_vector();
        const std::vector<std::complex<float>> full = lt::fft::ifft(lt::fft::fft(t)).to_vector();
        double norm = 0, err = 0, err_full = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            norm = std::max(norm, std::fabs(x.v[k]));
            err = std::max(err, std::fabs(back[k] - x.v[k]));
            err_full = std::max(err_full, std::abs(std::complex<double>(full[k]) - C(x.v[k], 0)));
        }
        const double bound = 5e-7 * std::log2(static_cast<double>(n)) * norm;
        CHECK(err <= bound);
        CHECK(err_full <= bound);
    });
}

TEST_CASE("fft gradients match central differences") {
    for_each_device([](lt::Device) {
        const Ref re = random_ref<double>({3, 5}, 41), im = random_ref<double>({3, 5}, 42);
        // fft of a complex input built from two real tensors, ortho norm, along axis 0.
        check_gradient_by_differences(
            [](const std::vector<lt::Tensor<double>>& v) {
                const auto z = lt::fft::fft(lt::complex(v[0], v[1]), std::nullopt, 0, "ortho");
                return lt::Tensor<double>(z.real() * 2.0 + z.imag());
            },
            {re, im}, 1e-6);
        // rfft (real input, odd and even lengths), and fft2 of a real input.
        check_gradient_by_differences(
            [](const std::vector<lt::Tensor<double>>& v) {
                const auto z = lt::fft::rfft(v[0]);
                return lt::Tensor<double>(z.real() - z.imag() * 3.0);
            },
            {re}, 1e-6);
        check_gradient_by_differences(
            [](const std::vector<lt::Tensor<double>>& v) {
                const auto z = lt::fft::rfft(v[0].slice(1, 0, 4));
                return lt::Tensor<double>(z.real() + z.imag());
            },
            {re}, 1e-6);
        check_gradient_by_differences([](const std::vector<lt::Tensor<double>>& v) { return lt::fft::fft2(v[0]).abs(); }, {re}, 1e-6);
        // irfft (even and odd n) of a complex input, and irfftn over two axes.
        const Ref hre = random_ref<double>({2, 4}, 43), him = random_ref<double>({2, 4}, 44);
        for (std::int64_t n : {6, 7}) {
            INFO("n = " << n);
            check_gradient_by_differences(
                [n](const std::vector<lt::Tensor<double>>& v) { return lt::fft::irfft(lt::complex(v[0], v[1]), n); }, {hre, him},
                1e-6);
        }
        check_gradient_by_differences(
            [](const std::vector<lt::Tensor<double>>& v) { return lt::fft::irfft2(lt::complex(v[0], v[1]), lt::Shape{2, 6}); },
            {hre, him}, 1e-6);
    });
}

TEST_CASE("fftfreq, rfftfreq, fftshift and ifftshift") {
    for_each_device([](lt::Device) {
        CHECK(lt::fft::fftfreq<double>(5, 0.5).to_vector() == std::vector<double>{0, 0.4, 0.8, -0.8, -0.4});
        CHECK(lt::fft::fftfreq<double>(4).to_vector() == std::vector<double>{0, 0.25, -0.5, -0.25});
        CHECK(lt::fft::rfftfreq<double>(5, 0.5).to_vector() == std::vector<double>{0, 0.4, 0.8});
        CHECK(lt::fft::rfftfreq<float>(4).to_vector() == std::vector<float>{0, 0.25f, 0.5f});
        const auto f = lt::tensor<int32_t>({0, 1, 2, 3, 4, 5}, {2, 3});
        CHECK(lt::fft::fftshift(f).to_vector() == std::vector<int32_t>{5, 3, 4, 2, 0, 1});
        CHECK(lt::fft::fftshift(f, lt::Axes{1}).to_vector() == std::vector<int32_t>{2, 0, 1, 5, 3, 4});
        CHECK(lt::fft::ifftshift(f, lt::Axes{1}).to_vector() == std::vector<int32_t>{1, 2, 0, 4, 5, 3});
        CHECK(lt::fft::ifftshift(lt::fft::fftshift(f)).to_vector() == f.to_vector());
        const auto z = lt::fft::fftshift(lt::tensor<std::complex<float>>({{0, 1}, {2, 3}, {4, 5}}, {3}));
        CHECK(z.to_vector() == std::vector<std::complex<float>>{{4, 5}, {0, 1}, {2, 3}});
    });
}

TEST_CASE("fft errors name the mistake") {
    const auto x = lt::tensor<float>({1, 2, 3, 4}, {2, 2});
    const auto z = lt::complex(x, x);
    CHECK(message_of<lt::DTypeError>([&] { lt::fft::rfft(z); }) ==
          "lt::fft::rfft: needs a real tensor, got complex64 (the transform of complex values is lt::fft::fft)");
    CHECK(message_of<lt::ValueError>([&] { lt::fft::fft(x, 0); }) == "lt::fft::fft: the transform length along axis 1 must be at least 1, got 0");
    CHECK(message_of<lt::ValueError>([&] { lt::fft::irfft(lt::complex(lt::tensor<float>({1.0f}))); })
              .find("must be at least 1, got 0 (the tensor's extent there is 1)") != std::string::npos);
    CHECK(message_of<lt::AxisError>([&] { lt::fft::fft(x, std::nullopt, 2); }).find("lt::fft::fft") == 0);
    CHECK(message_of<lt::ValueError>([&] { lt::fft::fft(x, std::nullopt, -1, "orthonormal"); }) ==
          "lt::fft::fft: norm must be \"backward\", \"ortho\" or \"forward\", got \"orthonormal\"");
    CHECK(message_of<lt::AxisError>([&] { lt::fft::fftn(x, std::nullopt, lt::Axes{0, -2}); }) ==
          "lt::fft::fftn: axis 0 is given twice; each axis is transformed once");
    CHECK(message_of<lt::ShapeError>([&] { lt::fft::fftn(x, lt::Shape{2, 2}, lt::Axes{0}); }) ==
          "lt::fft::fftn: s has 2 lengths but axes has 1 axes; they must match");
    CHECK(message_of<lt::ValueError>([&] { lt::fft::fftfreq(0); }) == "lt::fft::fftfreq: n must be at least 1, got 0");
    // A failed call leaves its input usable.
    CHECK(x.to_vector() == std::vector<float>{1, 2, 3, 4});
}
