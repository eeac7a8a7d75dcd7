// SPDX-License-Identifier: MIT
// Tensors split across devices: lt::shard(x, {dev0, dev1}, axis) gives a ShardedTensor whose
// slices along `axis` live on the devices, in proportion to per-device weights (by default each
// device's measured memory bandwidth, as VexCL partitions). Element-wise expressions run on
// every device at once, one shard each; reductions over the split axis combine the per-device
// partials (small ones on the host) and copy the total to every device (an all-reduce); a matmul
// with a split left operand and a replicated right one is one product per device. Gathering
// onto one device is explicit: s.gather(device).
//
// lt::replicate(x, devices) puts a whole copy on each device (weights, biases): a replicated
// operand meets a split one slice by slice (broadcast axes as they are, full axes sliced).
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "composites.hpp"
#include "creation.hpp"
#include "functions.hpp"
#include "movement.hpp"
#include "nn.hpp"

namespace lazytensor {

template <class T>
class ShardedTensor;

namespace detail {

template <class S>
struct is_sharded : std::false_type {};
template <class T>
struct is_sharded<ShardedTensor<T>> : std::true_type {};
template <class S>
inline constexpr bool is_sharded_v = is_sharded<std::decay_t<S>>::value;

inline std::string device_list(const std::vector<Device>& devices) {
    std::string out = "{";
    for (std::size_t i = 0; i < devices.size(); ++i) out += (i ? ", " : "") + devices[i].str();
    return out + "}";
}

/// A device's memory bandwidth in GB/s, measured once (the best of three realizes of a 64 MiB
/// scale after a warm-up) and kept; lt::shard's default weights.
inline double measured_bandwidth(Device d) {
    static std::mutex mutex;
    static std::map<std::pair<int, int>, double> measured;
    const std::pair<int, int> key{static_cast<int>(d.kind), d.index};
    {
        std::lock_guard<std::mutex> lock(mutex);
        if (auto it = measured.find(key); it != measured.end()) return it->second;
    }
    const std::int64_t n = std::int64_t(1) << 24;
    Tensor<float> x = full<float>({n}, 1.0f, d);
    x.realize();
    double best = 0;
    for (int run = 0; run < 4; ++run) {
        const auto start = std::chrono::steady_clock::now();
        Tensor<float> y = x * 2.0f;
        y.realize();
        synchronize(d);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (run > 0) best = std::max(best, 8.0 * static_cast<double>(n) / std::max(s, 1e-9) / 1e9);
    }
    std::lock_guard<std::mutex> lock(mutex);
    return measured.emplace(key, best).first->second;
}

/// The default weights: measured bandwidth, averaged over devices of one name (identical devices
/// get identical shares, not shares that differ by measurement noise).
inline std::vector<double> bandwidth_weights(const std::vector<Device>& devices) {
    const std::vector<DeviceInfo> all = lazytensor::devices();
    auto name_of = [&](Device d) {
        for (const DeviceInfo& info : all)
            if (info.device == d) return info.name;
        return d.str();
    };
    std::vector<double> w;
    for (Device d : devices) w.push_back(measured_bandwidth(d));
    std::vector<double> out(w.size());
    for (std::size_t i = 0; i < devices.size(); ++i) {
        double sum = 0;
        int count = 0;
        for (std::size_t j = 0; j < devices.size(); ++j)
            if (name_of(devices[j]) == name_of(devices[i])) sum += w[j], ++count;
        out[i] = sum / count;
    }
    return out;
}

/// Extents along the split axis, in proportion to `weights`, summing to `total`.
inline std::vector<std::int64_t> split_extents(std::int64_t total, const std::vector<double>& weights) {
    double sum = 0;
    for (double w : weights) sum += w;
    std::vector<std::int64_t> out;
    double before = 0;
    std::int64_t start = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        before += weights[i];
        const std::int64_t end = i + 1 == weights.size() ? total
                                                         : std::min<std::int64_t>(total, std::llround(static_cast<double>(total) * before / sum));
        out.push_back(std::max<std::int64_t>(0, end - start));
        start = std::max(start, end);
    }
    return out;
}

/// Realizes every tensor, each on its device: OpenCL ones first (a realize there only enqueues,
/// so their devices run while the host computes its own).
template <class T>
void realize_all(std::vector<Tensor<T>>& tensors) {
    for (Tensor<T>& t : tensors)
        if (t.device().kind != Device::Kind::Host) {
            t.realize();
            flush(t.device());  // a driver may hold queued work until a flush or a wait
        }
    for (Tensor<T>& t : tensors)
        if (t.device().kind == Device::Kind::Host) t.realize();
}

/// `x` on `device` as a tensor of its own: a copy even where x is there already (a shard or a
/// replica must not alias the tensor it came from, which an assign could change).
template <class T>
Tensor<T> copy_onto(const Tensor<T>& x, Device device) {
    return x.device() == device ? Tensor<T>(clone(x)) : x.to(device);
}

}  // namespace detail

