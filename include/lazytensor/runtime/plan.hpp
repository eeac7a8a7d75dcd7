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
#include <vector>

#include "../backend/backend.hpp"
#include "../codegen/lower.hpp"
#include "../codegen/lower_gemm.hpp"
#include "../codegen/lower_scan.hpp"
#include "../core/config.hpp"
#include "../core/lru_cache.hpp"
#include "../schedule/fuse_attention.hpp"
#include "../schedule/fuse_products.hpp"
#include "../schedule/schedule.hpp"
#include "device.hpp"
#include "seam.hpp"

namespace lazytensor::detail {

/// One schedule item, with nodes named by their position in the GraphOrder.
struct PlannedItem {
    int root = -1;
    std::string reason;
    bool view_only = false;
    int view_base = -1;  // view_only: the node whose buffer it views, and how
    std::int64_t view_offset = 0;
    Strides view_strides;
    ir::Kernel kernel;        // Kernel; a Scan's copy; a fused Matmul's or Scan's epilogue (fused_product >= 0)
    ScheduleItem::Kind kind = ScheduleItem::Kind::Kernel;
    // A Matmul or Scan with kernels fused into it (schedule/fuse_products.hpp): per operand, the
    // producer run in its loads (producer[o] its node, in a buffer only when kept); the
    // consumer run in its stores (the product's or scan's node, in a buffer only when kept, and
    // the epilogue's parameter that reads it).
    ir::Kernel prologue[2];
    int producer[2] = {-1, -1};
    int fused_product = -1;
    int product_param = -1;
    ir::Gemm gemm;            // Matmul: the product over the buffers of inputs[0] and inputs[1]
    ir::Scan scan;            // Scan: the scan of inputs[0] (copied contiguous first by `kernel`
                              // when that has phases and nothing is fused)
    ir::Attention attention;  // Attention: over inputs q, kt and v; the scores' and the weights'
    int scores = -1, weights = -1;  // nodes, in buffers only when kept
    std::vector<int> inputs;  // per input parameter (a Matmul's: A, B, then its epilogue's)
                              // (a prologue's input stands for its operand)
    std::vector<int> scalars; // per scalar parameter: the node whose value is passed
    // Per input parameter: the shapes the item reads that buffer through (a slice, a transpose,
    // ... of it: not the buffer's own shape), each once; empty: the buffer's node's shape.
    std::vector<std::vector<Shape>> read_shapes;
    std::vector<std::string> ops;
    // The compiled kernel, looked up on the first run (realize holds its lock meanwhile).
    mutable std::shared_ptr<CompiledKernel> compiled;

