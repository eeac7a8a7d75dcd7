// SPDX-License-Identifier: MIT
// Collectives as one node kind (NodeKind::Collective) and one kind of schedule item
// (items/collective_item.hpp), run by the group's transport (core/communicator.hpp: MPI, or this
// process alone).
//
// A collective node works on its operand's leading axis; the front end (frontend/dist.hpp) moves
// the user's axis there and back with views. Sum, Max, Min and Broadcast keep the shape; Gather
// of [d0, ...] is [size * d0, ...] (every rank's rows, in rank order); ReduceScatter of
// [size * k, ...] is [k, ...] (this rank's piece of the sum). The operand is read from a
// contiguous buffer and the result written to a new one: a collective is a cut in the graph, and
// what produces or reads it fuses into the kernels on either side.
#pragma once

#include <cstdint>
#include <string>

#include "../core/communicator.hpp"
#include "graph.hpp"

namespace lazytensor::detail {
namespace ir {

/// A collective item: `count` elements of the operand (contiguous, from `offset`) through
/// group `group`'s communicator.
struct Collective {
    CollectiveOp op = CollectiveOp::Sum;
    DType dtype = DType::Float32;
    int group = 0;
    int root = 0;
    std::int64_t count = 0;   // the operand's elements
    std::int64_t offset = 0;  // of the operand in its buffer
    Shape operand;            // its shape (for messages)
};

inline std::string to_string(const Collective& c) {
    std::string out = concat("    ", collective_name(c.op), " of ", c.dtype, c.operand, " (", c.count, " elements");
    if (c.op == CollectiveOp::Broadcast) out += concat(", root ", c.root);
    return out + concat(", group ", c.group, ")\n");
}

/// The record the ranks compare before a realize's collectives start: what each one is.
inline std::string agreement_record(const Collective& c) {
    std::string out = concat(collective_name(c.op), " ", c.dtype, c.operand);
    if (c.op == CollectiveOp::Broadcast) out += concat(" from rank ", c.root);
    return out;
}

}  // namespace ir

namespace graph {

/// Collective `op` over group `group` (of `size` ranks) on x's leading axis, as described above
/// (`root`: Broadcast's). ShapeError where ReduceScatter's leading extent does not divide by
/// the size; DTypeError for a sum of bools.
inline NodePtr collective(CollectiveOp op, const NodePtr& x, int group, int size, int root, const char* api) {
    Shape shape = x->shape;
    if ((op == CollectiveOp::Gather || op == CollectiveOp::ReduceScatter) && shape.empty())
        fail<ShapeError>(api, ": needs at least one axis, got a scalar");
    if (op == CollectiveOp::Gather) shape[0] *= size;
    if (op == CollectiveOp::ReduceScatter) {
        if (shape[0] % size != 0)
            fail<ShapeError>(api, ": the extent ", shape[0], " of the scattered axis must divide by the group's size ", size,
                             " (shape ", x->shape, ")");
        shape[0] /= size;
    }
    if (x->dtype == DType::Bool && (op == CollectiveOp::Sum || op == CollectiveOp::ReduceScatter))
        fail<DTypeError>(api, ": cannot sum bool tensors (shape ", x->shape, "); cast to an integer type first");
    if (is_reduced_float(x->dtype) && op != CollectiveOp::Gather && op != CollectiveOp::Broadcast)
        fail<DTypeError>(api, ": ", dtype_name(x->dtype), " is reduced in float32 by the front end; got ", dtype_name(x->dtype),
                         " here");
    NodePtr node = make(NodeKind::Collective, x->dtype, x->device, shape);
    node = with_sources(node, {row_major_operand(x)});
    node->params = {static_cast<std::int64_t>(op), group, root};
    return node;
}

}  // namespace graph
}  // namespace lazytensor::detail
