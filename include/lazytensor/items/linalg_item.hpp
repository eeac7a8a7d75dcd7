// SPDX-License-Identifier: MIT
// The linear-algebra item: a linalg node (ir/linalg.hpp) run by the backend's LAPACK routine
// over every matrix of its batch, into the packed results that the user's tensors view.
//
// Lowering follows each operand through its views to a buffer, as a matrix product's does: a
// transposed, sliced or batch-broadcast operand is read in place (the routine copies each
// matrix into LAPACK's layout anyway). An operand that is not in a buffer yet is materialized
// first. On an OpenCL device, Cholesky and solve run in kernels of the device's where
// LAZYTENSOR_OPENCL_LINALG lets them (backend/opencl/linalg_routines.hpp); every other routine
// runs LAPACK on the host, the operands copied there and the results back, which lt::schedule
// and LAZYTENSOR_DEBUG say. Check mode has no second implementation to compare with (both would be
// the same LAPACK call), so it checks the kernels around the item, not the item.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../ir/linalg.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct LinalgItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Linalg;
    ir::Linalg call;

    /// Lowers group g (its root a linalg node): fills g.linalg and g.inputs (the operands'
    /// buffers), or says which operand must be in a buffer first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        const Node* node = g.root;
        ir::Linalg& L = g.linalg;
        L.op = static_cast<LinalgOp>(node->params[0]);
        L.flags = static_cast<int>(node->params[1]);
        L.m = node->params[2];
        L.n = node->params[3];
        L.k = node->params[4];
        L.dtype = node->dtype;
        L.batch = Shape(node->shape.begin(), node->shape.end() - 1);
        g.inputs.clear();
        for (int i = 0; i < node->nsrc; ++i) {
            Node* operand = node->src[static_cast<std::size_t>(i)].get();
            Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
            if (!r.load) return Materialize{operand, "operand of a linear-algebra routine, not yet in a buffer"};
            L.operands[i] = ir::LinalgOperand{r.access.offset, r.access.strides};
            g.inputs.push_back(r.node);
        }
        g.ops = {linalg_info(L.op).name};
        return std::nullopt;
    }
    static LinalgItem of(const Group& g) {
        LinalgItem item;
        item.call = g.linalg;
        return item;
    }

    void describe(ScheduleItem& item, Device device) const {
        item.ir = ir::to_string(call);
        if (device.kind != Device::Kind::Host)
            item.ir += concat("    on ", device, ": Cholesky and solve in kernels of the device's (batched up to 64x64, recursive "
                              "on the device's GEMM above), else LAPACK on the host (the operands copied there and the results "
                              "back); the routine says which\n");
    }
    std::string routine(Backend& backend) const { return backend.linalg_routine(call); }
    void run(const ItemRun& r) const { run_on(r.backend, r.params); }
    /// The same LAPACK call on the host: there is no second implementation to compare with.
    bool checked_on(const Backend&) const { return false; }
    const char* reference(const HostRun& h) const {
        run_on(h.host, h.params);
        return "LAPACK on the host";
    }
    std::string listing() const { return "--- linalg ---\n" + ir::to_string(call); }

private:
    /// params: the operands' buffers, then the packed results'.
    void run_on(Backend& backend, const std::vector<Buffer*>& params) const {
        const std::vector<const Buffer*> operands(params.begin(), params.end() - 1);
        backend.linalg(call, operands, *params.back());
    }
};

}  // namespace lazytensor::detail
