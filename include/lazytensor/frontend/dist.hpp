// SPDX-License-Identifier: MIT
// lt::dist: processes started by mpirun working as one group (docs/distributed.md). Collectives
// are lazy like every op: a training step's forward pass, backward pass, gradient averaging and
// update stay one realize, each collective a schedule item of its own (items/collective_item.hpp)
// that is in flight while the items after it run.
//
// The transport is MPI where the program was built with it (the CMake target
// lazytensor::distributed, or LAZYTENSOR_MPI=1: dist/mpi.hpp); without it, or started without a
// launcher, the group is this process alone and every collective is its input (no node at all),
// so one binary runs alone or under mpirun.
//
// Every rank must realize the same collectives, in the same order and in the same realize calls
// (a realize that reads a collective's value counts: item(), printing). Ranks that do not get a
// DistributedError on every rank before any data moves; a rank that never arrives is reported
// after LAZYTENSOR_DIST_TIMEOUT seconds (300), and the job ends.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../core/communicator.hpp"
#include "../ir/collective.hpp"
#include "movement.hpp"
#include "tensor.hpp"

namespace lazytensor::dist {

using detail::Transport;

/// A group of processes: the world of a launcher's ranks (init). Cheap to copy.
class Group {
public:
    /// This process's rank: 0 .. size() - 1.
    int rank() const { return comm().rank(); }
    /// The number of processes (1 without a launcher).
    int size() const { return comm().size(); }
    /// Mpi or Single.
    Transport transport() const { return transport_; }
    /// "MPI (Open MPI v4.1.4), rank 1 of 2".
    std::string describe() const { return comm().describe(); }
    /// Returns once every rank has called it.
    void barrier() const { comm().barrier(); }
    friend bool operator==(const Group& a, const Group& b) { return a.id_ == b.id_; }
    friend bool operator!=(const Group& a, const Group& b) { return a.id_ != b.id_; }

    /// (The group's number in the engine's registry: 0 is the world.)
    int id() const { return id_; }

private:
    friend Group init(Transport);
    Group(int id, Transport transport) : id_(id), transport_(transport) {}
    detail::Communicator& comm() const { return *detail::communicator(id_); }