/// A tensor split along one axis over several devices (axis() >= 0), or replicated: a whole copy
/// on each device (axis() == -1). Shard i lives on devices()[i]. Lazy like Tensor: operations
/// build one expression per device; realize() computes them all, each on its own device. (A
/// reduction over the split axis is the exception: it computes the partials when called.)
template <class T>
class ShardedTensor {
public:
    using value_type = T;  ///< the element type

    /// No shards and no devices: a handle to assign to later.
    ShardedTensor() = default;

    /// From shards made elsewhere: split along `axis` (they must agree on every other extent),
    /// or replicated (axis -1: they must have one shape). One shard per device, devices distinct.
    ShardedTensor(std::vector<Tensor<T>> shards, int axis) : shards_(std::move(shards)), axis_(axis) {
        const char* op = "ShardedTensor";
        if (shards_.empty()) detail::fail<ValueError>(op, ": needs at least one shard");
        shape_ = shards_[0].shape();
        if (axis_ != -1 && (axis_ < 0 || axis_ >= static_cast<int>(shape_.size())))
            detail::fail<AxisError>(op, ": split axis ", axis_, " is out of range for shards of shape ", shape_);
        for (std::size_t i = 0; i < shards_.size(); ++i) {
            const Device d = shards_[i].device();
            for (std::size_t j = 0; j < i; ++j)
                if (devices_[j] == d) detail::fail<ValueError>(op, ": device ", d, " holds two shards (", j, " and ", i, ")");
            devices_.push_back(d);
            const Shape& s = shards_[i].shape();
            bool fits = s.size() == shape_.size();
            for (std::size_t k = 0; fits && k < s.size(); ++k) fits = static_cast<int>(k) == axis_ || s[k] == shape_[k];
            if (!fits)
                detail::fail<ShapeError>(op, ": shard ", i, " has shape ", s, " but shard 0 has shape ", shards_[0].shape(),
                                         axis_ < 0 ? "; replicated shards must have one shape"
                                                   : "; shards may differ only along the split axis");
            if (axis_ >= 0 && i > 0) shape_[static_cast<std::size_t>(axis_)] += s[static_cast<std::size_t>(axis_)];
        }
    }

    /// The whole tensor's shape.
    const Shape& shape() const { return shape_; }
    /// The whole tensor's number of dimensions.
    std::size_t ndim() const { return shape_.size(); }
    /// The split axis, or -1 for a replicated tensor.
    int axis() const { return axis_; }
    /// Whether every device holds the whole tensor (axis -1).
    bool replicated() const { return axis_ < 0; }
    /// The devices, one per shard, in order.
    const std::vector<Device>& devices() const { return devices_; }
    /// The shards, one plain Tensor per device, in the devices' order.
    const std::vector<Tensor<T>>& shards() const { return shards_; }
    /// Device i's part as a plain Tensor (std::out_of_range past the last).
    const Tensor<T>& shard(std::size_t i) const { return shards_.at(i); }
    /// Each shard's extent along the split axis (every shard's whole extent when replicated).
    std::vector<std::int64_t> extents() const {
        std::vector<std::int64_t> out;
        for (const Tensor<T>& s : shards_) out.push_back(axis_ < 0 ? numel(s.shape()) : s.shape()[static_cast<std::size_t>(axis_)]);
        return out;
    }

