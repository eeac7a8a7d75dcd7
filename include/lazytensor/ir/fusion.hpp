// SPDX-License-Identifier: MIT
// Which element-wise kernels can run inside an item that a backend runs by itself (a matrix
// product, a scan), instead of as kernels of their own around it:
//   - a prologue maps each element of one input to one element of the item's operand, and runs
//     in the item's loads of that input (a scale, a cast);
//   - an epilogue reads the item's result only at the element it computes, and runs in the
//     item's stores (relu(x @ w + b), exp(cumsum(x))).
// ir/gemm.hpp and ir/scan.hpp say which of these each item takes.
#pragma once

#include <cstdint>

#include "../core/dtype.hpp"
#include "kernel.hpp"

namespace lazytensor::detail::ir {

/// Whether `k` is element-wise over `numel` elements and walks them in order: one store phase
/// over its whole domain, no reduction, reading parameter `core_param` (of dtype `core`) only
/// at the element it computes and storing one value into the same position of its output (its
/// last parameter, a fresh buffer). Extra inputs and scalars are free.
inline bool fits_as_epilogue(DType core, std::int64_t numel_of_core, const Kernel& k, int core_param) {
    const std::size_t params = k.params.size();
    if (k.in_place || params < 2 || core_param < 0 || static_cast<std::size_t>(core_param) + 1 >= params) return false;
    for (std::size_t p = 0; p < params; ++p)
        if (k.params[p].output != (p + 1 == params)) return false;
    if (k.params[static_cast<std::size_t>(core_param)].dtype != core) return false;
    if (k.has_reduction() || numel(k.domain) != numel_of_core) return false;
    if (k.phases.size() != 1) return false;
    const Phase& phase = k.phases[0];
    if (phase.kind != Phase::Kind::Store || phase.outer || phase.stores.size() != 1) return false;
    const Access in_order{0, contiguous_strides(k.domain)};
    const Store& store = phase.stores[0];
    if (static_cast<std::size_t>(store.param) + 1 != params || store.access != in_order) return false;
    for (const Instr& in : phase.instrs) {
        if (in.op == Op::Slot) return false;
        if (in.op == Op::Load && in.arg == core_param && !(in.plain_load() && in.access == in_order)) return false;
    }
    return true;
}

/// Whether `k` maps one input (parameter 0, read only at the element it computes) to one value
/// of dtype `core` per element of its output (parameter 1), element-wise, with constants and
/// scalars besides.
inline bool fits_as_prologue(DType core, const Kernel& k) {
    if (k.in_place || k.params.size() != 2 || k.params[0].output || !k.params[1].output) return false;
    if (k.params[1].dtype != core) return false;
    if (k.has_reduction() || k.phases.size() != 1) return false;
    const Phase& phase = k.phases[0];
    if (phase.kind != Phase::Kind::Store || phase.outer || phase.stores.size() != 1) return false;
    const Access in_order{0, contiguous_strides(k.domain)};
    if (phase.stores[0].param != 1 || phase.stores[0].access != in_order) return false;
    for (const Instr& i : phase.instrs) {
        if (i.op == Op::Slot || i.op == Op::Index) return false;
        if (i.op == Op::Load && !(i.arg == 0 && i.plain_load() && i.access == in_order)) return false;
    }
    return true;
}

}  // namespace lazytensor::detail::ir
