// SPDX-License-Identifier: MIT
// The collective item: a collective node (ir/collective.hpp) run by its group's transport.
//
// The operand is read from contiguous memory (a kernel materializes it where it is not: what
// produces it fuses into that kernel), and the result is a new buffer that later kernels read.
// On the host the transport reads and writes the buffers in place; an OpenCL operand is copied to
// host memory and the result back (the transport reaches host memory only). The item starts the
// collective and leaves it in flight (ItemRun::deferred): realize finishes it before the first
// item that reads the result, so the items between run meanwhile.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "../ir/collective.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct CollectiveItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Collective;
    ir::Collective call;

    /// Lowers group g (its root a collective node): fills g.collective and g.inputs (the
    /// operand's buffer), or asks for the operand in contiguous memory of its own first.
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
        Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
        if (!r.load || !is_contiguous_layout(operand->shape, r.access.strides, 0))
            return Materialize{operand, "operand of a collective (the transport reads contiguous memory)", true};
        c.offset = r.access.offset;
        g.inputs = {r.node};
        g.ops = {collective_name(c.op)};
        return std::nullopt;
    }
    static CollectiveItem of(const Group& g) {
        CollectiveItem item;
        item.call = g.collective;
        return item;
    }

    void describe(ScheduleItem& item, Device device) const {
        item.ir = ir::to_string(call);
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
        start(h.host, h.params, nullptr);
        return "the transport, on host copies";
    }
    std::string listing() const { return "--- collective ---\n" + ir::to_string(call); }
    void run(const ItemRun& r) const { start(r.backend, r.params, r.deferred); }

private:
    std::int64_t out_count(int size) const {
        if (call.op == CollectiveOp::Gather) return call.count * size;
        if (call.op == CollectiveOp::ReduceScatter) return call.count / size;
        return call.count;
    }

    /// Starts the collective on params (the operand's buffer, then the result's); completes it
    /// at once unless `deferred` takes it.
    void start(Backend& backend, const std::vector<Buffer*>& params, std::vector<Deferred>* deferred) const {
        const std::shared_ptr<Communicator> comm = communicator(call.group);
        const std::size_t element = dtype_size(call.dtype);
        Buffer& in = *params[0];
        Buffer& out = *params.back();
        const std::int64_t results = out_count(comm->size());
        const std::string what = ir::agreement_record(call);
        std::unique_ptr<Transfer> transfer;
        std::function<void()> complete;
        if (backend.device().kind == Device::Kind::Host) {
            const char* from = static_cast<const char*>(in.handle()) + call.offset * static_cast<std::int64_t>(element);
            transfer = comm->start(call.op, call.dtype, from, out.handle(), call.count, call.root, what);
        } else {
            // Host staging: the transport reaches host memory only.
            auto sent = std::make_shared<std::vector<char>>(static_cast<std::size_t>(call.count) * element);
            auto received = std::make_shared<std::vector<char>>(static_cast<std::size_t>(results) * element);
            if (!sent->empty()) backend.read(in, static_cast<std::size_t>(call.offset) * element, sent->data(), sent->size());
            transfer = comm->start(call.op, call.dtype, sent->data(), received->data(), call.count, call.root, what);
            complete = [&backend, &out, sent, received] {
                if (!received->empty()) backend.write(out, 0, received->data(), received->size());
            };
        }
        if (!deferred) {
            transfer->wait();
            if (complete) complete();
            return;
        }
        std::shared_ptr<Transfer> flight(std::move(transfer));
        Deferred d;
        d.test = [flight] { return flight->test(); };
        d.finish = [flight, complete] {
            flight->wait();
            if (complete) complete();
        };
        deferred->push_back(std::move(d));
    }
};

}  // namespace lazytensor::detail
