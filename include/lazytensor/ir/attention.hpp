// SPDX-License-Identifier: MIT
// Attention as one schedule item: out = softmax(f(q @ kt), last axis) @ v, where f is an
// element-wise function of each score and scalars (a scale: `* 0.125`, `/ 8`).
//
// The scheduler makes it three items (ug's rule): the scores product, the row-softmax kernel
// and the second product. A backend that can (Backend::fuses_attention) runs them as one
// streaming kernel instead: an online softmax over blocks of keys, so that the scores and the
// weights never reach memory (schedule/fuse_attention.hpp finds the pattern). The three items
// are kept here as they were scheduled: realize runs them as they are where a tensor outside
// the graph holds the scores or the weights, and check mode runs them on the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gemm.hpp"
#include "kernel.hpp"

namespace lazytensor::detail::ir {

struct Attention {
    Gemm scores;      // s = q @ kt: [batch..., T, S] (A is q, B is kt)
    Kernel softmax;   // p = softmax(f(s)) over the last axis (p0: s, p1: p), as scheduled
    Gemm values;      // out = p @ v: [batch..., T, DV] (A is p, contiguous; B is v)
    Kernel score_function;  // f alone: element-wise from p0 to p1, with softmax's scalars

    std::int64_t queries() const { return scores.m; }
    std::int64_t keys() const { return scores.n; }
    std::int64_t depth() const { return scores.k; }
    std::int64_t value_depth() const { return values.n; }
};

namespace attention_detail {

/// Whether instruction ia of phase a computes the same value as instruction ib of phase b
/// (the same operation on the same values; slots name the same reduce phase).
inline bool same_value(const Phase& a, std::int32_t ia, const Phase& b, std::int32_t ib) {
    if (ia < 0 || ib < 0) return ia == ib;
    const Instr& x = a.instrs[static_cast<std::size_t>(ia)];
    const Instr& y = b.instrs[static_cast<std::size_t>(ib)];
    if (x.op != y.op || x.dtype != y.dtype || x.arg != y.arg) return false;
    switch (x.op) {
        case Op::Load:
        case Op::Index:
            if (!(x.access == y.access) || x.dyn_stride != y.dyn_stride || x.dyn_extent != y.dyn_extent) return false;
            break;
        case Op::Const: if (!(x.value == y.value)) return false; break;
        case Op::Unary: if (x.unary != y.unary) return false; break;
        case Op::Binary: if (x.binary != y.binary) return false; break;
        default: break;
    }
    return same_value(a, x.a, b, y.a) && same_value(a, x.b, b, y.b) && same_value(a, x.c, b, y.c);
}

/// The instruction `at` of `phase`, if it is `op` (and, for Unary and Binary, `which`).
inline const Instr* instr_if(const Phase& phase, std::int32_t at, Op op) {
    if (at < 0 || static_cast<std::size_t>(at) >= phase.instrs.size()) return nullptr;
    const Instr& in = phase.instrs[static_cast<std::size_t>(at)];
    return in.op == op && in.dtype == DType::Float32 ? &in : nullptr;
}

/// Whether `v` of `phase` is exp(f - slot 0), f the same value as phase 0's fold.
inline bool exp_of_shifted_score(const Phase& phase, std::int32_t v, const Phase& first) {
    const Instr* e = instr_if(phase, v, Op::Unary);
    if (!e || e->unary != UnaryOp::Exp) return false;
    const Instr* sub = instr_if(phase, e->a, Op::Binary);
    if (!sub || sub->binary != BinaryOp::Sub) return false;
    const Instr* slot = instr_if(phase, sub->b, Op::Slot);
    return slot && slot->arg == 0 && same_value(phase, sub->a, first, first.reduce_value);
}

}  // namespace attention_detail

/// If `k` is a row softmax of f(s) as lowering makes it, for s a contiguous [rows, keys] float32
/// buffer (p0) and its result stored in the same layout (p1): f alone, as an element-wise
/// kernel over rows * keys elements with k's scalars (its parameter 0 the score, 1 the result).
/// The three phases: max of f(s) into slot 0; the sum of exp(f(s) - slot 0) into slot 1; the
/// store of exp(f(s) - slot 0) / slot 1.
inline std::optional<Kernel> row_softmax_function(const Kernel& k, std::int64_t rows, std::int64_t keys) {
    using namespace attention_detail;
    if (k.in_place || k.params.size() != 2 || k.params[0].output || !k.params[1].output) return std::nullopt;
    if (k.params[0].dtype != DType::Float32 || k.params[1].dtype != DType::Float32 || keys < 2 || rows < 1) return std::nullopt;
    // The domain, normalized: [rows, keys] with the keys reduced ([keys] for one row).
    const Access row_major = rows == 1 ? Access{0, Strides{1}} : Access{0, Strides{keys, 1}};
    const Shape domain = rows == 1 ? Shape{keys} : Shape{rows, keys};
    const std::vector<bool> reduced = rows == 1 ? std::vector<bool>{true} : std::vector<bool>{false, true};
    if (k.domain != domain || k.reduced != reduced || k.phases.size() != 3) return std::nullopt;
    const Phase& max = k.phases[0];
    const Phase& sum = k.phases[1];
    const Phase& store = k.phases[2];
    if (max.kind != Phase::Kind::Reduce || max.outer || max.reduce_op != ReduceOp::Max) return std::nullopt;
    if (sum.kind != Phase::Kind::Reduce || sum.outer || sum.reduce_op != ReduceOp::Sum) return std::nullopt;
    if (store.kind != Phase::Kind::Store || store.outer || store.stores.size() != 1) return std::nullopt;
    const Store& out = store.stores[0];
    if (out.param != 1 || !(out.access == row_major)) return std::nullopt;
    // f: phase 0's code, which may read the score (plainly, in the layout above), scalars and constants.
    for (const Instr& in : max.instrs) {
        if (in.op == Op::Slot || in.op == Op::Index) return std::nullopt;
        if (in.op == Op::Load && !(in.arg == 0 && in.plain_load() && in.access == row_major)) return std::nullopt;
    }
    if (max.reduce_value < 0 || max.instrs[static_cast<std::size_t>(max.reduce_value)].dtype != DType::Float32)
        return std::nullopt;
    if (!exp_of_shifted_score(sum, sum.reduce_value, max)) return std::nullopt;
    const Instr* div = instr_if(store, out.value, Op::Binary);
    if (!div || div->binary != BinaryOp::Div) return std::nullopt;
    const Instr* total = instr_if(store, div->b, Op::Slot);
    if (!total || total->arg != 1 || !exp_of_shifted_score(store, div->a, max)) return std::nullopt;

    Kernel f;
    f.domain = Shape{rows * keys};
    f.reduced = {false};
    f.params = {Param{DType::Float32, false}, Param{DType::Float32, true}};
    f.scalars = k.scalars;
    Phase code;
    code.instrs = max.instrs;
    for (Instr& in : code.instrs)
        if (in.op == Op::Load) in.access = Access{0, Strides{1}};
    code.stores.push_back(Store{1, max.reduce_value, Access{0, Strides{1}}});
    f.phases.push_back(std::move(code));
    return f;
}

/// LAZYTENSOR_DEBUG=2's listing of an attention item.
inline std::string to_string(const Attention& a) {
    return "    scores, never stored:\n" + to_string(a.scores) + "    softmax over the last axis, never stored:\n" +
           to_string(a.softmax) + "    weighted values:\n" + to_string(a.values);
}

}  // namespace lazytensor::detail::ir
