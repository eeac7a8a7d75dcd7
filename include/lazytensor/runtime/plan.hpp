// SPDX-License-Identifier: MIT
// Plans: a schedule with its kernels lowered, kept for reuse.
//
// Realizing the same expression again builds a new graph of the same structure. Its signature
// (every node's op, dtype, shape and sources, the layout of every realized input and the
// outputs, in a fixed depth-first order) finds the plan made for the first one, so the repeat
// skips grouping and lowering: nodes are named by their position in that order. Scalar values
// (Const nodes, padding values) are not part of it: kernels take them as parameters, read from
// the nodes at each launch.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "../backend/backend.hpp"
#include "../core/config.hpp"
#include "../core/lru_cache.hpp"
#include "../items/items.hpp"
#include "../schedule/read_shapes.hpp"
#include "../schedule/schedule.hpp"
#include "collectives.hpp"
#include "device.hpp"
#include "seam.hpp"

namespace lazytensor::detail {

/// One schedule item, with nodes named by their position in the GraphOrder: what every item
/// has, and its kind's own data (items/items.hpp).
struct PlannedItem {
    int root = -1;            // the node it computes
    std::string reason;       // why that node is materialized
    std::vector<int> inputs;  // per input parameter: the node whose buffer is read
    std::vector<int> scalars; // per scalar parameter: the node whose value is passed
    // Per input parameter: the shapes the item reads that buffer through (a slice, a transpose,
    // ... of it: not the buffer's own shape), each once; empty: the buffer's node's shape.
    std::vector<std::vector<Shape>> read_shapes;
    std::vector<std::string> ops;
    ItemKind work;
    // Its own kernel, compiled on the first run (realize holds its lock meanwhile).
    mutable std::shared_ptr<CompiledKernel> compiled;

    ScheduleItem::Kind kind() const {
        return std::visit([](const auto& k) { return std::decay_t<decltype(k)>::kind; }, work);
    }
    /// Calls f(the kind's data).
    template <class F>
    decltype(auto) visit(F&& f) const {
        return std::visit(std::forward<F>(f), work);
    }
    const ir::Kernel* own_kernel() const { return visit([](const auto& k) { return k.own_kernel(); }); }
    bool computes() const { return visit([](const auto& k) { return k.computes(); }); }
    SmallVector<int, 3> fused_away() const { return visit([](const auto& k) { return k.fused_away(); }); }
    /// The generated source it runs on `backend`, where it has one (LAZYTENSOR_DEBUG=2, check mode).
    std::string source(Backend& backend) const {
        return visit([&](const auto& k) { return k.source(backend, compiled.get()); });
    }
};

struct Plan {
    std::vector<PlannedItem> items;  // execution order
    std::vector<int> uses;           // per node: consumer edges inside the graph
};

/// The graph behind some outputs, in the scheduler's order, and its signature.
struct GraphWalk {
    GraphOrder order;
    std::vector<Node*> output_nodes;
    std::vector<int> outputs;  // indices into order.nodes
    std::string signature;

    Node* node(int i) const { return order.nodes[static_cast<std::size_t>(i)]; }
};

inline GraphWalk walk_graph(std::vector<Node*> outputs) {
    GraphWalk w;
    w.order = order_graph(outputs);
    w.output_nodes = std::move(outputs);
    ir::KeyWriter sig;
    PointerIndex<Buffer> memory;
    std::vector<const Buffer*> exposed;  // the exposed buffers met so far
    sig.put(static_kernels_enabled());
    sig.put(gemm_config_generation().load(std::memory_order_relaxed));
    for (Node* n : w.order.nodes) {
        sig.put(n->kind);
        sig.put(n->own_buffer);
        sig.put(n->dtype);
        sig.put(n->device.kind);
        sig.put(n->device.index);
        sig.put_list(n->shape);
        if (n->realized()) {
            sig.put(n->offset);
            sig.put_list(n->strides);
            // Which realized nodes share memory matters to an assign (a read of the memory it
            // writes is computed into a copy first): the first node with this buffer, and for
            // an exposed buffer, the earlier buffers that wrap some of the same memory.
            const Buffer* buffer = n->buffer.get();
            const auto [at, fresh] = memory.emplace(buffer, static_cast<int>(memory.size()));
            sig.put(at);
            if (fresh) {
                sig.put(buffer->exposed());
                if (buffer->exposed()) {
                    for (const Buffer* other : exposed)
                        if (shares_memory(*buffer, *other)) sig.put(memory.at(other));
                    sig.put(-1);
                    exposed.push_back(buffer);
                }
            }
            continue;
        }
        // (n->value, of Const and Pad nodes, is a kernel parameter: not part of the structure.)
        sig.put(n->unary_op);
        sig.put(n->binary_op);
        sig.put(n->reduce_op);
        sig.put(static_cast<std::uint32_t>(n->axes.size()));
        for (int a : n->axes) sig.put(a);
        sig.put_list(n->params);
        sig.put(n->static_kernel);
        sig.put(n->nsrc);
        for (int k = 0; k < n->nsrc; ++k) sig.put(w.order.index.at(n->src[static_cast<std::size_t>(k)].get()));
    }
    w.outputs.reserve(w.output_nodes.size());
    for (Node* out : w.output_nodes) {
        w.outputs.push_back(w.order.index.at(out));
        sig.put(w.outputs.back());
    }
    w.signature = sig.take();
    return w;
}

inline Plan make_plan(const GraphWalk& w) {
    Schedule s = schedule_and_lower(w.order, w.output_nodes);
    fuse_items(s, device_backend);
    auto index = [&](const Node* n) { return w.order.index.at(n); };
    const ReadShapes read_shapes(s);
    Plan p;
    p.uses = std::move(s.uses);
    for (Group& g : s.groups) {
        PlannedItem item;
        item.root = index(g.root);
        item.reason = std::move(g.reason);
        for (Node* in : g.inputs) item.inputs.push_back(index(in));
        read_shapes.find(g, item.read_shapes);
        for (Node* v : g.scalars) item.scalars.push_back(index(v));
        item.ops = std::move(g.ops);
        item.work = item_of(g, index);
        p.items.push_back(std::move(item));
    }
    auto is_collective = [](const PlannedItem& item) { return item.kind() == ScheduleItem::Kind::Collective; };
    if (std::any_of(p.items.begin(), p.items.end(), is_collective))
        start_collectives_early(p.items, is_collective, [&](int i) { return w.node(i); });
    return p;
}

/// The plans of recently realized graphs, by signature.
class PlanCache {
public:
    std::shared_ptr<const Plan> get(const GraphWalk& w) {
        if (auto hit = plans_.find(w.signature)) return hit;
        ++made_;
        return plans_.insert(w.signature, std::make_shared<const Plan>(make_plan(w))).first;
    }
    std::size_t size() const { return plans_.size(); }
    /// How many plans were made (cache misses) since the start.
    std::size_t made() const { return made_.load(); }

private:
    LruCache<const Plan> plans_{1024};
    std::atomic<std::size_t> made_{0};
};

inline PlanCache& plan_cache() {
    static PlanCache* cache = new PlanCache();  // never destroyed, like the backends
    return *cache;
}

}  // namespace lazytensor::detail