    bool is_gemm() const { return kind == ScheduleItem::Kind::Matmul; }
    bool has_epilogue() const { return fused_product >= 0; }
    bool has_prologue(int o) const { return producer[o] >= 0; }
    bool fused() const { return has_epilogue() || has_prologue(0) || has_prologue(1); }
    bool is_attention() const { return kind == ScheduleItem::Kind::Attention; }
    /// The nodes whose results a fused Matmul or Scan computes on the way (producers, the
    /// product or scan), or an Attention (the scores and the weights).
    SmallVector<int, 3> fused_away() const {
        SmallVector<int, 3> out;
        if (is_attention()) return {scores, weights};
        for (int n : {producer[0], producer[1], fused_product})
            if (n >= 0) out.push_back(n);
        return out;
    }
    /// The kernels fused into a Matmul or Scan, as the backend takes them.
    FusedKernels fusion() const {
        FusedKernels f;
        for (int o = 0; o < 2; ++o)
            if (has_prologue(o)) f.prologue[o] = &prologue[o];
        if (has_epilogue()) f.epilogue = &kernel, f.product_param = product_param;
        return f;
    }
    bool is_scan() const { return kind == ScheduleItem::Kind::Scan; }
    /// Whether `kernel` runs: a kernel item, or the copy a scan item makes of its operand.
    bool runs_kernel() const {
        return kind == ScheduleItem::Kind::Kernel || (kind == ScheduleItem::Kind::Scan && !fused() && !kernel.phases.empty());
    }
    /// The dtype the product or scan computes in (before an epilogue's cast).
    DType core_dtype() const { return is_gemm() ? gemm.dtype : scan.dtype; }
};

/// The generated source an item runs on `backend`, where it has one: its compiled kernel's, or
/// the fused product's or scan's program (LAZYTENSOR_DEBUG=2, check mode's messages).
inline std::string item_source(Backend& backend, const PlannedItem& p) {
    if (p.is_attention()) return backend.attention_source(p.attention);
    if (p.fused()) return p.is_gemm() ? backend.gemm_fused_source(p.gemm, p.fusion()) : backend.scan_fused_source(p.scan, p.fusion());
    return p.runs_kernel() && p.compiled ? backend.kernel_source(*p.compiled) : std::string();
}

/// Runs a scan item's scan on `backend`: `copy`, if the item has one, first copies the operand
/// into a contiguous buffer of its own.
inline void run_scan(Backend& backend, const ir::Scan& scan, CompiledKernel* copy, const Buffer& in, Buffer& out) {
    if (!copy) return backend.scan(scan, in, out);
    BufferPtr contiguous = backend.allocate(in.dtype(), scan.numel());
    backend.launch(*copy, {const_cast<Buffer*>(&in), contiguous.get()}, {});
    backend.scan(scan, *contiguous, out);
}

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

/// Schedules and lowers a graph, materializing what lowering asks for.
inline Schedule schedule_and_lower(const GraphWalk& w) {
    std::unordered_map<Node*, std::string> forced;
    for (;;) {
        Schedule s = assign_groups(w.order, w.output_nodes, forced);
        try {
            for (Group& g : s.groups) {
                if (g.view_only) continue;
                if (g.is_gemm())
                    lower_gemm(s, g);
                else if (g.is_scan())
                    lower_scan(s, g);
                else
                    Lowering(s, g).run();
            }
            return s;
        } catch (const NeedsMaterialization& m) {
            if (!forced.emplace(m.node, m.reason).second)
                fail<Error>("lazytensor internal error: scheduling did not converge at a ", kind_name(m.node->kind),
                            " node (", m.reason, ")");
        }
    }
}

/// The shapes each input of an item is read through (PlannedItem::read_shapes), found by walking
/// its graph from what it computes down to the buffers it loads, as lowering does: a view (a
/// slice, a permute, a reshape) over a buffer is read in the view's shape, the topmost of a
/// chain of views; broadcasts and reshapes that only add or drop unit axes read the shape under
/// them (a bias [16] added to [64, 16] reads [16]).
class ReadShapes {
public:
    explicit ReadShapes(const Schedule& s) {
        for (const Group& g : s.groups) base_of_[g.root] = g.view_only ? g.view.base : g.root;
    }

    void find(const Group& g, std::vector<std::vector<Shape>>& out) const {
        out.assign(g.inputs.size(), {});
        if (g.view_only) return;
        std::size_t first_kernel_input = 0;  // the inputs before it are operands of a product or scan
        if (g.is_attention()) {
            const Node* scores = g.fused_scores;
            const Node* operands[3] = {scores->src[0].get(), scores->src[1].get(), g.root->src[1].get()};
            for (std::size_t o = 0; o < 3 && o < g.inputs.size(); ++o) read_operand(operands[o], g.inputs[o], out[o]);
            return;
        }
        if (g.is_gemm() || g.is_scan()) {
            const Node* core = g.core();
            first_kernel_input = g.is_gemm() ? 2 : 1;
            for (std::size_t o = 0; o < first_kernel_input && o < g.inputs.size(); ++o)
                read_operand(core->src[o].get(), g.inputs[o], out[o]);
            if (!g.fused_product) return;
        }
        Reads reads;
        Walk walk{*this, g.root, g.fused_product, reads, {}};
        walk.from(g.root, nullptr);
        for (std::size_t i = first_kernel_input; i < g.inputs.size(); ++i)
            if (auto it = reads.find(g.inputs[i]); it != reads.end()) out[i] = it->second;
    }

private:
    using Reads = std::unordered_map<const Node*, std::vector<Shape>>;

    /// Whether a view reads the same elements in the same order as its source, with unit axes
    /// or broadcast copies added: its source's shape is what it reads.
    static bool transparent(const Node* n) {
        if (n->kind == NodeKind::Expand) return true;
        if (n->kind != NodeKind::Reshape) return false;
        auto non_unit = [](const Shape& shape) {
            Shape out;
            for (std::int64_t e : shape)
                if (e != 1) out.push_back(e);
            return out;
        };
        return non_unit(n->shape) == non_unit(n->src[0]->shape);
    }

