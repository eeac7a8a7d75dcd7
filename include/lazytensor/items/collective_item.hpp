// SPDX-License-Identifier: MIT
// The collective item: a collective node (ir/collective.hpp) run by its group's transport.
//
// The operand is read from contiguous memory (a kernel materializes it where it is not: what
// produces it fuses into that kernel; realized memory laid out otherwise, a view the user
// realized after building the collective, is copied by a kernel of the item's own), and the
// result is a new buffer that later kernels read.
// On the host the transport reads and writes the buffers in place; an OpenCL operand is copied to
// pinned host memory and the result back (the transport reaches host memory only; the copy out
// runs on the device's transfer queue beside later kernels, the one back waits, before what
// reads the result). The item starts the collective and
// leaves it in flight (ItemRun::deferred): realize finishes it before the first item that reads
// the result, so the items between run meanwhile.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../codegen/lower.hpp"
#include "../ir/collective.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct CollectiveItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Collective;
    ir::Collective call;
    ir::Kernel operand;  // copies a realized operand into contiguous memory first (no phases: read in place)

    /// Lowers group g (its root a collective node): fills g.collective and g.inputs (the
    /// operand's buffer, or the inputs of g.kernel, which copies a realized operand not laid out
    /// contiguously), or asks for a lazy operand in contiguous memory of its own first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        const Node* node = g.root;
        Node* operand = node->src[0].get();
        ir::Collective& c = g.collective;
        c.op = static_cast<CollectiveOp>(node->params[0]);
        c.group = static_cast<int>(node->params[1]);
        c.root = static_cast<int>(node->params[2]);
        c.dtype = node->dtype;
        c.count = numel(operand->shape);
        c.operand = operand->shape;
        g.kernel = ir::Kernel{};
        g.scalars.clear();
        g.ops = {collective_name(c.op)};
        Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
        if (r.load && is_contiguous_layout(operand->shape, r.access.strides, 0)) {
            c.offset = r.access.offset;
            g.inputs = {r.node};
            return std::nullopt;
        }
        if (!operand->realized())
            return Materialize{operand, "operand of a collective (the transport reads contiguous memory)", true};
        // Realized after the collective was built (graph::row_major_operand copies what is
        // realized before): nothing computes it again, so the item copies it.
        Group copier = g;
        copier.root = operand;
        copier.inputs.clear();
        if (std::optional<Materialize> m = Lowering(s, copier).run()) return m;
        c.offset = 0;
        g.kernel = std::move(copier.kernel);
        g.scalars = std::move(copier.scalars);
        g.inputs = std::move(copier.inputs);
        g.ops.insert(g.ops.begin(), "copy");
        return std::nullopt;
    }
    static CollectiveItem of(const Group& g) {
        CollectiveItem item;
        item.call = g.collective;
        item.operand = g.kernel;
        return item;
    }
    const ir::Kernel* own_kernel() const { return operand.phases.empty() ? nullptr : &operand; }

    void describe(ScheduleItem& item, Device device) const {
        item.ir = (own_kernel() ? "    operand copied into contiguous memory:\n" + ir::to_string(operand) : std::string()) +
                  ir::to_string(call);
        if (device.kind != Device::Kind::Host)
            item.ir += concat("    through host memory: the operand is copied from ", device, " and the result back\n");
    }
    std::string routine(Backend& backend) const {
        std::string out = communicator(call.group)->routine(call.op);
        return out + (backend.device().kind == Device::Kind::Host ? ", host memory" : ", staged through host memory");
    }
    /// Nothing to compare with: the transport is the only implementation.
    bool checked_on(const Backend&) const { return false; }
    const char* reference(const HostRun& h) const {
        std::shared_ptr<CompiledKernel> host_copy;
        if (own_kernel()) {
            ir::Kernel on_interpreter = operand;  // (check mode's reference is not a compiled loop)
            on_interpreter.candidate = nullptr;
            host_copy = h.host.get_kernel(on_interpreter);
        }
        start(h.host, host_copy.get(), h.params, h.scalars, nullptr);
        return "the transport, on host copies";
    }
    std::string source(Backend& backend, const CompiledKernel* compiled) const {
        return compiled ? backend.kernel_source(*compiled) : std::string();
    }
    std::string listing() const {
        return "--- collective ---\n" + ir::to_string(call) + (own_kernel() ? ir::to_string(operand) : std::string());
    }
    void run(const ItemRun& r) const { start(r.backend, r.compiled, r.params, r.scalars, r.deferred); }

