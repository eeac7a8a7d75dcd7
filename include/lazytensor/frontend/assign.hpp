// In-place writes: Tensor::assign. The write is an Assign node, scheduled and lowered like any
// other (its kernel stores into the target's memory at the target's layout) and realized at
// once, after every lazy reader of that memory that is not part of the value.
#pragma once

#include <unordered_set>

#include "tensor.hpp"

namespace lazytensor {

template <class T>
template <class V>
Tensor<T>& Tensor<T>::assign(const V& value) {
    using namespace detail;
    std::lock_guard<std::recursive_mutex> lock(realize_mutex());
    // The target gets memory: the tensor it is a view of is computed first (so that the write
    // reaches it), then the view, which must be that memory.
    Node* target = node_.get();
    if (!target->realized()) {
        // (Held: realizing the view drops its sources, and the user may hold only the view.)
        NodePtr base = node_;
        while (!base->realized() && is_view(base->kind)) base = base->src[0];
        if (!base->realized()) realize_nodes({base.get()});
        realize_nodes({target});
        if (target->buffer != base->buffer)
            fail<ValueError>("assign: the target (shape ", target->shape, ") is a reshape that the memory of its tensor "
                             "cannot express without a copy, so a write to it would not reach that tensor; assign "
                             "through slices, flips and permutations instead");
    }
    graph::Operand operand = [&] {
        if constexpr (is_scalar_v<V>) {
            return graph::Operand(make_scalar(value));
        } else {
            NodePtr v = value.build();
            if (v->realized() && v->buffer == target->buffer) v = graph::copy(v);  // never read what is being written
            return graph::Operand(v);
        }
    }();
    const NodePtr write = graph::assign(node_, operand);  // checks shapes, dtypes and devices first
    // Lazy readers of this memory that the value does not use are computed before it changes.
    std::unordered_set<const Node*> in_value{write.get()};
    if (!operand.is_scalar())
        for (Node* n : order_graph({operand.node.get()}).nodes) in_value.insert(n);
    std::vector<NodePtr> readers;
    for (NodePtr& r : target->buffer->live_readers())
        if (!r->realized() && r.get() != target && !in_value.count(r.get())) readers.push_back(std::move(r));
    if (!readers.empty()) {
        std::vector<Node*> nodes;
        for (const NodePtr& r : readers) nodes.push_back(r.get());
        realize_nodes(nodes);
    }
    realize_nodes({write.get()});
    return *this;
}

}  // namespace lazytensor
