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
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "../ir/static_kernel.hpp"
#include "check.hpp"
#include "collectives.hpp"
#include "device.hpp"
#include "plan.hpp"
#include "seam.hpp"

namespace lazytensor {

namespace detail {

inline std::string describe(const Node* n) { return concat(n->dtype, n->shape); }

inline ScheduleItem describe(const PlannedItem& p, const GraphWalk& w) {
    ScheduleItem item;
    item.kind = p.kind();
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
    p.visit([&](const auto& k) { k.describe(item, w.node(p.root)->device); });
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

/// LAZYTENSOR_DEBUG=3: an item's time (on the device's own clock where it has one) and the
/// bandwidth of reading its inputs and writing its output once, or its FLOP rate.
inline void print_timing(std::size_t i, Backend& backend, const std::vector<Buffer*>& params, const PlannedItem& item,
                         std::chrono::steady_clock::time_point launch) {
    using ms_t = std::chrono::duration<double, std::milli>;
    const auto now = std::chrono::steady_clock::now();
    const std::vector<double> device = backend.take_device_times_ms();
    double bytes = 0;
    for (Buffer* b : params)
        if (b) bytes += static_cast<double>(b->bytes());  // (a fused product that is not kept has none)
    std::ostringstream out;
    out << "  " << item.kind() << " " << i << ": ";
    double ms = ms_t(now - launch).count();
    if (!device.empty()) {
        // Every kernel the item ran (a copy before the routine, the parts of a fused item).
        ms = std::accumulate(device.begin(), device.end(), 0.0);
        out << ms << " ms on the device";
    } else {
        out << ms << " ms";
    }
    const double flops = item.visit([](const auto& k) { return k.flops(); });
    if (ms > 0 && flops > 0) out << ", " << flops / (ms * 1e-3) / 1e9 << " GFLOP/s";
    else if (ms > 0) out << ", " << bytes / (ms * 1e-3) / 1e9 << " GB/s";
    std::cerr << out.str() << "\n";
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
        if (p.own_kernel() && !p.compiled) todo.push_back(i);
    }
    if (todo.empty()) return;  // (the common case: a plan that has run before)
    std::ostringstream out;
    while (!todo.empty()) {
        Backend& backend = device_backend(w.node(items[todo[0]].root)->device);
        std::vector<std::size_t> batch, rest;
        std::vector<const ir::Kernel*> kernels;
        for (std::size_t i : todo) {
            if (&device_backend(w.node(items[i].root)->device) != &backend) {
                rest.push_back(i);
                continue;
            }
            batch.push_back(i);
            kernels.push_back(items[i].own_kernel());
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

inline void run_items(const GraphWalk& w, const Plan& plan, const SmallVector<char, 32>& kept,
                      const SmallVector<std::size_t, 32>& last_read, int level);

/// Realizes `nodes` together: one schedule, shared parts computed once (the seam's realize_nodes).
/// Holds the locks of the outputs' devices: realizes on other devices run at the same time.
inline void realize_graph(const std::vector<Node*>& nodes) {
    const DeviceLock lock(devices_of(nodes));
    std::vector<Node*> outputs = unrealized(nodes);
    if (outputs.empty()) return;
    const GraphWalk w = walk_graph(std::move(outputs));
    // Collectives: one realize at a time issues a group's, and every rank agrees first.
    const std::vector<int> groups = collective_groups(w.order.nodes);
    std::vector<std::unique_lock<std::mutex>> issuing;
    for (int g : groups) issuing.emplace_back(communicator(g)->issue_mutex());
    std::shared_ptr<const Plan> plan;
    try {
        plan = plan_cache().get(w);
    } catch (const std::exception& e) {
        if (!groups.empty()) tell_failure(groups, e.what());
        throw;
    }
    const std::vector<Node*>& output_nodes = w.output_nodes;
    const std::vector<PlannedItem>& items = plan->items;
    auto node = [&](int i) { return w.node(i); };
    const int level = debug_level();
    if (level >= 1) {
        std::ostringstream out;
        // "2 kernels, 1 matmul": kernels always, other kinds where there are some.
        std::map<ScheduleItem::Kind, std::size_t> count{{ScheduleItem::Kind::Kernel, 0}};
        for (const PlannedItem& p : items)
            if (p.computes()) ++count[p.kind()];
        out << "[lazytensor] schedule: ";
        for (const auto& [kind, n] : count) {
            if (!n && kind != ScheduleItem::Kind::Kernel) continue;
            out << (kind == ScheduleItem::Kind::Kernel ? "" : ", ") << n << " " << kind << (n == 1 ? "" : "s");
        }
        out << " for " << output_nodes.size() << " output" << (output_nodes.size() == 1 ? "" : "s") << "\n";
        for (std::size_t i = 0; i < items.size(); ++i) {
            const PlannedItem& p = items[i];
            Backend& backend = device_backend(node(p.root)->device);
            print_item(out, i, describe(p, w), level, p.visit([&](const auto& k) { return k.routine(backend); }));
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
        const Aliasing* alias = items[i].visit([](const auto& k) { return k.aliasing(); });
        if (alias && kept[static_cast<std::size_t>(items[i].root)]) kept[static_cast<std::size_t>(alias->base)] = 1;
    }
    std::vector<NodePtr> hold;  // committing one node may free others that are committed later
    for (const PlannedItem& p : items) {
        if (kept[static_cast<std::size_t>(p.root)]) hold.push_back(node(p.root)->shared_from_this());
        for (int f : p.fused_away())
            if (kept[static_cast<std::size_t>(f)]) hold.push_back(node(f)->shared_from_this());
    }

    try {
        compile_items(items, w, level);
    } catch (const std::exception& e) {
        if (!groups.empty()) tell_failure(groups, e.what());
        throw;
    }
    if (!groups.empty()) agree_on_collectives(items);
    // From here on the other ranks may be inside collectives that only this rank can complete:
    // an error ends the job (Communicator::abort) rather than leaving them waiting.
    try {
        run_items(w, *plan, kept, last_read, level);
    } catch (const std::exception& e) {
        if (groups.empty()) throw;
        const std::shared_ptr<Communicator> comm = communicator(groups[0]);
        comm->abort(concat("[lazytensor rank ", comm->rank(), " of ", comm->size(), "] ", e.what()));
    }
}

/// Runs the items of `plan` in order, then commits the results that are kept.
inline void run_items(const GraphWalk& w, const Plan& plan, const SmallVector<char, 32>& kept,
                      const SmallVector<std::size_t, 32>& last_read, int level) {
    const std::vector<PlannedItem>& items = plan.items;
    auto node = [&](int i) { return w.node(i); };
    InFlight in_flight;
    std::vector<BufferPtr> produced(w.order.nodes.size());
    auto buffer_of = [&](int i) { return node(i)->realized() ? node(i)->buffer : produced[static_cast<std::size_t>(i)]; };
    std::vector<Buffer*> params;
    std::vector<Scalar> scalars;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const PlannedItem& p = items[i];
        if (!p.computes()) continue;
        Node* root = node(p.root);
        Backend& backend = device_backend(root->device);
        if (level >= 2) {
            const std::string source = p.source(backend);
            if (!source.empty()) std::cerr << "  " << p.kind() << " " << i << " on " << root->device << ":\n" << source;
        }
        // An assign writes into its target's memory; everything else into new memory.
        BufferPtr out = root->kind == NodeKind::Assign ? root->src[0]->buffer : backend.allocate(root->dtype, numel(root->shape));
        p.visit([&](const auto& k) { k.allocate_results(backend, kept, produced); });
        params.clear();
        params.reserve(p.inputs.size() + 1);
        for (int in : p.inputs) in_flight.finish(in);
        for (int in : p.inputs) params.push_back(buffer_of(in).get());
        params.push_back(out.get());
        scalars.clear();
        scalars.reserve(p.scalars.size());
        for (int v : p.scalars) scalars.push_back(node(v)->value);
        std::optional<KernelCheck> check;
        if (check_flag().load() && KernelCheck::applies(p, backend))
            check.emplace(p, params, scalars, root->kind == NodeKind::Assign);
        // Work left in flight where nothing times the item or checks its result.
        const std::size_t flying = in_flight.list().size();
        std::vector<Deferred>* deferred = level >= 3 || check ? nullptr : &in_flight.list();
        auto run = [&] {
            const ItemRun context{backend, params, scalars, p.compiled.get(), kept, produced, deferred};
            p.visit([&](const auto& k) { k.run(context); });
            for (std::size_t d = flying; d < in_flight.list().size(); ++d) {
                Deferred& started = in_flight.list()[d];
                started.node = p.root;
                for (int in : p.inputs) started.hold.push_back(buffer_of(in));
                started.hold.push_back(out);
            }
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
        in_flight.progress();
    }
    in_flight.finish_all();

    // Commit: every kernel has run. Other threads may be building on these nodes.
    std::unique_lock<std::shared_mutex> commit(graph_mutex());
    for (const PlannedItem& p : items) {
        for (int f : p.fused_away())
            if (kept[static_cast<std::size_t>(f)])
                make_realized(*node(f), produced[static_cast<std::size_t>(f)], 0, contiguous_strides(node(f)->shape));
        if (!kept[static_cast<std::size_t>(p.root)]) continue;
        Node* n = node(p.root);
        if (const Aliasing* alias = p.visit([](const auto& k) { return k.aliasing(); })) {
            make_realized(*n, buffer_of(alias->base), alias->offset, alias->strides);
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
