// SPDX-License-Identifier: MIT
// Complex tensors: lt::Tensor<std::complex<float>> (complex64) and Tensor<std::complex<double>>
// (complex128). A complex tensor is two real tensors of one shape, its real and imaginary
// planes, and every complex operation is real arithmetic on them: it fuses like any other
// element-wise code, runs on every backend, and lt::grad differentiates through it (with
// respect to the real tensors it was built from). The planes meet as interleaved (re, im)
// pairs only where a kind of work needs them so (the FFT, .npy files).
//
// Arithmetic follows NumPy's: a real operand is a complex one with imaginary part 0 (so inf * 0
// gives NaN in the imaginary part, as there), division is Smith's (no overflow of c^2 + d^2),
// abs is hypot. A complex64 tensor with a float64 tensor gives complex128; scalars (real or
// std::complex) never widen a tensor.
#pragma once

#include <complex>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "creation.hpp"
#include "functions.hpp"
#include "movement.hpp"
#include "print.hpp"
#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// Whether T is lt::Tensor<std::complex<R>>.
template <class T>
struct is_complex_tensor : std::false_type {};
template <class R>
struct is_complex_tensor<Tensor<std::complex<R>>> : std::true_type {};
template <class T>
inline constexpr bool is_complex_tensor_v = is_complex_tensor<std::decay_t<T>>::value;

/// A real or std::complex scalar.
template <class S>
inline constexpr bool is_complex_scalar_v = is_complex_element_v<std::decay_t<S>>;

/// The complex dtype whose planes are R.
template <class R>
constexpr DType complex_dtype_of() {
    return std::is_same_v<R, double> ? DType::Complex128 : DType::Complex64;
}

}  // namespace detail

/// A complex tensor: complex64 (R = float) or complex128 (R = double), held as its real and
/// imaginary planes (two lazy or realized Tensor<R> of one shape and device). Build one with
/// lt::complex(re, im), lt::polar, lt::tensor of std::complex values, or lt::fft; read it with
/// real(), imag(), to_vector() or operator<<.
template <class R>
class Tensor<std::complex<R>> {
    static_assert(std::is_same_v<R, float> || std::is_same_v<R, double>,
                  "lazytensor: complex tensors are Tensor<std::complex<float>> (complex64) or Tensor<std::complex<double>> "
                  "(complex128)");

public:
    /// The C++ element type.
    using value_type = std::complex<R>;
    /// The element type of each plane.
    using real_type = R;

    /// An empty handle; give it a value with = before use.
    Tensor() = default;
    /// The tensor re + i im. ShapeError unless the planes have one shape, DeviceError unless
    /// they are on one device (lt::complex broadcasts and converts instead).
    Tensor(Tensor<R> re, Tensor<R> im) : re_(std::move(re)), im_(std::move(im)) {
        if (re_.shape() != im_.shape())
            detail::fail<ShapeError>("complex tensor: the real part has shape ", re_.shape(), " and the imaginary part ",
                                     im_.shape(), "; they must have one shape");
        if (re_.device() != im_.device())
            detail::fail<DeviceError>("complex tensor: the real part is on ", re_.device(), " and the imaginary part on ",
                                      im_.device());
    }

    /// The element type as a runtime tag: DType::Complex64 or DType::Complex128.
    static constexpr DType dtype() { return detail::complex_dtype_of<R>(); }
    /// The extents, outermost first.
    const Shape& shape() const { return re_.shape(); }
    /// The device the value lives (or will be computed) on.
    Device device() const { return re_.device(); }
    /// Number of elements.
    std::int64_t numel() const { return lazytensor::numel(shape()); }
    /// Number of dimensions.
    std::size_t ndim() const { return shape().size(); }
    /// True once both planes have been computed.
    bool is_realized() const { return re_.is_realized() && im_.is_realized(); }

