// Plans: a schedule with its kernels lowered, kept for reuse.
//
// Realizing the same expression again builds a new graph of the same structure. Its signature
// (every node's op, dtype, shape and sources, the layout of every realized input, constants and
// the outputs, in a fixed depth-first order) finds the plan made for the first one, so the
// repeat skips grouping and lowering: nodes are named by their position in that order.
#pragma once

#include <cstring>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../backend/backend.hpp"
#include "../codegen/lower.hpp"
#include "../core/config.hpp"
#include "../schedule/schedule.hpp"

namespace lazytensor::detail {

/// One schedule item, with nodes named by their index in GraphWalk::nodes.
struct PlannedItem {
    int root = -1;
    std::string reason;
    bool view_only = false;
    int view_base = -1;  // view_only: the node whose buffer it views, and how
    std::int64_t view_offset = 0;
    Strides view_strides;
    ir::Kernel kernel;
    std::vector<int> inputs;  // per input parameter
    std::vector<std::string> ops;
    // The compiled kernel, looked up on the first run (realize holds its lock meanwhile).
    mutable std::shared_ptr<CompiledKernel> compiled;
    mutable const Backend* compiled_for = nullptr;
};

struct Plan {
    std::vector<PlannedItem> items;  // execution order
    std::vector<int> uses;           // per node: consumer edges inside the graph
};

/// The unrealized graph behind some outputs, in depth-first post-order, and its signature.
struct GraphWalk {
    std::vector<Node*> nodes;
    std::vector<int> outputs;  // indices into nodes
    std::string signature;
};

inline GraphWalk walk_graph(const std::vector<Node*>& outputs) {
    GraphWalk w;
    std::unordered_map<const Node*, int> index;
    ir::KeyWriter sig;
    sig.put(static_kernels_enabled());
    std::vector<std::pair<Node*, bool>> stack;
    for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back({*it, false});
    while (!stack.empty()) {
        auto [n, expanded] = stack.back();
        stack.pop_back();
        if (!expanded) {
            if (index.count(n)) continue;
            index[n] = -1;  // in progress
            stack.push_back({n, true});
            if (!n->realized())
                for (int k = n->nsrc; k-- > 0;) {
                    Node* s = n->src[static_cast<std::size_t>(k)].get();
                    if (!index.count(s)) stack.push_back({s, false});
                }
            continue;
        }
        index[n] = static_cast<int>(w.nodes.size());
        w.nodes.push_back(n);
        sig.put(n->kind);
        sig.put(n->dtype);
        sig.put(n->device.kind);
        sig.put(n->device.index);
        sig.put_list(n->shape);
        if (n->realized()) {
            sig.put(n->offset);
            sig.put_list(n->strides);
            continue;
        }
        sig.put(n->value.dtype);
        sig.put(n->value.f);
        sig.put(n->value.i);
        sig.put(n->unary_op);
        sig.put(n->binary_op);
        sig.put(n->reduce_op);
        sig.put(static_cast<std::uint32_t>(n->axes.size()));
        for (int a : n->axes) sig.put(a);
        sig.put(n->static_kernel);
        sig.put(n->nsrc);
        for (int k = 0; k < n->nsrc; ++k) sig.put(index.at(n->src[static_cast<std::size_t>(k)].get()));
    }
    for (Node* out : outputs) {
        w.outputs.push_back(index.at(out));
        sig.put(w.outputs.back());
    }
    w.signature = sig.take();
    return w;
}

/// Schedules and lowers the graph behind `outputs`, materializing what lowering asks for.
inline Schedule schedule_and_lower(const std::vector<Node*>& outputs) {
    std::unordered_map<Node*, std::string> forced;
    for (;;) {
        Schedule s = assign_groups(outputs, forced);
        try {
            for (Group& g : s.groups)
                if (!g.view_only) Lowering(s, g).run();
            return s;
        } catch (const NeedsMaterialization& m) {
            if (!forced.emplace(m.node, m.reason).second)
                fail<Error>("lazytensor internal error: scheduling did not converge at a ", kind_name(m.node->kind),
                            " node (", m.reason, ")");
        }
    }
}

inline Plan make_plan(const GraphWalk& w) {
    std::vector<Node*> outputs;
    for (int o : w.outputs) outputs.push_back(w.nodes[static_cast<std::size_t>(o)]);
    Schedule s = schedule_and_lower(outputs);
    std::unordered_map<const Node*, int> index;
    for (std::size_t i = 0; i < w.nodes.size(); ++i) index[w.nodes[i]] = static_cast<int>(i);
    Plan p;
    p.uses.assign(w.nodes.size(), 0);
    for (const auto& [node, n] : s.uses)
        if (auto it = index.find(node); it != index.end()) p.uses[static_cast<std::size_t>(it->second)] = n;
    for (Group& g : s.groups) {
        PlannedItem item;
        item.root = index.at(g.root);
        item.reason = std::move(g.reason);
        item.view_only = g.view_only;
        if (g.view_only) {
            item.view_base = index.at(g.view.base);
            item.view_offset = g.view.offset;
            item.view_strides = g.view.strides;
        }
        item.kernel = std::move(g.kernel);
        for (Node* in : g.inputs) item.inputs.push_back(index.at(in));
        item.ops = std::move(g.ops);
        p.items.push_back(std::move(item));
    }
    return p;
}

/// The plans of recently realized graphs, most recently used first.
class PlanCache {
public:
    std::shared_ptr<const Plan> get(const GraphWalk& w) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = plans_.find(w.signature);
            if (it != plans_.end()) {
                order_.splice(order_.begin(), order_, it->second.age);
                return it->second.plan;
            }
        }
        auto plan = std::make_shared<const Plan>(make_plan(w));
        std::lock_guard<std::mutex> lock(mutex_);
        auto [it, inserted] = plans_.emplace(w.signature, Entry{plan, {}});
        if (inserted) {
            order_.push_front(&it->first);
            it->second.age = order_.begin();
            while (plans_.size() > kCapacity) {
                plans_.erase(*order_.back());
                order_.pop_back();
            }
        }
        return it->second.plan;
    }

    void clear() {
        std::lock_guard<std::mutex> lock(mutex_);
        plans_.clear();
        order_.clear();
    }

    std::size_t size() {
        std::lock_guard<std::mutex> lock(mutex_);
        return plans_.size();
    }

private:
    static constexpr std::size_t kCapacity = 1024;
    struct Entry {
        std::shared_ptr<const Plan> plan;
        std::list<const std::string*>::iterator age;
    };
    std::mutex mutex_;
    std::unordered_map<std::string, Entry> plans_;
    std::list<const std::string*> order_;
};

inline PlanCache& plan_cache() {
    static PlanCache* cache = new PlanCache();  // never destroyed, like the backends
    return *cache;
}

}  // namespace lazytensor::detail