    int id_ = 0;
    Transport transport_ = Transport::Single;
};

/// Connects this process to the others a launcher started (once per process; later calls
/// return the same group). Auto (or LAZYTENSOR_DIST=auto) is MPI where a launcher's variables
/// are set (mpirun's OMPI_COMM_WORLD_SIZE, Hydra's or Slurm's PMI_SIZE, PMIX_RANK), else a group
/// of one. Error where MPI is asked for (or a launcher started the process) but the program
/// was built without it, and after finalize().
inline Group init(Transport transport = Transport::Auto) {
    detail::init_world(transport);
    return Group(0, detail::transports().chosen);
}

/// The group init() made (calling init() on first use). Error after finalize().
inline Group world() {
    {
        detail::TransportRegistry& r = detail::transports();
        std::lock_guard<std::mutex> lock(r.mutex);
        if (r.finalized)
            lazytensor::detail::fail<Error>("lt::dist: the group was used after lt::dist::finalize(); a process finalizes once, at its end");
    }
    return init();
}

///@{
/// Ends MPI where lazytensor started it (else leaves that to the program); collectives realized
/// afterwards are errors. Optional: without it MPI is finalized as the program exits.
inline void finalize() {
    detail::TransportRegistry& r = detail::transports();
    std::shared_ptr<detail::Communicator> world;
    {
        std::lock_guard<std::mutex> lock(r.mutex);
        if (r.finalized || !r.world) {
            r.finalized = true;
            return;
        }
        r.finalized = true;
        world = r.world;
    }
    world->finalize();
}

/// This process's rank in world(): 0 .. size() - 1.
inline int rank() { return world().rank(); }
/// The number of ranks in world(); 1 without a launcher.
inline int size() { return world().size(); }
/// This rank's index among the ranks of its machine: pick a GPU with it.
inline int local_rank() { return detail::communicator(world().id())->local_rank(); }
/// Waits until every rank of world() has arrived (world().barrier()).
inline void barrier() { world().barrier(); }

namespace detail {

using lazytensor::detail::CollectiveOp;
using lazytensor::detail::NodePtr;
namespace g = lazytensor::detail::graph;

/// Collective `op` of x along `axis` over `group`: the node on x's axis moved first, moved back.
inline NodePtr collective(CollectiveOp op, NodePtr x, int axis, int root, const Group& group, const char* api) {
    const int size = group.size();
    if (root < 0 || root >= size)
        lazytensor::detail::fail<ValueError>(api, ": root ", root, " is not a rank of the group (ranks 0 to ", size - 1, ")");
    const bool along_axis = op == CollectiveOp::Gather || op == CollectiveOp::ReduceScatter;
    int a = 0;
    if (along_axis) {
        if (x->shape.empty()) lazytensor::detail::fail<ShapeError>(api, ": needs at least one axis, got a scalar");
        a = lazytensor::detail::normalize_axis(axis, x->shape.size(), api, x->shape);
        if (op == CollectiveOp::ReduceScatter && x->shape[static_cast<std::size_t>(a)] % size != 0)
            lazytensor::detail::fail<ShapeError>(api, ": the extent ", x->shape[static_cast<std::size_t>(a)], " of axis ", axis,
                                                 " (shape ", x->shape, ") must divide by the group's size ", size);
    }
    if (x->dtype == DType::Bool && (op == CollectiveOp::Sum || op == CollectiveOp::ReduceScatter))
        lazytensor::detail::fail<DTypeError>(api, ": cannot sum bool tensors (shape ", x->shape,
                                             "); cast to an integer type first");
    if (size == 1) return x;  // a group of one: the collective is its input
    if (is_reduced_float(x->dtype) && !(op == CollectiveOp::Gather || op == CollectiveOp::Broadcast))
        return g::cast(collective(op, g::cast(x, DType::Float32), axis, root, group, api), x->dtype);
    auto move = [&](const NodePtr& t, int from, int to) {
        if (from == to) return t;
        std::vector<int> rest;
        for (int k = 0; k < static_cast<int>(t->shape.size()); ++k)
            if (k != from) rest.push_back(k);
        rest.insert(rest.begin() + to, from);
        return g::permute(t, Axes(rest), api);
    };
    const NodePtr moved = along_axis ? move(x, a, 0) : x;
    const NodePtr out = g::collective(op, moved, group.id(), size, root, api);
    return along_axis ? move(out, 0, a) : out;
}

template <class E>
using value_t = typename E::value_type;

template <class E>
NodePtr node_of(const E& x) {
    return Tensor<value_t<E>>(x).node_ptr();
}

}  // namespace detail

/// The element-wise sum of x over the ranks, the same on every rank. x must have one dtype and
/// shape on every rank. Integers wrap as they do in C; float16 is summed in float32 and rounded
/// once; bool is a DTypeError (cast first).
template <class E>
Tensor<detail::value_t<E>> all_sum(const E& x, const Group& group = world()) {
    return Tensor<detail::value_t<E>>(
        detail::collective(detail::CollectiveOp::Sum, detail::node_of(x), 0, 0, group, "lt::dist::all_sum"));
}

/// The element-wise mean over the ranks: all_sum(x) / size(), the division fused into what reads
/// it. Integers are summed in int64 (uint64 in uint64) and averaged in float32, as lt::mean.
template <class E>
Tensor<lazytensor::detail::mean_t<detail::value_t<E>>> all_mean(const E& x, const Group& group = world()) {
    using T = detail::value_t<E>;
    using R = lazytensor::detail::mean_t<T>;
    namespace g = lazytensor::detail::graph;
    detail::NodePtr v = detail::node_of(x);
    const char* api = "lt::dist::all_mean";
    if (v->dtype == DType::Bool)
        lazytensor::detail::fail<DTypeError>(api, ": cannot average bool tensors (shape ", v->shape,
                                             "); cast to a floating type first");
    if (!is_floating(v->dtype) && v->dtype != DType::UInt64) v = g::cast(v, DType::Int64);  // uint64: past INT64_MAX
    detail::NodePtr sum = detail::collective(detail::CollectiveOp::Sum, v, 0, 0, group, api);
    const DType r = dtype_of<R>();
    if (sum->dtype != r) sum = g::cast(sum, r);
    if (group.size() == 1) return Tensor<R>(sum);
    return Tensor<R>(g::binary(BinaryOp::Div, sum, Scalar::of<double>(static_cast<double>(group.size()))));
}

/// The element-wise largest value over the ranks (for bool: whether any rank has true).
template <class E>
Tensor<detail::value_t<E>> all_max(const E& x, const Group& group = world()) {
    return Tensor<detail::value_t<E>>(
        detail::collective(detail::CollectiveOp::Max, detail::node_of(x), 0, 0, group, "lt::dist::all_max"));
}

/// The element-wise smallest value over the ranks (for bool: whether every rank has true).
template <class E>
Tensor<detail::value_t<E>> all_min(const E& x, const Group& group = world()) {
    return Tensor<detail::value_t<E>>(
        detail::collective(detail::CollectiveOp::Min, detail::node_of(x), 0, 0, group, "lt::dist::all_min"));
}

/// Every rank's x concatenated along `axis` in rank order (that axis size() times longer). x
/// must have one shape on every rank. Any dtype.
template <class E>
Tensor<detail::value_t<E>> all_gather(const E& x, int axis = 0, const Group& group = world()) {
    return Tensor<detail::value_t<E>>(
        detail::collective(detail::CollectiveOp::Gather, detail::node_of(x), axis, 0, group, "lt::dist::all_gather"));
}

/// Rank `root`'s x on every rank (the others' x gives only dtype and shape). Any dtype.
/// ValueError for a root that is not a rank.
template <class E>
Tensor<detail::value_t<E>> broadcast(const E& x, int root = 0, const Group& group = world()) {
    return Tensor<detail::value_t<E>>(
        detail::collective(detail::CollectiveOp::Broadcast, detail::node_of(x), 0, root, group, "lt::dist::broadcast"));
}

/// The sum over the ranks, cut along `axis` into size() equal pieces, of which rank r keeps the
/// r-th. ShapeError unless the axis's extent divides by size().
template <class E>
Tensor<detail::value_t<E>> reduce_scatter(const E& x, int axis = 0, const Group& group = world()) {
    return Tensor<detail::value_t<E>>(detail::collective(detail::CollectiveOp::ReduceScatter, detail::node_of(x), axis, 0,
                                                         group, "lt::dist::reduce_scatter"));
}

/// all_mean of each tensor.
template <class T>
std::vector<Tensor<lazytensor::detail::mean_t<T>>> all_mean(const std::vector<Tensor<T>>& xs, const Group& group = world()) {
    std::vector<Tensor<lazytensor::detail::mean_t<T>>> out;
    out.reserve(xs.size());
    for (const Tensor<T>& x : xs) out.push_back(all_mean(x, group));
    return out;
}

/// The mean of each gradient over the ranks, as data-parallel training needs it (PyTorch DDP's
/// averaging): the gradients are packed into buckets of about `bucket_bytes`, last parameter
/// first (the backward pass computes those first), and each bucket is one all-reduce, which
/// starts as soon as its gradients are computed while the rest of the backward pass runs in the
/// same realize. Each result is a view of its bucket's average. Floating tensors only.
template <class T>
std::vector<Tensor<T>> average_gradients(const std::vector<Tensor<T>>& grads, const Group& group = world(),
                                         std::size_t bucket_bytes = std::size_t(25) << 20) {
    static_assert(lazytensor::detail::is_floating_v<T>, "lt::dist::average_gradients: gradients are floating tensors");
    std::vector<Tensor<T>> out(grads.size());
    if (group.size() == 1) {
        for (std::size_t i = 0; i < grads.size(); ++i) out[i] = grads[i];
        return out;
    }
    std::size_t i = grads.size();
    while (i > 0) {
        // [first, last): the bucket, filled from the end.
        const std::size_t last = i;
        std::size_t bytes = 0;
        while (i > 0 && (i == last || bytes + static_cast<std::size_t>(grads[i - 1].numel()) * sizeof(T) <= bucket_bytes)) {
            bytes += static_cast<std::size_t>(grads[i - 1].numel()) * sizeof(T);
            --i;
        }
        const std::size_t first = i;
        std::vector<Tensor<T>> flat;
        for (std::size_t k = first; k < last; ++k) flat.push_back(grads[k].reshape({-1}));
        const Tensor<T> mean = all_mean(flat.size() == 1 ? flat[0] : lazytensor::concat(flat, 0), group);
        std::int64_t at = 0;
        for (std::size_t k = first; k < last; ++k) {
            const std::int64_t n = grads[k].numel();
            out[k] = mean.slice(0, at, at + n).reshape(grads[k].shape());
            at += n;
        }
    }
    return out;
}

}  // namespace lazytensor::dist
