// SPDX-License-Identifier: MIT
// The kernel item: a generated kernel (codegen/lower.hpp) that computes one materialized node,
// element-wise work and reductions fused. On the host it runs on the interpreter, or as the
// expression's compiled loop where one matches the IR (ir/static_kernel.hpp); on OpenCL as
// generated OpenCL C. Check mode compares it with the host interpreter.
#pragma once

#include <cstdint>
#include <string>

#include "../ir/static_kernel.hpp"
#include "item.hpp"

namespace lazytensor::detail {

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

struct KernelItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Kernel;
    ir::Kernel kernel;

    const ir::Kernel* own_kernel() const { return &kernel; }

    void describe(ScheduleItem& item, Device device) const {
        item.phases = static_cast<int>(kernel.phases.size());
        StaticBinding binding;  // (compiled loops run on the host only)
        item.compiled_loop = device.kind == Device::Kind::Host && kernel.candidate && kernel.candidate->match(kernel, binding);
        item.ir = ir::to_string(kernel);
        item.work = kernel_work(kernel);
    }
    std::string source(Backend& backend, const CompiledKernel* compiled) const {
        return compiled ? backend.kernel_source(*compiled) : std::string();
    }
    void run(const ItemRun& r) const { r.backend.launch(*r.compiled, r.params, r.scalars); }

    /// On the host: a compiled loop, compared with the interpreter.
    bool checked_on(const Backend& backend) const {
        return backend.device().kind != Device::Kind::Host || kernel.candidate != nullptr;
    }
    const char* reference(const HostRun& h) const {
        interpret_on_host(h.host, kernel, h.params, h.scalars, h.magnitudes);
        return "the host interpreter";
    }
    std::string listing() const { return "--- kernel IR ---\n" + ir::to_string(kernel); }
};

}  // namespace lazytensor::detail
