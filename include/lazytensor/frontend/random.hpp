// SPDX-License-Identifier: MIT
// Random tensors from the counter-based Philox 4x32-10 generator (core/philox.hpp): element i
// of a tensor made with seed s is a function of (i, s) alone, so the same seed gives the same
// numbers on every device and thread count, and nothing is stored until the tensor is read.
//
// Two ways to name a stream (docs/random.md):
// - keys (lt::Key, split, fold_in), the recommended way, as in JAX: every draw derives its own
//   64-bit Philox key from (key, the function, the element count) through the Philox block
//   function, so draws of different keys, of different functions (rand and randn) and of
//   different sizes are unrelated streams;
// - seeds (rand(shape, seed), ...), kept bit for bit as they always were: element i is
//   philox(i, seed), so rand({4}, s) is a prefix of rand({8}, s) and rand, randn, randint and
//   dropout of one seed read the same bits.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <ostream>
#include <type_traits>
#include <vector>

#include "../core/philox.hpp"
#include "functions.hpp"
#include "sorting.hpp"
#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// 64 random bits (int64) per element: philox(linear index, seed).
inline NodePtr random_bits(const Shape& shape, std::uint64_t seed, Device device, const char* op) {
    check_extents(shape, op);
    backend_for(device);
    const NodePtr counter = graph::index(shape, contiguous_strides(shape), device);
    return graph::binary(BinaryOp::Philox, counter, Scalar::of<std::int64_t>(static_cast<std::int64_t>(seed)));
}

/// bits >> shift, keeping `width` bits: a non-negative int64 below 2^width.
inline NodePtr bit_field(const NodePtr& bits, int shift, int width) {
    const NodePtr shifted = shift ? graph::binary(BinaryOp::Shr, bits, Scalar::of<std::int64_t>(shift)) : bits;
    return graph::binary(BinaryOp::BitAnd, shifted, Scalar::of<std::int64_t>(static_cast<std::int64_t>((std::uint64_t(1) << width) - 1)));
}

/// Mantissa bits of a floating type: a uniform value with this many random bits is exact.
inline int mantissa_bits(DType t) {
    return t == DType::Float64 ? 53 : t == DType::Float32 ? 24 : t == DType::Float16 ? 11 : 8;  // bfloat16: 8
}

/// A field of `width` bits as a floating value in [0, 1) (or (0, 1] with `open_at_zero`).
inline NodePtr unit_interval(const NodePtr& field, int width, DType t, bool open_at_zero) {
    NodePtr v = open_at_zero ? graph::binary(BinaryOp::Add, field, Scalar::of<std::int64_t>(1)) : field;
    return graph::binary(BinaryOp::Mul, graph::cast(v, t), Scalar::of<double>(std::ldexp(1.0, -width)));
}

}  // namespace detail

/// Uniform random numbers in [0, 1) (float, double, half or bfloat16; every value a multiple of
/// 2^-24, 2^-53, 2^-11 or 2^-8 respectively), bit-identical on every device. Lazy (nothing stored until read).
template <class T>
Tensor<T> rand(const Shape& shape, std::uint64_t seed, Device device = default_device()) {
    static_assert(detail::is_floating_v<T>, "lazytensor: rand<T> needs a floating T (float, double, half, bfloat16)");
    const DType t = dtype_of<T>();
    const int width = detail::mantissa_bits(t);
    const detail::NodePtr bits = detail::random_bits(shape, seed, device, "rand");
    return Tensor<T>(detail::unit_interval(detail::bit_field(bits, 64 - width, width), width, t, false));
}