    /// The real plane (a Tensor<R>; lazy or realized as the tensor is).
    const Tensor<R>& real() const { return re_; }
    /// The imaginary plane.
    const Tensor<R>& imag() const { return im_; }
    /// The complex conjugate (re - i im).
    Tensor conj() const { return Tensor(re_, Tensor<R>(-im_)); }
    /// |z|, as std::abs (hypot: no overflow of re^2 + im^2).
    Tensor<R> abs() const { return Tensor<R>(lazytensor::hypot(re_, im_)); }
    /// The argument of z in (-pi, pi], as std::arg (atan2(im, re)).
    Tensor<R> angle() const { return Tensor<R>(lazytensor::atan2(im_, re_)); }

    /// Computes both planes now, in one schedule (what they share is computed once).
    Tensor realize() const {
        lazytensor::realize({re_, im_});
        return *this;
    }
    /// The elements in row-major order; realizes first if needed.
    std::vector<value_type> to_vector() const {
        std::vector<value_type> out(static_cast<std::size_t>(numel()));
        if (pairs_) {  // one read of the interleaved pairs
            Tensor<R>(pairs_).copy_to(reinterpret_cast<R*>(out.data()), 2 * out.size());
            return out;
        }
        realize();
        const std::vector<R> re = re_.to_vector(), im = im_.to_vector();
        for (std::size_t i = 0; i < re.size(); ++i) out[i] = value_type(re[i], im[i]);
        return out;
    }
    /// The single element of a one-element tensor (ValueError otherwise).
    value_type item() const {
        realize();
        return value_type(re_.item(), im_.item());
    }
    /// The value on `device` (realized and copied there now).
    Tensor to(Device device) const {
        realize();
        return Tensor(re_.to(device), im_.to(device));
    }

    ///@{
    /// As Tensor<T>'s members of the same names, applied to both planes (views stay views).
    Tensor reshape(const Shape& s) const { return Tensor(re_.reshape(s), im_.reshape(s)); }
    Tensor permute(const Axes& perm) const { return Tensor(re_.permute(perm), im_.permute(perm)); }
    Tensor transpose(int a, int b) const { return Tensor(re_.transpose(a, b), im_.transpose(a, b)); }
    Tensor expand(const Shape& s) const { return Tensor(re_.expand(s), im_.expand(s)); }
    Tensor mT() const { return Tensor(re_.mT(), im_.mT()); }
    Tensor t() const { return Tensor(re_.t(), im_.t()); }
    Tensor slice(int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop, std::int64_t step = 1) const {
        return Tensor(re_.slice(axis, start, stop, step), im_.slice(axis, start, stop, step));
    }
    Tensor select(int axis, std::int64_t index) const { return Tensor(re_.select(axis, index), im_.select(axis, index)); }
    Tensor index(const std::vector<TensorIndex>& indices) const { return Tensor(re_.index(indices), im_.index(indices)); }
    template <class... I>
    Tensor operator()(const I&... indices) const {
        return index({TensorIndex(indices)...});
    }
    Tensor flip(const Axes& axes) const { return Tensor(re_.flip(axes), im_.flip(axes)); }
    Tensor flip(int axis) const { return flip(Axes{axis}); }
    Tensor squeeze() const { return Tensor(re_.squeeze(), im_.squeeze()); }
    Tensor squeeze(const Axes& axes) const { return Tensor(re_.squeeze(axes), im_.squeeze(axes)); }
    Tensor unsqueeze(int axis) const { return Tensor(re_.unsqueeze(axis), im_.unsqueeze(axis)); }
    Tensor pad(const std::vector<std::pair<std::int64_t, std::int64_t>>& widths, value_type value = value_type(0)) const {
        return Tensor(re_.pad(widths, value.real()), im_.pad(widths, value.imag()));
    }
    ///@}

