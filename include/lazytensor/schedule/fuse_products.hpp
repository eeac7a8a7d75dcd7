// Fusing element-wise kernels into matrix products, after lowering, where the backend can run
// them there (ug's rule makes each of them a kernel of its own):
//   - a prologue: the kernel that computes an operand, when the product is its only reader and
//     it maps one input element to one operand element (ir::fits_as_prologue: a scale, a
//     cast), runs in the product's loads of that input;
//   - an epilogue: the product's only reader, when it is element-wise and walks the product's
//     elements in order (ir::fits_as_epilogue: relu(x @ w + b), a scale, a residual add), runs
//     in the product's stores, and the fused item takes its place.
// The fused-away results never reach memory unless a tensor outside the graph holds them
// (realize computes them then too).
#pragma once

#include <algorithm>
#include <functional>
#include <vector>

#include "schedule.hpp"

namespace lazytensor::detail {

/// What a backend fuses into `gemm` (the device's Backend::fuses_prologue and fuses_epilogue).
struct ProductFusions {
    std::function<bool(const Node* product, const ir::Gemm& gemm, const ir::Kernel& prologue)> prologue;
    std::function<bool(const Node* product, const ir::Gemm& gemm, const ir::Kernel& epilogue, int product_param)> epilogue;
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
    return !g.view_only && !g.is_gemm() && !g.is_scan() && g.root->kind != NodeKind::Assign && !g.kernel.phases.empty();
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
        if (groups[i].view_only || groups[i].root->kind != NodeKind::Matmul) continue;
        // Prologues: A's, then B's (their scalars come in that order).
        for (int o = 0; o < 2; ++o) {
            Group& product = groups[i];
            Node* operand = product.inputs[static_cast<std::size_t>(o)];
            if (product.inputs[0] == product.inputs[1]) break;
            const std::size_t at = group_of(operand);
            if (at >= i || fuse_detail::only_reader(groups, gone, operand) != i) continue;
            Group& producer = groups[at];
            if (!fuse_detail::plain_kernel(producer) || !ir::fits_as_prologue(product.gemm, producer.kernel) ||
                !fusions.prologue(product.root, product.gemm, producer.kernel))
                continue;
            product.inputs[static_cast<std::size_t>(o)] = producer.inputs[0];
            product.prologue[o] = producer.kernel;
            product.fused_producer[o] = operand;
            product.scalars.insert(product.scalars.end(), producer.scalars.begin(), producer.scalars.end());
            product.ops.insert(product.ops.begin(), producer.ops.begin(), producer.ops.end());
            gone[at] = 1;
        }
        // The epilogue: the consumer's item becomes the product's.
        Group& product = groups[i];
        Node* const result = product.root;
        const std::size_t reader = fuse_detail::only_reader(groups, gone, result);
        if (reader == groups.size() || reader <= i || !fuse_detail::plain_kernel(groups[reader])) continue;
        Group& consumer = groups[reader];
        const int param = static_cast<int>(std::find(consumer.inputs.begin(), consumer.inputs.end(), result) - consumer.inputs.begin());
        if (!ir::fits_as_epilogue(product.gemm, consumer.kernel, param) ||
            !fusions.epilogue(result, product.gemm, consumer.kernel, param))
            continue;
        std::vector<Node*> inputs = product.inputs;
        inputs.insert(inputs.end(), consumer.inputs.begin(), consumer.inputs.end());
        consumer.inputs = std::move(inputs);
        std::vector<Node*> scalars = product.scalars;
        scalars.insert(scalars.end(), consumer.scalars.begin(), consumer.scalars.end());
        consumer.scalars = std::move(scalars);
        consumer.gemm = product.gemm;
        for (int o = 0; o < 2; ++o) {
            consumer.prologue[o] = std::move(product.prologue[o]);
            consumer.fused_producer[o] = product.fused_producer[o];
        }
        consumer.fused_product = result;
        consumer.product_param = param;
        consumer.ops.insert(consumer.ops.begin(), product.ops.begin(), product.ops.end());
        gone[i] = 1;
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < groups.size(); ++i) {
        if (gone[i]) continue;
        if (kept != i) groups[kept] = std::move(groups[i]);
        ++kept;
    }
    groups.resize(kept);
    s.group_of_root.clear();
}

}  // namespace lazytensor::detail