/// Standard normal random numbers (Box-Muller on two uniforms per element, computed in T; in
/// float for half and bfloat16). The same on every device up to the rounding of log, sqrt and cos. Lazy.
template <class T>
Tensor<T> randn(const Shape& shape, std::uint64_t seed, Device device = default_device()) {
    static_assert(detail::is_floating_v<T>, "lazytensor: randn<T> needs a floating T (float, double, half, bfloat16)");
    namespace g = detail::graph;
    const DType t = dtype_of<T>() == DType::Float64 ? DType::Float64 : DType::Float32;
    const int width = t == DType::Float64 ? 32 : 24;
    const detail::NodePtr bits = detail::random_bits(shape, seed, device, "randn");
    const detail::NodePtr u1 = detail::unit_interval(detail::bit_field(bits, 32, width), width, t, true);  // (0, 1]
    const detail::NodePtr u2 = detail::unit_interval(detail::bit_field(bits, 0, width), width, t, false);  // [0, 1)
    const detail::NodePtr radius =
        g::unary(UnaryOp::Sqrt, g::binary(BinaryOp::Mul, g::unary(UnaryOp::Log, u1), Scalar::of<double>(-2.0)));
    const detail::NodePtr angle = g::binary(BinaryOp::Mul, u2, Scalar::of<double>(6.283185307179586476925));
    return Tensor<T>(g::cast(g::binary(BinaryOp::Mul, radius, g::unary(UnaryOp::Cos, angle)), dtype_of<T>()));
}

/// Uniform random integers in [low, high) (bias below (high - low) / 2^63), bit-identical on
/// every device. Lazy. ValueError if high <= low, the range does not fit T or is wider than 2^63 - 1.
template <class T>
Tensor<T> randint(std::int64_t low, std::int64_t high, const Shape& shape, std::uint64_t seed,
                  Device device = default_device()) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "lazytensor: randint<T> needs an integer T (int8_t to int64_t, uint8_t to uint64_t)");
    if (high <= low) detail::fail<ValueError>("randint: needs low < high, got [", low, ", ", high, ")");
    // Values are low + (63 random bits) mod (high - low): the width must fit in int64.
    if (static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low) > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        detail::fail<ValueError>("randint: [", low, ", ", high, ") is wider than 2^63 - 1 values");
    using L = std::numeric_limits<T>;  // uint64's maximum is no int64: compared as unsigned
    if (low < static_cast<std::int64_t>(L::min()) || (std::is_unsigned_v<T> && low < 0) ||
        (high - 1 >= 0 && static_cast<std::uint64_t>(high - 1) > static_cast<std::uint64_t>(L::max())))
        detail::fail<ValueError>("randint: [", low, ", ", high, ") does not fit ", dtype_of<T>());
    namespace g = detail::graph;
    const detail::NodePtr bits = detail::random_bits(shape, seed, device, "randint");
    const detail::NodePtr r63 = detail::bit_field(bits, 1, 63);
    // (Both operands are non-negative: C's remainder is NumPy's.)
    const detail::NodePtr offset = g::binary(BinaryOp::Fmod, r63, Scalar::of<std::int64_t>(high - low));
    return Tensor<T>(g::cast(g::binary(BinaryOp::Add, offset, Scalar::of<std::int64_t>(low)), dtype_of<T>()));
}

///@{
/// rand and randn of x's shape, dtype and device.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto rand_like(const E& x, std::uint64_t seed) {
    return rand<typename E::value_type>(x.shape(), seed, x.device());
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto randn_like(const E& x, std::uint64_t seed) {
    return randn<typename E::value_type>(x.shape(), seed, x.device());
}
///@}

// ------------------------------------------------------------------------------------ keys

/// A random key (JAX's PRNG key): 64 bits that name a stream of random numbers. Every random
/// function takes one (rand<float>(shape, key), ...); lt::split and lt::fold_in make new
/// keys from it through the Philox block function, so keys are well mixed whatever the seed.
/// A value type: copy it, compare it, print it. Draws of one key are reproducible; use a new
/// key (split) for every independent draw. Key() is Key(0).
class Key {
public:
    /// The key of a seed: any 64-bit value (Key(0), Key(1), ... give unrelated streams).
    constexpr explicit Key(std::uint64_t seed = 0) : value_(seed) {}
    /// The key's 64 bits (Key(k.value()) == k): to store a key or pass it between processes.
    constexpr std::uint64_t value() const { return value_; }
    /// The two 32-bit words of the Philox key, low word first.
    constexpr std::array<std::uint32_t, 2> words() const {
        return {static_cast<std::uint32_t>(value_), static_cast<std::uint32_t>(value_ >> 32)};
    }
    friend constexpr bool operator==(Key a, Key b) { return a.value_ == b.value_; }
    friend constexpr bool operator!=(Key a, Key b) { return a.value_ != b.value_; }
    /// An order by value, for std::map and sorting (it means nothing about the streams).
    friend constexpr bool operator<(Key a, Key b) { return a.value_ < b.value_; }
    friend constexpr bool operator<=(Key a, Key b) { return a.value_ <= b.value_; }
    friend constexpr bool operator>(Key a, Key b) { return a.value_ > b.value_; }
    friend constexpr bool operator>=(Key a, Key b) { return a.value_ >= b.value_; }

private:
    std::uint64_t value_;
};

