// SPDX-License-Identifier: MIT
// Tensor<T>: a cheap shared handle to a lazy graph node, and TensorBase, the member API that
// tensors and expressions share (shape, reductions, views, realize, to_vector, item, cast).
#pragma once

#include <algorithm>
#include <complex>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "../ir/graph.hpp"
#include "../runtime/seam.hpp"

namespace lazytensor {

template <class T>
class Tensor;

namespace detail {

/// Base of everything that is a tensor value: Tensor<T> and the expression types.
struct TensorTag {};

template <class E>
inline constexpr bool is_tensor_like_v = std::is_base_of_v<TensorTag, std::decay_t<E>>;

/// Whether T is std::complex<float> or std::complex<double> (the element of a complex tensor,
/// frontend/complex.hpp).
template <class T>
struct is_complex_element : std::false_type {};
template <class R>
struct is_complex_element<std::complex<R>> : std::true_type {};
template <class T>
inline constexpr bool is_complex_element_v = is_complex_element<T>::value;

/// C++ arithmetic types (and half, bfloat16) usable as scalars next to tensors.
template <class S>
inline constexpr bool is_scalar_v = std::is_arithmetic_v<std::decay_t<S>> || is_reduced_float_v<std::decay_t<S>>;

/// A value that converts to an int axis without meaning one (max(x, 0.5f) would reduce along
/// axis 0, sum(x, true) along axis 1): every reduction and scan rejects it at compile time,
/// members (LAZYTENSOR_MEMBER_AXIS_GUARD) and free forms (LAZYTENSOR_FREE_AXIS_GUARD) alike.
template <class V>
inline constexpr bool is_non_axis_scalar_v =
    is_scalar_v<V> && (!std::is_integral_v<std::decay_t<V>> || std::is_same_v<std::decay_t<V>, bool>);
#define LAZYTENSOR_AXIS_MESSAGE(fn)                                                                           \
    "lazytensor: " #fn "(x, v) takes an integer axis (or a list of axes), not a floating or bool value; for " \
    "the element-wise maximum or minimum with a scalar use lt::maximum(x, v) or lt::minimum(x, v)"
#define LAZYTENSOR_MEMBER_AXIS_GUARD(fn)                                                 \
    template <class V, class = std::enable_if_t<detail::is_non_axis_scalar_v<V>>>       \
    void fn(V, bool = false, int = 1) const {                                            \
        static_assert(!std::is_same_v<V, V>, LAZYTENSOR_AXIS_MESSAGE(fn));               \
    }
#define LAZYTENSOR_FREE_AXIS_GUARD(fn)                                                                     \
    template <class E, class V,                                                                           \
              class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_non_axis_scalar_v<V>>>  \
    void fn(const E&, V, bool = false, int = 1) {                                                          \
        static_assert(!std::is_same_v<V, V>, LAZYTENSOR_AXIS_MESSAGE(fn));                                 \
    }

/// The dtype a C++ scalar contributes to promotion (only its category matters).
template <class S>
constexpr DType scalar_dtype() {
    if constexpr (std::is_same_v<S, bool>) return DType::Bool;
    else if constexpr (is_floating_v<S>) return DType::Float64;
    else return DType::Int64;
}

template <class S>
Scalar make_scalar(S value) {
    if constexpr (std::is_same_v<S, bool>) return Scalar::of<bool>(value);
    else if constexpr (is_floating_v<S>) return Scalar::of<double>(static_cast<double>(value));
    // unsigned 64-bit values keep their value past INT64_MAX (a uint64 scalar)
    else if constexpr (std::is_unsigned_v<S> && sizeof(S) == 8) return Scalar::of<std::uint64_t>(static_cast<std::uint64_t>(value));
    else return Scalar::of<std::int64_t>(static_cast<std::int64_t>(value));
}

/// Result element type of a reduction (graph::reduce_dtype): sums and products of bool and
/// integers are int64, except uint64's, which stay uint64.
template <ReduceOp Op, class T>
using reduce_t = std::conditional_t<(Op == ReduceOp::Sum || Op == ReduceOp::Prod) && !is_floating_v<T> &&
                                        !std::is_same_v<T, std::uint64_t>,
                                    std::int64_t, T>;
template <class T>
using mean_t = std::conditional_t<is_floating_v<T>, T, float>;

}  // namespace detail

/// As a bound of a Slice: absent (the default). As an index: a new axis of extent 1 (NumPy's
/// None, np.newaxis; lt::NewAxis is the same value).
struct NoneIndex {};
/// An absent Slice bound, or a new axis (NumPy's None).
inline constexpr NoneIndex None{};
/// A new axis of extent 1 (NumPy's np.newaxis): the same value as lt::None.
inline constexpr NoneIndex NewAxis{};
/// As an index: as many full slices as the other indices leave axes (NumPy's `...`).
struct EllipsisIndex {};
/// NumPy's `...` in x.index({...}).
inline constexpr EllipsisIndex Ellipsis{};

/// start:stop:step along one axis (Python's rules: negative bounds count from the end, bounds are
/// clipped, a negative step walks backwards, lt::None for a default): lt::Slice(1, 3),
/// lt::Slice(lt::None, lt::None, 2), lt::Slice() for `:`. A view.
struct Slice {
    /// A bound: an integer or lt::None.
    struct Bound {
        std::optional<std::int64_t> value;  ///< empty: absent
        /// An absent bound.
        Bound(NoneIndex) {}
        /// An integer bound (negative: from the end).
        template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
        Bound(I v) : value(static_cast<std::int64_t>(v)) {}
    };
    /// start:stop:step; each an integer or lt::None (absent).
    Slice(Bound start = None, Bound stop = None, Bound step = None)
        : start(start.value), stop(stop.value), step(step.value) {}
    std::optional<std::int64_t> start;  ///< the first index (absent: the start, or the end for a negative step)
    std::optional<std::int64_t> stop;   ///< one past the last (absent: the end, or before the start)
    std::optional<std::int64_t> step;   ///< absent: 1
};

/// One entry of x.index({...}): an integer (drops its axis), a Slice, lt::Ellipsis, lt::NewAxis
/// (lt::None), an integer tensor (advanced indexing: a gather) or a bool tensor (a mask).
class TensorIndex {
public:
    /// Which of the forms it is.
    enum class Kind { Integer, Slice, Ellipsis, NewAxis, Tensor };
    /// An integer: selects one position and drops the axis (negative: from the end).
    template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
    TensorIndex(I i) : kind_(Kind::Integer), integer_(static_cast<std::int64_t>(i)) {}
    /// NumPy's x[True] is not supported: index with a bool tensor of the axes' shape.
    TensorIndex(bool) = delete;
    /// A slice: a view of part of the axis.
    TensorIndex(lazytensor::Slice s) : kind_(Kind::Slice), slice_(s) {}
    /// lt::NewAxis (lt::None): a new axis of extent 1.
    TensorIndex(NoneIndex) : kind_(Kind::NewAxis) {}
    /// lt::Ellipsis: the axes no other index takes.
    TensorIndex(EllipsisIndex) : kind_(Kind::Ellipsis) {}
    /// An integer tensor (positions along an axis) or a bool tensor (a mask over as many axes).
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
    TensorIndex(const E& t) : kind_(Kind::Tensor), tensor_(t.build()) {}

