// SPDX-License-Identifier: MIT
// The scan item: a cumsum or cumprod node (ir/scan.hpp) run by the backend's scan, with the
// element-wise producer of its operand and its consumer fused into its loads and stores where
// the backend can (core_fusion.hpp).
//
// Lowering follows the operand through its views to a buffer and reads it in place when the
// axes before and after the scanned one are each one strided run (a transposed or sliced
// operand usually is). Otherwise the item first copies it into a contiguous buffer (`copy`). An
// operand that is not in a buffer yet must be materialized first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../ir/scan.hpp"
#include "../schedule/schedule.hpp"
#include "core_fusion.hpp"

namespace lazytensor::detail {

struct ScanItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Scan;
    ir::Scan scan;
    ir::Kernel copy;  // copies the operand into a contiguous buffer first (no phases: read in place)
    CoreFusion fusion;

    /// Lowers group g (its root a scan node): fills g.scan, g.kernel (the copy), g.inputs and
    /// g.ops, or says that the operand must be in a buffer first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        Node* node = g.root;
        Node* operand = node->src[0].get();
        const std::size_t axis = static_cast<std::size_t>(node->axes[0]);
        Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
        if (!r.load) return Materialize{operand, "operand of a scan, not yet in a buffer"};
        g.inputs = {r.node};
        g.scan = ir::Scan{};
        g.scan.dtype = node->dtype;
        g.scan.op = node->reduce_op;
        g.kernel = ir::Kernel{};
        const char* name = node->reduce_op == ReduceOp::Sum ? "cumsum" : "cumprod";
        g.ops = {name};
        if (!ir::scan_layout(operand->shape, r.access.strides, r.access.offset, axis, g.scan)) {
            g.kernel = ir::contiguous_copy(node->dtype, operand->shape, r.access);
            ir::scan_layout(operand->shape, contiguous_strides(operand->shape), 0, axis, g.scan);
            g.ops = {"copy", name};
        }
        return std::nullopt;
    }

    const ir::Kernel* own_kernel() const { return !fusion.any() && !copy.phases.empty() ? &copy : nullptr; }
    SmallVector<int, 3> fused_away() const { return fusion.fused_away(); }
    void allocate_results(Backend& backend, const SmallVector<char, 32>& kept, std::vector<BufferPtr>& produced) const {
        fusion.allocate_results(backend, kept, produced, scan.dtype, scan.numel());
    }
    void describe(ScheduleItem& item, Device) const {
        item.ir = (own_kernel() ? "    copy to a contiguous buffer:\n" + ir::to_string(copy) : std::string()) +
                  ir::to_string(scan) + fusion.describe("scan", false);
    }
    std::string routine(Backend&) const { return fusion.routine(false); }
    std::string source(Backend& backend, const CompiledKernel* compiled) const {
        if (fusion.any()) return backend.scan_fused_source(scan, fusion.kernels());
        return compiled ? backend.kernel_source(*compiled) : std::string();
    }
    void run(const ItemRun& r) const {
        if (!fusion.any()) return scan_rows(r.backend, r.compiled, *r.params[0], r.out());
        fusion.run_kept_producers(r);
        r.backend.scan_fused(scan, fusion.kernels(), *r.params[0], std::vector<Buffer*>(r.params.begin() + 1, r.params.end()),
                             r.scalars);
    }

    /// A fused scan rounds in its own dtype whatever the epilogue casts it to; each factor of a
    /// product rounds it once, relatively: a cumprod of n factors may differ by about n
    /// epsilons between two orders (70000 float factors did by 1.1e-4 on the H100).
    void widen_tolerance(CheckTolerance& tol, DType out) const {
        const CheckTolerance own = check_tolerance(scan.dtype);
        if (fusion.any() && is_floating(out) && own.rtol > tol.rtol) tol.rtol = own.rtol, tol.atol = own.atol;
        if (scan.op == ReduceOp::Prod && is_floating(out))
            tol.rtol = std::max(tol.rtol, 2.0 * static_cast<double>(scan.length) * dtype_epsilon(scan.dtype));
    }
    /// The host's scan (and the fused kernels on the interpreter); magnitudes: the scan of |x|,
    /// or of the prologue's magnitudes.
    const char* reference(const HostRun& h) const {
        std::vector<Buffer*> params = h.params;
        BufferPtr absolute;
        if (h.magnitudes && !fusion.has_prologue(0)) {
            absolute = absolute_copy(h.host, *params[0]);
            params[0] = absolute.get();
        }
        const std::shared_ptr<CompiledKernel> host_copy = own_kernel() ? h.host.get_kernel(copy) : nullptr;
        fusion.run_on_host(HostRun{h.host, params, h.scalars, h.magnitudes}, 1, scan.dtype, scan.numel(),
                           [&](Buffer* const* operand, Buffer& out) { scan_rows(h.host, host_copy.get(), *operand[0], out); });
        return fusion.any() ? "the host's scan and interpreter" : "the host's scan";
    }
    std::string listing() const { return "--- scan ---\n" + ir::to_string(scan) + fusion.listing("scan", false); }

private:
    /// The scan of `in` into `out` on `backend`; `compiled_copy`, where the item has one, first
    /// copies the operand into a contiguous buffer of its own.
    void scan_rows(Backend& backend, CompiledKernel* compiled_copy, const Buffer& in, Buffer& out) const {
        if (!compiled_copy) return backend.scan(scan, in, out);
        BufferPtr contiguous = backend.allocate(in.dtype(), scan.numel());
        backend.launch(*compiled_copy, {const_cast<Buffer*>(&in), contiguous.get()}, {});
        backend.scan(scan, *contiguous, out);
    }
};

}  // namespace lazytensor::detail
