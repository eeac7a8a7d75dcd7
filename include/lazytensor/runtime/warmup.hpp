// SPDX-License-Identifier: MIT
// lt::warmup: everything a realize of some tensors would build, built now, and nothing run.
// The plan is made (or found) through the plan cache as realize makes it, its kernels compiled
// into it (compile_items: the kernel cache, the program cache, the disk cache), and each item
// asked to build what its backend routine would build on its first run (ItemDefaults::prepare:
// the own GEMM kernel). A realize of the same graph afterwards finds the plan with its kernels
// and compiles nothing. The tensors stay lazy: nothing is allocated, launched or committed.
#pragma once

#include <vector>

#include "device.hpp"
#include "plan.hpp"
#include "realize.hpp"

namespace lazytensor::detail {

/// Builds what realize_graph(nodes) would build. Holds the devices' locks as realize does, so a
/// warmup on another thread and a realize take turns (neither sees half-built caches). A build
/// that fails throws what realize would throw, and leaves every node as it was.
inline void warmup_graph(const std::vector<Node*>& nodes) {
    const DeviceLock lock(devices_of(nodes));
    std::vector<Node*> outputs = unrealized(nodes);
    if (outputs.empty()) return;
    const GraphWalk w = walk_graph(std::move(outputs));
    const std::shared_ptr<const Plan> plan = plan_cache().get(w);
    compile_items(plan->items, w, debug_level());
    for (const PlannedItem& p : plan->items) {
        if (!p.computes()) continue;
        Backend& backend = device_backend(w.node(p.root)->device);
        p.visit([&](const auto& k) { k.prepare(backend); });
    }
}

}  // namespace lazytensor::detail