    /// Computes every shard, each on its device: OpenCL shards first (they only enqueue, so their
    /// devices run while the host computes its shard). On an error the shards already computed
    /// stay computed and the others stay lazy; all stay usable.
    ShardedTensor realize() const {
        std::vector<Tensor<T>> shards = shards_;  // (handles: their nodes are realized in place)
        detail::realize_all(shards);
        return *this;
    }
    /// Waits for every shard's device.
    void synchronize() const {
        for (Device d : devices_) lazytensor::synchronize(d);
    }

    /// The whole tensor on `device`: the shards copied there and joined (a replicated tensor: one
    /// copy, the one already on `device` if there is one).
    Tensor<T> gather(Device device) const {
        if (axis_ < 0) {
            for (const Tensor<T>& s : shards_)
                if (s.device() == device) return s;
            return shards_[0].to(device);
        }
        std::vector<Tensor<T>> parts = shards_;
        detail::realize_all(parts);  // every device computes its shard at once
        for (Tensor<T>& p : parts) p = p.to(device);
        return lazytensor::concat(parts, axis_);
    }
    /// The elements, row-major (gathered on the host).
    std::vector<T> to_vector() const { return gather(Device::host()).to_vector(); }
    /// The value of a one-element tensor (a replicated total: lt::sum(s).item()). ValueError
    /// for more elements.
    T item() const { return gather(devices_.empty() ? Device::host() : devices_[0]).item(); }

    /// Element type conversion, shard by shard.
    template <class U>
    ShardedTensor<U> cast() const {
        return map([](const Tensor<T>& s) { return Tensor<U>(s.template cast<U>()); });
    }

    /// f(shard) for every shard, same split axis (f must keep the rank).
    template <class F>
    auto map(F&& f) const {
        using R = typename std::decay_t<decltype(f(shards_[0]))>::value_type;
        std::vector<Tensor<R>> out;
        for (const Tensor<T>& s : shards_) out.push_back(Tensor<R>(f(s)));
        return ShardedTensor<R>(std::move(out), axis_);
    }

private:
    std::vector<Tensor<T>> shards_;
    std::vector<Device> devices_;
    int axis_ = -1;
    Shape shape_;
};

/// `x` split along `axis` over `devices` (distinct), shard i getting a share of the axis in
/// proportion to weights[i] (default: each device's measured memory bandwidth). A weight of 0
/// gives an empty shard. Copies the slices now (x is computed first on its own device).
/// ValueError for no devices, a repeated device, a weight list of another length, a negative or
/// non-finite weight, or weights that are all 0; AxisError for a bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
ShardedTensor<typename E::value_type> shard(const E& x, const std::vector<Device>& devices, int axis = 0,
                                            std::vector<double> weights = {}) {
    using T = typename E::value_type;
    const char* op = "lt::shard";
    Tensor<T> whole(x);
    if (devices.empty()) detail::fail<ValueError>(op, ": needs at least one device");
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, whole.shape().size(), op, whole.shape()));
    for (Device d : devices) detail::backend_for(d);
    if (weights.empty()) {
        weights = detail::bandwidth_weights(devices);
    } else if (weights.size() != devices.size()) {
        detail::fail<ValueError>(op, ": ", weights.size(), " weights for ", devices.size(), " devices ",
                                 detail::device_list(devices), "; give one weight per device, or none");
    }
    double total = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
        if (!(weights[i] >= 0) || !std::isfinite(weights[i]))
            detail::fail<ValueError>(op, ": weight ", i, " (for ", devices[i], ") is ", weights[i],
                                     "; weights must be finite and not negative");
        total += weights[i];
    }
    if (!(total > 0)) detail::fail<ValueError>(op, ": the weights are all 0; at least one device must get a share");
    const std::vector<std::int64_t> extents = detail::split_extents(whole.shape()[k], weights);
    whole.realize();
    std::vector<Tensor<T>> shards;
    std::int64_t start = 0;
    for (std::size_t i = 0; i < devices.size(); ++i) {
        shards.push_back(detail::copy_onto(whole.slice(static_cast<int>(k), start, start + extents[i]), devices[i]));
        start += extents[i];
    }
    detail::realize_all(shards);
    return ShardedTensor<T>(std::move(shards), static_cast<int>(k));
}