    /// Which form it is.
    Kind kind() const { return kind_; }
    /// The integer (Kind::Integer).
    std::int64_t integer() const { return integer_; }
    /// The slice (Kind::Slice).
    const lazytensor::Slice& slice() const { return slice_; }
    /// The index tensor's node (Kind::Tensor; library internals).
    const detail::NodePtr& tensor() const { return tensor_; }

private:
    Kind kind_;
    std::int64_t integer_ = 0;
    lazytensor::Slice slice_;
    detail::NodePtr tensor_;
};

/// The member API shared by Tensor<T> and every expression whose element type is T. Unless
/// said otherwise, methods returning a Tensor build a lazy value (nothing runs) and check
/// shapes and axes at once.
template <class T, class Derived>
class TensorBase : public detail::TensorTag {
public:
    /// The C++ element type.
    using value_type = T;

    /// The element type as a runtime tag.
    static constexpr DType dtype() { return dtype_of<T>(); }
    /// Number of elements.
    std::int64_t numel() const { return lazytensor::numel(self().shape()); }
    /// Number of dimensions (0 for a scalar tensor).
    std::size_t ndim() const { return self().shape().size(); }

    /// Computes the value (and everything it needs) now, on the tensor's device.
    Tensor<T> realize() const;
    /// The elements in row-major order; realizes first if needed.
    std::vector<T> to_vector() const;
    /// The single element of a one-element tensor (ValueError otherwise); realizes first if needed.
    T item() const;
    /// Copies the elements, row-major, into dst[0], ..., dst[count - 1] (realizes first if
    /// needed): straight from the tensor's memory on the host, and on any device when the
    /// tensor is row-major in its memory; a strided view on another device goes through a host
    /// copy of the memory it spans. ShapeError unless count is numel().
    void copy_to(T* dst, std::size_t count) const;
    /// The value on `device` (realized, read back through host memory and copied there now).
    /// On the tensor's own device, the tensor itself. DeviceError if `device` is unavailable.
    Tensor<T> to(Device device) const;

