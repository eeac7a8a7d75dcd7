// SPDX-License-Identifier: MIT
// The shapes an item reads its input buffers through, as lt::schedule reports them.
#pragma once

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "schedule.hpp"

namespace lazytensor::detail {

/// The shapes each input of an item is read through (what lt::schedule reports per input), found by walking
/// its graph from what it computes down to the buffers it loads, as lowering does: a view (a
/// slice, a permute, a reshape) over a buffer is read in the view's shape, the topmost of a
/// chain of views; broadcasts and reshapes that only add or drop unit axes read the shape under
/// them (a bias [16] added to [64, 16] reads [16]).
class ReadShapes {
public:
    explicit ReadShapes(const Schedule& s) {
        for (const Group& g : s.groups) {
            base_of_[g.root] = g.view_only ? g.view.base : g.root;
            if (g.sorted_values) base_of_[g.sorted_values] = g.sorted_values;  // stored by its sort
        }
    }

    void find(const Group& g, std::vector<std::vector<Shape>>& out) const {
        out.assign(g.inputs.size(), {});
        if (g.view_only) return;
        std::size_t first_kernel_input = 0;  // the inputs before it are operands of a product or scan
        if (g.is_attention()) {
            const Node* scores = g.fused_scores;
            const Node* operands[3] = {scores->src[0].get(), scores->src[1].get(), g.root->src[1].get()};
            for (std::size_t o = 0; o < 3 && o < g.inputs.size(); ++o) read_operand(operands[o], g.inputs[o], out[o]);
            return;
        }
        if (g.is_gemm() || g.is_scan() || g.is_linalg()) {
            const Node* core = g.core();
            first_kernel_input = g.is_linalg() ? static_cast<std::size_t>(core->nsrc) : g.is_gemm() ? 2 : 1;
            for (std::size_t o = 0; o < first_kernel_input && o < g.inputs.size(); ++o)
                read_operand(core->src[o].get(), g.inputs[o], out[o]);
            if (!g.fused_product) return;
        }
        Reads reads;
        Walk walk{*this, g.root, g.fused_product, reads, {}};
        walk.from(g.root, nullptr);
        for (std::size_t i = first_kernel_input; i < g.inputs.size(); ++i)
            if (auto it = reads.find(g.inputs[i]); it != reads.end()) out[i] = it->second;
    }

private:
    using Reads = std::unordered_map<const Node*, std::vector<Shape>>;

    /// Whether a view reads the same elements in the same order as its source, with unit axes
    /// or broadcast copies added: its source's shape is what it reads.
    static bool transparent(const Node* n) {
        if (n->kind == NodeKind::Expand) return true;
        if (n->kind != NodeKind::Reshape) return false;
        auto non_unit = [](const Shape& shape) {
            Shape out;
            for (std::int64_t e : shape)
                if (e != 1) out.push_back(e);
            return out;
        };
        return non_unit(n->shape) == non_unit(n->src[0]->shape);
    }

    struct Walk {
        const ReadShapes& shapes;
        const Node* self;     // the item's root: not a load however it is listed
        const Node* product;  // a fused product's node: loaded by its epilogue (null: none)
        Reads& reads;
        std::unordered_map<const Node*, std::vector<const Node*>> seen;  // (node, top view) pairs walked

        void from(const Node* n, const Node* top) {
            std::vector<const Node*>& tops = seen[n];
            if (std::find(tops.begin(), tops.end(), top) != tops.end()) return;
            tops.push_back(top);
            const auto base = shapes.base_of_.find(n);
            if (n != self && (n->realized() || n == product || base != shapes.base_of_.end())) {
                const Node* buffer = n->realized() || n == product ? n : base->second;
                std::vector<Shape>& list = reads[buffer];
                const Shape& shape = top ? top->shape : n->shape;
                if (std::find(list.begin(), list.end(), shape) == list.end()) list.push_back(shape);
                return;
            }
            if (is_view(n->kind)) return from(n->src[0].get(), top || transparent(n) ? top : n);
            for (int k = 0; k < n->nsrc; ++k) from(n->src[static_cast<std::size_t>(k)].get(), nullptr);
        }
    };

    /// The shapes operand `start` of a product or scan reads the buffer of `input` through.
    void read_operand(const Node* start, const Node* input, std::vector<Shape>& out) const {
        Reads reads;
        Walk walk{*this, nullptr, nullptr, reads, {}};
        walk.from(start, nullptr);
        if (auto it = reads.find(input); it != reads.end()) out = it->second;
    }

    std::unordered_map<const Node*, const Node*> base_of_;  // per item's root: the node whose buffer holds it
};

}  // namespace lazytensor::detail