/// Prints a key as `Key(0x0123456789abcdef)` (its 64 bits in hexadecimal).
inline std::ostream& operator<<(std::ostream& out, Key key) {
    char text[32];
    std::snprintf(text, sizeof text, "Key(0x%016llx)", static_cast<unsigned long long>(key.value()));
    return out << text;
}

namespace detail {

// The counter words c3 of the key derivations (core/philox.hpp, philox_derive): "SPLT",
// "FOLD" and "DRAW" in ASCII. Each is nonzero, so no derived key is a word of a seed's draws.
inline constexpr std::uint32_t kKeySplit = 0x53504C54u, kKeyFold = 0x464F4C44u, kKeyDraw = 0x44524157u;

/// What a key is drawn for: the counter word c2 of a draw's key, so that rand and randn (and
/// every other function) of one key read unrelated bits. rand and uniform share Uniform,
/// randn and normal share Normal (uniform and normal are rand and randn moved and scaled).
enum class RandomUse : std::uint32_t {
    Uniform = 1,
    Normal = 2,
    Integers = 3,
    Bernoulli = 4,
    Permutation = 5,
    Multinomial = 6,          // with replacement: one uniform per sample
    MultinomialDistinct = 7,  // without: one per category
    Dropout = 8,
};

/// The Philox key of a draw of `count` elements for `use` from `key`: the seed whose stream
/// (philox(i, seed), as with seeds) the draw reads. Folding the count in makes draws of
/// different sizes unrelated (rand({4}, k) is no prefix of rand({8}, k)); shapes of one size
/// read the same stream (rand({2, 4}, k) is rand({8}, k) reshaped).
inline std::uint64_t draw_seed(Key key, RandomUse use, std::int64_t count) {
    return philox_derive(key.value(), static_cast<std::uint64_t>(count), static_cast<std::uint32_t>(use), kKeyDraw);
}

/// draw_seed for a tensor of `shape` (ShapeError for a negative extent, naming `op`).
inline std::uint64_t draw_seed(Key key, RandomUse use, const Shape& shape, const char* op) {
    check_extents(shape, op);
    return draw_seed(key, use, numel(shape));
}

}  // namespace detail

/// `n` new keys from `key` (a std::vector): child i is the Philox block of the counter
/// (i, "SPLT") under `key`, so children are unrelated to each other, to `key` and to every
/// draw made with `key`, and split(key, n) begins with split(key, m) for m < n. Use each child
/// once and stop using `key`. ValueError if n < 0.
inline std::vector<Key> split(Key key, std::int64_t n) {
    if (n < 0) detail::fail<ValueError>("split: the number of keys must be >= 0, got ", n);
    std::vector<Key> keys;
    keys.reserve(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i)
        keys.emplace_back(detail::philox_derive(key.value(), static_cast<std::uint64_t>(i), 0, detail::kKeySplit));
    return keys;
}

/// Two new keys from `key`: auto [k1, k2] = lt::split(key). The same as split(key, 2).
inline std::array<Key, 2> split(Key key) {
    const std::vector<Key> two = split(key, 2);
    return {two[0], two[1]};
}

/// A new key from `key` and 64 bits of data (a step number, a layer index, a process rank):
/// the Philox block of the counter (data, "FOLD") under `key`. Different data give unrelated
/// keys, unrelated to those of split(key, n) too (distinct counters).
inline Key fold_in(Key key, std::uint64_t data) { return Key(detail::philox_derive(key.value(), data, 0, detail::kKeyFold)); }

/// Uniform random numbers in [0, 1) from a key (float, double, half or bfloat16, every value a
/// multiple of 2^-24, 2^-53, 2^-11 or 2^-8), bit-identical on every device and thread count. The numbers
/// depend on the key and the element count: shapes of one size give the same numbers in
/// row-major order, different sizes unrelated ones. Lazy. ShapeError for a negative extent.
template <class T>
Tensor<T> rand(const Shape& shape, Key key, Device device = default_device()) {
    return rand<T>(shape, detail::draw_seed(key, detail::RandomUse::Uniform, shape, "rand"), device);
}

