// SPDX-License-Identifier: MIT
// Fusing element-wise kernels into matrix products and scans, after lowering, where the
// backend can run them there (ug's rule makes each of them a kernel of its own):
//   - a prologue: the kernel that computes an operand, when the item is its only reader and it
//     maps one input element to one operand element (ir::fits_as_prologue: a scale, a cast),
//     runs in the item's loads of that input;
//   - an epilogue: the item's only reader, when it is element-wise and walks the item's result
//     in order (ir::fits_as_epilogue: relu(x @ w + b), a scale, a residual add, exp(cumsum(x))),
//     runs in the item's stores, and the fused item takes its place.
// The fused-away results never reach memory unless a tensor outside the graph holds them
// (realize computes them then too).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "schedule.hpp"

namespace lazytensor::detail {

/// What a backend fuses into a product or a scan (the device's Backend::fuses_prologue,
/// fuses_epilogue, fuses_scan_prologue and fuses_scan_epilogue).
struct ProductFusions {
    std::function<bool(const Node* product, const ir::Gemm& gemm, const ir::Kernel& prologue)> prologue;
    std::function<bool(const Node* product, const ir::Gemm& gemm, const ir::Kernel& epilogue, int product_param)> epilogue;
    std::function<bool(const Node* scan, const ir::Scan& s, const ir::Kernel& prologue)> scan_prologue;
    std::function<bool(const Node* scan, const ir::Scan& s, const ir::Kernel& epilogue, int scan_param)> scan_epilogue;
};

namespace fuse_detail {

/// The one item left that reads `result` (groups.size() if none or more, or a view of it).
inline std::size_t only_reader(const std::vector<Group>& groups, const std::vector<char>& gone, const Node* result) {
    std::size_t reader = groups.size();
    int readers = 0;
    for (std::size_t j = 0; j < groups.size(); ++j) {
        const Group& g = groups[j];
        if (gone[j]) continue;
        if (g.view_only) {
            if (g.view.base == result) readers += 2;
            continue;
        }
        const auto uses = std::count(g.inputs.begin(), g.inputs.end(), result);
        readers += static_cast<int>(uses);
        if (uses) reader = j;
    }
    return readers == 1 ? reader : groups.size();
}

/// Whether group g is a plain kernel that may be fused away (an assign writes memory the
/// product may read).
inline bool plain_kernel(const Group& g) {
    return g.is_kernel() && g.root->kind != NodeKind::Assign && !g.kernel.phases.empty();
}

/// Removes the groups marked gone, keeping the others' order; group_of_root is stale afterwards.
inline void drop_gone(Schedule& s, const std::vector<char>& gone) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < s.groups.size(); ++i) {
        if (gone[i]) continue;
        if (kept != i) s.groups[kept] = std::move(s.groups[i]);
        ++kept;
    }
    s.groups.resize(kept);
    s.group_of_root.clear();
}

}  // namespace fuse_detail

/// Fuses what `fusions` allows. Schedule::group_of_root is stale afterwards.
inline void fuse_into_products(Schedule& s, const ProductFusions& fusions) {
    std::vector<Group>& groups = s.groups;
    std::vector<char> gone(groups.size(), 0);
    auto group_of = [&](const Node* n) {
        for (std::size_t j = 0; j < groups.size(); ++j)
            if (!gone[j] && groups[j].root == n && !groups[j].view_only) return j;
        return groups.size();
    };
    for (std::size_t i = 0; i < groups.size(); ++i) {
        // Products and scans only: other kinds of items (a sort, a LAPACK routine, a collective)
        // take no element-wise code into their loads and stores.
        if (groups[i].view_only || !(groups[i].is_gemm() || groups[i].is_scan())) continue;
        const bool scan = groups[i].root->kind == NodeKind::Scan;
        // A scan that copies its operand first reads it through that copy: nothing fuses.
        if (scan && !groups[i].kernel.phases.empty()) continue;
        auto takes_prologue = [&](const Group& item, const ir::Kernel& k) {
            return scan ? ir::fits_as_prologue(item.scan, k) && fusions.scan_prologue(item.root, item.scan, k)
                        : ir::fits_as_prologue(item.gemm, k) && fusions.prologue(item.root, item.gemm, k);
        };
        auto takes_epilogue = [&](const Group& item, const ir::Kernel& k, int param) {
            return scan ? ir::fits_as_epilogue(item.scan, k, param) && fusions.scan_epilogue(item.root, item.scan, k, param)
                        : ir::fits_as_epilogue(item.gemm, k, param) && fusions.epilogue(item.root, item.gemm, k, param);
        };
        // Prologues: A's, then B's (their scalars come in that order); a scan's operand.
        for (int o = 0; o < (scan ? 1 : 2); ++o) {
            Group& product = groups[i];
            Node* operand = product.inputs[static_cast<std::size_t>(o)];
            if (!scan && product.inputs[0] == product.inputs[1]) break;
            const std::size_t at = group_of(operand);
            if (at >= i || fuse_detail::only_reader(groups, gone, operand) != i) continue;
            Group& producer = groups[at];
            if (!fuse_detail::plain_kernel(producer) || !takes_prologue(product, producer.kernel)) continue;
            product.inputs[static_cast<std::size_t>(o)] = producer.inputs[0];
            product.prologue[o] = producer.kernel;
            product.fused_producer[o] = operand;
            product.scalars.insert(product.scalars.end(), producer.scalars.begin(), producer.scalars.end());
            product.ops.insert(product.ops.begin(), producer.ops.begin(), producer.ops.end());
            gone[at] = 1;
        }
        // The epilogue: the consumer's item becomes the product's (or the scan's).
        Group& product = groups[i];
        Node* const result = product.root;
        const std::size_t reader = fuse_detail::only_reader(groups, gone, result);
        if (reader == groups.size() || reader <= i || !fuse_detail::plain_kernel(groups[reader])) continue;
        Group& consumer = groups[reader];
        const int param = static_cast<int>(std::find(consumer.inputs.begin(), consumer.inputs.end(), result) - consumer.inputs.begin());
        if (!takes_epilogue(product, consumer.kernel, param)) continue;
        std::vector<Node*> inputs = product.inputs;
        inputs.insert(inputs.end(), consumer.inputs.begin(), consumer.inputs.end());
        consumer.inputs = std::move(inputs);
        std::vector<Node*> scalars = product.scalars;
        scalars.insert(scalars.end(), consumer.scalars.begin(), consumer.scalars.end());
        consumer.scalars = std::move(scalars);
        consumer.gemm = product.gemm;
        consumer.scan = product.scan;
        for (int o = 0; o < 2; ++o) {
            consumer.prologue[o] = std::move(product.prologue[o]);
            consumer.fused_producer[o] = product.fused_producer[o];
        }
        consumer.fused_product = result;
        consumer.product_param = param;
        consumer.ops.insert(consumer.ops.begin(), product.ops.begin(), product.ops.end());
        gone[i] = 1;
    }
    fuse_detail::drop_gone(s, gone);
}

}  // namespace lazytensor::detail
