// SPDX-License-Identifier: MIT
// Convolutions and pooling, spelled as PyTorch's functional API (torch.nn.functional): the
// layout is [batch, channels, spatial...] (the batch may be left out), weights are [out
// channels, in channels / groups, kernel...]. ir/convolution.hpp builds them from unfold views
// and a batched product; gradients come with them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#include "../ir/convolution.hpp"
#include "tensor.hpp"

namespace lazytensor {

/// Padding by name: Valid (none) or Same (the output as large as the input; stride 1 only, as
/// PyTorch's; an odd total goes after, as PyTorch puts it).
enum class Padding { Valid, Same };

/// One integer per spatial axis, or one for all of them: `2` or `{2, 1}`. Empty (`{}`) where a
/// default applies (a pool's stride is its kernel).
class Spatial {
public:
    /// Nothing given: the default applies.
    Spatial() = default;
    /// One value for every spatial axis.
    Spatial(std::int64_t all) : all_(all), set_(true) {}  // NOLINT: 2 means 2 along every axis
    template <class I, class = std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>>>
    /// \overload
    Spatial(I all) : Spatial(static_cast<std::int64_t>(all)) {}  // NOLINT
    /// One value per spatial axis (or one for all).
    Spatial(std::initializer_list<std::int64_t> each) : each_(each), set_(each.size() > 0) {}
    /// \overload
    Spatial(std::vector<std::int64_t> each) : each_(std::move(each)), set_(!each_.empty()) {}  // NOLINT

    /// Whether a value was given (else the default applies).
    bool given() const { return set_; }
    /// `dims` values; ValueError naming `op` and `what` unless one or `dims` were given.
    Shape resolve(std::size_t dims, const char* op, const char* what) const {
        if (each_.empty()) return Shape(dims, all_);
        if (each_.size() == 1) return Shape(dims, each_[0]);
        if (each_.size() != dims)
            detail::fail<ValueError>(op, ": ", what, " needs 1 or ", dims, " values (one per spatial axis), got ",
                                     Shape(each_.begin(), each_.end()));
        return Shape(each_.begin(), each_.end());
    }

private:
    std::int64_t all_ = 0;
    std::vector<std::int64_t> each_;
    bool set_ = false;
};

/// A convolution's zero padding: one width for every side (`1`), one per spatial axis on both
/// sides (`{1, 2}`), (before, after) per axis (`{{0, 1}, {1, 1}}`: asymmetric), or by name
/// (`lt::Padding::Same`).
class ConvPadding {
public:
    /// One width for every side of every spatial axis.
    ConvPadding(std::int64_t all) : widths_(all) {}  // NOLINT
    template <class I, class = std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>>>
    /// \overload
    ConvPadding(I all) : ConvPadding(static_cast<std::int64_t>(all)) {}  // NOLINT
    /// One width per spatial axis, on both sides.
    ConvPadding(std::initializer_list<std::int64_t> each) : widths_(each) {}
    /// \overload
    ConvPadding(std::vector<std::int64_t> each) : widths_(std::move(each)) {}  // NOLINT
    /// (before, after) widths per spatial axis.
    ConvPadding(std::initializer_list<std::pair<std::int64_t, std::int64_t>> sides) : sides_(sides) {}
    /// \overload
    ConvPadding(std::vector<std::pair<std::int64_t, std::int64_t>> sides) : sides_(std::move(sides)) {}  // NOLINT
    /// By name: Padding::Same or Padding::Valid.
    ConvPadding(Padding mode) : mode_(mode), named_(true) {}  // NOLINT