/// Standard normal random numbers from a key (Box-Muller, as randn with a seed, on bits
/// unrelated to rand's of the same key). The same on every device up to the rounding of log,
/// sqrt and cos. Lazy. ShapeError for a negative extent.
template <class T>
Tensor<T> randn(const Shape& shape, Key key, Device device = default_device()) {
    return randn<T>(shape, detail::draw_seed(key, detail::RandomUse::Normal, shape, "randn"), device);
}

/// Uniform random integers in [low, high) from a key (as randint with a seed, on bits of its
/// own). Bit-identical on every device. Lazy. ValueError if high <= low, the range does not
/// fit T or is wider than 2^63 - 1.
template <class T>
Tensor<T> randint(std::int64_t low, std::int64_t high, const Shape& shape, Key key, Device device = default_device()) {
    return randint<T>(low, high, shape, detail::draw_seed(key, detail::RandomUse::Integers, shape, "randint"), device);
}

/// rand and randn of x's shape, dtype and device, from a key.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto rand_like(const E& x, Key key) {
    return rand<typename E::value_type>(x.shape(), key, x.device());
}
/// randn of x's shape, dtype and device, from a key.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto randn_like(const E& x, Key key) {
    return randn<typename E::value_type>(x.shape(), key, x.device());
}

/// Normal random numbers with mean `mean` and standard deviation `std`: randn(shape, key) *
/// std + mean, computed in T (in float for half and bfloat16). Lazy. ValueError unless mean is finite and
/// std finite and >= 0 (std = 0 gives `mean` everywhere), both within T's range.
template <class T>
Tensor<T> normal(const Shape& shape, double mean, double std, Key key, Device device = default_device()) {
    static_assert(detail::is_floating_v<T>, "lazytensor: normal<T> needs a floating T (float, double, half, bfloat16)");
    if (!std::isfinite(mean)) detail::fail<ValueError>("normal: mean must be finite, got ", mean);
    if (!(std >= 0) || !std::isfinite(std)) detail::fail<ValueError>("normal: std must be finite and >= 0, got ", std);
    const double largest = static_cast<double>(std::numeric_limits<T>::max());
    if (std::fabs(mean) > largest || std > largest)
        detail::fail<ValueError>("normal: mean = ", mean, " and std = ", std, " must be within the range of ", dtype_of<T>());
    namespace g = detail::graph;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const detail::NodePtr z = randn<C>(shape, key, device).build();
    const detail::NodePtr v = g::binary(BinaryOp::Add, g::binary(BinaryOp::Mul, z, Scalar::of<double>(std)), Scalar::of<double>(mean));
    return Tensor<T>(g::cast(v, dtype_of<T>()));
}

/// Uniform random numbers in [low, high): rand(shape, key) * (high - low) + low, computed in T
/// (in float for half and bfloat16); a value that rounds up to `high` is `low` instead (as PyTorch does), so
/// `high` never occurs. Lazy. ValueError unless low and high are finite, low <= high (low ==
/// high gives `low`), and low, high and high - low are within T's range.
template <class T>
Tensor<T> uniform(const Shape& shape, double low, double high, Key key, Device device = default_device()) {
    static_assert(detail::is_floating_v<T>, "lazytensor: uniform<T> needs a floating T (float, double, half, bfloat16)");
    if (!std::isfinite(low) || !std::isfinite(high) || !(low <= high))
        detail::fail<ValueError>("uniform: needs finite low <= high, got [", low, ", ", high, ")");
    if (!(high - low <= static_cast<double>(std::numeric_limits<T>::max())))
        detail::fail<ValueError>("uniform: the width high - low = ", high - low, " of [", low, ", ", high, ") overflows ",
                                 dtype_of<T>());
    const double largest = static_cast<double>(std::numeric_limits<T>::max());
    if (std::fabs(low) > largest || std::fabs(high) > largest)
        detail::fail<ValueError>("uniform: [", low, ", ", high, ") is outside the range of ", dtype_of<T>());
    namespace g = detail::graph;
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    // rand<T>'s values, computed in C and rounded to T before the comparison (the rounding to
    // T is what can reach `high`).
    const detail::NodePtr u = g::cast(rand<T>(shape, key, device).build(), dtype_of<C>());
    const detail::NodePtr v = g::cast(
        g::binary(BinaryOp::Add, g::binary(BinaryOp::Mul, u, Scalar::of<double>(high - low)), Scalar::of<double>(low)), dtype_of<T>());
    const detail::NodePtr below = g::binary(BinaryOp::Lt, v, Scalar::of<double>(high));
    return Tensor<T>(g::where(below, v, Scalar::of<double>(low).cast(dtype_of<T>())));
}

