// Epilogue fusion: after lowering, a matrix product whose only reader is an element-wise
// kernel that walks the product's elements in order (ir::fits_as_epilogue: relu(x @ w + b), a
// scale, a residual add) becomes one item with it, where the backend can run the kernel in
// the product's stores. The product then never reaches memory, unless a tensor outside the
// graph holds it (realize passes a buffer for it then).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "schedule.hpp"

namespace lazytensor::detail {

/// Whether a backend fuses kernel `epilogue`, reading the product as parameter `product_param`,
/// into the stores of `gemm` (the device's Backend::fuses_epilogue).
using FusesEpilogue = std::function<bool(const Node* product, const ir::Gemm& gemm, const ir::Kernel& epilogue, int product_param)>;

/// Merges each fusable product into its consumer's item (which keeps its place: what else the
/// consumer reads is ready there). Schedule::group_of_root is stale afterwards.
inline void fuse_epilogues(Schedule& s, const FusesEpilogue& fuses) {
    std::vector<Group>& groups = s.groups;
    std::vector<char> fused(groups.size(), 0);
    for (std::size_t i = 0; i < groups.size(); ++i) {
        const Group& product = groups[i];
        if (product.view_only || product.root->kind != NodeKind::Matmul) continue;
        Node* const result = product.root;
        // The one item that reads the product; no view of it may exist either.
        std::size_t reader = groups.size();
        int readers = 0;
        for (std::size_t j = i + 1; j < groups.size(); ++j) {
            const Group& g = groups[j];
            if (g.view_only && g.view.base == result) readers += 2;
            if (!g.view_only && std::find(g.inputs.begin(), g.inputs.end(), result) != g.inputs.end()) ++readers, reader = j;
        }
        if (readers != 1) continue;
        Group& consumer = groups[reader];
        // (An assign's output is memory the product may read.)
        if (consumer.is_gemm() || consumer.is_scan() || consumer.root->kind == NodeKind::Assign) continue;
        if (std::count(consumer.inputs.begin(), consumer.inputs.end(), result) != 1) continue;
        const int param = static_cast<int>(std::find(consumer.inputs.begin(), consumer.inputs.end(), result) - consumer.inputs.begin());
        if (!ir::fits_as_epilogue(product.gemm, consumer.kernel, param) || !fuses(result, product.gemm, consumer.kernel, param))
            continue;
        std::vector<Node*> inputs = product.inputs;
        inputs.insert(inputs.end(), consumer.inputs.begin(), consumer.inputs.end());
        consumer.inputs = std::move(inputs);
        consumer.gemm = product.gemm;
        consumer.fused_product = result;
        consumer.product_param = param;
        consumer.ops.insert(consumer.ops.begin(), product.ops.begin(), product.ops.end());
        fused[i] = 1;
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < groups.size(); ++i)
        if (!fused[i]) {
            if (kept != i) groups[kept] = std::move(groups[i]);
            ++kept;
        }
    groups.resize(kept);
    s.group_of_root.clear();
}

}  // namespace lazytensor::detail