    /// Sum over all axes, or over `axes` (negative axes count from the end; keepdim keeps them
    /// with extent 1; an empty list is all axes, as for every reduction). Integers and bool give
    /// int64; 0 over an empty axis. AxisError for a bad axis.
    Tensor<detail::reduce_t<ReduceOp::Sum, T>> sum() const;
    /// \overload
    Tensor<detail::reduce_t<ReduceOp::Sum, T>> sum(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<detail::reduce_t<ReduceOp::Sum, T>> sum(int axis, bool keepdim = false) const { return sum(Axes{axis}, keepdim); }
    /// Largest element over all axes, or over `axes`; NaN if any is NaN. ValueError over an empty axis.
    Tensor<T> max() const;
    /// \overload
    Tensor<T> max(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<T> max(int axis, bool keepdim = false) const { return max(Axes{axis}, keepdim); }
    /// Smallest element over all axes, or over `axes`; NaN if any is NaN. ValueError over an empty axis.
    Tensor<T> min() const;
    /// \overload
    Tensor<T> min(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<T> min(int axis, bool keepdim = false) const { return min(Axes{axis}, keepdim); }
    /// Product over all axes, or over `axes` (1 over an empty axis; integers and bool give int64).
    Tensor<detail::reduce_t<ReduceOp::Prod, T>> prod() const;
    /// \overload
    Tensor<detail::reduce_t<ReduceOp::Prod, T>> prod(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<detail::reduce_t<ReduceOp::Prod, T>> prod(int axis, bool keepdim = false) const { return prod(Axes{axis}, keepdim); }
    /// Whether any element is non-zero (NaN counts), over all axes or `axes`; false over an empty axis.
    Tensor<bool> any() const;
    /// \overload
    Tensor<bool> any(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<bool> any(int axis, bool keepdim = false) const;
    /// Whether every element is non-zero (NaN counts), over all axes or `axes`; true over an empty axis.
    Tensor<bool> all() const;
    /// \overload
    Tensor<bool> all(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<bool> all(int axis, bool keepdim = false) const;
    /// Arithmetic mean over all axes or `axes` (integers and bool are averaged in float32).
    Tensor<detail::mean_t<T>> mean() const;
    /// \overload
    Tensor<detail::mean_t<T>> mean(const Axes& axes, bool keepdim = false) const;
    /// \overload
    Tensor<detail::mean_t<T>> mean(int axis, bool keepdim = false) const { return mean(Axes{axis}, keepdim); }

    /// The same elements in another shape; one extent may be -1. Zero-copy when the layout allows.
    /// ShapeError if the element counts differ.
    Tensor<T> reshape(const Shape& shape) const;
    /// Reorders the axes: result axis i is input axis perm[i]. AxisError unless perm is a
    /// permutation of the axes. A view.
    Tensor<T> permute(const Axes& perm) const;
    /// Swaps two axes (AxisError if out of range). A view.
    Tensor<T> transpose(int a, int b) const;
    /// Broadcasts to a larger shape (NumPy rules; -1 keeps an extent). Never copies. ShapeError
    /// if a non-1 extent would change or `shape` has fewer axes.
    Tensor<T> expand(const Shape& shape) const;
    /// The last two axes swapped: every matrix of a batch transposed (PyTorch's .mT). Never
    /// copies; a matrix product reads it in place. AxisError for fewer than 2 dimensions.
    Tensor<T> mT() const;
    /// The transpose of a matrix; 0-d and 1-d tensors are returned as they are (PyTorch's .t()).
    /// AxisError for more than 2 dimensions.
    Tensor<T> t() const;

    /// x[start:stop:step] along `axis` (Python's rules: negative indices count from the end,
    /// bounds are clipped, a negative step walks backwards; `{}` for a default bound). A view.
    /// ValueError for step 0.
    Tensor<T> slice(int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                    std::int64_t step = 1) const;
    /// The element at `index` along `axis`, with that axis removed (negative counts from the end).
    /// IndexError if `index` is out of range.
    Tensor<T> select(int axis, std::int64_t index) const;
    /// x[indices] with NumPy's rules, in PyTorch's C++ spelling: x.index({lt::Slice(1, 3),
    /// lt::Ellipsis, 0}). Integers drop their axis, Slices and lt::NewAxis make views (no copy);
    /// integer tensors index several axes at once (advanced indexing: their shapes broadcast, and
    /// the result's axes come where NumPy puts them), and bool tensors are masks over as many axes
    /// as they have: both gather, lazily. Index tensors are realized now to check them (IndexError
    /// naming the axis, the index and the extent); a mask's true count sets the result's shape,
    /// so a mask is realized as well. Negative indices count from the end.
    Tensor<T> index(const std::vector<TensorIndex>& indices) const;
    /// x(i, j, ...): x.index({i, j, ...}).
    template <class... I>
    Tensor<T> operator()(const I&... indices) const {
        return index(std::vector<TensorIndex>{TensorIndex(indices)...});
    }
    /// The elements in reverse order along `axes`. A view. AxisError for a bad or repeated axis.
    Tensor<T> flip(const Axes& axes) const;
    /// \overload
    Tensor<T> flip(int axis) const { return flip(Axes{axis}); }
    /// Sliding windows along `axis` (PyTorch's Tensor.unfold): the axis becomes the number of
    /// windows, (extent - size) / step + 1, and a new last axis of `size` walks each window. A
    /// view (windows may overlap; such a view cannot be assigned into). ShapeError when `size`
    /// exceeds the extent; ValueError for a size or step below 1.
    Tensor<T> unfold(int axis, std::int64_t size, std::int64_t step) const;
    /// Surrounded by `value`: widths[k] = {before, after} elements along axis k (NumPy's pad,
    /// constant mode). Fused into the kernel that reads it; padding positions read no memory.
    /// ShapeError unless there is one pair per axis; ValueError for a negative width.
    Tensor<T> pad(const std::vector<std::pair<std::int64_t, std::int64_t>>& widths, T value = T(0)) const;
    /// Without the extent-1 axes (all of them, or those in `axes`, which must have extent 1:
    /// ShapeError otherwise).
    Tensor<T> squeeze() const;
    /// \overload
    Tensor<T> squeeze(const Axes& axes) const;
    /// With a new extent-1 axis at position `axis` of the result (negative counts from the end).
    Tensor<T> unsqueeze(int axis) const;
    /// Axes start..end (inclusive) merged into one; a 0-d tensor becomes shape [1]. AxisError
    /// if start comes after end.
    Tensor<T> flatten(int start = 0, int end = -1) const;
    /// The tensor repeated reps[k] times along axis k (NumPy's tile; PyTorch's repeat). When reps
    /// has more entries than the tensor has axes, leading axes are added. ValueError for a
    /// negative count.
    Tensor<T> tile(const Shape& reps) const;
    /// PyTorch's Tensor.repeat: the same as tile.
    Tensor<T> repeat(const Shape& reps) const { return tile(reps); }
    /// Each element repeated `repeats` times along `axis` (NumPy's repeat, PyTorch's repeat_interleave).
    /// ValueError for a negative count.
    Tensor<T> repeat_interleave(std::int64_t repeats, int axis) const;

    /// Variance over `axes` (all when empty), divided by N - correction (1: the unbiased
    /// estimate, PyTorch's default; 0: NumPy's default). Integers compute in float32.
    Tensor<detail::mean_t<T>> var(const Axes& axes = {}, bool keepdim = false, int correction = 1) const;
    /// \overload
    Tensor<detail::mean_t<T>> var(int axis, bool keepdim = false, int correction = 1) const {
        return var(Axes{axis}, keepdim, correction);
    }
    /// Standard deviation: sqrt(var(axes, keepdim, correction)).
    Tensor<detail::mean_t<T>> std(const Axes& axes = {}, bool keepdim = false, int correction = 1) const;
    /// \overload
    Tensor<detail::mean_t<T>> std(int axis, bool keepdim = false, int correction = 1) const {
        return std(Axes{axis}, keepdim, correction);
    }
    /// The position (int64) of the largest element along `axis`: the first on ties and the
    /// first NaN if there is one (NumPy's argmax). One kernel. ValueError over an empty axis.
    Tensor<std::int64_t> argmax(int axis, bool keepdim = false) const;
    /// The position of the smallest element along `axis` (first on ties, first NaN).
    /// ValueError over an empty axis.
    Tensor<std::int64_t> argmin(int axis, bool keepdim = false) const;
    /// Running sum along `axis`, same shape (integers and bool accumulate in int64, as sum does).
    /// AxisError for a 0-d tensor.
    Tensor<detail::reduce_t<ReduceOp::Sum, T>> cumsum(int axis) const;
    /// Running product along `axis`, same shape (integers and bool accumulate in int64).
    Tensor<detail::reduce_t<ReduceOp::Prod, T>> cumprod(int axis) const;
    LAZYTENSOR_MEMBER_AXIS_GUARD(sum)
    LAZYTENSOR_MEMBER_AXIS_GUARD(max)
    LAZYTENSOR_MEMBER_AXIS_GUARD(min)
    LAZYTENSOR_MEMBER_AXIS_GUARD(prod)
    LAZYTENSOR_MEMBER_AXIS_GUARD(any)
    LAZYTENSOR_MEMBER_AXIS_GUARD(all)
    LAZYTENSOR_MEMBER_AXIS_GUARD(mean)
    LAZYTENSOR_MEMBER_AXIS_GUARD(var)
    LAZYTENSOR_MEMBER_AXIS_GUARD(std)
    LAZYTENSOR_MEMBER_AXIS_GUARD(argmax)
    LAZYTENSOR_MEMBER_AXIS_GUARD(argmin)
    LAZYTENSOR_MEMBER_AXIS_GUARD(cumsum)
    LAZYTENSOR_MEMBER_AXIS_GUARD(cumprod)

    /// Matrix product with NumPy's rules (see lt::matmul).
    template <class E>
    auto matmul(const E& other) const;

    /// Element-wise conversion to U (float to integer saturates; NaN becomes 0).
    template <class U>
    auto cast() const;

protected:
    /// The expression itself, as its own type (CRTP).
    const Derived& self() const { return static_cast<const Derived&>(*this); }
};

/// A tensor: a shared handle to a lazy (or realized) value. Copying a Tensor is cheap and
/// shares the value; operations on it build new lazy values and leave it unchanged (only
/// assign() writes into its memory).
template <class T>
class Tensor : public TensorBase<T, Tensor<T>> {
    static_assert(detail::dtype_traits<T>::supported,
                  "lazytensor: Tensor<T> supports T = bool, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, "
                  "uint64_t, lazytensor::half, lazytensor::bfloat16, float, double");

public:
    /// An empty handle; give it a value with = before use (using it throws ValueError).
    Tensor() = default;
    /// Wraps a graph node (library internals).
    explicit Tensor(detail::NodePtr node) : node_(std::move(node)) {}

    /// Captures an expression as a lazy graph node (nothing is computed).
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E> && !std::is_same_v<std::decay_t<E>, Tensor>>>
    Tensor(const E& expr) : node_(expr.build()) {
        static_assert(std::is_same_v<typename std::decay_t<E>::value_type, T>,
                      "lazytensor: the expression's element type differs from the Tensor's; convert with "
                      "lt::cast<T>(expr) or declare the tensor with `auto`");
    }

    /// The extents, outermost first (ValueError for an empty handle).
    const Shape& shape() const { return node().shape; }
    /// The device the value lives (or will be computed) on.
    Device device() const { return node().device; }
    /// True once the value has been computed into a buffer.
    bool is_realized() const {
        detail::GraphReadLock lock;  // another thread may be realizing it
        return node_ && node_->realized();
    }

    /// The address of element [0, ..., 0] of this tensor in host memory, to read and write in
    /// place (realizes it first if needed); strides() gives the layout. The memory is the
    /// tensor's own, or the memory of the tensor it is a view of (x.t().data() points into x).
    /// Valid while a tensor holding that memory lives. DeviceError unless the tensor is on the
    /// host; ValueError for read-only memory (lt::from_blob of a const pointer: use const_data()).
    T* data() const;
    /// data() for reading only; read-only memory too.
    const T* const_data() const;
    /// The element strides of this tensor in its memory, one per axis (realizes it first if
    /// needed): element [i, j, ...] is at data()[i * strides()[0] + j * strides()[1] + ...]. A
    /// stride is 0 on broadcast axes and negative on flipped ones.
    Strides strides() const;

    /// Writes `value` (a tensor, expression or scalar, broadcast to this shape and converted to
    /// T) into this tensor's memory, now. Every tensor that shares the memory sees it: views
    /// such as x.slice(...) write into x, as in PyTorch (x.slice(0, 1, 3).assign(0.0f)). Lazy
    /// expressions built earlier on that memory keep the values they were built on (they are
    /// computed first), and a value that reads the memory it overwrites at other positions
    /// (x.assign(x.flip(0))) is computed into a copy first. Returns *this. Before writing:
    /// ShapeError if value does not broadcast to this shape, DeviceError if it is on another
    /// device, ValueError if this is a broadcast view or a reshape that needed a copy.
    template <class V>
    Tensor& assign(const V& value);
    /// x[indices] = value in place (PyTorch's index_put_): the elements x.index(indices) names
    /// get `value` (a scalar, tensor or expression broadcast to that shape), or with `accumulate`
    /// have it added (repeated positions add up; without accumulate, one of their values is
    /// kept). Basic indices write through a view as assign() does; index tensors and masks go
    /// through a scatter. Returns *this. The same errors as index() and assign().
    template <class V>
    Tensor& index_put(const std::vector<TensorIndex>& indices, const V& value, bool accumulate = false);

    /// The graph node (library internals and tests).
    const detail::NodePtr& node_ptr() const { return node_; }
    /// The graph node, shared (library internals; ValueError for an empty handle).
    detail::NodePtr build() const {
        node();
        return node_;
    }

private:
    const detail::Node& node() const {
        if (!node_) detail::fail<ValueError>("use of an empty lt::Tensor (default-constructed and never assigned)");
        return *node_;
    }

    detail::NodePtr node_;
};

/// A type-erased reference to a tensor of any element type (lt::realize, lt::schedule).
class TensorRef {
public:
    /// Refers to `t`'s value (implicit, so {x, y} of different types works).
    template <class T>
    TensorRef(const Tensor<T>& t) : node_(t.build()) {}
    /// The graph node (library internals).
    detail::Node* node() const { return node_.get(); }
    /// The graph node, shared (library internals).
    const detail::NodePtr& node_ptr() const { return node_; }

private:
    detail::NodePtr node_;
};

// ------------------------------------------------------------------ TensorBase implementation

namespace detail {

/// Copies the elements of `n` (realized), row-major, into out[0, numel): straight from its
/// memory where it is row-major there, or on the host; otherwise from a host copy of the region
/// of its buffer that holds the view.
template <class T>
void copy_elements(const Node& n, T* out) {
    const std::int64_t count = lazytensor::numel(n.shape);
    if (count == 0) return;
    using Stored = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;  // bool is a byte, 0 or 1
    static_assert(sizeof(Stored) == sizeof(T));
    if (is_contiguous_layout(n.shape, n.strides, 0)) {
        download(*n.buffer, static_cast<std::size_t>(n.offset) * sizeof(T), out, static_cast<std::size_t>(count) * sizeof(T));
        return;
    }
    const Stored* first = nullptr;  // element [0, ..., 0]
    std::unique_ptr<Stored[]> region;
    if (n.device.kind == Device::Kind::Host) {
        first = static_cast<const Stored*>(n.buffer->handle()) + n.offset;
    } else {
        std::int64_t lo = n.offset, hi = n.offset;
        for (std::size_t k = 0; k < n.shape.size(); ++k) {
            const std::int64_t span = (n.shape[k] - 1) * n.strides[k];
            (span < 0 ? lo : hi) += span;
        }
        region.reset(new Stored[static_cast<std::size_t>(hi - lo + 1)]);
        download(*n.buffer, static_cast<std::size_t>(lo) * sizeof(Stored), region.get(),
                 static_cast<std::size_t>(hi - lo + 1) * sizeof(Stored));
        first = region.get() + (n.offset - lo);
    }
    SmallVector<std::int64_t, 6> index(n.shape.size(), 0);
    std::int64_t at = 0;
    for (std::int64_t i = 0; i < count; ++i) {
        out[i] = static_cast<T>(first[at]);
        for (std::size_t k = n.shape.size(); k-- > 0;) {
            at += n.strides[k];
            if (++index[k] < n.shape[k]) break;
            at -= n.strides[k] * n.shape[k];
            index[k] = 0;
        }
    }
}

/// The elements of `n` (realized), row-major.
template <class T>
std::vector<T> read_elements(const Node& n) {
    const auto count = static_cast<std::size_t>(lazytensor::numel(n.shape));
    if constexpr (std::is_same_v<T, bool>) {  // (std::vector<bool> has no data())
        std::unique_ptr<bool[]> values(new bool[count]);
        copy_elements(n, values.get());
        return std::vector<bool>(values.get(), values.get() + count);
    } else {
        std::vector<T> out(count);
        copy_elements(n, out.data());
        return out;
    }
}

/// The realized host node behind `t`'s memory (data(), const_data(), strides()); DeviceError
/// for another device.
template <class T>
const Node& host_memory(const Tensor<T>& t, const char* op) {
    t.realize();
    const Node& n = *t.node_ptr();
    if (n.device.kind != Device::Kind::Host)
        fail<DeviceError>(op, ": the tensor is on ", n.device, ", and ", op, " gives host memory only; read it with "
                          "copy_to(dst, count) or to_vector(), or move it with .to(lt::Device::host())");
    return n;
}

}  // namespace detail

template <class T>
T* Tensor<T>::data() const {
    const detail::Node& n = detail::host_memory(*this, "data()");
    if (!n.buffer->writable())
        detail::fail<ValueError>("data(): the tensor (shape ", n.shape, ") is read-only memory (lt::from_blob of a "
                                 "const pointer); read it through const_data()");
    detail::expose_memory(n.buffer);
    return static_cast<T*>(n.buffer->handle()) + n.offset;
}

template <class T>
const T* Tensor<T>::const_data() const {
    const detail::Node& n = detail::host_memory(*this, "const_data()");
    detail::expose_memory(n.buffer);
    return static_cast<const T*>(n.buffer->handle()) + n.offset;
}

template <class T>
Strides Tensor<T>::strides() const {
    this->realize();
    return node_->strides;
}

template <class T, class D>
void TensorBase<T, D>::copy_to(T* dst, std::size_t count) const {
    const std::int64_t n = numel();
    if (count != static_cast<std::size_t>(n))
        detail::fail<ShapeError>("copy_to: the tensor has shape ", self().shape(), " (", n, " elements) but the "
                                 "destination holds ", count, " elements");
    if (!dst && n > 0) detail::fail<ValueError>("copy_to: the destination is a null pointer");
    Tensor<T> t = realize();
    detail::copy_elements(*t.node_ptr(), dst);
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::realize() const {
    Tensor<T> t(self().build());
    detail::realize_nodes({t.node_ptr().get()});
    return t;
}

template <class T, class D>
std::vector<T> TensorBase<T, D>::to_vector() const {
    Tensor<T> t = realize();
    return detail::read_elements<T>(*t.node_ptr());
}

template <class T, class D>
T TensorBase<T, D>::item() const {
    const std::int64_t n = numel();
    if (n != 1)
        detail::fail<ValueError>("item(): the tensor has shape ", self().shape(), " (", n,
                         " elements); item() needs exactly one element");
    return to_vector()[0];
}

template <class T, class D>
Tensor<detail::reduce_t<ReduceOp::Sum, T>> TensorBase<T, D>::sum() const {
    return Tensor<detail::reduce_t<ReduceOp::Sum, T>>(detail::graph::reduce(ReduceOp::Sum, self().build(), std::nullopt, false, "sum"));
}
template <class T, class D>
Tensor<detail::reduce_t<ReduceOp::Sum, T>> TensorBase<T, D>::sum(const Axes& axes, bool keepdim) const {
    return Tensor<detail::reduce_t<ReduceOp::Sum, T>>(detail::graph::reduce(ReduceOp::Sum, self().build(), axes, keepdim, "sum"));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::max() const {
    return Tensor<T>(detail::graph::reduce(ReduceOp::Max, self().build(), std::nullopt, false, "max"));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::max(const Axes& axes, bool keepdim) const {
    return Tensor<T>(detail::graph::reduce(ReduceOp::Max, self().build(), axes, keepdim, "max"));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::min() const {
    return Tensor<T>(detail::graph::reduce(ReduceOp::Min, self().build(), std::nullopt, false, "min"));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::min(const Axes& axes, bool keepdim) const {
    return Tensor<T>(detail::graph::reduce(ReduceOp::Min, self().build(), axes, keepdim, "min"));
}
template <class T, class D>
Tensor<detail::reduce_t<ReduceOp::Prod, T>> TensorBase<T, D>::prod() const {
    return Tensor<detail::reduce_t<ReduceOp::Prod, T>>(detail::graph::reduce(ReduceOp::Prod, self().build(), std::nullopt, false, "prod"));
}
template <class T, class D>
Tensor<detail::reduce_t<ReduceOp::Prod, T>> TensorBase<T, D>::prod(const Axes& axes, bool keepdim) const {
    return Tensor<detail::reduce_t<ReduceOp::Prod, T>>(detail::graph::reduce(ReduceOp::Prod, self().build(), axes, keepdim, "prod"));
}
template <class T, class D>
Tensor<bool> TensorBase<T, D>::any() const {
    return Tensor<bool>(detail::graph::any_all(false, self().build(), std::nullopt, false));
}
template <class T, class D>
Tensor<bool> TensorBase<T, D>::any(const Axes& axes, bool keepdim) const {
    return Tensor<bool>(detail::graph::any_all(false, self().build(), axes, keepdim));
}
template <class T, class D>
Tensor<bool> TensorBase<T, D>::any(int axis, bool keepdim) const {
    return any(Axes{axis}, keepdim);
}
template <class T, class D>
Tensor<bool> TensorBase<T, D>::all() const {
    return Tensor<bool>(detail::graph::any_all(true, self().build(), std::nullopt, false));
}
template <class T, class D>
Tensor<bool> TensorBase<T, D>::all(const Axes& axes, bool keepdim) const {
    return Tensor<bool>(detail::graph::any_all(true, self().build(), axes, keepdim));
}
template <class T, class D>
Tensor<bool> TensorBase<T, D>::all(int axis, bool keepdim) const {
    return all(Axes{axis}, keepdim);
}
template <class T, class D>
Tensor<detail::mean_t<T>> TensorBase<T, D>::mean() const {
    const detail::NodePtr x = self().build();
    return Tensor<detail::mean_t<T>>(detail::graph::mean(x, std::nullopt, false, detail::supports_float64(x->device)));
}
template <class T, class D>
Tensor<detail::mean_t<T>> TensorBase<T, D>::mean(const Axes& axes, bool keepdim) const {
    const detail::NodePtr x = self().build();
    return Tensor<detail::mean_t<T>>(detail::graph::mean(x, axes, keepdim, detail::supports_float64(x->device)));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::reshape(const Shape& shape) const {
    return Tensor<T>(detail::graph::reshape(self().build(), shape));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::permute(const Axes& perm) const {
    return Tensor<T>(detail::graph::permute(self().build(), perm));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::transpose(int a, int b) const {
    return Tensor<T>(detail::graph::transpose(self().build(), a, b));
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::expand(const Shape& shape) const {
    return Tensor<T>(detail::graph::expand(self().build(), shape));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::mT() const {
    if (ndim() < 2)
        detail::fail<AxisError>("mT(): needs at least 2 dimensions, the tensor has shape ", self().shape());
    return transpose(-2, -1);
}
template <class T, class D>
Tensor<T> TensorBase<T, D>::t() const {
    if (ndim() > 2)
        detail::fail<AxisError>("t(): needs at most 2 dimensions, the tensor has shape ", self().shape(),
                                "; use mT() to transpose the last two axes, or permute()");
    return ndim() < 2 ? Tensor<T>(self().build()) : transpose(0, 1);
}

template <class T, class D>
template <class E>
auto TensorBase<T, D>::matmul(const E& other) const {
    using R = promote_t<T, typename std::decay_t<E>::value_type>;
    return Tensor<R>(detail::graph::matmul(self().build(), other.build()));
}

///@{
/// Computes several tensors in one schedule; parts they share are computed once.
inline void realize(std::initializer_list<TensorRef> tensors) {
    std::vector<detail::Node*> nodes;
    for (const TensorRef& t : tensors) nodes.push_back(t.node());
    detail::realize_nodes(nodes);
}
inline void realize(const std::vector<TensorRef>& tensors) {
    std::vector<detail::Node*> nodes;
    for (const TensorRef& t : tensors) nodes.push_back(t.node());
    detail::realize_nodes(nodes);
}
/// The same for a list of tensors of one type (lt::grad's result, a model's parameters).
template <class T>
void realize(const std::vector<Tensor<T>>& tensors) {
    realize(std::vector<TensorRef>(tensors.begin(), tensors.end()));
}
///@}

/// A point in the work of one or more devices (lt::realize_async's): done when everything the
/// devices had queued before it has finished. Cheap to copy; an Event() is done.
class Event {
public:
    Event() = default;
    /// Whether the work has finished, without waiting. BackendError where it failed.
    bool is_done() const {
        for (const auto& e : parts_)
            if (!e->is_done()) return false;
        return true;
    }
    /// Returns once the work has finished. BackendError where it failed.
    void wait() const {
        for (const auto& e : parts_) e->wait();
    }
    /// The event of each device (library internals).
    const std::vector<std::shared_ptr<detail::DeviceEvent>>& parts() const { return parts_; }
    /// Adds a device's event (library internals).
    void add(std::shared_ptr<detail::DeviceEvent> e) { parts_.push_back(std::move(e)); }

private:
    std::vector<std::shared_ptr<detail::DeviceEvent>> parts_;
};

/// Makes the work queued on `device` from now on wait for `event`: on the device itself where
/// the event is one of its context's (an OpenCL barrier; the host thread goes on), else by
/// waiting here.
inline void wait_for(const Event& event, Device device) {
    for (const auto& e : event.parts()) detail::wait_for_event(device, *e);
}

///@{
/// realize() that returns as soon as the work is queued, with an Event for it: OpenCL devices
/// run it while the program goes on (the host's work is done when this returns). With `after`,
/// the work waits for that event first (one realize after another's, on other devices).
inline Event realize_async(const std::vector<TensorRef>& tensors, const Event& after = {}) {
    std::vector<detail::Node*> nodes;
    std::vector<Device> devices;
    for (const TensorRef& t : tensors) {
        nodes.push_back(t.node());
        if (std::find(devices.begin(), devices.end(), t.node()->device) == devices.end()) devices.push_back(t.node()->device);
    }
    for (Device d : devices) wait_for(after, d);
    detail::realize_nodes(nodes);
    Event done;
    for (Device d : devices) done.add(detail::record_event(d));
    return done;
}
inline Event realize_async(std::initializer_list<TensorRef> tensors, const Event& after = {}) {
    return realize_async(std::vector<TensorRef>(tensors), after);
}
///@}

///@{
/// The schedule realize() would run for these tensors (or one expression), without running it:
/// one item per kernel, matmul (GEMM) or zero-copy view.
inline std::vector<ScheduleItem> schedule(std::initializer_list<TensorRef> tensors) {
    std::vector<detail::Node*> nodes;
    for (const TensorRef& t : tensors) nodes.push_back(t.node());
    return detail::schedule_items(nodes);
}
inline std::vector<ScheduleItem> schedule(const std::vector<TensorRef>& tensors) {
    std::vector<detail::Node*> nodes;
    for (const TensorRef& t : tensors) nodes.push_back(t.node());
    return detail::schedule_items(nodes);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
std::vector<ScheduleItem> schedule(const E& expr) {
    detail::NodePtr node = expr.build();
    return detail::schedule_items({node.get()});
}
///@}

///@{
/// Builds every kernel and program a realize() of these tensors (or one expression) would build,
/// through the same caches (memory, then the disk cache, then the compiler), and runs nothing:
/// the tensors stay lazy and unchanged, and a realize() of them afterwards (or of a graph of the
/// same structure) compiles nothing. For a product it builds the own GEMM kernel the product
/// runs, or has CLBlast build its program (by a product of 1 x 1 matrices on scratch buffers:
/// CLBlast builds one program per routine and precision), and the kernel of attention fused
/// into one. VkFFT plans and the programs of scans and sorts are still built at their first
/// realize.
/// A build that fails throws the error a realize would (BackendError with the build log and the
/// source) and leaves the tensors usable. Compile events go to lt::set_log_handler's handler.
inline void warmup(const std::vector<TensorRef>& tensors) {
    std::vector<detail::Node*> nodes;
    for (const TensorRef& t : tensors) nodes.push_back(t.node());
    detail::warmup_nodes(nodes);
}
inline void warmup(std::initializer_list<TensorRef> tensors) { warmup(std::vector<TensorRef>(tensors)); }
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
void warmup(const E& expr) {
    detail::NodePtr node = expr.build();
    detail::warmup_nodes({node.get()});
}
///@}

///@{
/// lt::warmup under the name of ahead-of-time compilers.
inline void precompile(const std::vector<TensorRef>& tensors) { warmup(tensors); }
inline void precompile(std::initializer_list<TensorRef> tensors) { warmup(std::vector<TensorRef>(tensors)); }
///@}

///@{
/// lt::warmup on a thread of its own; the future is ready when every build is done, and get()
/// rethrows a build's error. Meanwhile the program may go on: a realize on the same device
/// waits until the warmup has built (they take the device's lock in turn) and then compiles
/// nothing it built; the results are the same either way. The tensors are held until it ends.
/// Keep the future: like every std::async future, its destructor waits for the warmup.
inline std::future<void> warmup_async(std::vector<TensorRef> tensors) {
    return std::async(std::launch::async, [held = std::move(tensors)] { warmup(held); });
}
inline std::future<void> warmup_async(std::initializer_list<TensorRef> tensors) {
    return warmup_async(std::vector<TensorRef>(tensors));
}
///@}

/// Number of kernels in a schedule (matmul items, which run the backend's GEMM, and views that
/// need no kernel are not counted).
inline std::size_t kernel_count(const std::vector<ScheduleItem>& items) {
    std::size_t n = 0;
    for (const auto& item : items) n += item.kind == ScheduleItem::Kind::Kernel;
    return n;
}

}  // namespace lazytensor

// The members declared above and defined next to the functions they share code with. Included
// here, at the end, so that wherever TensorBase is visible its members are defined, whatever
// the include order (each of these needs only what is above).
#include "assign.hpp"
#include "creation.hpp"
#include "expr.hpp"
#include "movement.hpp"
#include "reductions.hpp"