/// True with probability p[i] at every element of p (a floating tensor of probabilities; the
/// result has its shape and device): rand(p.shape(), key) < p, drawn in double for double p
/// and in float (2^-24 steps) otherwise. Lazy, so p is not read to check it: p <= 0 (and NaN)
/// gives false, p >= 1 true.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<bool> bernoulli(const E& p, Key key) {
    using T = typename E::value_type;
    static_assert(detail::is_floating_v<T>, "lazytensor: bernoulli needs a floating tensor of probabilities");
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    namespace g = detail::graph;
    const detail::NodePtr probs = p.build();
    const detail::NodePtr u = rand<C>(probs->shape, detail::draw_seed(key, detail::RandomUse::Bernoulli, probs->shape, "bernoulli"),
                                      probs->device).build();
    return Tensor<bool>(g::binary(BinaryOp::Lt, u, g::cast(probs, dtype_of<C>())));
}

/// A bool tensor of `shape`, each element true with probability p: rand<double>(shape) < p of
/// the Bernoulli stream (2^-53 steps), computed in integers (the top 53 bits below
/// ceil(p * 2^53)), so also where the device has no float64. Lazy. ValueError unless 0 <= p <= 1.
inline Tensor<bool> bernoulli(double p, const Shape& shape, Key key, Device device = default_device()) {
    if (!(p >= 0 && p <= 1)) detail::fail<ValueError>("bernoulli: p must be in [0, 1], got ", p);
    const std::uint64_t seed = detail::draw_seed(key, detail::RandomUse::Bernoulli, shape, "bernoulli");
    const detail::NodePtr top53 = detail::bit_field(detail::random_bits(shape, seed, device, "bernoulli"), 11, 53);
    const auto below = static_cast<std::int64_t>(std::ceil(std::ldexp(p, 53)));  // u < p <=> u * 2^53 < ceil(p * 2^53)
    return Tensor<bool>(detail::graph::binary(BinaryOp::Lt, top53, Scalar::of<std::int64_t>(below)));
}

/// A random permutation of 0, 1, ..., n - 1 (int64), every order equally likely: the positions
/// that sort n random 63-bit integers (lt::argsort, stable, so the rare equal pair keeps a
/// fixed order). The same on every device. Lazy. ValueError if n < 0.
inline Tensor<std::int64_t> permutation(std::int64_t n, Key key, Device device = default_device()) {
    if (n < 0) detail::fail<ValueError>("permutation: n must be >= 0, got ", n);
    const Shape shape{n};
    const detail::NodePtr bits =
        detail::random_bits(shape, detail::draw_seed(key, detail::RandomUse::Permutation, shape, "permutation"), device, "permutation");
    return argsort(Tensor<std::int64_t>(detail::bit_field(bits, 1, 63)));
}

/// x shuffled along `axis` (JAX's permutation(key, x)): its slices along the axis in the order
/// permutation(n, key), n the axis' extent, gathered lazily (differentiable, like any gather).
/// AxisError for a bad axis (a 0-d x has none).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<typename E::value_type> permutation(const E& x, Key key, int axis = 0) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const int a = normalize_axis(axis, t.shape().size(), "permutation", t.shape());
    const std::int64_t n = t.shape()[static_cast<std::size_t>(a)];
    Shape along(t.shape().size(), 1);
    along[static_cast<std::size_t>(a)] = n;
    const Tensor<std::int64_t> order = permutation(n, key, t.device()).reshape(along).expand(t.shape());
    return Tensor<T>(detail::graph::gather(t.build(), a, order.build()));
}

