// SPDX-License-Identifier: MIT
// The lazy graph. A Node is one operation on whole tensors; a Tensor is a shared handle to one.
// Once realized, a node turns into a Buffer node (a strided view of a device buffer) and drops
// its sources, so the graph behind it can be freed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <shared_mutex>
#include <vector>

#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "ops.hpp"

namespace lazytensor::detail {

// The node kinds: a small closed set (ug's LazyBuffer ops). Views are nodes too; they cost
// nothing at run time and are folded into the index math of the loads that read through them.
// A matmul ([batch..., m, k] x [batch..., k, n], batch axes already broadcast) is always a
// schedule item of its own, run by the backend's GEMM; so is a scan (an inclusive cumsum or
// cumprod of src[0] along axes[0], reduce_op Sum or Prod), run by the backend's scan.
//   - Slice: a strided window (per axis: source index = start + step * index); slices, flips
//     and negative steps are views like the others.
//   - Unfold: sliding windows along axes: params holds (axis, size, step, dilation) per
//     unfolded axis, and each one's window index is a new axis at the end, in that order. A
//     view; windows may overlap.
//   - Pad: the source surrounded by a constant; out-of-range reads are gated, never made.
//   - Index: no sources; its value at an index i is sum_k params[k] * i[k] (an iota along one
//     axis, or the linear index: counters for the random number generator).
//   - Gather: src[0] read along axis axes[0] at the positions src[1] holds (int64, clamped).
//   - Assign: writes src[1] into the buffer of src[0] (a realized tensor) in place, at the
//     region params describe; the result is the whole updated tensor.
//   - Sort: the positions (int64) of the first params[0] elements of each row of src[0] along
//     its last axis, in sorted order (descending where params[1] is 1), stably; NaN sorts after
//     every number (before them when descending).
//   - Linalg: a LAPACK routine over every matrix of src[0] (and src[1]), batch axes broadcast
//     already; params {op, flags, m, n, k}; its results packed along the last axis (ir/linalg.hpp).
//   - Collective: src[0] combined over the processes of a group (lt::dist), on its leading axis;
//     params {op, group, root} (ir/collective.hpp).
//   - Scatter: a copy of src[0] with src[2][j] written (params[0] == 1: added) at flat position
//     src[1][j] (int64) of its contiguous order, for every j; positions outside the tensor are
//     skipped. Run by the backend's scatter.
//   - Fft: src[0] transformed along up to three axes (ir/fft.hpp); params {kind, inverse, the
//     real length n (C2R; else 0), the scale's bits (a double), axes...}. Run by the backend's FFT.
#define LAZYTENSOR_NODE_KINDS(X) \
    X(Buffer, "buffer")          \
    X(Const, "const")            \
    X(Unary, "unary")            \
    X(Binary, "binary")          \
    X(Where, "where")            \
    X(Cast, "cast")              \
    X(Reduce, "reduce")          \
    X(Reshape, "reshape")        \
    X(Permute, "permute")        \
    X(Expand, "expand")          \
    X(Slice, "slice")            \
    X(Unfold, "unfold")          \
    X(Pad, "pad")                \
    X(Index, "index")            \
    X(Gather, "gather")          \
    X(Assign, "assign")          \
    X(Matmul, "matmul")          \
    X(Scan, "scan")              \
    X(Sort, "sort")              \
    X(Linalg, "linalg")            \
    X(Collective, "collective")  \
    X(Scatter, "scatter")          \
    X(Fft, "fft")

enum class NodeKind : std::uint8_t {
#define LAZYTENSOR_X(name, text) name,
    LAZYTENSOR_NODE_KINDS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

inline const char* kind_name(NodeKind k) {
    switch (k) {
#define LAZYTENSOR_X(name, text) \
    case NodeKind::name: return text;
        LAZYTENSOR_NODE_KINDS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return "?";
}

inline bool is_view(NodeKind k) {
    return k == NodeKind::Reshape || k == NodeKind::Permute || k == NodeKind::Expand || k == NodeKind::Slice ||
           k == NodeKind::Unfold;
}

struct Node;
using NodePtr = std::shared_ptr<Node>;
class StaticKernel;

/// Increasing numbers for the creation of nodes and the realizes that cut them.
inline std::uint64_t next_serial() {
    static std::atomic<std::uint64_t> serial{0};
    return serial.fetch_add(1, std::memory_order_relaxed) + 1;
}

struct Node : std::enable_shared_from_this<Node> {
    NodeKind kind = NodeKind::Const;
    DType dtype = DType::Float32;
    Device device;
    Shape shape;
    std::array<NodePtr, 3> src;
    std::uint8_t nsrc = 0;
    // Payload of the op.
    UnaryOp unary_op = UnaryOp::Neg;
    BinaryOp binary_op = BinaryOp::Add;
    ReduceOp reduce_op = ReduceOp::Sum;
    Scalar value;  // Const: the value; Pad: the padding (both passed to kernels as scalar parameters)
    Axes axes;     // Reduce: reduced axes, sorted; Permute: the permutation; Gather: the axis
    // Slice: (start, step) per axis; Pad: padding before each axis; Index: coefficient per axis;
    // Assign: offset, then one stride per axis of src[1] (the region written, in elements).
    SmallVector<std::int64_t, 12> params;
    // Realized state (kind == Buffer): element (offset, strides) of this tensor in `buffer`.
    BufferPtr buffer;
    std::int64_t offset = 0;
    Strides strides;
    // The compiled loop of the expression template this node was built from, if any.
    const StaticKernel* static_kernel = nullptr;
    // Reverse mode (autodiff/reverse.hpp): a view that passes no gradient (lt::stop_gradient);
    // whether a realized node was computed from other nodes (realize cut that graph), and when
    // (the serial number of the realize), so that a node created after it cannot be under it.
    bool stops_gradient = false;
    // The scheduler gives this node a buffer of its own, whatever reads it (its builder asks: a
    // padded input that windows read on a device where gated reads cost more than a pass).
    bool own_buffer = false;
    bool computed = false;
    std::uint64_t created = next_serial();
    std::uint64_t realized_at = 0;

    Node() = default;
    Node(const Node&) = default;
    Node& operator=(const Node&) = delete;

    // A lazy chain (x = x + 1 in a loop) can be millions of nodes deep: release it with a
    // loop, not with one nested destructor call per node. (The thread_local is a plain
    // pointer, so nodes of static tensors can be destroyed after the thread's locals.)
    ~Node() {
        static thread_local std::vector<NodePtr>* draining = nullptr;
        if (draining) {
            for (auto& s : src)
                if (s) draining->push_back(std::move(s));
            return;
        }
        std::vector<NodePtr> pending;
        for (auto& s : src)
            if (s) pending.push_back(std::move(s));
        if (pending.empty()) return;
        draining = &pending;
        while (!pending.empty()) {
            NodePtr n = std::move(pending.back());
            pending.pop_back();
        }  // n is released here; its own sources land in `pending`
        draining = nullptr;
    }

    bool realized() const { return kind == NodeKind::Buffer; }
    /// How many shared handles (tensors, expressions, consumer nodes) hold this node.
    long holders() const { return weak_from_this().use_count(); }
};

/// Realize turns lazy nodes into buffer nodes in place (make_realized) while other threads may
/// be building on them: graph builders read a node's op, sources and payload under this lock
/// shared (GraphReadLock), and realize commits its results under it exclusively. A node's
/// dtype, shape and device never change, so they are read without it.
inline std::shared_mutex& graph_mutex() {
    static std::shared_mutex m;
    return m;
}

/// The graph lock, shared, for this scope; nested scopes on one thread lock once (a builder
/// calls other builders).
class GraphReadLock {
public:
    GraphReadLock() {
        if (depth()++ == 0) graph_mutex().lock_shared();
    }
    GraphReadLock(const GraphReadLock&) = delete;
    GraphReadLock& operator=(const GraphReadLock&) = delete;
    ~GraphReadLock() {
        if (--depth() == 0) graph_mutex().unlock_shared();
    }

private:
    static int& depth() {
        static thread_local int d = 0;
        return d;
    }
};

/// Makes `node` a realized view of `buffer`; drops its sources.
inline void make_realized(Node& node, BufferPtr buffer, std::int64_t offset, Strides strides) {
    if (node.nsrc > 0) {
        node.computed = true;
        node.realized_at = next_serial();
    }
    node.buffer = std::move(buffer);
    node.offset = offset;
    node.strides = std::move(strides);
    node.kind = NodeKind::Buffer;
    for (auto& s : node.src) s.reset();
    node.nsrc = 0;
    node.axes.clear();
    node.params.clear();
    node.static_kernel = nullptr;
}

/// True when the layout is the row-major layout of its shape starting at element 0.
inline bool is_contiguous_layout(const Shape& shape, const Strides& strides, std::int64_t offset) {
    if (offset != 0) return false;
    std::int64_t expected = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        if (shape[i] != 1 && strides[i] != expected) return false;
        expected *= shape[i];
    }
    return true;
}

}  // namespace lazytensor::detail
