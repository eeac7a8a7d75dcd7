// SPDX-License-Identifier: MIT
// Fusing attention into one item, after lowering and before products take their prologues and
// epilogues: softmax(f(q @ kt), -1) @ v arrives as three items (the scores product, a row-
// softmax kernel reading only the scores, and a product whose A is the weights), each the only
// reader of the one before. Where the backend can run the whole as one kernel
// (Backend::fuses_attention), the three become one attention item (ir/attention.hpp) in the
// second product's place, reading q, kt and v.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "../ir/attention.hpp"
#include "fuse_products.hpp"
#include "schedule.hpp"

namespace lazytensor::detail {

namespace attention_fuse_detail {

/// The attention that groups `scores`, `softmax` and `values` compute, if they are that
/// pattern (fuse_attention's conditions on layouts and readers aside).
inline std::optional<ir::Attention> match(const Group& scores, const Group& softmax, const Group& values) {
    const ir::Gemm& s = scores.gemm;
    const ir::Gemm& v = values.gemm;
    if (s.dtype != DType::Float32 || v.dtype != DType::Float32) return std::nullopt;
    if (s.batch != v.batch || s.batch.size() > 1 || s.m != v.m || s.n != v.k || s.m < 1 || s.k < 1 || v.n < 1)
        return std::nullopt;
    // The second product reads the weights as they are stored: contiguous [batch..., T, S].
    const ir::MatrixLayout weights{0, s.n, 1, s.batch.empty() ? Strides{} : Strides{s.m * s.n}};
    const ir::MatrixLayout& a = v.a;
    if (a.offset != 0 || (s.m > 1 && a.row_stride != s.n) || a.col_stride != 1 || !(a.batch_strides == weights.batch_strides))
        return std::nullopt;
    std::optional<ir::Kernel> f = ir::row_softmax_function(softmax.kernel, s.batch_count() * s.m, s.n);
    if (!f) return std::nullopt;
    return ir::Attention{s, softmax.kernel, v, std::move(*f)};
}

}  // namespace attention_fuse_detail

/// Replaces every scores product -> row softmax -> product chain that `fuses` accepts (the
/// backend of the product's device) by one attention item. Schedule::group_of_root is stale
/// afterwards.
inline void fuse_attention(Schedule& s, const std::function<bool(const Node* product, const ir::Attention&)>& fuses) {
    std::vector<Group>& groups = s.groups;
    std::vector<char> gone(groups.size(), 0);
    bool any = false;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const Group& first = groups[i];
        if (first.view_only || !first.is_gemm() || first.fused_product || first.fused_producer[0] || first.fused_producer[1])
            continue;
        const std::size_t k = fuse_detail::only_reader(groups, gone, first.root);
        if (k == groups.size() || k <= i || !fuse_detail::plain_kernel(groups[k])) continue;
        const Group& softmax = groups[k];
        if (softmax.inputs.size() != 1 || softmax.inputs[0] != first.root) continue;
        const std::size_t j = fuse_detail::only_reader(groups, gone, softmax.root);
        if (j == groups.size() || j <= k) continue;
        Group& second = groups[j];
        if (second.view_only || !second.is_gemm() || second.inputs.size() != 2 || second.inputs[0] != softmax.root ||
            second.inputs[1] == softmax.root)
            continue;
        // The scores are now computed at the second product's place: an assign in between could
        // change what q or kt hold there.
        bool assign_between = false;
        for (std::size_t g = i + 1; g < j; ++g) assign_between = assign_between || (!gone[g] && groups[g].root->kind == NodeKind::Assign);
        if (assign_between) continue;
        std::optional<ir::Attention> a = attention_fuse_detail::match(first, softmax, second);
        if (!a || !fuses(second.root, *a)) continue;
        second.attention = std::move(*a);
        second.fused_scores = first.root;
        second.fused_weights = softmax.root;
        second.inputs = {first.inputs[0], first.inputs[1], second.inputs[1]};
        second.scalars = softmax.scalars;
        std::vector<std::string> ops = first.ops;
        ops.insert(ops.end(), softmax.ops.begin(), softmax.ops.end());
        ops.insert(ops.end(), second.ops.begin(), second.ops.end());
        second.ops = std::move(ops);
        gone[i] = gone[k] = 1;
        any = true;
    }
    if (any) fuse_detail::drop_gone(s, gone);
}

}  // namespace lazytensor::detail