/// Samples of categories (torch.multinomial): probs is 1-d [categories] or 2-d [rows,
/// categories] of floating weights (non-negative, need not sum to 1); the result is int64
/// [num_samples] or [rows, num_samples], the categories drawn from each row. With
/// replacement, sample j of a row is the first category whose running sum of weights exceeds
/// u_j * (the row's sum), u_j uniform in [0, 1) (inverse CDF on cumsum); without, the
/// num_samples categories with the largest log(p) + Gumbel noise in order (lt::topk), so a row's
/// samples are distinct and come in the order sequential drawing without replacement would
/// give them. Computed in double for double probs, else in float. Lazy, so the weights are not
/// read to check them: a row with a negative, infinite or NaN weight, a zero sum, a sum that
/// overflows, or (without replacement) fewer positive weights than num_samples gives
/// unspecified categories (those of zero weight then come last, in index order). ShapeError unless probs
/// is 1-d or 2-d; ValueError if it has no categories, num_samples < 0, or num_samples is more
/// than the categories without replacement.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<std::int64_t> multinomial(const E& probs, std::int64_t num_samples, bool replacement, Key key) {
    using T = typename E::value_type;
    static_assert(detail::is_floating_v<T>, "lazytensor: multinomial needs a floating tensor of probabilities");
    using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const Tensor<T> p(probs);
    const Shape& shape = p.shape();
    if (shape.size() != 1 && shape.size() != 2)
        detail::fail<ShapeError>("multinomial: probs must be 1-d [categories] or 2-d [rows, categories], got shape ", shape);
    const std::int64_t k = shape.back(), rows = shape.size() == 2 ? shape[0] : 1;
    if (k == 0) detail::fail<ValueError>("multinomial: probs of shape ", shape, " has no categories");
    if (num_samples < 0) detail::fail<ValueError>("multinomial: num_samples must be >= 0, got ", num_samples);
    if (!replacement && num_samples > k)
        detail::fail<ValueError>("multinomial: num_samples = ", num_samples, " is more than the ", k,
                                 " categories of probs (shape ", shape, "); without replacement each is drawn at most once");
    const Device device = p.device();
    const Tensor<C> w = lazytensor::cast<C>(p).reshape({rows, k});
    Tensor<std::int64_t> out;
    if (replacement) {
        const Shape draw{rows, num_samples};
        const Tensor<C> cdf = w.cumsum(1);
        const Tensor<C> u = rand<C>(draw, detail::draw_seed(key, detail::RandomUse::Multinomial, draw, "multinomial"), device) *
                            cdf.slice(1, k - 1, k);
        // The category of u is the number of running sums at or below it (the last one left
        // out: u is below the total). Rounding can still carry u past the last category of
        // positive weight, so the result is held at that category.
        const Tensor<std::int64_t> count = (cdf.slice(1, 0, k - 1).unsqueeze(1) <= u.unsqueeze(2)).sum(Axes{2});
        const Tensor<std::int64_t> last_positive =
            where(w > C(0), arange<std::int64_t>(k, device), std::int64_t(0)).max(1, true);
        out = minimum(count, last_positive);
    } else {
        const Shape draw{rows, k};
        const std::uint64_t seed = detail::draw_seed(key, detail::RandomUse::MultinomialDistinct, draw, "multinomial");
        // -log(u) with u in (0, 1] is exponential; log(w) - log(-log(u)) is log(w) plus Gumbel
        // noise. Zero (and NaN) weights get -inf and come last.
        const Tensor<C> u = C(1) - rand<C>(draw, seed, device);
        const Tensor<C> score = where(w > C(0), lazytensor::log(w) - lazytensor::log(-lazytensor::log(u)), -std::numeric_limits<C>::infinity());
        out = topk(score, num_samples, 1, true).indices;
    }
    return shape.size() == 1 ? out.reshape({num_samples}) : out;
}

}  // namespace lazytensor

namespace std {
/// Keys hash by value (std::unordered_map<lt::Key, ...>).
template <>
struct hash<lazytensor::Key> {
    std::size_t operator()(lazytensor::Key key) const noexcept { return std::hash<std::uint64_t>()(key.value()); }
};
}  // namespace std