/// A whole copy of `x` on each of `devices` (weights, biases: operands that every shard of a
/// split tensor needs), copied now. ValueError for no devices or a repeated device.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
ShardedTensor<typename E::value_type> replicate(const E& x, const std::vector<Device>& devices) {
    using T = typename E::value_type;
    if (devices.empty()) detail::fail<ValueError>("lt::replicate: needs at least one device");
    Tensor<T> whole(x);
    whole.realize();
    std::vector<Tensor<T>> copies;
    for (Device d : devices) copies.push_back(detail::copy_onto(whole, d));
    detail::realize_all(copies);
    return ShardedTensor<T>(std::move(copies), -1);
}

namespace detail {

/// The layout operands of an element-wise op agree on: the first split operand's, if any.
struct ShardLayout {
    std::vector<Device> devices;
    int axis = -1;        // in the result's shape (right-aligned broadcasting)
    std::size_t rank = 0;  // the result's
    std::vector<std::int64_t> starts, extents;
};

template <class S>
void join_layout(ShardLayout& layout, const S& s, const char* op) {
    if constexpr (is_sharded_v<S>) {
        if (layout.devices.empty()) layout.devices = s.devices();
        if (s.devices() != layout.devices)
            fail<DeviceError>(op, ": operands are on different devices (", device_list(layout.devices), " and ",
                              device_list(s.devices()), "); shard or replicate them over the same devices");
        layout.rank = std::max(layout.rank, s.ndim());
    } else {
        (void)s;
    }
}

template <class S>
void join_split(ShardLayout& layout, const S& s, const char* op) {
    if constexpr (is_sharded_v<S>) {
        if (s.replicated()) return;
        const int axis = s.axis() + static_cast<int>(layout.rank - s.ndim());
        std::vector<std::int64_t> extents = s.extents();
        if (layout.axis < 0) {
            layout.axis = axis;
            layout.extents = extents;
            std::int64_t start = 0;
            for (std::int64_t e : extents) layout.starts.push_back(start), start += e;
        } else if (axis != layout.axis || extents != layout.extents) {
            fail<DeviceError>(op, ": operands are split differently (along axis ", layout.axis, " of the result in parts ",
                              Shape(layout.extents.begin(), layout.extents.end()), ", and along axis ", axis, " in parts ",
                              Shape(extents.begin(), extents.end()), "); gather one and shard it like the other");
        }
    } else {
        (void)s;
    }
}

/// Operand `s` as shard i sees it: a split operand's own shard; a replicated one sliced to the
/// shard's part of the split axis where it spans that axis (where it broadcasts, whole); a
/// scalar as it is.
template <class S>
decltype(auto) shard_operand(const S& s, const ShardLayout& layout, std::size_t i) {
    if constexpr (is_sharded_v<S>) {
        using T = typename std::decay_t<S>::value_type;
        if (!s.replicated() || layout.axis < 0) return Tensor<T>(s.shard(i));
        const int axis = layout.axis - static_cast<int>(layout.rank - s.ndim());
        if (axis < 0 || s.shape()[static_cast<std::size_t>(axis)] == 1) return Tensor<T>(s.shard(i));
        return s.shard(i).slice(axis, layout.starts[i], layout.starts[i] + layout.extents[i]);
    } else {
        return s;
    }
}

/// f applied shard by shard to operands of which at least one is sharded (the others scalars).
template <class F, class... S>
auto per_shard(const char* op, F&& f, const S&... operands) {
    ShardLayout layout;
    (join_layout(layout, operands, op), ...);
    (join_split(layout, operands, op), ...);
    using R = typename std::decay_t<decltype(f(shard_operand(operands, layout, 0)...))>::value_type;
    std::vector<Tensor<R>> out;
    for (std::size_t i = 0; i < layout.devices.size(); ++i) out.push_back(Tensor<R>(f(shard_operand(operands, layout, i)...)));
    return ShardedTensor<R>(std::move(out), layout.axis);
}

template <class L, class R>
inline constexpr bool is_sharded_operands_v =
    (is_sharded_v<L> && (is_sharded_v<R> || is_scalar_v<R>)) || (is_scalar_v<L> && is_sharded_v<R>);

/// A sharded tensor never meets a plain tensor implicitly: say how to make the plain one fit.
template <class L, class R>
inline constexpr bool is_sharded_and_tensor_v =
    (is_sharded_v<L> && is_tensor_like_v<std::decay_t<R>>) || (is_tensor_like_v<std::decay_t<L>> && is_sharded_v<R>);

}  // namespace detail