private:
    std::int64_t out_count(int size) const {
        if (call.op == CollectiveOp::Gather) return call.count * size;
        if (call.op == CollectiveOp::ReduceScatter) return call.count / size;
        return call.count;
    }

    /// Starts the collective on params (the operand's buffer, then the result's); completes it
    /// at once unless `deferred` takes it. An OpenCL operand is read to host memory without
    /// waiting (the collective starts once the read is done), so kernels queued after it keep
    /// the device busy meanwhile.
    /// `compiled`: the operand's copy (own_kernel), whose inputs are params but the last.
    void start(Backend& backend, CompiledKernel* compiled, const std::vector<Buffer*>& params,
               const std::vector<Scalar>& scalars, std::vector<Deferred>* deferred) const {
        struct Flight {
            std::shared_ptr<Communicator> comm;
            BufferPtr copied;                     // the operand copied into contiguous memory
            std::shared_ptr<DeviceEvent> staged;  // the operand's copy to host memory
            std::shared_ptr<void> sent, received;  // host staging (OpenCL): pinned blocks
            std::size_t received_bytes = 0;
            std::unique_ptr<Transfer> transfer;
        };
        auto f = std::make_shared<Flight>();
        f->comm = communicator(call.group);
        const std::size_t element = dtype_size(call.dtype);
        if (compiled) {
            f->copied = backend.allocate(call.dtype, call.count);
            std::vector<Buffer*> buffers(params.begin(), params.end() - 1);
            buffers.push_back(f->copied.get());
            backend.launch(*compiled, buffers, scalars);
        }
        Buffer& in = f->copied ? *f->copied : *params[0];
        Buffer& out = *params.back();
        const std::int64_t results = out_count(f->comm->size());
        const bool host = backend.device().kind == Device::Kind::Host;
        const ir::Collective c = call;
        auto begin = [f, c, host, &in, &out, element] {
            const std::string what = ir::agreement_record(c);
            if (host) {
                const char* from = static_cast<const char*>(in.handle()) + c.offset * static_cast<std::int64_t>(element);
                f->transfer = f->comm->start(c.op, c.dtype, from, out.handle(), c.count, c.root, what);
            } else {
                f->transfer = f->comm->start(c.op, c.dtype, f->sent.get(), f->received.get(), c.count, c.root, what);
            }
        };
        if (!host) {
            const std::size_t sent_bytes = static_cast<std::size_t>(call.count) * element;
            f->received_bytes = static_cast<std::size_t>(results) * element;
            f->sent = backend.host_staging(sent_bytes);
            f->received = backend.host_staging(f->received_bytes);
            f->staged = backend.read_async(in, static_cast<std::size_t>(call.offset) * element, f->sent.get(), sent_bytes);
        } else {
            // Issued now: the collectives still waiting for a copy (on another device) go first.
            if (deferred)
                for (Deferred& earlier : *deferred)
                    if (earlier.issue && !earlier.issued()) earlier.issue();
            begin();
        }
        auto issue = [f, begin] {
            if (f->transfer) return;
            f->staged->wait();
            begin();
        };
        auto finish = [f, issue, host, &backend, &out] {
            issue();
            f->transfer->wait();
            if (!host && f->received_bytes) backend.write(out, 0, f->received.get(), f->received_bytes);
        };
        if (!deferred) {
            finish();
            return;
        }
        Deferred d;
        d.test = [f, begin] {
            if (!f->transfer) {
                if (!f->staged->is_done()) return false;
                begin();
            }
            return f->transfer->test();
        };
        d.finish = finish;
        d.issued = [f] { return f->transfer != nullptr; };
        d.issue = issue;
        deferred->push_back(std::move(d));
    }
};

}  // namespace lazytensor::detail
