// SPDX-License-Identifier: MIT
// The closed set of kinds of schedule items, and the one place that tells them apart: which
// kind a schedule group is, how each is lowered, and what is fused into which. Everything else
// about a kind is in its own header (item.hpp lists what a kind answers); runtime/ only visits.
//
// Adding a kind: a header here (its data, lowering, run, host reference, description), an
// entry in ItemKind and in the two dispatches below, the backend routines it calls, and the
// node kind the scheduler gives an item of its own (schedule.hpp: runs_alone).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "../codegen/lower.hpp"
#include "../schedule/fuse_attention.hpp"
#include "../schedule/fuse_products.hpp"
#include "../schedule/schedule.hpp"
#include "attention_item.hpp"
#include "collective_item.hpp"
#include "fft_item.hpp"
#include "gemm_item.hpp"
#include "kernel_item.hpp"
#include "linalg_item.hpp"
#include "scan_item.hpp"
#include "scatter_item.hpp"
#include "sort_item.hpp"
#include "view_item.hpp"

namespace lazytensor::detail {

using ItemKind = std::variant<KernelItem, GemmItem, ScanItem, AttentionItem, SortItem, LinalgItem, CollectiveItem, ScatterItem, FftItem, ViewItem>;

/// Lowers every group of `s`, or says which node must be materialized first.
inline std::optional<Materialize> lower_groups(Schedule& s) {
    for (Group& g : s.groups) {
        std::optional<Materialize> first;
        if (g.view_only) continue;
        if (g.is_gemm()) first = GemmItem::lower(s, g);
        else if (g.is_scan()) first = ScanItem::lower(s, g);
        else if (g.is_sort()) first = SortItem::lower(s, g);
        else if (g.is_linalg()) first = LinalgItem::lower(s, g);
        else if (g.is_collective()) first = CollectiveItem::lower(s, g);
        else if (g.is_scatter()) first = ScatterItem::lower(s, g);
        else if (g.is_fft()) first = FftItem::lower(s, g);
        else first = Lowering(s, g).run();
        if (first) return first;
    }
    return std::nullopt;
}

/// Schedules and lowers the graph behind `outputs`, materializing what lowering asks for.
inline Schedule schedule_and_lower(const GraphOrder& order, const std::vector<Node*>& outputs) {
    std::unordered_map<Node*, Materialize> forced;
    for (;;) {
        Schedule s = assign_groups(order, outputs, forced);
        const std::optional<Materialize> first = lower_groups(s);
        if (!first) return s;
        if (!forced.emplace(first->node, *first).second)
            fail<Error>("lazytensor internal error: scheduling did not converge at a ", kind_name(first->node->kind),
                        " node (", first->reason, ")");
    }
}

/// Fuses kernels into the items that take them where `backend_of` a node's device runs them
/// there: attention (three items into one), then producers and consumers into products and
/// scans; a sort stores the values a gather would read at its positions. Schedule::group_of_root
/// is stale afterwards.
inline void fuse_items(Schedule& s, const std::function<Backend&(Device)>& backend_of) {
    fuse_attention(s, [&](const Node* product, const ir::Attention& a) { return backend_of(product->device).fuses_attention(a); });
    ProductFusions fusions;
    fusions.prologue = [&](const Node* product, const ir::Gemm& gemm, const ir::Kernel& prologue) {
        return backend_of(product->device).fuses_prologue(gemm, prologue);
    };
    fusions.epilogue = [&](const Node* product, const ir::Gemm& gemm, const ir::Kernel& epilogue, int param) {
        return backend_of(product->device).fuses_epilogue(gemm, epilogue, param);
    };
    fusions.scan_prologue = [&](const Node* scan, const ir::Scan& sc, const ir::Kernel& prologue) {
        return backend_of(scan->device).fuses_scan_prologue(sc, prologue);
    };
    fusions.scan_epilogue = [&](const Node* scan, const ir::Scan& sc, const ir::Kernel& epilogue, int param) {
        return backend_of(scan->device).fuses_scan_epilogue(sc, epilogue, param);
    };
    fuse_into_products(s, fusions);
    for (std::size_t i = 0; i < s.groups.size(); ++i) s.group_of_root[s.groups[i].root] = static_cast<int>(i);
    SortItem::fuse_values(s);
}

/// The item a lowered (and fused) group is, its nodes named by `index` (a node's position in
/// the plan's graph order).
template <class Index>
ItemKind item_of(Group& g, const Index& index) {
    auto fusion = [&] {
        CoreFusion f;
        for (int o = 0; o < 2; ++o)
            if (g.fused_producer[o]) {
                f.producer[o] = index(g.fused_producer[o]);
                f.prologue[o] = std::move(g.prologue[o]);
            }
        if (g.fused_product) {
            f.product = index(g.fused_product);
            f.product_param = g.product_param;
            f.epilogue = std::move(g.kernel);
        }
        return f;
    };
    if (g.view_only) {
        ViewItem v;
        v.view = Aliasing{index(g.view.base), g.view.offset, g.view.strides};
        return v;
    }
    if (g.is_attention()) {
        AttentionItem a;
        a.attention = std::move(g.attention);
        a.scores = index(g.fused_scores);
        a.weights = index(g.fused_weights);
        return a;
    }
    if (g.is_gemm()) {
        GemmItem m;
        m.gemm = std::move(g.gemm);
        m.fusion = fusion();
        return m;
    }
    if (g.is_scan()) {
        ScanItem c;
        c.scan = g.scan;
        if (!g.fused_product) c.copy = std::move(g.kernel);
        c.fusion = fusion();
        return c;
    }
    if (g.is_sort()) return SortItem::of(g, index);
    if (g.is_linalg()) return LinalgItem::of(g);
    if (g.is_collective()) return CollectiveItem::of(g);
    if (g.is_scatter()) return ScatterItem::of(g);
    if (g.is_fft()) return FftItem::of(g);
    KernelItem k;
    k.kernel = std::move(g.kernel);
    return k;
}

}  // namespace lazytensor::detail