#define LAZYTENSOR_X(name, fn, rule)                                                             \
    template <class T>                                                                           \
    auto fn(const ShardedTensor<T>& x) {                                                         \
        return detail::per_shard(#fn, [](const auto& s) { return lazytensor::fn(s); }, x);       \
    }
///@{
/// Element-wise functions and operators of sharded tensors, one per entry of the op list: shard by
/// shard, each on its device. Split operands must be split alike; replicated ones are sliced to
/// fit; scalars go to every shard.
LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
LAZYTENSOR_X(, sigmoid, ) LAZYTENSOR_X(, silu, ) LAZYTENSOR_X(, gelu, ) LAZYTENSOR_X(, sign, )
LAZYTENSOR_X(, softplus, )
///@}
#undef LAZYTENSOR_X

///@{
/// The composites that take scalar arguments, shard by shard.
template <class T>
auto softplus(const ShardedTensor<T>& x, double beta) {
    return detail::per_shard("softplus", [beta](const auto& s) { return lazytensor::softplus(s, beta); }, x);
}
template <class T>
auto elu(const ShardedTensor<T>& x, double alpha = 1.0) {
    return detail::per_shard("elu", [alpha](const auto& s) { return lazytensor::elu(s, alpha); }, x);
}
template <class T>
auto leaky_relu(const ShardedTensor<T>& x, double negative_slope = 0.01) {
    return detail::per_shard("leaky_relu", [negative_slope](const auto& s) { return lazytensor::leaky_relu(s, negative_slope); }, x);
}
///@}
/// clamp of a sharded tensor between two scalars.
template <class T, class Lo, class Hi, std::enable_if_t<detail::is_scalar_v<Lo> && detail::is_scalar_v<Hi>, int> = 0>
auto clamp(const ShardedTensor<T>& x, Lo lo, Hi hi) {
    return detail::per_shard("clamp", [lo, hi](const auto& s) { return lazytensor::clamp(s, lo, hi); }, x);
}

#define LAZYTENSOR_X(name, fn, rule)                                                                      \
    template <class L, class R, std::enable_if_t<detail::is_sharded_operands_v<L, R>, int> = 0>           \
    auto fn(const L& a, const R& b) {                                                                     \
        return detail::per_shard(#fn, [](const auto& x, const auto& y) { return lazytensor::fn(x, y); }, a, b); \
    }
///@{
/// Element-wise binary functions of sharded tensors (and scalars), shard by shard.
LAZYTENSOR_PUBLIC_BINARY_OPS(LAZYTENSOR_X)
///@}
#undef LAZYTENSOR_X

#define LAZYTENSOR_X(symbol, name)                                                                                 \
    template <class L, class R, std::enable_if_t<detail::is_sharded_operands_v<L, R>, int> = 0>                    \
    auto operator symbol(const L& a, const R& b) {                                                                 \
        return detail::per_shard("operator" #symbol, [](const auto& x, const auto& y) { return x symbol y; }, a, b); \
    }                                                                                                              \
    template <class L, class R, std::enable_if_t<detail::is_sharded_and_tensor_v<L, R>, int> = 0>                  \
    void operator symbol(const L&, const R&) {                                                                     \
        static_assert(!detail::is_sharded_and_tensor_v<L, R>,                                                      \
                      "lazytensor: a ShardedTensor and a Tensor do not combine; make the Tensor sharded too: "     \
                      "lt::replicate(t, s.devices()) or lt::shard(t, s.devices(), axis)");                         \
    }
///@{
/// Operators of sharded tensors (and scalars), shard by shard. A sharded tensor and a plain Tensor
/// do not combine: that does not compile, and the message says to replicate or shard the tensor.
LAZYTENSOR_OPERATORS(LAZYTENSOR_X)
///@}
// % of sharded tensors, as the operators above (left out of the reference: Doxygen would merge
// it with lt::remainder's %).
/// \cond
LAZYTENSOR_X(%, Remainder)
/// \endcond
#undef LAZYTENSOR_X

/// Element-wise negation, shard by shard.
template <class T>
auto operator-(const ShardedTensor<T>& x) {
    return detail::per_shard("operator-", [](const auto& s) { return -s; }, x);
}

/// where(cond, x, y) of sharded operands (x or y may be scalars).
template <class C, class X, class Y,
          std::enable_if_t<detail::is_sharded_v<C> && (detail::is_sharded_v<X> || detail::is_scalar_v<X>) &&
                               (detail::is_sharded_v<Y> || detail::is_scalar_v<Y>),
                           int> = 0>
auto where(const C& cond, const X& x, const Y& y) {
    return detail::per_shard("where", [](const auto& c, const auto& a, const auto& b) { return lazytensor::where(c, a, b); },
                             cond, x, y);
}

/// f(shard i of each operand, ...) on every device i: split operands give their shards,
/// replicated ones their whole copy, scalars themselves. For functions that act on each slice
/// of the split axis independently (a row softmax of a batch split by rows, an MLP layer); the
/// result is split along the first split operand's axis (replicated if none is split), and its
/// shards must agree on every other extent. DeviceError for operands over other devices or split
/// differently.
template <class F, class... S>
auto map_shards(F&& f, const S&... operands) {
    static_assert((detail::is_sharded_v<S> || ...), "lt::map_shards needs at least one ShardedTensor operand");
    const char* op = "map_shards";
    detail::ShardLayout layout;
    (detail::join_layout(layout, operands, op), ...);
    int axis = -1;
    std::vector<std::int64_t> extents;
    auto join = [&](const auto& s) {
        if constexpr (detail::is_sharded_v<decltype(s)>) {
            if (s.replicated()) return;
            if (axis < 0) {
                axis = s.axis();
                extents = s.extents();
            } else if (s.axis() != axis || s.extents() != extents) {
                detail::fail<DeviceError>(op, ": operands are split differently (along axis ", axis, " in parts ",
                                          Shape(extents.begin(), extents.end()), ", and along axis ", s.axis(), " in parts ",
                                          Shape(s.extents().begin(), s.extents().end()),
                                          "); gather one and shard it like the other");
            }
        }
    };
    (join(operands), ...);
    auto part = [](const auto& s, std::size_t i) {
        if constexpr (detail::is_sharded_v<decltype(s)>)
            return s.shard(i);
        else
            return s;
    };
    using R = typename std::decay_t<decltype(f(part(operands, 0)...))>::value_type;
    std::vector<Tensor<R>> out;
    for (std::size_t i = 0; i < layout.devices.size(); ++i) out.push_back(Tensor<R>(f(part(operands, i)...)));
    if (axis >= static_cast<int>(out[0].shape().size()))
        detail::fail<ShapeError>(op, ": the result has shape ", out[0].shape(), ", without the split axis ", axis,
                                 " of the operands");
    return ShardedTensor<R>(std::move(out), axis);
}

/// a @ b, one product per device: a split along an axis other than its last (the contracted
/// one) with b replicated gives a result split alike; a replicated with b split along its last
/// axis gives a result split along the last axis. ValueError for a split contracted axis.
template <class A, class B>
auto matmul(const ShardedTensor<A>& a, const ShardedTensor<B>& b) {
    const char* op = "matmul";
    if (!a.replicated() && a.axis() == static_cast<int>(a.ndim()) - 1)
        detail::fail<ValueError>(op, ": the left operand is split along its last axis, which the product contracts; "
                                 "split it along another axis, or gather it");
    if (!b.replicated() && (b.ndim() < 2 || b.axis() != static_cast<int>(b.ndim()) - 1))
        detail::fail<ValueError>(op, ": the right operand is split along axis ", b.axis(), " of shape ", b.shape(),
                                 "; a product of sharded operands needs the left split along a row or batch axis and the "
                                 "right replicated, or the left replicated and the right split along its last axis");
    if (!a.replicated() && !b.replicated())
        detail::fail<ValueError>(op, ": both operands are split; replicate one of them");
    if (a.devices() != b.devices())
        detail::fail<DeviceError>(op, ": operands are on different devices (", detail::device_list(a.devices()), " and ",
                                  detail::device_list(b.devices()), "); shard or replicate them over the same devices");
    using R = promote_t<A, B>;
    std::vector<Tensor<R>> out;
    for (std::size_t i = 0; i < a.devices().size(); ++i) out.push_back(lazytensor::matmul(a.shard(i), b.shard(i)));
    // Where a's split axis lands: a's axes end the result's, but its last when b is 1-D (dropped).
    const int rank = static_cast<int>(out[0].shape().size());
    const int a_axes_kept = static_cast<int>(a.ndim()) - (b.ndim() == 1 ? 1 : 0);
    const int axis = !a.replicated() ? a.axis() + rank - a_axes_kept : b.replicated() ? -1 : rank - 1;
    return ShardedTensor<R>(std::move(out), axis);
}

///@{
/// softmax and log_softmax along an axis that is not split: shard by shard.
template <class T>
auto softmax(const ShardedTensor<T>& x, int axis = -1) {
    const int k = detail::normalize_axis(axis, x.ndim(), "softmax", x.shape());
    if (k == x.axis()) detail::fail<ValueError>("softmax: axis ", axis, " is the split axis; gather the tensor first");
    return detail::per_shard("softmax", [k](const auto& s) { return lazytensor::softmax(s, k); }, x);
}
template <class T>
auto log_softmax(const ShardedTensor<T>& x, int axis = -1) {
    const int k = detail::normalize_axis(axis, x.ndim(), "log_softmax", x.shape());
    if (k == x.axis()) detail::fail<ValueError>("log_softmax: axis ", axis, " is the split axis; gather the tensor first");
    return detail::per_shard("log_softmax", [k](const auto& s) { return lazytensor::log_softmax(s, k); }, x);
}
///@}

namespace detail {

/// Partials of at most this many elements are combined on the host (reduce_sharded).
inline constexpr std::int64_t kHostCombineElements = 1 << 16;

/// A reduction of a sharded tensor over `axes`. Where the split axis is kept, shard by shard (a
/// result split alike). Where it is reduced, the per-device partials are combined (on the host
/// when they have at most kHostCombineElements elements, else on the first device) and the
/// total is copied to every device: a replicated result (an all-reduce), which
/// the shards can go on using (x / x.sum()). `skip_empty`: an empty shard has no partial (max).
template <class T, class Partial, class Combine>
auto reduce_sharded(const ShardedTensor<T>& x, Axes axes, bool keepdim, const char* op, bool skip_empty,
                    Partial partial, Combine combine) {
    if (axes.empty()) axes = all_axes(x.ndim());  // (as for every reduction: an empty list is all axes)
    bool over_split = false;
    int kept_axis = x.axis();
    for (int& a : axes) {
        a = normalize_axis(a, x.ndim(), op, x.shape());
        if (a == x.axis()) over_split = true;
    }
    using R = typename std::decay_t<decltype(partial(x.shard(0), axes, keepdim))>::value_type;
    if (x.replicated() || !over_split) {
        if (!keepdim && !x.replicated())
            for (int a : axes)
                if (a < x.axis()) --kept_axis;
        std::vector<Tensor<R>> out;
        for (const Tensor<T>& s : x.shards()) out.push_back(Tensor<R>(partial(s, axes, keepdim)));
        return ShardedTensor<R>(std::move(out), x.replicated() ? -1 : kept_axis);
    }
    std::vector<Tensor<R>> partials;
    for (const Tensor<T>& s : x.shards())
        if (!skip_empty || s.shape()[static_cast<std::size_t>(x.axis())] > 0) partials.push_back(Tensor<R>(partial(s, axes, keepdim)));
    if (partials.empty()) fail<ValueError>(op, ": every shard is empty along the split axis, which it reduces");
    realize_all(partials);  // every device computes its partial at once
    if (lazytensor::numel(partials[0].shape()) <= kHostCombineElements) {
        // Small partials (a total, a few rows) meet on the host: one read from each device (the
        // devices finish their partials side by side meanwhile), the combine there, one write to
        // each device. Copies between devices and a kernel on the first device cost more than
        // the reduction saved (a sharded sum over two H200s took 0.77x one GPU's time that way).
        Tensor<R> total = partials[0].to(Device::host());
        for (std::size_t i = 1; i < partials.size(); ++i) total = Tensor<R>(combine(total, partials[i].to(Device::host())));
        total.realize();
        std::vector<Tensor<R>> copies;
        for (Device d : x.devices()) copies.push_back(total.to(d));
        return ShardedTensor<R>(std::move(copies), -1);
    }
    const Device home = x.devices()[0];
    Tensor<R> total = partials[0].to(home);
    for (std::size_t i = 1; i < partials.size(); ++i) total = Tensor<R>(combine(total, partials[i].to(home)));
    total.realize();
    std::vector<Tensor<R>> copies{total};  // (total is nobody else's: no copy on its own device)
    for (std::size_t i = 1; i < x.devices().size(); ++i) copies.push_back(total.to(x.devices()[i]));
    return ShardedTensor<R>(std::move(copies), -1);
}

}  // namespace detail

#define LAZYTENSOR_X(fn, combine_fn, skip_empty)                                                                   \
    template <class T>                                                                                            \
    auto fn(const ShardedTensor<T>& x, const Axes& axes, bool keepdim = false) {                                  \
        return detail::reduce_sharded(                                                                            \
            x, axes, keepdim, #fn, skip_empty,                                                                    \
            [](const Tensor<T>& s, const Axes& a, bool k) { return lazytensor::fn(s, a, k); },                    \
            [](const auto& p, const auto& q) { return lazytensor::combine_fn(p, q); });                           \
    }                                                                                                             \
    template <class T>                                                                                            \
    auto fn(const ShardedTensor<T>& x, int axis, bool keepdim = false) {                                          \
        return fn(x, Axes{axis}, keepdim);                                                                        \
    }                                                                                                             \
    template <class T>                                                                                            \
    auto fn(const ShardedTensor<T>& x) {                                                                          \
        return fn(x, detail::all_axes(x.ndim()), false);                                                          \
    }
///@{
/// Reductions of sharded tensors: lt::sum(s), lt::sum(s, axes, keepdim), lt::sum(s, axis,
/// keepdim), and likewise max, min, prod and mean. Over the split axis the per-device partials
/// are combined and the result is replicated on every device (see reduce_sharded); otherwise the
/// result is split alike. max and min skip empty shards.
LAZYTENSOR_X(sum, add, false)
LAZYTENSOR_X(prod, mul, false)
LAZYTENSOR_X(max, maximum, true)
LAZYTENSOR_X(min, minimum, true)
///@}
#undef LAZYTENSOR_X

///@{
/// The mean over `axes`: the sharded sum (half and bfloat16 in float32, integers in int64, as lt::mean sums)
/// divided by the count of reduced elements, per shard, by lt::mean's own division.
template <class T>
auto mean(const ShardedTensor<T>& x, const Axes& axes, bool keepdim = false) {
    using R = detail::mean_t<T>;
    std::int64_t count = 1;
    for (int a : axes.empty() ? detail::all_axes(x.ndim()) : axes)
        count *= x.shape()[static_cast<std::size_t>(detail::normalize_axis(a, x.ndim(), "mean", x.shape()))];
    auto divide = [count](const auto& total) {
        const detail::NodePtr t = total.build();
        return Tensor<R>(detail::graph::mean_of_sum(t, dtype_of<T>(), count, detail::supports_float64(t->device)));
    };
    if constexpr (detail::is_reduced_float_v<T>) return detail::per_shard("mean", divide, sum(x.template cast<float>(), axes, keepdim));
    else return detail::per_shard("mean", divide, sum(x, axes, keepdim));
}
template <class T>
auto mean(const ShardedTensor<T>& x, int axis, bool keepdim = false) {
    return mean(x, Axes{axis}, keepdim);
}
template <class T>
auto mean(const ShardedTensor<T>& x) {
    return mean(x, detail::all_axes(x.ndim()), false);
}
///@}

}  // namespace lazytensor
