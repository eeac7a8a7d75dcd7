// SPDX-License-Identifier: MIT
// realize(): plan (schedule and lower, or reuse the plan of a graph of the same structure) ->
// get compiled kernels (cached) -> launch -> commit.
//
// Nothing is committed until every kernel has run: if any step throws, every tensor is left
// as it was (still lazy, still usable). Buffers of intermediate results that nobody else holds
// are released as soon as the last kernel reading them has run.
#pragma once

#include <algorithm>
#include <chrono>
#include <iostream>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../ir/static_kernel.hpp"
#include "check.hpp"
#include "device.hpp"
#include "plan.hpp"
#include "seam.hpp"

namespace lazytensor {

namespace detail {

inline std::string describe(const Node* n) { return concat(n->dtype, n->shape); }

/// The instructions a kernel evaluates in all: each phase's instructions and stores times the
/// elements it runs over (the outer ones only, for a phase that runs once per outer index).
inline std::int64_t kernel_work(const ir::Kernel& k) {
    std::int64_t all = 1, outer = 1;
    for (std::size_t j = 0; j < k.domain.size(); ++j) {
        all *= k.domain[j];
        if (!k.reduced[j]) outer *= k.domain[j];
    }
    std::int64_t work = 0;
    for (const ir::Phase& phase : k.phases)
        work += static_cast<std::int64_t>(phase.instrs.size() + phase.stores.size()) * (phase.outer ? outer : all);
    return work;
}

inline ScheduleItem describe(const PlannedItem& p, const GraphWalk& w) {
    ScheduleItem item;
    item.kind = p.kind;
    item.reason = p.reason;
    item.ops = p.ops;
    for (std::size_t i = 0; i < p.inputs.size(); ++i) {
        // The shapes it is read through (a view's, not its buffer's), else its node's own.
        const Node* input = w.node(p.inputs[i]);
        const std::vector<Shape>* reads = i < p.read_shapes.size() ? &p.read_shapes[i] : nullptr;
        if (!reads || reads->empty()) {
            item.inputs.push_back(describe(input));
            continue;
        }
        std::string text = concat(input->dtype, reads->front());
        for (std::size_t r = 1; r < reads->size(); ++r) text += concat(" and ", (*reads)[r]);
        item.inputs.push_back(std::move(text));
    }
    item.scalars = static_cast<int>(p.scalars.size());
    item.output = describe(w.node(p.root));
    if (p.is_attention()) {
        item.ir = ir::to_string(p.attention);
        return item;
    }
    if (p.is_gemm() || p.is_scan()) {
        const char* what = p.is_gemm() ? "product" : "scan";
        item.ir = p.is_gemm() ? ir::to_string(p.gemm) : ir::to_string(p.scan);
        if (p.runs_kernel()) item.ir = "    copy to a contiguous buffer:\n" + ir::to_string(p.kernel) + item.ir;
        for (int o = 0; o < 2; ++o)
            if (p.has_prologue(o))
                item.ir += concat("    prologue", p.is_gemm() ? (o ? " of B" : " of A") : "", ", applied in the ", what,
                                  "'s loads:\n", ir::to_string(p.prologue[o]));
        if (p.has_epilogue())
            item.ir += concat("    epilogue, applied in the ", what, "'s stores (it reads the ", what, " as p",
                              p.product_param, "):\n", ir::to_string(p.kernel));
        return item;
    }
    item.phases = static_cast<int>(p.kernel.phases.size());
    StaticBinding binding;
    item.compiled_loop = !p.view_only && w.node(p.root)->device.kind == Device::Kind::Host && p.kernel.candidate &&
                         p.kernel.candidate->match(p.kernel, binding);  // (compiled loops run on the host only)
    if (!p.view_only) {
        item.ir = ir::to_string(p.kernel);
        item.work = kernel_work(p.kernel);
    }
    return item;
}

inline void print_item(std::ostream& out, std::size_t i, const ScheduleItem& item, int level,
                       const std::string& routine = {}) {
    out << "  " << item.kind << " " << i << ": ";
    if (item.kind == ScheduleItem::Kind::View) {
        out << "view of another buffer -> " << item.output << "  (" << item.reason << ")\n";
        return;
    }
    for (std::size_t k = 0; k < item.ops.size(); ++k) out << (k ? ", " : "") << item.ops[k];
    if (item.ops.empty()) out << "copy";
    if (!routine.empty()) out << " (" << routine << ")";
    if (item.compiled_loop) out << " (compiled loop)";
    out << "  [";
    for (std::size_t k = 0; k < item.inputs.size(); ++k) out << (k ? ", " : "") << item.inputs[k];
    out << "] -> " << item.output << "  (ends: " << item.reason << ")\n";
    if (level >= 2) out << item.ir;
}

/// Turns a backend's device timers on for a scope (dropping earlier records), then back to
/// what they were.
class RecordingTimes {
public:
    explicit RecordingTimes(Backend& backend) : backend_(backend), was_(backend.record_times()) {
        backend_.set_record_times(true);
        backend_.take_device_times_ms();
    }
    RecordingTimes(const RecordingTimes&) = delete;
    RecordingTimes& operator=(const RecordingTimes&) = delete;
    ~RecordingTimes() { backend_.set_record_times(was_); }

private:
    Backend& backend_;
    bool was_;
};

/// LAZYTENSOR_DEBUG=3: a kernel's time (on the device's own clock where it has one) and the
/// bandwidth of reading its inputs and writing its output once; for a GEMM, its FLOP rate.
inline void print_timing(std::size_t i, Backend& backend, const std::vector<Buffer*>& params, const PlannedItem& item,
                         std::chrono::steady_clock::time_point launch) {
    using ms_t = std::chrono::duration<double, std::milli>;
    const auto now = std::chrono::steady_clock::now();
    const std::vector<double> device = backend.take_device_times_ms();
    double bytes = 0;
    for (Buffer* b : params)
        if (b) bytes += static_cast<double>(b->bytes());  // (a fused product that is not kept has none)
    std::ostringstream out;
    out << "  " << item.kind << " " << i << ": ";
    double ms = ms_t(now - launch).count();
    if (!device.empty()) {
        // Every kernel the item ran (a scan's copy, an attention's three items where it stores them).
        ms = std::accumulate(device.begin(), device.end(), 0.0);
        out << ms << " ms on the device";
    } else {
        out << ms << " ms";
    }
    if (ms > 0 && (item.is_gemm() || item.is_attention())) {
        const ir::Gemm& g = item.is_gemm() ? item.gemm : item.attention.scores;
        const double rows = static_cast<double>(g.batch_count()) * static_cast<double>(g.m);
        // (attention: both products; the softmax's exponentials are not counted)
        const double depth = item.is_gemm() ? static_cast<double>(g.k) : static_cast<double>(g.k + item.attention.values.n);
        const double flops = 2.0 * rows * static_cast<double>(g.n) * depth;
        out << ", " << flops / (ms * 1e-3) / 1e9 << " GFLOP/s";
    } else if (ms > 0) {
        out << ", " << bytes / (ms * 1e-3) / 1e9 << " GB/s";
    }
    std::cerr << out.str() << "\n";
}

/// A fused product's or scan's operands that a tensor outside the graph holds: computed into
/// buffers of their own as well (the item computes them again in its loads).
inline void run_kept_producers(Backend& backend, const PlannedItem& p, const std::vector<Buffer*>& params,
                               const std::vector<Scalar>& scalars, const SmallVector<char, 32>& kept,
                               std::vector<BufferPtr>& produced) {
    std::size_t first_scalar = 0;
    for (int o = 0; o < 2; ++o) {
        if (!p.has_prologue(o)) continue;
        const ir::Kernel& k = p.prologue[o];
        const std::size_t count = k.scalars.size();
        if (kept[static_cast<std::size_t>(p.producer[o])]) {
            BufferPtr out = backend.allocate(k.params[1].dtype, numel(k.domain));
            const std::vector<Scalar> own(scalars.begin() + static_cast<std::ptrdiff_t>(first_scalar),
                                          scalars.begin() + static_cast<std::ptrdiff_t>(first_scalar + count));
            backend.launch(*backend.get_kernel(k), {params[static_cast<std::size_t>(o)], out.get()}, own);
            produced[static_cast<std::size_t>(p.producer[o])] = std::move(out);
        }
        first_scalar += count;
    }
}

/// Runs an attention item: as one kernel, or as the three items it stands for where a tensor
/// outside the graph holds the scores or the weights (then they are stored, and committed).
/// params: q, kt, v, out.
inline void run_attention(Backend& backend, const PlannedItem& p, const std::vector<Buffer*>& params,
                          const std::vector<Scalar>& scalars, const SmallVector<char, 32>& kept,
                          std::vector<BufferPtr>& produced) {
    const ir::Attention& a = p.attention;
    const auto scores = static_cast<std::size_t>(p.scores), weights = static_cast<std::size_t>(p.weights);
    if (!kept[scores] && !kept[weights]) return backend.attention(a, *params[0], *params[1], *params[2], *params[3], scalars);
    const std::int64_t count = a.scores.batch_count() * a.scores.m * a.scores.n;
    BufferPtr s = backend.allocate(DType::Float32, count), w = backend.allocate(DType::Float32, count);
    backend.gemm(a.scores, *params[0], *params[1], *s);
    backend.launch(*backend.get_kernel(a.softmax), {s.get(), w.get()}, scalars);
    backend.gemm(a.values, *w, *params[2], *params[3]);
    if (kept[scores]) produced[scores] = std::move(s);
    if (kept[weights]) produced[weights] = std::move(w);
}

/// Gets the compiled kernel of every item that has not run on its device yet, all of a
/// device's at once: a backend with a slow compiler (OpenCL) builds the new ones as one
/// program, so a first realize that needs N new kernels costs less than N builds (four new
/// kernels: 2.3-2.4 times one on NVIDIA, bench/README.md). A build that fails throws before any
/// item has run. (A plan is made for one device: an item compiled once is compiled for good.)
inline void compile_items(const std::vector<PlannedItem>& items, const GraphWalk& w, int level) {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const PlannedItem& p = items[i];
        if (p.runs_kernel() && !p.compiled) todo.push_back(i);
    }
    if (todo.empty()) return;  // (the common case: a plan that has run before)
    std::ostringstream out;
    while (!todo.empty()) {
        Backend& backend = backend_for(w.node(items[todo[0]].root)->device);
        std::vector<std::size_t> batch, rest;
        std::vector<const ir::Kernel*> kernels;
        for (std::size_t i : todo) {
            if (&backend_for(w.node(items[i].root)->device) != &backend) {
                rest.push_back(i);
                continue;
            }
            batch.push_back(i);
            kernels.push_back(&items[i].kernel);
        }
        std::vector<CompileOutcome> outcome;
        std::vector<std::shared_ptr<CompiledKernel>> compiled = backend.get_kernels(kernels, outcome);
        for (std::size_t b = 0; b < batch.size(); ++b) {
            items[batch[b]].compiled = std::move(compiled[b]);
            const CompileOutcome& o = outcome[b];
            if (level < 1 || !o.compiled) continue;
            out << "[lazytensor] kernel " << batch[b] << " on " << backend.device() << ": compiled in " << o.ms << " ms"
                << (o.batch > 1 ? concat(" with ", o.batch - 1, " other", o.batch > 2 ? "s" : "") : std::string())
                << (o.built_from_source ? ", program built from source" : o.from_disk ? ", program loaded from the disk cache" : "")
                << " (a kernel structure not in this device's kernel cache: new, or evicted from its "
                << backend.cache_capacity() << " entries)\n";
        }
        todo = std::move(rest);
    }
    if (level >= 1) std::cerr << out.str();
}

inline std::vector<Node*> unrealized(const std::vector<Node*>& nodes) {
    std::vector<Node*> out;
    for (Node* n : nodes)
        if (!n->realized() && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
    return out;
}

/// The devices of `nodes` (an expression's nodes all live on its outputs' device).
inline DeviceList devices_of(const std::vector<Node*>& nodes) {
    DeviceList out;
    for (const Node* n : nodes)
        if (std::find(out.begin(), out.end(), n->device) == out.end()) out.push_back(n->device);
    return out;
}

/// Realizes `nodes` together: one schedule, shared parts computed once (the seam's realize_nodes).
/// Holds the locks of the outputs' devices: realizes on other devices run at the same time.
inline void realize_graph(const std::vector<Node*>& nodes) {
    const DeviceLock lock(devices_of(nodes));
    std::vector<Node*> outputs = unrealized(nodes);
    if (outputs.empty()) return;
    const GraphWalk w = walk_graph(std::move(outputs));
    const std::vector<Node*>& output_nodes = w.output_nodes;
    const std::shared_ptr<const Plan> plan = plan_cache().get(w);
    const std::vector<PlannedItem>& items = plan->items;
    auto node = [&](int i) { return w.node(i); };
    const int level = debug_level();
    if (level >= 1) {
        std::ostringstream out;
        std::size_t kernels = 0, gemms = 0;
        std::size_t scans = 0, attentions = 0;
        for (const PlannedItem& p : items)
            (p.is_attention() ? attentions : p.is_gemm() ? gemms : p.is_scan() ? scans : kernels) += p.view_only ? 0 : 1;
        out << "[lazytensor] schedule: " << kernels << " kernel" << (kernels == 1 ? "" : "s");
        if (gemms) out << ", " << gemms << " matmul" << (gemms == 1 ? "" : "s");
        if (scans) out << ", " << scans << " scan" << (scans == 1 ? "" : "s");
        if (attentions) out << ", " << attentions << " attention" << (attentions == 1 ? "" : "s");
        out << " for " << output_nodes.size() << " output" << (output_nodes.size() == 1 ? "" : "s") << "\n";
        for (std::size_t i = 0; i < items.size(); ++i) {
            const PlannedItem& p = items[i];
            Backend& backend = backend_for(node(p.root)->device);
            std::string routine = p.is_gemm() ? backend.gemm_routine(p.gemm)
                                  : p.is_attention() ? backend.attention_routine(p.attention)
                                                     : "";
            for (int o = 0; o < 2; ++o)
                if (p.has_prologue(o))
                    routine += concat(routine.empty() ? "" : ", ", "with the producer of ",
                                      p.is_gemm() ? (o ? "B" : "A") : "its operand", " fused into its loads");
            if (p.has_epilogue()) routine += concat(routine.empty() ? "" : ", ", "with the epilogue fused into its stores");
            print_item(out, i, describe(p, w), level, routine);
        }
        std::cerr << out.str();
    }

    // A result is kept (committed to its node) when it is an output or someone outside this
    // graph still holds its node; other intermediates go as soon as their last reader has run.
    SmallVector<char, 32> kept(w.order.nodes.size(), 0);
    for (int o : w.outputs) kept[static_cast<std::size_t>(o)] = 1;
    auto held_outside = [&](int i) { return node(i)->holders() > plan->uses[static_cast<std::size_t>(i)]; };
    for (const PlannedItem& p : items) {
        if (held_outside(p.root)) kept[static_cast<std::size_t>(p.root)] = 1;
        for (int f : p.fused_away())
            if (held_outside(f)) kept[static_cast<std::size_t>(f)] = 1;
    }
    SmallVector<std::size_t, 32> last_read(w.order.nodes.size(), 0);
    for (std::size_t i = 0; i < items.size(); ++i) {
        for (int in : items[i].inputs) last_read[static_cast<std::size_t>(in)] = i;
        if (items[i].view_only && kept[static_cast<std::size_t>(items[i].root)]) kept[static_cast<std::size_t>(items[i].view_base)] = 1;
    }
    std::vector<NodePtr> hold;  // committing one node may free others that are committed later
    for (const PlannedItem& p : items) {
        if (kept[static_cast<std::size_t>(p.root)]) hold.push_back(node(p.root)->shared_from_this());
        for (int f : p.fused_away())
            if (kept[static_cast<std::size_t>(f)]) hold.push_back(node(f)->shared_from_this());
    }

    compile_items(items, w, level);

    std::vector<BufferPtr> produced(w.order.nodes.size());
    auto buffer_of = [&](int i) { return node(i)->realized() ? node(i)->buffer : produced[static_cast<std::size_t>(i)]; };
    std::vector<Buffer*> params;
    std::vector<Scalar> scalars;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const PlannedItem& p = items[i];
        if (p.view_only) continue;
        Node* root = node(p.root);
        Backend& backend = backend_for(root->device);
        if (level >= 2) {
            const std::string source = item_source(backend, p);
            if (!source.empty()) std::cerr << "  " << p.kind << " " << i << " on " << root->device << ":\n" << source;
        }
        // An assign writes into its target's memory; everything else into new memory.
        BufferPtr out = root->kind == NodeKind::Assign ? root->src[0]->buffer : backend.allocate(root->dtype, numel(root->shape));
        // A product fused with its epilogue gets memory only when it is kept (and so does a
        // producer fused into its loads: run_kept_producers).
        if (p.has_epilogue() && kept[static_cast<std::size_t>(p.fused_product)])
            produced[static_cast<std::size_t>(p.fused_product)] = backend.allocate(p.core_dtype(), numel(node(p.fused_product)->shape));
        params.clear();
        params.reserve(p.inputs.size() + 1);
        for (int in : p.inputs) params.push_back(buffer_of(in).get());
        params.push_back(out.get());
        scalars.clear();
        scalars.reserve(p.scalars.size());
        for (int v : p.scalars) scalars.push_back(node(v)->value);
        std::optional<KernelCheck> check;
        if (check_enabled() && KernelCheck::applies(p, backend))
            check.emplace(p, params, scalars, root->kind == NodeKind::Assign);
        auto run = [&] {
            if (p.is_attention()) {
                run_attention(backend, p, params, scalars, kept, produced);
            } else if (p.fused()) {
                run_kept_producers(backend, p, params, scalars, kept, produced);
                if (p.is_gemm())
                    backend.gemm_fused(p.gemm, p.fusion(), *params[0], *params[1],
                                       std::vector<Buffer*>(params.begin() + 2, params.end()), scalars);
                else
                    backend.scan_fused(p.scan, p.fusion(), *params[0], std::vector<Buffer*>(params.begin() + 1, params.end()),
                                       scalars);
            }
            else if (p.is_gemm())
                backend.gemm(p.gemm, *params[0], *params[1], *params[2]);
            else if (p.is_scan())
                run_scan(backend, p.scan, p.compiled.get(), *params[0], *out);
            else
                backend.launch(*p.compiled, params, scalars);
            if (after_launch_hook()) after_launch_hook()(*out);
            if (check) check->verify(i, items.size(), backend, *out);
        };
        if (level >= 3) {
            const auto t1 = std::chrono::steady_clock::now();
            {
                RecordingTimes recording(backend);
                run();
                backend.synchronize();
            }
            print_timing(i, backend, params, p, t1);
        } else {
            run();
        }
        produced[static_cast<std::size_t>(p.root)] = std::move(out);
        for (int in : p.inputs)
            if (last_read[static_cast<std::size_t>(in)] == i && !kept[static_cast<std::size_t>(in)])
                produced[static_cast<std::size_t>(in)].reset();
    }

    // Commit: every kernel has run. Other threads may be building on these nodes.
    std::unique_lock<std::shared_mutex> commit(graph_mutex());
    for (const PlannedItem& p : items) {
        for (int f : p.fused_away())
            if (kept[static_cast<std::size_t>(f)])
                make_realized(*node(f), produced[static_cast<std::size_t>(f)], 0, contiguous_strides(node(f)->shape));
        if (!kept[static_cast<std::size_t>(p.root)]) continue;
        Node* n = node(p.root);
        if (p.view_only) {
            make_realized(*n, buffer_of(p.view_base), p.view_offset, p.view_strides);
        } else if (n->kind == NodeKind::Assign) {
            const Node& target = *n->src[0];
            make_realized(*n, target.buffer, target.offset, target.strides);
        } else
            make_realized(*n, produced[static_cast<std::size_t>(p.root)], 0, contiguous_strides(n->shape));
    }
}

/// The schedule realize_graph would run for `nodes`, without running it.
inline std::vector<ScheduleItem> describe_schedule(const std::vector<Node*>& nodes) {
    const DeviceLock lock(devices_of(nodes));
    std::vector<Node*> outputs = unrealized(nodes);
    std::vector<ScheduleItem> items;
    if (outputs.empty()) return items;
    const GraphWalk w = walk_graph(std::move(outputs));
    for (const PlannedItem& p : plan_cache().get(w)->items) items.push_back(describe(p, w));
    return items;
}

}  // namespace detail
}  // namespace lazytensor

// Header-only: the definitions of the seam functions used above (runtime/seam.hpp).
#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "engine.hpp"
#endif