    struct Walk {
        const ReadShapes& shapes;
        const Node* self;     // the item's root: not a load however it is listed
        const Node* product;  // a fused product's node: loaded by its epilogue (null: none)
        Reads& reads;
        std::unordered_map<const Node*, std::vector<const Node*>> seen;  // (node, top view) pairs walked

        void from(const Node* n, const Node* top) {
            std::vector<const Node*>& tops = seen[n];
            if (std::find(tops.begin(), tops.end(), top) != tops.end()) return;
            tops.push_back(top);
            const auto base = shapes.base_of_.find(n);
            if (n != self && (n->realized() || n == product || base != shapes.base_of_.end())) {
                const Node* buffer = n->realized() || n == product ? n : base->second;
                std::vector<Shape>& list = reads[buffer];
                const Shape& shape = top ? top->shape : n->shape;
                if (std::find(list.begin(), list.end(), shape) == list.end()) list.push_back(shape);
                return;
            }
            if (is_view(n->kind)) return from(n->src[0].get(), top || transparent(n) ? top : n);
            for (int k = 0; k < n->nsrc; ++k) from(n->src[static_cast<std::size_t>(k)].get(), nullptr);
        }
    };

    /// The shapes operand `start` of a product or scan reads the buffer of `input` through.
    void read_operand(const Node* start, const Node* input, std::vector<Shape>& out) const {
        Reads reads;
        Walk walk{*this, nullptr, nullptr, reads, {}};
        walk.from(start, nullptr);
        if (auto it = reads.find(input); it != reads.end()) out = it->second;
    }

    std::unordered_map<const Node*, const Node*> base_of_;  // per item's root: the node whose buffer holds it
};

inline Plan make_plan(const GraphWalk& w) {
    Schedule s = schedule_and_lower(w);
    ProductFusions fusions;
    fusions.prologue = [](const Node* product, const ir::Gemm& gemm, const ir::Kernel& prologue) {
        return device_backend(product->device).fuses_prologue(gemm, prologue);
    };
    fusions.epilogue = [](const Node* product, const ir::Gemm& gemm, const ir::Kernel& epilogue, int param) {
        return device_backend(product->device).fuses_epilogue(gemm, epilogue, param);
    };
    fusions.scan_prologue = [](const Node* scan, const ir::Scan& sc, const ir::Kernel& prologue) {
        return device_backend(scan->device).fuses_scan_prologue(sc, prologue);
    };
    fusions.scan_epilogue = [](const Node* scan, const ir::Scan& sc, const ir::Kernel& epilogue, int param) {
        return device_backend(scan->device).fuses_scan_epilogue(sc, epilogue, param);
    };
    fuse_attention(s, [](const Node* product, const ir::Attention& a) { return device_backend(product->device).fuses_attention(a); });
    fuse_into_products(s, fusions);
    auto index = [&](const Node* n) { return w.order.index.at(n); };
    const ReadShapes read_shapes(s);
    Plan p;
    p.uses = std::move(s.uses);
    for (Group& g : s.groups) {
        PlannedItem item;
        item.root = index(g.root);
        item.reason = std::move(g.reason);
        item.view_only = g.view_only;
        if (g.view_only) {
            item.view_base = index(g.view.base);
            item.view_offset = g.view.offset;
            item.view_strides = g.view.strides;
        }
        item.kernel = std::move(g.kernel);
        item.kind = g.view_only ? ScheduleItem::Kind::View
                    : g.is_attention() ? ScheduleItem::Kind::Attention
                    : g.is_gemm() ? ScheduleItem::Kind::Matmul
                    : g.is_scan() ? ScheduleItem::Kind::Scan
                                  : ScheduleItem::Kind::Kernel;
        item.gemm = std::move(g.gemm);
        if (g.fused_product) {
            item.fused_product = index(g.fused_product);
            item.product_param = g.product_param;
        }
        for (int o = 0; o < 2; ++o)
            if (g.fused_producer[o]) {
                item.producer[o] = index(g.fused_producer[o]);
                item.prologue[o] = std::move(g.prologue[o]);
            }
        item.scan = g.scan;
        if (g.is_attention()) {
            item.attention = std::move(g.attention);
            item.scores = index(g.fused_scores);
            item.weights = index(g.fused_weights);
        }
        for (Node* in : g.inputs) item.inputs.push_back(index(in));
        read_shapes.find(g, item.read_shapes);
        for (Node* v : g.scalars) item.scalars.push_back(index(v));
        item.ops = std::move(g.ops);
        p.items.push_back(std::move(item));
    }
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