    ///@{
    /// Sum over all axes or `axes` (each plane's sum).
    Tensor sum() const { return Tensor(Tensor<R>(re_.sum()), Tensor<R>(im_.sum())); }
    Tensor sum(const Axes& axes, bool keepdim = false) const {
        return Tensor(Tensor<R>(re_.sum(axes, keepdim)), Tensor<R>(im_.sum(axes, keepdim)));
    }
    Tensor sum(int axis, bool keepdim = false) const { return sum(Axes{axis}, keepdim); }
    ///@}
    ///@{
    /// Arithmetic mean over all axes or `axes`.
    Tensor mean() const { return Tensor(Tensor<R>(re_.mean()), Tensor<R>(im_.mean())); }
    Tensor mean(const Axes& axes, bool keepdim = false) const {
        return Tensor(Tensor<R>(re_.mean(axes, keepdim)), Tensor<R>(im_.mean(axes, keepdim)));
    }
    Tensor mean(int axis, bool keepdim = false) const { return mean(Axes{axis}, keepdim); }
    ///@}

    /// -z.
    Tensor operator-() const { return Tensor(Tensor<R>(-re_), Tensor<R>(-im_)); }

    /// The values as interleaved (re, im) pairs: a lazy Tensor<R> of shape [..., 2], as
    /// std::complex lies in memory (what the FFT and .npy files read). Free where the tensor
    /// came from such pairs (an FFT's result, a loaded file); else a kernel interleaves them.
    Tensor<R> interleaved() const { return pairs_ ? Tensor<R>(pairs_) : lazytensor::stack({re_, im_}, -1); }
    /// The complex tensor of interleaved pairs ([..., 2]): its planes are views of them.
    /// ShapeError unless the last extent is 2.
    static Tensor from_interleaved(const Tensor<R>& pairs) {
        if (pairs.shape().empty() || pairs.shape().back() != 2)
            detail::fail<ShapeError>("complex tensor from interleaved pairs: the last extent must be 2, got shape ", pairs.shape());
        Tensor z(pairs.select(-1, 0), pairs.select(-1, 1));
        z.pairs_ = pairs.build();
        return z;
    }

private:
    Tensor<R> re_, im_;
    detail::NodePtr pairs_;  // the interleaved pairs the planes view, where they do
};

/// complex64.
using complex64 = std::complex<float>;
/// complex128.
using complex128 = std::complex<double>;

