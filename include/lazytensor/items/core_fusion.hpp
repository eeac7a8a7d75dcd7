// SPDX-License-Identifier: MIT
// Element-wise kernels fused into a matrix product or a scan (schedule/fuse_products.hpp picks
// them): per operand a producer run in the item's loads (a prologue), and a consumer run in its
// stores (an epilogue). Shared by the two kinds that take them (gemm_item.hpp, scan_item.hpp):
// what is fused, how realize keeps the results fused away where a tensor holds them, how it is
// described, and how check mode runs it on the host as separate steps.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "item.hpp"

namespace lazytensor::detail {

struct CoreFusion {
    ir::Kernel prologue[2];       // prologue[o] computes operand o from the item's input o
    int producer[2] = {-1, -1};   // the nodes the prologues compute (-1: none)
    ir::Kernel epilogue;          // reads the product or scan as parameter product_param
    int product = -1;             // the product's or scan's node, when an epilogue consumes it
    int product_param = -1;

    bool has_prologue(int o) const { return producer[o] >= 0; }
    bool has_epilogue() const { return product >= 0; }
    bool any() const { return has_epilogue() || has_prologue(0) || has_prologue(1); }

    /// The fused kernels as the backend takes them.
    FusedKernels kernels() const {
        FusedKernels f;
        for (int o = 0; o < 2; ++o)
            if (has_prologue(o)) f.prologue[o] = &prologue[o];
        if (has_epilogue()) f.epilogue = &epilogue, f.product_param = product_param;
        return f;
    }
    SmallVector<int, 3> fused_away() const {
        SmallVector<int, 3> out;
        for (int n : {producer[0], producer[1], product})
            if (n >= 0) out.push_back(n);
        return out;
    }
    /// A kept product (or scan) under an epilogue gets memory of its own: the epilogue's
    /// parameter product_param, which the backend also fills.
    void allocate_results(Backend& backend, const SmallVector<char, 32>& kept, std::vector<BufferPtr>& produced, DType core,
                       std::int64_t count) const {
        if (has_epilogue() && kept[static_cast<std::size_t>(product)])
            produced[static_cast<std::size_t>(product)] = backend.allocate(core, count);
    }

    /// Producers that a tensor outside the graph holds: computed into buffers of their own as
    /// well (the item computes them again in its loads). Their scalars come first, A's then B's.
    void run_kept_producers(const ItemRun& r) const {
        std::size_t first_scalar = 0;
        for (int o = 0; o < 2; ++o) {
            if (!has_prologue(o)) continue;
            const ir::Kernel& k = prologue[o];
            if (r.keeps(producer[o])) {
                BufferPtr out = r.backend.allocate(k.params[1].dtype, numel(k.domain));
                r.backend.launch(*r.backend.get_kernel(k), {r.params[static_cast<std::size_t>(o)], out.get()},
                                 scalars_of(r.scalars, first_scalar, k));
                r.produced[static_cast<std::size_t>(producer[o])] = std::move(out);
            }
            first_scalar += k.scalars.size();
        }
    }

    /// LAZYTENSOR_DEBUG=1's words for what is fused ("with the epilogue fused into its stores").
    std::string routine(bool two_operands) const {
        std::string out;
        for (int o = 0; o < 2; ++o)
            if (has_prologue(o))
                out += concat(out.empty() ? "" : ", ", "with the producer of ", two_operands ? (o ? "B" : "A") : "its operand",
                              " fused into its loads");
        if (has_epilogue()) out += concat(out.empty() ? "" : ", ", "with the epilogue fused into its stores");
        return out;
    }
    /// The fused kernels' IR, as lt::schedule and LAZYTENSOR_DEBUG=2 list them after the core's.
    /// `what`: "product" or "scan".
    std::string describe(const char* what, bool two_operands) const {
        std::string out;
        for (int o = 0; o < 2; ++o)
            if (has_prologue(o))
                out += concat("    prologue", two_operands ? (o ? " of B" : " of A") : "", ", applied in the ", what,
                              "'s loads:\n", ir::to_string(prologue[o]));
        if (has_epilogue())
            out += concat("    epilogue, applied in the ", what, "'s stores (it reads the ", what, " as p", product_param,
                          "):\n", ir::to_string(epilogue));
        return out;
    }
    /// The same for check mode's messages.
    std::string listing(const char* what, bool two_operands) const {
        std::string out;
        for (int o = 0; o < 2; ++o)
            if (has_prologue(o))
                out += concat("--- prologue", two_operands ? (o ? " of B" : " of A") : "", " ---\n", ir::to_string(prologue[o]));
        if (has_epilogue())
            out += concat("--- epilogue (reads the ", what, " as p", product_param, ") ---\n", ir::to_string(epilogue));
        return out;
    }

    /// Check mode's reference: each prologue into a buffer of its own, then `core(operands, out)`
    /// (the product or scan, into a buffer of its own where an epilogue follows), then the
    /// epilogue, each on the host (with HostRun::magnitudes, the prologues' and epilogue's
    /// magnitude kernels). h.params: the operands' buffers (or their prologues' inputs), then the
    /// epilogue's buffers or the result's. `count`: the core's elements, of dtype `core_dtype`.
    template <class Core>
    void run_on_host(const HostRun& h, int operands, DType core_dtype, std::int64_t count, const Core& core) const {
        BufferPtr made[2];
        Buffer* operand[2] = {nullptr, nullptr};
        std::size_t first_scalar = 0;
        for (int o = 0; o < operands; ++o) {
            operand[o] = h.params[static_cast<std::size_t>(o)];
            if (!has_prologue(o)) continue;
            const ir::Kernel& k = prologue[o];
            made[o] = h.host.allocate(core_dtype, numel(k.domain));
            interpret_on_host(h.host, k, {operand[o], made[o].get()}, scalars_of(h.scalars, first_scalar, k), h.magnitudes);
            first_scalar += k.scalars.size();
            operand[o] = made[o].get();
        }
        if (!has_epilogue()) return core(operand, *h.params[static_cast<std::size_t>(operands)]);
        std::vector<Buffer*> buffers(h.params.begin() + operands, h.params.end());
        BufferPtr result = h.host.allocate(core_dtype, count);
        core(operand, *result);
        buffers[static_cast<std::size_t>(product_param)] = result.get();
        interpret_on_host(h.host, epilogue, buffers, scalars_of(h.scalars, first_scalar, epilogue), h.magnitudes);
    }

private:
    /// Kernel k's own scalars: those from `first` on.
    static std::vector<Scalar> scalars_of(const std::vector<Scalar>& all, std::size_t first, const ir::Kernel& k) {
        return std::vector<Scalar>(all.begin() + static_cast<std::ptrdiff_t>(first),
                                   all.begin() + static_cast<std::ptrdiff_t>(first + k.scalars.size()));
    }
};

}  // namespace lazytensor::detail
