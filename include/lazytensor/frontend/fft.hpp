// SPDX-License-Identifier: MIT
// lt::fft: numpy.fft's functions with its names and arguments (n / s, axis / axes, norm), on
// real and complex tensors. Each transform is an fft node (ir/fft.hpp: the backend's FFT, up to
// three axes per node; more axes chain nodes) between the interleaved pairs of its input and
// of its result; the result's planes are views of those pairs, so what reads them fuses into
// the next kernel. Lazy, and differentiable through lt::grad (the adjoint transforms).
//
// Dtypes as NumPy's: float32 (and float16, bfloat16) give complex64, float64 and integers or bool
// give complex128, complex tensors keep theirs.
#pragma once

#include <cmath>
#include <complex>
#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "../ir/fft.hpp"
#include "complex.hpp"
#include "creation.hpp"
#include "extra_functions.hpp"
#include "movement.hpp"
#include "tensor.hpp"

namespace lazytensor {
namespace fft {

namespace detail {

using lazytensor::detail::fail;
using lazytensor::detail::NodePtr;

/// The plane type of x's transform: NumPy's (float32, float16 and bfloat16: float; the rest:
/// double).
template <class X>
struct plane_of {
    using V = typename X::value_type;
    using type = std::conditional_t<std::is_same_v<V, float> || lazytensor::detail::is_reduced_float_v<V>, float, double>;
};
template <class R>
struct plane_of<Tensor<std::complex<R>>> {
    using type = R;
};

/// x as a complex tensor of planes R (a real x: imaginary part 0).
template <class R, class X>
Tensor<std::complex<R>> as_complex(const X& x) {
    if constexpr (lazytensor::detail::is_complex_tensor_v<X>) return x;
    else return lazytensor::complex(Tensor<R>(lazytensor::cast<R>(x)));
}

/// The norm's factor for a transform of `count` points: "backward" scales the inverse by
/// 1/count, "forward" the forward, "ortho" both by 1/sqrt(count). ValueError naming the value
/// otherwise.
inline double norm_scale(const std::string& norm, double count, bool inverse, const char* api) {
    if (norm == "backward") return inverse ? 1 / count : 1;
    if (norm == "forward") return inverse ? 1 : 1 / count;
    if (norm == "ortho") return 1 / std::sqrt(count);
    fail<ValueError>(api, ": norm must be \"backward\", \"ortho\" or \"forward\", got \"", norm, "\"");
}

/// The transformed axes (normalized, in order) and their lengths: `axes` (default: the last
/// len(s) axes, or all), `s` (default: the extents; for `halved` C2R the last one 2 (m - 1)).
/// AxisError for an axis out of range or repeated; ValueError for a length below 1; ShapeError
/// when s and axes differ in length.
struct Plan {
    std::vector<int> axes;
    std::vector<std::int64_t> lengths;
};
inline Plan plan(const Shape& shape, const std::optional<Shape>& s, const std::optional<Axes>& axes, bool c2r, const char* api) {
    const int rank = static_cast<int>(shape.size());
    Plan p;
    if (axes) {
        if (axes->empty()) fail<ValueError>(api, ": axes must name at least one axis");
        for (int a : *axes) p.axes.push_back(lazytensor::detail::normalize_axis(a, shape.size(), api, shape));
        if (s && s->size() != axes->size())
            fail<ShapeError>(api, ": s has ", s->size(), " lengths but axes has ", axes->size(), " axes; they must match");
    } else {
        const int count = s ? static_cast<int>(s->size()) : rank;
        if (count > rank)
            fail<ShapeError>(api, ": s has ", count, " lengths but the tensor has only ", rank, " axes (shape ", shape, ")");
        if (count == 0) fail<AxisError>(api, ": a 0-dimensional tensor has no axis to transform");
        for (int a = rank - count; a < rank; ++a) p.axes.push_back(a);
    }
    for (std::size_t i = 0; i < p.axes.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (p.axes[i] == p.axes[j]) fail<AxisError>(api, ": axis ", p.axes[i], " is given twice; each axis is transformed once");
    for (std::size_t i = 0; i < p.axes.size(); ++i) {
        const std::int64_t extent = shape[static_cast<std::size_t>(p.axes[i])];
        std::int64_t n = s ? (*s)[i] : (c2r && i + 1 == p.axes.size() ? 2 * (extent - 1) : extent);
        if (s && n == -1) n = c2r && i + 1 == p.axes.size() ? 2 * (extent - 1) : extent;  // NumPy's -1: the default
        if (n < 1)
            fail<ValueError>(api, ": the transform length along axis ", p.axes[i], " must be at least 1, got ", n,
                             s ? "" : lazytensor::detail::concat(" (the tensor's extent there is ", extent, ")").c_str());
        p.lengths.push_back(n);
    }
    return p;
}

/// x cropped or zero-padded at the end of `axis` to `extent`.
template <class T>
T fit(const T& x, int axis, std::int64_t extent) {
    const std::int64_t have = x.shape()[static_cast<std::size_t>(axis)];
    if (have > extent) return x.slice(axis, 0, extent);
    if (have < extent) {
        std::vector<std::pair<std::int64_t, std::int64_t>> widths(x.shape().size(), {0, 0});
        widths[static_cast<std::size_t>(axis)].second = extent - have;
        return x.pad(widths);
    }
    return x;
}

/// Chunks of up to kFftMaxAxes axes of `axes` (in order).
inline std::vector<std::vector<int>> chunks(const std::vector<int>& axes) {
    std::vector<std::vector<int>> out;
    for (std::size_t i = 0; i < axes.size(); i += lazytensor::detail::kFftMaxAxes)
        out.emplace_back(axes.begin() + static_cast<std::ptrdiff_t>(i),
                         axes.begin() + static_cast<std::ptrdiff_t>(std::min(axes.size(), i + lazytensor::detail::kFftMaxAxes)));
    return out;
}

inline double points(const std::vector<std::int64_t>& lengths) {
    double n = 1;
    for (std::int64_t l : lengths) n *= static_cast<double>(l);
    return n;
}

/// C2C along p.axes of z (fitted to p.lengths first).
template <class R>
Tensor<std::complex<R>> c2c(Tensor<std::complex<R>> z, const Plan& p, bool inverse, const std::string& norm, const char* api) {
    const double scale = norm_scale(norm, points(p.lengths), inverse, api);
    for (std::size_t i = 0; i < p.axes.size(); ++i) z = fit(z, p.axes[i], p.lengths[i]);
    NodePtr pairs = z.interleaved().build();
    const auto parts = chunks(p.axes);
    for (std::size_t c = 0; c < parts.size(); ++c)
        pairs = lazytensor::detail::graph::fft(pairs, lazytensor::detail::FftKind::C2C, inverse, parts[c], 0,
                                               c + 1 == parts.size() ? scale : 1.0);
    return Tensor<std::complex<R>>::from_interleaved(Tensor<R>(pairs));
}

/// R2C along p.axes of real x (fitted first): the real transform along the last chunk of axes
/// (ending with p.axes.back()), then complex ones along the rest.
template <class R>
Tensor<std::complex<R>> r2c(Tensor<R> x, const Plan& p, const std::string& norm, const char* api) {
    const double scale = norm_scale(norm, points(p.lengths), false, api);
    for (std::size_t i = 0; i < p.axes.size(); ++i) x = fit(x, p.axes[i], p.lengths[i]);
    const std::size_t k = p.axes.size(), first = k > static_cast<std::size_t>(lazytensor::detail::kFftMaxAxes)
                                                    ? k - static_cast<std::size_t>(lazytensor::detail::kFftMaxAxes)
                                                    : 0;
    const std::vector<int> last(p.axes.begin() + static_cast<std::ptrdiff_t>(first), p.axes.end());
    const std::vector<int> rest(p.axes.begin(), p.axes.begin() + static_cast<std::ptrdiff_t>(first));
    NodePtr pairs = lazytensor::detail::graph::fft(x.build(), lazytensor::detail::FftKind::R2C, false, last, 0, rest.empty() ? scale : 1.0);
    const auto parts = chunks(rest);
    for (std::size_t c = 0; c < parts.size(); ++c)
        pairs = lazytensor::detail::graph::fft(pairs, lazytensor::detail::FftKind::C2C, false, parts[c], 0,
                                               c + 1 == parts.size() ? scale : 1.0);
    return Tensor<std::complex<R>>::from_interleaved(Tensor<R>(pairs));
}

/// C2R along p.axes of z (fitted first: p.lengths, the last axis to n/2 + 1 bins): complex
/// inverse transforms along all but the last chunk, then the real one.
template <class R>
Tensor<R> c2r(Tensor<std::complex<R>> z, const Plan& p, const std::string& norm, const char* api) {
    const double scale = norm_scale(norm, points(p.lengths), true, api);
    const std::size_t k = p.axes.size();
    for (std::size_t i = 0; i < k; ++i) z = fit(z, p.axes[i], i + 1 == k ? p.lengths[i] / 2 + 1 : p.lengths[i]);
    const std::size_t first = k > static_cast<std::size_t>(lazytensor::detail::kFftMaxAxes)
                                  ? k - static_cast<std::size_t>(lazytensor::detail::kFftMaxAxes)
                                  : 0;
    const std::vector<int> last(p.axes.begin() + static_cast<std::ptrdiff_t>(first), p.axes.end());
    const std::vector<int> rest(p.axes.begin(), p.axes.begin() + static_cast<std::ptrdiff_t>(first));
    NodePtr pairs = z.interleaved().build();
    for (const std::vector<int>& part : chunks(rest))
        pairs = lazytensor::detail::graph::fft(pairs, lazytensor::detail::FftKind::C2C, true, part, 0, 1.0);
    return Tensor<R>(lazytensor::detail::graph::fft(pairs, lazytensor::detail::FftKind::C2R, true, last, p.lengths.back(), scale));
}

template <class X>
inline constexpr bool operand_v = lazytensor::detail::is_tensor_like_v<X> || lazytensor::detail::is_complex_tensor_v<X>;

template <class X>
void require_real(const char* api) {
    if constexpr (lazytensor::detail::is_complex_tensor_v<X>)
        fail<DTypeError>(api, ": needs a real tensor, got ", X::dtype(), " (the transform of complex values is lt::fft::fft",
                         ")");
}

inline std::optional<Shape> one_length(std::optional<std::int64_t> n) {
    if (!n) return std::nullopt;
    return Shape{*n};
}

template <class X>
auto complex_nd(const X& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm, bool inverse,
                const char* api) {
    using R = typename plane_of<std::decay_t<X>>::type;
    const Tensor<std::complex<R>> z = as_complex<R>(x);
    return c2c<R>(z, plan(z.shape(), s, axes, false, api), inverse, norm, api);
}

template <class X>
auto real_nd(const X& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm, const char* api) {
    require_real<std::decay_t<X>>(api);
    using R = typename plane_of<std::decay_t<X>>::type;
    if constexpr (lazytensor::detail::is_complex_tensor_v<X>) {
        return Tensor<std::complex<R>>();  // unreachable: require_real threw
    } else {
        const Tensor<R> r = lazytensor::cast<R>(x);
        return r2c<R>(r, plan(r.shape(), s, axes, false, api), norm, api);
    }
}

template <class X>
auto inverse_real_nd(const X& x, const std::optional<Shape>& s, const std::optional<Axes>& axes, const std::string& norm,
                     const char* api) {
    using R = typename plane_of<std::decay_t<X>>::type;
    const Tensor<std::complex<R>> z = as_complex<R>(x);
    return c2r<R>(z, plan(z.shape(), s, axes, true, api), norm, api);
}

}  // namespace detail

///@{
/// numpy.fft.fft / ifft: the complex transform of x (real or complex) along `axis`, of length
/// `n` (x cropped or zero-padded there; default its extent). norm: "backward" (default: the
/// inverse divides by n), "ortho" (both by sqrt(n)) or "forward". AxisError for a bad axis,
/// ValueError for n < 1 or an unknown norm.
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto fft(const X& x, std::optional<std::int64_t> n = std::nullopt, int axis = -1, const std::string& norm = "backward") {
    return detail::complex_nd(x, detail::one_length(n), Axes{axis}, norm, false, "lt::fft::fft");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto ifft(const X& x, std::optional<std::int64_t> n = std::nullopt, int axis = -1, const std::string& norm = "backward") {
    return detail::complex_nd(x, detail::one_length(n), Axes{axis}, norm, true, "lt::fft::ifft");
}
///@}

///@{
/// numpy.fft.rfft: the transform of real x along `axis`, its n/2 + 1 non-negative frequencies.
/// irfft: its inverse, a real result of length n (default 2 (m - 1) for m input bins); the
/// imaginary parts of the bins at 0 and n/2 are ignored. DTypeError for a complex x in rfft.
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto rfft(const X& x, std::optional<std::int64_t> n = std::nullopt, int axis = -1, const std::string& norm = "backward") {
    return detail::real_nd(x, detail::one_length(n), Axes{axis}, norm, "lt::fft::rfft");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto irfft(const X& x, std::optional<std::int64_t> n = std::nullopt, int axis = -1, const std::string& norm = "backward") {
    return detail::inverse_real_nd(x, detail::one_length(n), Axes{axis}, norm, "lt::fft::irfft");
}
///@}

///@{
/// numpy.fft.fftn / ifftn / rfftn / irfftn: transforms along `axes` in order (default: the
/// last len(s) axes, or all), of lengths `s` (default the extents; -1 for one: its default).
/// rfftn halves the last axis given; irfftn's last length defaults to 2 (m - 1). ShapeError
/// where s and axes differ in length; AxisError for a repeated axis.
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto fftn(const X& x, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
          const std::string& norm = "backward") {
    return detail::complex_nd(x, s, axes, norm, false, "lt::fft::fftn");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto ifftn(const X& x, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
           const std::string& norm = "backward") {
    return detail::complex_nd(x, s, axes, norm, true, "lt::fft::ifftn");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto rfftn(const X& x, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
           const std::string& norm = "backward") {
    return detail::real_nd(x, s, axes, norm, "lt::fft::rfftn");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto irfftn(const X& x, std::optional<Shape> s = std::nullopt, std::optional<Axes> axes = std::nullopt,
            const std::string& norm = "backward") {
    return detail::inverse_real_nd(x, s, axes, norm, "lt::fft::irfftn");
}
///@}

///@{
/// numpy.fft.fft2 / ifft2 / rfft2 / irfft2: the n-dimensional transforms along `axes`
/// (default the last two).
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto fft2(const X& x, std::optional<Shape> s = std::nullopt, Axes axes = {-2, -1}, const std::string& norm = "backward") {
    return detail::complex_nd(x, s, axes, norm, false, "lt::fft::fft2");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto ifft2(const X& x, std::optional<Shape> s = std::nullopt, Axes axes = {-2, -1}, const std::string& norm = "backward") {
    return detail::complex_nd(x, s, axes, norm, true, "lt::fft::ifft2");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto rfft2(const X& x, std::optional<Shape> s = std::nullopt, Axes axes = {-2, -1}, const std::string& norm = "backward") {
    return detail::real_nd(x, s, axes, norm, "lt::fft::rfft2");
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto irfft2(const X& x, std::optional<Shape> s = std::nullopt, Axes axes = {-2, -1}, const std::string& norm = "backward") {
    return detail::inverse_real_nd(x, s, axes, norm, "lt::fft::irfft2");
}
///@}

///@{
/// numpy.fft.fftfreq: the sample frequencies of an n-point transform with sample spacing d,
/// [0, 1, ..., (n - 1) / 2, -(n / 2), ..., -1] / (d n); rfftfreq: the n / 2 + 1 non-negative
/// ones. T: float or double. ValueError for n < 1.
template <class T = float>
Tensor<T> fftfreq(std::int64_t n, double d = 1.0, Device device = default_device()) {
    if (n < 1) detail::fail<ValueError>("lt::fft::fftfreq: n must be at least 1, got ", n);
    const Tensor<T> k = arange<T>(0, static_cast<double>(n), 1, device);
    const T half = static_cast<T>((n + 1) / 2), total = static_cast<T>(n);
    return Tensor<T>(where(k < half, k, k - total) / static_cast<T>(d * static_cast<double>(n)));
}
template <class T = float>
Tensor<T> rfftfreq(std::int64_t n, double d = 1.0, Device device = default_device()) {
    if (n < 1) detail::fail<ValueError>("lt::fft::rfftfreq: n must be at least 1, got ", n);
    return Tensor<T>(arange<T>(0, static_cast<double>(n / 2 + 1), 1, device) / static_cast<T>(d * static_cast<double>(n)));
}
///@}

namespace detail {
template <class X>
auto shift(const X& x, std::optional<Axes> axes, bool inverse) {
    if constexpr (lazytensor::detail::is_complex_tensor_v<X>) {
        return X(shift(x.real(), axes, inverse), shift(x.imag(), axes, inverse));
    } else {
        using T = typename X::value_type;
        const Shape& shape = x.shape();
        Axes a;
        if (axes) a = *axes;
        else
            for (int k = 0; k < static_cast<int>(shape.size()); ++k) a.push_back(k);
        std::vector<std::int64_t> shifts;
        for (int k : a) {
            const int axis = lazytensor::detail::normalize_axis(k, shape.size(), inverse ? "lt::fft::ifftshift" : "lt::fft::fftshift", shape);
            const std::int64_t e = shape[static_cast<std::size_t>(axis)];
            shifts.push_back(inverse ? -(e / 2) : e / 2);
        }
        if (a.empty()) return Tensor<T>(x);
        return Tensor<T>(lazytensor::roll(x, shifts, a));
    }
}
}  // namespace detail

///@{
/// numpy.fft.fftshift: the zero frequency moved to the middle (a roll by extent / 2 along each
/// of `axes`, default all); ifftshift undoes it. Real or complex tensors.
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto fftshift(const X& x, std::optional<Axes> axes = std::nullopt) {
    return detail::shift(x, axes, false);
}
template <class X, class = std::enable_if_t<detail::operand_v<X>>>
auto ifftshift(const X& x, std::optional<Axes> axes = std::nullopt) {
    return detail::shift(x, axes, true);
}
///@}

}  // namespace fft
}  // namespace lazytensor