    /// Fills spec.pad_before and pad_after; Same needs the kernel (and stride 1).
    void resolve(std::size_t dims, const Shape& kernel, detail::graph::ConvSpec& spec, const char* op) const {
        if (named_) {
            spec.pad_before = Shape(dims, 0);
            spec.pad_after = Shape(dims, 0);
            if (mode_ == Padding::Valid) return;
            for (std::size_t i = 0; i < dims; ++i) {
                if (spec.stride[i] != 1)
                    detail::fail<ValueError>(op, ": padding Same needs stride 1 along every axis (as PyTorch's), got ",
                                             spec.stride);
                const std::int64_t total = spec.dilation[i] * (kernel.size() == dims ? kernel[i] - 1 : 0);
                spec.pad_before[i] = total / 2;
                spec.pad_after[i] = total - total / 2;
            }
            return;
        }
        if (!sides_.empty()) {
            if (sides_.size() != dims)
                detail::fail<ValueError>(op, ": padding needs one (before, after) pair per spatial axis (", dims, "), got ",
                                         sides_.size());
            for (const auto& [before, after] : sides_) {
                spec.pad_before.push_back(before);
                spec.pad_after.push_back(after);
            }
            return;
        }
        spec.pad_before = widths_.resolve(dims, op, "padding");
        spec.pad_after = spec.pad_before;
    }

private:
    Spatial widths_ = 0;
    std::vector<std::pair<std::int64_t, std::int64_t>> sides_;
    Padding mode_ = Padding::Valid;
    bool named_ = false;
};

namespace detail {

/// The input with a batch axis (added when it has `dims` + 1 axes), and whether it was added.
inline std::pair<NodePtr, bool> batched(const NodePtr& x, std::size_t dims) {
    if (x->shape.size() != dims + 1) return {x, false};
    Shape shape{1};
    for (std::int64_t e : x->shape) shape.push_back(e);
    return {graph::reshape(x, shape), true};
}

inline NodePtr unbatched(const NodePtr& y, bool added) {
    return added ? graph::reshape(y, Shape(y->shape.begin() + 1, y->shape.end())) : y;
}

template <class T>
Tensor<T> convolve(std::size_t dims, bool transposed, const char* op, const NodePtr& input, const NodePtr& weight,
                   const std::optional<Tensor<T>>& bias, const Spatial& stride, const ConvPadding& padding,
                   const Spatial& output_padding, std::int64_t groups, const Spatial& dilation) {
    const auto [x, added] = batched(input, dims);
    graph::ConvSpec spec;
    spec.stride = stride.resolve(dims, op, "stride");
    spec.dilation = dilation.resolve(dims, op, "dilation");
    spec.output_padding = output_padding.resolve(dims, op, "output_padding");
    spec.groups = groups;
    const Shape kernel = weight->shape.size() == dims + 2 ? Shape(weight->shape.begin() + 2, weight->shape.end()) : Shape{};
    padding.resolve(dims, kernel, spec, op);
    const NodePtr b = bias ? bias->build() : nullptr;
    return Tensor<T>(unbatched(transposed ? graph::conv_transpose(x, weight, b, spec, op)
                                          : graph::convolution(x, weight, b, spec, op),
                               added));
}

template <class X, class W>
constexpr bool same_value_type_v = std::is_same_v<typename X::value_type, typename W::value_type>;

inline graph::ConvSpec pool_spec(std::size_t dims, const Shape& kernel, const Spatial& stride, const Spatial& padding,
                                 const Spatial& dilation, const char* op) {
    graph::ConvSpec spec;
    spec.stride = stride.given() ? stride.resolve(dims, op, "stride") : kernel;
    spec.pad_before = padding.resolve(dims, op, "padding");
    spec.pad_after = spec.pad_before;
    spec.dilation = dilation.resolve(dims, op, "dilation");
    spec.output_padding = Shape(dims, 0);
    return spec;
}

template <class T>
std::pair<Tensor<T>, Tensor<std::int64_t>> max_pool(std::size_t dims, const char* op, const NodePtr& input,
                                                    const Spatial& kernel_size, const Spatial& stride,
                                                    const Spatial& padding, const Spatial& dilation, bool ceil_mode) {
    const auto [x, added] = batched(input, dims);
    const Shape kernel = kernel_size.resolve(dims, op, "kernel_size");
    graph::ConvSpec spec = pool_spec(dims, kernel, stride, padding, dilation, op);
    spec.ceil_mode = ceil_mode;
    const auto [values, positions] = graph::max_pool(x, kernel, spec, op);
    return {Tensor<T>(unbatched(values, added)), Tensor<std::int64_t>(unbatched(positions, added))};
}

template <class T>
Tensor<mean_t<T>> avg_pool(std::size_t dims, const char* op, const NodePtr& input, const Spatial& kernel_size,
                           const Spatial& stride, const Spatial& padding, bool count_include_pad, bool ceil_mode,
                           std::optional<std::int64_t> divisor_override) {
    const auto [x, added] = batched(input, dims);
    const Shape kernel = kernel_size.resolve(dims, op, "kernel_size");
    if (divisor_override && *divisor_override == 0) fail<ValueError>(op, ": the divisor must not be zero");
    graph::ConvSpec spec = pool_spec(dims, kernel, stride, padding, 1, op);
    spec.ceil_mode = ceil_mode;
    return Tensor<mean_t<T>>(
        unbatched(graph::avg_pool(x, kernel, spec, count_include_pad, divisor_override.value_or(0), op), added));
}

/// An adaptive pool's output extents, checked, and the kernel of an even split (every axis in
/// equal cells: a plain pool, stride = kernel), if it is one.
struct AdaptiveCells {
    Shape out;
    std::optional<Shape> even_kernel;
};
inline AdaptiveCells adaptive_cells(const NodePtr& x, const NodePtr& input, std::size_t dims, const Spatial& output_size,
                                    const char* op) {
    if (x->shape.size() != dims + 2)
        fail<ShapeError>(op, ": the input must have ", dims + 2, " axes ([batch, channels, ", dims, " spatial]) or ",
                         dims + 1, " without the batch, got shape ", input->shape);
    AdaptiveCells c{output_size.resolve(dims, op, "output_size"), Shape{}};
    for (std::size_t i = 0; i < dims; ++i) {
        if (c.out[i] < 1) fail<ValueError>(op, ": the output size must be at least 1 along every axis, got ", c.out);
        if (x->shape[2 + i] % c.out[i] != 0) c.even_kernel.reset();
        if (c.even_kernel) c.even_kernel->push_back(x->shape[2 + i] / c.out[i]);
    }
    return c;
}

/// Cell o of an axis of extent L holds [floor(o L / O), ceil((o + 1) L / O)), as PyTorch's.
inline std::int64_t cell_begin(std::int64_t o, std::int64_t length, std::int64_t cells) { return o * length / cells; }
inline std::int64_t cell_end(std::int64_t o, std::int64_t length, std::int64_t cells) {
    return ((o + 1) * length + cells - 1) / cells;
}

/// Adaptive average pooling: the average of each cell. An even split is a plain average pool
/// (one kernel); otherwise each axis is a product with its averaging matrix.
template <class T>
Tensor<mean_t<T>> adaptive_avg_pool(std::size_t dims, const char* op, const NodePtr& input, const Spatial& output_size) {
    using R = mean_t<T>;
    const auto [x, added] = batched(input, dims);
    const auto [out, kernel] = adaptive_cells(x, input, dims, output_size, op);
    if (kernel)
        return Tensor<R>(unbatched(graph::avg_pool(x, *kernel, pool_spec(dims, *kernel, Spatial(), 0, 1, op), true, 0, op), added));
    NodePtr y = graph::composite::floating_operand(x, op);
    for (std::size_t i = 0; i < dims; ++i) {
        const std::int64_t length = x->shape[2 + i], cells = out[i];
        std::vector<R> averaging(static_cast<std::size_t>(cells * length), R(0));  // [cells, length]
        for (std::int64_t o = 0; o < cells; ++o) {
            const std::int64_t begin = cell_begin(o, length, cells), end = cell_end(o, length, cells);
            for (std::int64_t l = begin; l < end; ++l)
                averaging[static_cast<std::size_t>(o * length + l)] = convert<R>(1.0 / static_cast<double>(end - begin));
        }
        const NodePtr matrix = tensor<R>(averaging, Shape{cells, length}, x->device).build();
        const int axis = static_cast<int>(2 + i);
        const int last = static_cast<int>(y->shape.size()) - 1;
        Axes to_last, back;
        for (int a = 0; a <= last; ++a)
            if (a != axis) to_last.push_back(a);
        to_last.push_back(axis);
        for (int a = 0; a <= last; ++a) back.push_back(a < axis ? a : a == axis ? last : a - 1);
        y = graph::permute(graph::matmul(graph::permute(y, to_last), graph::transpose(matrix, 0, 1)), back);
    }
    return Tensor<R>(unbatched(y, added));
}

/// Adaptive max pooling: the first maximum of each cell (a NaN wins) and its flat index into
/// the input plane. An even split is a max pool; otherwise each axis, the last first, gathers
/// its cells' elements (padded to the longest cell with the lowest value) and keeps each cell's
/// first maximum, carrying the positions along: the first in row-major order overall.
template <class T>
std::pair<Tensor<T>, Tensor<std::int64_t>> adaptive_max_pool(std::size_t dims, const char* op, const NodePtr& input,
                                                             const Spatial& output_size) {
    const auto [x, added] = batched(input, dims);
    const auto [out, kernel] = adaptive_cells(x, input, dims, output_size, op);
    if (kernel) {
        const auto [values, positions] = graph::max_pool(x, *kernel, pool_spec(dims, *kernel, Spatial(), 0, 1, op), op);
        return {Tensor<T>(unbatched(values, added)), Tensor<std::int64_t>(unbatched(positions, added))};
    }
    const bool floating = is_floating(x->dtype);
    const Scalar lowest = floating ? Scalar::of<double>(-std::numeric_limits<double>::infinity()).cast(x->dtype)
                                   : Scalar::of<T>(std::numeric_limits<T>::lowest());
    NodePtr values = x, positions;  // positions: the flat offset within the axes pooled so far
    std::int64_t inner = 1;         // the input's extent over those axes
    for (std::size_t i = dims; i-- > 0;) {
        const int axis = static_cast<int>(2 + i);
        const std::int64_t length = x->shape[2 + i], cells = out[i];
        std::int64_t widest = 0;
        for (std::int64_t o = 0; o < cells; ++o) widest = std::max(widest, cell_end(o, length, cells) - cell_begin(o, length, cells));
        std::vector<std::int64_t> at(static_cast<std::size_t>(cells * widest)), begins;
        std::vector<bool> inside_cell(at.size());
        for (std::int64_t o = 0; o < cells; ++o) {
            begins.push_back(cell_begin(o, length, cells));
            for (std::int64_t t = 0; t < widest; ++t) {
                const auto k = static_cast<std::size_t>(o * widest + t);
                inside_cell[k] = begins.back() + t < cell_end(o, length, cells);
                at[k] = std::min(begins.back() + t, length - 1);
            }
        }
        const std::size_t rank = values->shape.size();
        Shape lifted(rank, 1), spread = values->shape, split = values->shape;
        lifted[static_cast<std::size_t>(axis)] = cells * widest;
        spread[static_cast<std::size_t>(axis)] = cells * widest;
        split[static_cast<std::size_t>(axis)] = cells;
        split.insert(static_cast<std::size_t>(axis) + 1, widest);
        Shape table_shape(rank + 1, 1);
        table_shape[static_cast<std::size_t>(axis)] = cells;
        table_shape[static_cast<std::size_t>(axis) + 1] = widest;
        const NodePtr index =
            graph::expand(graph::reshape(tensor<std::int64_t>(at, Shape{cells * widest}, x->device).build(), lifted), spread);
        const NodePtr inside = graph::reshape(tensor<bool>(inside_cell, Shape{cells * widest}, x->device).build(), table_shape);
        auto cells_of = [&](const NodePtr& v) { return graph::reshape(graph::gather(v, axis, index), split); };
        const NodePtr window = graph::where(inside, cells_of(values), lowest);
        const Axes w{axis + 1};
        const NodePtr best = graph::reduce(ReduceOp::Max, window, w, true, op);
        NodePtr hit = graph::binary(BinaryOp::Eq, window, best);
        if (floating) hit = graph::binary(BinaryOp::Maximum, hit, graph::binary(BinaryOp::Ne, window, window));
        hit = graph::composite::both(hit, inside);  // a cell of the lowest values ties with its padding
        Strides along(rank + 1, 0);
        along[static_cast<std::size_t>(axis) + 1] = 1;
        const NodePtr first = graph::reduce(ReduceOp::Min, graph::where(hit, graph::index(split, along, x->device), Scalar::of<std::int64_t>(widest)), w, true, op);
        Shape kept = split;
        kept.erase(static_cast<std::size_t>(axis) + 1);
        auto pick = [&](const NodePtr& cellwise) { return graph::reshape(graph::gather(cellwise, axis + 1, first), kept); };
        values = pick(window);
        Shape begin_shape(rank + 1, 1);
        begin_shape[static_cast<std::size_t>(axis)] = cells;
        const NodePtr begin = graph::reshape(tensor<std::int64_t>(begins, Shape{cells}, x->device).build(), begin_shape);
        NodePtr position = graph::reshape(graph::binary(BinaryOp::Add, first, begin), kept);  // along this axis
        position = graph::binary(BinaryOp::Mul, position, Scalar::of<std::int64_t>(inner));
        if (positions) position = graph::binary(BinaryOp::Add, position, pick(cells_of(positions)));
        positions = position;
        inner *= length;
    }
    return {Tensor<T>(unbatched(values, added)), Tensor<std::int64_t>(unbatched(positions, added))};
}

}  // namespace detail

#define LAZYTENSOR_CONV(name, dims)                                                                                        \
    template <class X, class W,                                                                                            \
              class = std::enable_if_t<detail::is_tensor_like_v<X> && detail::is_tensor_like_v<W>>>                        \
    auto name(const X& x, const W& weight, const std::optional<Tensor<typename X::value_type>>& bias = std::nullopt,       \
              const Spatial& stride = 1, const ConvPadding& padding = 0, const Spatial& dilation = 1,                      \
              std::int64_t groups = 1) {                                                                                   \
        static_assert(detail::same_value_type_v<X, W>, #name ": the input and the weight must have one dtype");            \
        return detail::convolve<typename X::value_type>(dims, false, #name, x.build(), weight.build(), bias, stride,       \
                                                        padding, 0, groups, dilation);                                     \
    }
///@{
/// Convolutions: x [N, C_in, spatial...] (or [C_in, spatial...]), weight [C_out, C_in / groups,
/// kernel...], bias [C_out] (or std::nullopt); stride, padding and dilation per spatial axis
/// (one value for all, or one each); groups split the channels (groups = C_in: depthwise). The
/// result is [N, C_out, out...], out = (in + padding before + after - dilation * (kernel - 1) -
/// 1) / stride + 1. Lazy: the windows are copied once into the product's layout (none for a 1x1
/// kernel of stride 1), one batched GEMM multiplies them, and a bias or activation on the result
/// fuses into that GEMM. Differentiable in x, weight and bias. ShapeError or ValueError, where
/// the call is written, for channels that do not match the weight (both named), groups that do
/// not divide the channels, a kernel larger than the padded input, a stride or dilation below
/// 1, negative padding, or a wrong rank; DTypeError or DeviceError when x, weight and bias differ.
LAZYTENSOR_CONV(conv1d, 1)
LAZYTENSOR_CONV(conv2d, 2)
LAZYTENSOR_CONV(conv3d, 3)
///@}
#undef LAZYTENSOR_CONV

#define LAZYTENSOR_CONV_TRANSPOSE(name, dims)                                                                              \
    template <class X, class W,                                                                                            \
              class = std::enable_if_t<detail::is_tensor_like_v<X> && detail::is_tensor_like_v<W>>>                        \
    auto name(const X& x, const W& weight, const std::optional<Tensor<typename X::value_type>>& bias = std::nullopt,       \
              const Spatial& stride = 1, const ConvPadding& padding = 0, const Spatial& output_padding = 0,                \
              std::int64_t groups = 1, const Spatial& dilation = 1) {                                                      \
        static_assert(detail::same_value_type_v<X, W>, #name ": the input and the weight must have one dtype");            \
        return detail::convolve<typename X::value_type>(dims, true, #name, x.build(), weight.build(), bias, stride,        \
                                                        padding, output_padding, groups, dilation);                        \
    }
///@{
/// Transposed convolutions (PyTorch's argument order): x [N, C_in, in...], weight [C_in, C_out /
/// groups, kernel...]; out = (in - 1) * stride - padding before - after + dilation * (kernel -
/// 1) + output_padding + 1, output_padding below the stride or the dilation. The gradient of the
/// convolution with these options with respect to its input: a batched GEMM, then the windows'
/// elements summed back where they belong (fold), with no products of the zeros a stride would
/// put between inputs.
LAZYTENSOR_CONV_TRANSPOSE(conv_transpose1d, 1)
LAZYTENSOR_CONV_TRANSPOSE(conv_transpose2d, 2)
LAZYTENSOR_CONV_TRANSPOSE(conv_transpose3d, 3)
///@}
#undef LAZYTENSOR_CONV_TRANSPOSE

#define LAZYTENSOR_POOL(dims, max_name, with_indices_name, avg_name, adaptive_name, adaptive_max_name)                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>                                             \
    auto with_indices_name(const E& x, const Spatial& kernel_size, const Spatial& stride = {}, const Spatial& padding = 0, \
                           const Spatial& dilation = 1, bool ceil_mode = false) {                                          \
        return detail::max_pool<typename E::value_type>(dims, #max_name, x.build(), kernel_size, stride, padding,         \
                                                        dilation, ceil_mode);                                              \
    }                                                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>                                             \
    auto max_name(const E& x, const Spatial& kernel_size, const Spatial& stride = {}, const Spatial& padding = 0,          \
                  const Spatial& dilation = 1, bool ceil_mode = false) {                                                   \
        return detail::max_pool<typename E::value_type>(dims, #max_name, x.build(), kernel_size, stride, padding,         \
                                                        dilation, ceil_mode)                                               \
            .first;                                                                                                        \
    }                                                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>                                             \
    auto avg_name(const E& x, const Spatial& kernel_size, const Spatial& stride = {}, const Spatial& padding = 0,          \
                  bool count_include_pad = true, bool ceil_mode = false,                                                   \
                  std::optional<std::int64_t> divisor_override = std::nullopt) {                                           \
        return detail::avg_pool<typename E::value_type>(dims, #avg_name, x.build(), kernel_size, stride, padding,         \
                                                        count_include_pad, ceil_mode, divisor_override);                   \
    }                                                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>                                             \
    auto adaptive_name(const E& x, const Spatial& output_size) {                                                           \
        return detail::adaptive_avg_pool<typename E::value_type>(dims, #adaptive_name, x.build(), output_size);            \
    }                                                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>                                             \
    auto adaptive_max_name##_with_indices(const E& x, const Spatial& output_size) {                                        \
        return detail::adaptive_max_pool<typename E::value_type>(dims, #adaptive_max_name, x.build(), output_size);        \
    }                                                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>                                             \
    auto adaptive_max_name(const E& x, const Spatial& output_size) {                                                       \
        return detail::adaptive_max_pool<typename E::value_type>(dims, #adaptive_max_name, x.build(), output_size).first;  \
    }
///@{
/// Pooling over x [N, C, spatial...] (or [C, spatial...]): windows of kernel_size, stride
/// (default: the kernel), padding (at most half the kernel) and, for max, dilation. One kernel
/// each. max_pool*_with_indices also gives each maximum's flat index into its input plane
/// (PyTorch's return_indices); ties go to the first in window order, a NaN wins, and the gradient
/// reaches that one position. avg_pool* divides by the kernel's size, or, without
/// count_include_pad, by the number of input elements in the window, or by divisor_override;
/// integers average in float32. ceil_mode rounds the number of windows up as PyTorch does (one
/// more where it starts inside the input or the padding before it; what it has past the padding
/// counts for nothing). avg_pool's parameters are PyTorch's with count_include_pad before
/// ceil_mode (PyTorch: ceil_mode, count_include_pad).
LAZYTENSOR_POOL(1, max_pool1d, max_pool1d_with_indices, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d)
LAZYTENSOR_POOL(2, max_pool2d, max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d)
LAZYTENSOR_POOL(3, max_pool3d, max_pool3d_with_indices, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d)
///@}
#undef LAZYTENSOR_POOL

/// How interpolate fills in: Nearest (the source element at floor(position)), or Linear
/// (linear, bilinear, trilinear by the number of spatial axes: a weighted pair along each).
enum class Interpolation { Nearest, Linear };

/// Scale factors for interpolate, one for every spatial axis or one each: lt::Scale(2.0),
/// lt::Scale({2.0, 1.5}). The output extent is floor(in * factor). (Explicit, so that a braced
/// list given to interpolate is a size.)
class Scale {
public:
    /// One factor for every spatial axis.
    explicit Scale(double all) : each_{all} {}
    /// One factor per spatial axis.
    explicit Scale(std::vector<double> each) : each_(std::move(each)) {}
    /// The factors as given.
    const std::vector<double>& factors() const { return each_; }

private:
    std::vector<double> each_;
};

namespace detail {

/// Resamples axis `axis` of y from `in` to `out` positions by PyTorch's rules: the source of
/// output position o is o * scale (nearest) or (o + 0.5) * scale - 0.5, at least 0 (linear;
/// with align_corners o * (in - 1) / (out - 1)), with scale = in / out or 1 / the scale factor.
/// Reads through gathers at positions computed here (no checks needed: all within the axis).
template <class R>
NodePtr resample_axis(const NodePtr& y, int axis, std::int64_t out, double scale, Interpolation mode, bool align_corners) {
    namespace g = graph;
    const std::int64_t in = y->shape[static_cast<std::size_t>(axis)];
    Shape along(y->shape.size(), 1), result = y->shape;
    along[static_cast<std::size_t>(axis)] = out;
    result[static_cast<std::size_t>(axis)] = out;
    auto gather_at = [&](const std::vector<std::int64_t>& at) {
        const NodePtr positions = g::expand(tensor<std::int64_t>(at, along, y->device).build(), result);
        return g::gather(y, axis, positions);
    };
    std::vector<std::int64_t> first(static_cast<std::size_t>(out)), second(static_cast<std::size_t>(out));
    std::vector<R> weight(static_cast<std::size_t>(out));
    for (std::int64_t o = 0; o < out; ++o) {
        const auto k = static_cast<std::size_t>(o);
        if (mode == Interpolation::Nearest) {
            first[k] = std::min<std::int64_t>(static_cast<std::int64_t>(std::floor(static_cast<double>(o) * scale)), in - 1);
            continue;
        }
        double source = align_corners ? (out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                                      : std::max((static_cast<double>(o) + 0.5) * scale - 0.5, 0.0);
        first[k] = std::min<std::int64_t>(static_cast<std::int64_t>(source), in - 1);
        second[k] = std::min<std::int64_t>(first[k] + 1, in - 1);
        weight[k] = convert<R>(source - static_cast<double>(first[k]));
    }
    if (mode == Interpolation::Nearest) return gather_at(first);
    const NodePtr lambda = tensor<R>(weight, along, y->device).build();
    const NodePtr low = gather_at(first), high = gather_at(second);
    return g::binary(BinaryOp::Add, low, g::binary(BinaryOp::Mul, g::binary(BinaryOp::Sub, high, low), lambda));
}

template <class T>
Tensor<mean_t<T>> interpolate(const NodePtr& input, const Shape* size, const Scale* scale, Interpolation mode,
                              bool align_corners) {
    using R = mean_t<T>;
    const char* op = "interpolate";
    if (input->shape.size() < 3 || input->shape.size() > 5)
        fail<ShapeError>(op, ": x must have 3 to 5 axes ([batch, channels, 1 to 3 spatial]), got shape ", input->shape);
    if (align_corners && mode == Interpolation::Nearest)
        fail<ValueError>(op, ": align_corners applies to Linear interpolation only (as PyTorch's)");
    const std::size_t dims = input->shape.size() - 2;
    NodePtr y = graph::composite::floating_operand(input, op);
    for (std::size_t i = 0; i < dims; ++i) {
        const std::int64_t in = input->shape[2 + i];
        std::int64_t out;
        double ratio;
        if (size) {
            out = (*size)[i];
            ratio = out > 0 ? static_cast<double>(in) / static_cast<double>(out) : 0.0;
        } else {
            const std::vector<double>& f = scale->factors();
            if (f.size() != 1 && f.size() != dims)
                fail<ValueError>(op, ": the scale needs 1 or ", dims, " factors (one per spatial axis), got ", f.size());
            const double factor = f.size() == 1 ? f[0] : f[i];
            if (!(factor > 0)) fail<ValueError>(op, ": scale factors must be positive, got ", factor);
            out = static_cast<std::int64_t>(std::floor(static_cast<double>(in) * factor));
            ratio = 1.0 / factor;
        }
        if (out < 1) fail<ValueError>(op, ": the output extent along spatial axis ", i, " would be ", out, "; it must be at least 1");
        if (in == 0) fail<ShapeError>(op, ": x has no elements along spatial axis ", i, " (shape ", input->shape, ")");
        y = resample_axis<R>(y, static_cast<int>(2 + i), out, ratio, mode, align_corners);
    }
    return Tensor<R>(y);
}

}  // namespace detail

/// PyTorch's interpolate (upsampling and downsampling) of x [N, C, spatial...] (1 to 3 spatial
/// axes) to `size` (one extent for every axis, or one each), Nearest or Linear (bilinear for 2
/// spatial axes, trilinear for 3), with PyTorch's source positions (align_corners for Linear).
/// Lazy, differentiable (gathers; their gradient is a scatter-add); integers give float32.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto interpolate(const E& x, const Spatial& size, Interpolation mode = Interpolation::Nearest, bool align_corners = false) {
    const detail::NodePtr v = x.build();
    const Shape extents = size.resolve(v->shape.size() >= 2 ? v->shape.size() - 2 : 1, "interpolate", "size");
    return detail::interpolate<typename E::value_type>(v, &extents, nullptr, mode, align_corners);
}
/// interpolate by scale factors: lt::interpolate(x, lt::Scale(2.0), lt::Interpolation::Linear).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto interpolate(const E& x, const Scale& scale, Interpolation mode = Interpolation::Nearest, bool align_corners = false) {
    return detail::interpolate<typename E::value_type>(x.build(), nullptr, &scale, mode, align_corners);
}

}  // namespace lazytensor