namespace detail {

/// The plane type of a complex result from operands whose planes are A and B (float64 wins).
template <class A, class B>
using complex_plane_t = std::conditional_t<std::is_same_v<A, double> || std::is_same_v<B, double>, double, float>;

/// An operand of complex arithmetic as planes of R: a complex tensor's planes; a real tensor or
/// expression (converted to R) with imaginary part 0; a scalar (real or std::complex).
template <class R, class X>
auto real_plane(const X& x) {
    if constexpr (is_complex_tensor_v<X>) {
        if constexpr (std::is_same_v<typename X::real_type, R>) return x.real();
        else return Tensor<R>(lazytensor::cast<R>(x.real()));
    } else if constexpr (is_complex_scalar_v<X>) {
        return static_cast<R>(x.real());
    } else if constexpr (is_scalar_v<X>) {
        return static_cast<R>(x);
    } else if constexpr (std::is_same_v<typename X::value_type, R>) {
        return Tensor<R>(x);
    } else {
        return Tensor<R>(lazytensor::cast<R>(x));
    }
}
template <class R, class X>
auto imag_plane(const X& x) {
    if constexpr (is_complex_tensor_v<X>) {
        if constexpr (std::is_same_v<typename X::real_type, R>) return x.imag();
        else return Tensor<R>(lazytensor::cast<R>(x.imag()));
    } else if constexpr (is_complex_scalar_v<X>) {
        return static_cast<R>(x.imag());
    } else {
        return R(0);
    }
}

/// The plane type of an operand: a complex tensor's, a real tensor's floating type (float64:
/// double, any other: float), none for a scalar (void).
template <class X, class = void>
struct plane_of {
    using type = void;
};
template <class X>
struct plane_of<X, std::enable_if_t<is_complex_tensor_v<X>>> {
    using type = typename std::decay_t<X>::real_type;
};
template <class X>
struct plane_of<X, std::enable_if_t<is_tensor_like_v<X>>> {
    using type = std::conditional_t<std::is_same_v<typename std::decay_t<X>::value_type, double>, double, float>;
};

/// Whether (A, B) is an operand pair of complex arithmetic: at least one complex tensor, the
/// other a complex or real tensor, expression or scalar.
template <class A, class B>
inline constexpr bool complex_operands_v =
    (is_complex_tensor_v<A> && (is_complex_tensor_v<B> || is_tensor_like_v<B> || is_scalar_v<B> || is_complex_scalar_v<B>)) ||
    (is_complex_tensor_v<B> && (is_tensor_like_v<A> || is_scalar_v<A> || is_complex_scalar_v<A>));

/// The plane type of A op B: the wider of the tensors' planes (a scalar never widens).
template <class A, class B>
struct result_plane {
    using PA = typename plane_of<A>::type;
    using PB = typename plane_of<B>::type;
    using type = std::conditional_t<std::is_void_v<PA>, PB, std::conditional_t<std::is_void_v<PB>, PA, complex_plane_t<PA, PB>>>;
};
template <class A, class B>
using result_plane_t = typename result_plane<A, B>::type;

/// (a + ib) / (c + id) by Smith's method, as NumPy's: the larger of |c|, |d| divides first; a
/// zero divisor gives (a / |c|) + i (b / |d|) (infinities, or NaN for 0 / 0).
template <class R, class A, class B, class C, class D>
Tensor<std::complex<R>> complex_divide(const A& a, const B& b, const C& c, const D& d) {
    const Tensor<R> abs_c = lazytensor::abs(c), abs_d = lazytensor::abs(d);
    const Tensor<bool> c_larger = abs_c >= abs_d, zero = abs_c == R(0) && abs_d == R(0);
    // |c| >= |d|: r = d / c, den = c + d r; re = (a + b r) / den, im = (b - a r) / den.
    const Tensor<R> r1 = d / c, den1 = c + d * r1;
    // |c| < |d|: r = c / d, den = c r + d; re = (a r + b) / den, im = (b r - a) / den.
    const Tensor<R> r2 = c / d, den2 = c * r2 + d;
    return Tensor<std::complex<R>>(
        Tensor<R>(where(zero, a / abs_c, where(c_larger, (a + b * r1) / den1, (a * r2 + b) / den2))),
        Tensor<R>(where(zero, b / abs_d, where(c_larger, (b - a * r1) / den1, (b * r2 - a) / den2))));
}

}  // namespace detail

