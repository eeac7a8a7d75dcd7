// realize(): schedule -> lower -> get compiled kernels (cached) -> launch -> commit.
//
// Nothing is committed until every kernel has run: if any step throws, every tensor is left
// as it was (still lazy, still usable). Buffers of intermediate results that nobody else holds
// are released as soon as the last kernel reading them has run.
#pragma once

#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../codegen/lower.hpp"
#include "../ir/static_kernel.hpp"
#include "../schedule/schedule.hpp"
#include "device.hpp"

namespace lazytensor {

/// One item of a schedule, as lt::schedule() reports it.
struct ScheduleItem {
    std::string kind;                 // "kernel" or "view" (zero-copy, no kernel)
    std::string reason;               // why its output is materialized
    std::vector<std::string> ops;     // the ops fused into it, in evaluation order
    std::vector<std::string> inputs;  // "float32[2, 3]" per input buffer
    std::string output;
    int phases = 0;                   // reduce and store phases of the kernel
    bool compiled_loop = false;       // runs as the expression's compiled loop, not interpreted
    std::string ir;                   // the kernel IR listing
};

namespace detail {

inline std::recursive_mutex& realize_mutex() {
    static std::recursive_mutex m;
    return m;
}

/// Schedules and lowers the graph behind `outputs`, materializing what lowering asks for.
inline Schedule plan(const std::vector<Node*>& outputs) {
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

inline std::string describe(const Node* n) { return concat(n->dtype, n->shape); }

inline ScheduleItem describe(const Group& g) {
    ScheduleItem item;
    item.kind = g.view_only ? "view" : "kernel";
    item.reason = g.reason;
    item.ops = g.ops;
    for (const Node* in : g.inputs) item.inputs.push_back(describe(in));
    item.output = describe(g.root);
    item.phases = static_cast<int>(g.kernel.phases.size());
    StaticBinding binding;
    item.compiled_loop = !g.view_only && g.kernel.candidate && g.kernel.candidate->match(g.kernel, binding);
    if (!g.view_only) item.ir = ir::to_string(g.kernel);
    return item;
}

inline void print_item(std::ostream& out, std::size_t i, const Group& g, int level) {
    ScheduleItem item = describe(g);
    out << "  " << item.kind << " " << i << ": ";
    if (g.view_only) {
        out << "view of another buffer -> " << item.output << "  (" << item.reason << ")\n";
        return;
    }
    for (std::size_t k = 0; k < item.ops.size(); ++k) out << (k ? ", " : "") << item.ops[k];
    if (item.ops.empty()) out << "copy";
    if (item.compiled_loop) out << " (compiled loop)";
    out << "  [";
    for (std::size_t k = 0; k < item.inputs.size(); ++k) out << (k ? ", " : "") << item.inputs[k];
    out << "] -> " << item.output << "  (ends: " << item.reason << ")\n";
    if (level >= 2) out << item.ir;
}

inline std::vector<Node*> unrealized(const std::vector<Node*>& nodes) {
    std::vector<Node*> out;
    std::unordered_set<Node*> seen;
    for (Node* n : nodes)
        if (!n->realized() && seen.insert(n).second) out.push_back(n);
    return out;
}

/// Realizes `nodes` together: one schedule, shared parts computed once.
inline void realize_nodes(const std::vector<Node*>& nodes) {
    std::lock_guard<std::recursive_mutex> lock(realize_mutex());
    const std::vector<Node*> outputs = unrealized(nodes);
    if (outputs.empty()) return;
    Schedule s = plan(outputs);
    const int level = debug_level();
    if (level >= 1) {
        std::ostringstream out;
        std::size_t kernels = 0;
        for (const Group& g : s.groups) kernels += g.view_only ? 0 : 1;
        out << "[lazytensor] schedule: " << kernels << " kernel" << (kernels == 1 ? "" : "s") << " for "
            << outputs.size() << " output" << (outputs.size() == 1 ? "" : "s") << "\n";
        for (std::size_t i = 0; i < s.groups.size(); ++i) print_item(out, i, s.groups[i], level);
        std::cerr << out.str();
    }

    // A result is kept (committed to its node) when it is an output or someone outside this
    // graph still holds its node; other intermediates go as soon as their last reader has run.
    std::unordered_set<Node*> is_output(outputs.begin(), outputs.end());
    std::unordered_set<Node*> kept;
    std::vector<NodePtr> hold;  // committing one node may free others that are committed later
    for (const Group& g : s.groups) {
        auto it = s.uses.find(g.root);
        const long internal = it == s.uses.end() ? 0 : it->second;
        if (is_output.count(g.root) || g.root->holders() > internal) kept.insert(g.root);
    }
    std::unordered_map<Node*, std::size_t> last_read;
    for (std::size_t i = 0; i < s.groups.size(); ++i) {
        for (Node* in : s.groups[i].inputs) last_read[in] = i;
        if (s.groups[i].view_only && kept.count(s.groups[i].root)) kept.insert(s.groups[i].view.base);
    }
    for (Node* n : kept) hold.push_back(n->shared_from_this());

    std::unordered_map<Node*, BufferPtr> produced;
    std::vector<Buffer*> params;
    for (std::size_t i = 0; i < s.groups.size(); ++i) {
        Group& g = s.groups[i];
        if (g.view_only) continue;
        Backend& backend = backend_for(g.root->device);
        const auto t0 = std::chrono::steady_clock::now();
        bool compiled = false;
        auto kernel = backend.get_kernel(g.kernel, &compiled);
        BufferPtr out = backend.allocate(g.root->dtype, numel(g.root->shape));
        params.clear();
        for (Node* in : g.inputs) params.push_back(in->realized() ? in->buffer.get() : produced.at(in).get());
        params.push_back(out.get());
        backend.launch(*kernel, params);
        if (level >= 3) {
            backend.synchronize();
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            std::cerr << "  kernel " << i << ": " << ms << " ms" << (compiled ? " (compiled now)" : "") << "\n";
        }
        produced[g.root] = std::move(out);
        for (Node* in : g.inputs) {
            auto it = produced.find(in);
            if (it != produced.end() && last_read[in] == i && !kept.count(in)) produced.erase(it);
        }
    }

    // Commit: every kernel has run.
    for (Group& g : s.groups) {
        Node* n = g.root;
        if (!kept.count(n)) continue;
        if (g.view_only) {
            Node* base = g.view.base;
            BufferPtr buf = base->realized() ? base->buffer : produced.at(base);
            make_realized(*n, std::move(buf), g.view.offset, g.view.strides);
        } else {
            make_realized(*n, produced.at(n), 0, contiguous_strides(n->shape));
        }
    }
}

/// The schedule realize() would run for `nodes`, without running it.
inline std::vector<ScheduleItem> schedule_items(const std::vector<Node*>& nodes) {
    std::lock_guard<std::recursive_mutex> lock(realize_mutex());
    const std::vector<Node*> outputs = unrealized(nodes);
    std::vector<ScheduleItem> items;
    if (outputs.empty()) return items;
    Schedule s = plan(outputs);
    for (const Group& g : s.groups) items.push_back(describe(g));
    return items;
}

}  // namespace detail
}  // namespace lazytensor