///@{
/// Complex arithmetic: + - * / between complex tensors, and between a complex tensor and a real
/// tensor, expression or scalar (real or std::complex), broadcasting as real arithmetic does.
/// Lazy: both planes are element-wise expressions of the operands' planes.
template <class A, class B, class = std::enable_if_t<detail::complex_operands_v<A, B>>>
auto operator+(const A& x, const B& y) {
    using R = detail::result_plane_t<A, B>;
    return Tensor<std::complex<R>>(Tensor<R>(detail::real_plane<R>(x) + detail::real_plane<R>(y)),
                                   Tensor<R>(detail::imag_plane<R>(x) + detail::imag_plane<R>(y)));
}
template <class A, class B, class = std::enable_if_t<detail::complex_operands_v<A, B>>>
auto operator-(const A& x, const B& y) {
    using R = detail::result_plane_t<A, B>;
    return Tensor<std::complex<R>>(Tensor<R>(detail::real_plane<R>(x) - detail::real_plane<R>(y)),
                                   Tensor<R>(detail::imag_plane<R>(x) - detail::imag_plane<R>(y)));
}
template <class A, class B, class = std::enable_if_t<detail::complex_operands_v<A, B>>>
auto operator*(const A& x, const B& y) {
    using R = detail::result_plane_t<A, B>;
    // (Four declarations: a plane is a tensor or, for a scalar or a real operand's imaginary
    // part, a number.)
    const auto a = detail::real_plane<R>(x);
    const auto b = detail::imag_plane<R>(x);
    const auto c = detail::real_plane<R>(y);
    const auto d = detail::imag_plane<R>(y);
    return Tensor<std::complex<R>>(Tensor<R>(a * c - b * d), Tensor<R>(a * d + b * c));
}
template <class A, class B, class = std::enable_if_t<detail::complex_operands_v<A, B>>>
auto operator/(const A& x, const B& y) {
    using R = detail::result_plane_t<A, B>;
    const auto a = detail::real_plane<R>(x);
    const auto b = detail::imag_plane<R>(x);
    const auto c = detail::real_plane<R>(y);
    if constexpr (detail::is_complex_tensor_v<B>) {
        return detail::complex_divide<R>(a, b, c, detail::imag_plane<R>(y));
    } else if constexpr (detail::is_complex_scalar_v<B>) {  // its reciprocal, once, in double
        const std::complex<double> inverse = 1.0 / std::complex<double>(y);
        return x * std::complex<R>(static_cast<R>(inverse.real()), static_cast<R>(inverse.imag()));
    } else {  // a real divisor divides each plane
        return Tensor<std::complex<R>>(Tensor<R>(a / c), Tensor<R>(b / c));
    }
}
///@}

/// The complex tensor re + i im from real tensors or expressions (broadcast together): planes
/// of float32 give complex64, of float64 complex128 (float16 computes as float32). DTypeError
/// for integer or bool planes (cast them first), as torch.complex.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
auto complex(const A& re, const B& im) {
    using VA = typename A::value_type;
    using VB = typename B::value_type;
    if constexpr (!detail::is_floating_v<VA> || !detail::is_floating_v<VB>) {
        detail::fail<DTypeError>("lt::complex: the real and imaginary parts must be floating tensors, got ", dtype_of<VA>(),
                                 " and ", dtype_of<VB>(), "; cast them first (lt::cast<float>(x))");
        return Tensor<std::complex<float>>();
    } else {
        using R = detail::complex_plane_t<detail::value_type_t<VA>, detail::value_type_t<VB>>;
        const Tensor<R> r = detail::real_plane<R>(re), i = detail::real_plane<R>(im);
        const Shape shape = detail::broadcast_shapes(r.shape(), i.shape(), "lt::complex");
        return Tensor<std::complex<R>>(r.expand(shape), i.expand(shape));
    }
}

/// x as a complex tensor with imaginary part 0 (float64: complex128; every other dtype
/// complex64).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto complex(const E& x) {
    using R = typename detail::plane_of<E>::type;
    const Tensor<R> r = detail::real_plane<R>(x);
    return Tensor<std::complex<R>>(r, zeros_like(r));
}

/// abs * (cos(angle) + i sin(angle)), as torch.polar (broadcast together; floating tensors).
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
auto polar(const A& abs, const B& angle) {
    return complex(abs * lazytensor::cos(angle), abs * lazytensor::sin(angle));
}

///@{
/// Free forms of the members: real(z), imag(z), conj(z), abs(z), angle(z). On a real tensor:
/// real(x) is x, imag(x) zeros, conj(x) x, angle(x) pi where x < 0 (NaN where x is NaN), else 0.
template <class R>
Tensor<R> real(const Tensor<std::complex<R>>& z) {
    return z.real();
}
template <class R>
Tensor<R> imag(const Tensor<std::complex<R>>& z) {
    return z.imag();
}
template <class R>
Tensor<std::complex<R>> conj(const Tensor<std::complex<R>>& z) {
    return z.conj();
}
template <class R>
Tensor<R> abs(const Tensor<std::complex<R>>& z) {
    return z.abs();
}
template <class R>
Tensor<R> angle(const Tensor<std::complex<R>>& z) {
    return z.angle();
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto real(const E& x) {
    return Tensor<typename E::value_type>(x);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto imag(const E& x) {
    return zeros_like(x);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto conj(const E& x) {
    return Tensor<typename E::value_type>(x);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto angle(const E& x) {
    using T = typename E::value_type;
    using R = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const Tensor<R> v = detail::real_plane<R>(x);
    return Tensor<R>(where(lazytensor::isnan(v), v, where(v < R(0), static_cast<R>(3.14159265358979323846), R(0))));
}
///@}

///@{
/// e^z = e^re (cos im + i sin im); log z = log|z| + i angle(z) (principal branch).
template <class R>
Tensor<std::complex<R>> exp(const Tensor<std::complex<R>>& z) {
    const Tensor<R> m = lazytensor::exp(z.real());
    return Tensor<std::complex<R>>(Tensor<R>(m * lazytensor::cos(z.imag())), Tensor<R>(m * lazytensor::sin(z.imag())));
}
template <class R>
Tensor<std::complex<R>> log(const Tensor<std::complex<R>>& z) {
    return Tensor<std::complex<R>>(Tensor<R>(lazytensor::log(z.abs())), z.angle());
}
///@}

///@{
/// Matrix products with complex operands (as lt::matmul: batches broadcast), four real
/// products of the planes (a real operand: two).
template <class R>
Tensor<std::complex<R>> matmul(const Tensor<std::complex<R>>& x, const Tensor<std::complex<R>>& y) {
    return Tensor<std::complex<R>>(Tensor<R>(lazytensor::matmul(x.real(), y.real()) - lazytensor::matmul(x.imag(), y.imag())),
                                   Tensor<R>(lazytensor::matmul(x.real(), y.imag()) + lazytensor::matmul(x.imag(), y.real())));
}
template <class R>
Tensor<std::complex<R>> matmul(const Tensor<std::complex<R>>& x, const Tensor<R>& y) {
    return Tensor<std::complex<R>>(Tensor<R>(lazytensor::matmul(x.real(), y)), Tensor<R>(lazytensor::matmul(x.imag(), y)));
}
template <class R>
Tensor<std::complex<R>> matmul(const Tensor<R>& x, const Tensor<std::complex<R>>& y) {
    return Tensor<std::complex<R>>(Tensor<R>(lazytensor::matmul(x, y.real())), Tensor<R>(lazytensor::matmul(x, y.imag())));
}
///@}

namespace detail {
/// Uploaded as interleaved pairs (std::complex<R> is an R[2]), which an FFT reads in place.
template <class C>
Tensor<C> complex_from_host(const std::vector<C>& data, Shape shape, Device device) {
    using R = typename C::value_type;
    Shape pairs = shape;
    pairs.push_back(2);
    return Tensor<C>::from_interleaved(from_host<R>(reinterpret_cast<const R*>(data.data()), 2 * numel(shape), pairs, device));
}
}  // namespace detail

namespace detail {
/// PyTorch's text for complex values: "1.5000+2.0000j" in aligned columns.
LAZYTENSOR_ENGINE_API std::string format_complex_tensor(const Node& re, const Node& im, DType dtype,
                                                        const PrintOptions& options);
}  // namespace detail

/// Writes `tensor([a+bj, ...], shape=[...], dtype=complex64, device=...)` as for real tensors
/// (lt::PrintOptions: the real and imaginary parts each formatted as a floating column).
/// Realizes z first.
template <class R>
std::ostream& operator<<(std::ostream& out, const Tensor<std::complex<R>>& z) {
    z.realize();
    return out << detail::format_complex_tensor(*z.real().node_ptr(), *z.imag().node_ptr(), z.dtype(), print_options());
}

}  // namespace lazytensor
