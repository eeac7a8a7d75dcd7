// SPDX-License-Identifier: MIT
// einsum: Einstein summation rewritten into the graph's own operations. A repeated subscript
// in one operand is its diagonal (a strided view, or a gather), a subscript in one operand only
// is a sum, and each pair of operands, left to right, is one batched matrix product (a GEMM for
// float and double) between permutes and reshapes, or a broadcast product and a sum (one fused
// kernel) when nothing is contracted or the pair is a dot product per output element.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// Labels: the letters A-Z are 0-25 and a-z 26-51 (ASCII order, which orders an implicit
/// output); the axes an ellipsis covers are labels from 52 on, aligned from the right across
/// the operands, so that they broadcast as NumPy's do.
inline constexpr int kEinsumLetters = 52;
inline constexpr int kEinsumEllipsis = -1;  // where "..." stands in a parsed term

inline std::string einsum_label_name(int label) {
    if (label >= kEinsumLetters) return "...";
    return std::string(1, static_cast<char>(label < 26 ? 'A' + label : 'a' + (label - 26)));
}

/// One term of the subscripts: its letters' labels in order, kEinsumEllipsis for "...".
struct EinsumTerm {
    std::string text;
    std::vector<int> labels;
    bool has_ellipsis = false;
    std::size_t letters() const { return labels.size() - (has_ellipsis ? 1 : 0); }
};

inline EinsumTerm parse_einsum_term(const std::string& text, const std::string& subscripts, const std::string& what) {
    EinsumTerm term{text, {}, false};
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c >= 'A' && c <= 'Z') {
            term.labels.push_back(c - 'A');
        } else if (c >= 'a' && c <= 'z') {
            term.labels.push_back(26 + (c - 'a'));
        } else if (c == '.') {
            if (text.compare(i, 3, "...") != 0)
                fail<ValueError>("einsum: a '.' that is not part of an ellipsis (...) in ", what, " of \"", subscripts, "\"");
            if (term.has_ellipsis)
                fail<ValueError>("einsum: more than one ellipsis (...) in ", what, " of \"", subscripts, "\"");
            term.has_ellipsis = true;
            term.labels.push_back(kEinsumEllipsis);
            i += 2;
        } else {
            fail<ValueError>("einsum: invalid character '", c, "' in ", what, " of \"", subscripts,
                             "\"; subscripts are letters a-z and A-Z, at most one ... per operand, commas between "
                             "operands and -> before the output");
        }
    }
    return term;
}

/// The parsed subscripts: per operand a label per axis (ellipses expanded), and the output's.
struct EinsumSpec {
    std::vector<std::vector<int>> inputs;
    std::vector<int> output;
    std::vector<std::int64_t> extents;  // per label: the extent all its axes broadcast to
};

inline EinsumSpec parse_einsum(const std::string& subscripts, const std::vector<NodePtr>& operands) {
    std::string s;
    for (char c : subscripts)
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') s += c;
    const std::size_t arrow = s.find("->");
    if (arrow != std::string::npos && s.find("->", arrow + 2) != std::string::npos)
        fail<ValueError>("einsum: more than one -> in \"", subscripts, "\"");
    const std::string lhs = s.substr(0, arrow);
    std::vector<EinsumTerm> terms;
    for (std::size_t start = 0;;) {
        const std::size_t comma = lhs.find(',', start);
        const std::string what = concat("the subscript of operand ", terms.size());
        terms.push_back(parse_einsum_term(lhs.substr(start, comma - start), subscripts, what));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (terms.size() != operands.size())
        fail<ValueError>("einsum: \"", subscripts, "\" has subscripts for ", terms.size(), " operand",
                         terms.size() == 1 ? "" : "s", " but ", operands.size(), operands.size() == 1 ? " was" : " were",
                         " given");

    // Each operand's rank against its subscript; the widest ellipsis.
    std::size_t ellipsis_rank = 0;
    for (std::size_t i = 0; i < terms.size(); ++i) {
        const EinsumTerm& t = terms[i];
        const std::size_t rank = operands[i]->shape.size();
        if (t.has_ellipsis ? t.letters() > rank : t.letters() != rank)
            fail<ShapeError>("einsum: operand ", i, " has ", rank, " dimension", rank == 1 ? "" : "s", " (shape ",
                             operands[i]->shape, ") but its subscript \"", t.text, "\" names ",
                             t.has_ellipsis ? "at least " : "", t.letters(), " in \"", subscripts, "\"");
        if (t.has_ellipsis) ellipsis_rank = std::max(ellipsis_rank, rank - t.letters());
    }
    auto expand_term = [&](const EinsumTerm& t, std::size_t covered) {
        std::vector<int> labels;
        for (int label : t.labels) {
            if (label != kEinsumEllipsis) {
                labels.push_back(label);
                continue;
            }
            for (std::size_t j = ellipsis_rank - covered; j < ellipsis_rank; ++j)
                labels.push_back(kEinsumLetters + static_cast<int>(j));
        }
        return labels;
    };
    EinsumSpec spec;
    std::array<int, kEinsumLetters> count{};
    for (std::size_t i = 0; i < terms.size(); ++i) {
        spec.inputs.push_back(expand_term(terms[i], operands[i]->shape.size() - terms[i].letters()));
        for (int label : terms[i].labels)
            if (label != kEinsumEllipsis) ++count[static_cast<std::size_t>(label)];
    }

    // The extent of every label: equal along a repeated subscript of one operand (a diagonal),
    // else broadcast (1 stretches), as NumPy and PyTorch do.
    spec.extents.assign(kEinsumLetters + ellipsis_rank, -1);
    std::vector<std::size_t> source(spec.extents.size(), 0);
    for (std::size_t i = 0; i < operands.size(); ++i) {
        const Shape& shape = operands[i]->shape;
        std::vector<std::int64_t> own(spec.extents.size(), -1);
        for (std::size_t k = 0; k < shape.size(); ++k) {
            const auto label = static_cast<std::size_t>(spec.inputs[i][k]);
            const std::int64_t e = shape[k];
            if (own[label] >= 0 && own[label] != e)
                fail<ShapeError>("einsum: subscript '", einsum_label_name(static_cast<int>(label)), "' is repeated in operand ", i,
                                 " (shape ", shape, ") over extents ", own[label], " and ", e,
                                 "; a repeated subscript takes a diagonal, which needs equal extents (in \"", subscripts, "\")");
            own[label] = e;
            std::int64_t& known = spec.extents[label];
            if (known < 0 || (known == 1 && e != 1)) {
                known = e;
                source[label] = i;
            } else if (e != known && e != 1) {
                const std::size_t j = source[label];
                if (label >= kEinsumLetters)
                    fail<ShapeError>("einsum: the dimensions that ... covers do not broadcast: extent ", known, " in operand ", j,
                                     " (shape ", operands[j]->shape, ") vs ", e, " in operand ", i, " (shape ", shape,
                                     ") in \"", subscripts, "\"");
                fail<ShapeError>("einsum: subscript '", einsum_label_name(static_cast<int>(label)), "' has extent ", known,
                                 " in operand ", j, " (shape ", operands[j]->shape, ") but ", e, " in operand ", i,
                                 " (shape ", shape, ") in \"", subscripts, "\"");
            }
        }
    }

    if (arrow == std::string::npos) {
        // Implicit output: the ellipsis's axes, then the letters used once, in ASCII order.
        for (std::size_t j = 0; j < ellipsis_rank; ++j) spec.output.push_back(kEinsumLetters + static_cast<int>(j));
        for (int label = 0; label < kEinsumLetters; ++label)
            if (count[static_cast<std::size_t>(label)] == 1) spec.output.push_back(label);
        return spec;
    }
    const EinsumTerm out = parse_einsum_term(s.substr(arrow + 2), subscripts, "the output");
    if (!out.has_ellipsis && ellipsis_rank > 0)
        fail<ValueError>("einsum: the operands' ... covers ", ellipsis_rank, " dimension", ellipsis_rank == 1 ? "" : "s",
                         " but the output \"", out.text, "\" has no ...; write ... in the output (sum those axes "
                         "afterwards if they are not wanted) in \"", subscripts, "\"");
    std::array<bool, kEinsumLetters> seen{};
    for (int label : out.labels) {
        if (label == kEinsumEllipsis) continue;
        const auto l = static_cast<std::size_t>(label);
        if (seen[l])
            fail<ValueError>("einsum: subscript '", einsum_label_name(label), "' appears twice in the output \"", out.text,
                             "\" of \"", subscripts, "\"");
        if (count[l] == 0)
            fail<ValueError>("einsum: the output \"", out.text, "\" names subscript '", einsum_label_name(label),
                             "', which no operand has, in \"", subscripts, "\"");
        seen[l] = true;
    }
    spec.output = expand_term(out, ellipsis_rank);
    return spec;
}

template <class Pred>
std::vector<int> einsum_positions(const std::vector<int>& labels, Pred&& pred) {
    std::vector<int> out;
    for (std::size_t k = 0; k < labels.size(); ++k)
        if (pred(labels[k])) out.push_back(static_cast<int>(k));
    return out;
}

inline bool einsum_has(const std::vector<int>& labels, int label) {
    return std::find(labels.begin(), labels.end(), label) != labels.end();
}

/// x without the permutations on top of it, its labels permuted instead: einsum reorders axes
/// anyway, and a diagonal of the unpermuted value is a plain strided view more often.
inline NodePtr einsum_unpermute(NodePtr x, std::vector<int>& labels) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile (its kind, axes, sources)
    while (x->kind == NodeKind::Permute) {
        std::vector<int> source(labels.size());
        for (std::size_t k = 0; k < labels.size(); ++k) source[static_cast<std::size_t>(x->axes[k])] = labels[k];
        labels = source;
        x = x->src[0];
    }
    return x;
}

/// Whether x's diagonal is best gathered: x is in memory, but not as rows without gaps (a
/// realized transpose, a slice, or a view of one), so a reshape may not describe its diagonal,
/// while a gather reads it in place. Rows without gaps and lazy values are reshaped instead.
inline bool einsum_gathers_diagonal(const Node* x) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile
    if (x->realized()) return !is_contiguous_layout(x->shape, x->strides, 0);
    while (!x->realized() && is_view(x->kind)) x = x->src[0].get();
    return x->realized();
}

/// An operand with every repeated label taken down to its diagonal. The axes that share a label
/// are moved last; where einsum_gathers_diagonal says so and there are two of them, a gather at
/// (i, i) reads the diagonal; otherwise they are merged into one axis, of which every
/// (1 + n + ... + n^(k-1))-th element is a diagonal element (a strided view where the operand's
/// layout allows, else read through a copy).
inline NodePtr einsum_diagonals(NodePtr x, std::vector<int>& labels) {
    for (;;) {
        std::optional<int> repeated;
        for (std::size_t k = 0; k < labels.size() && !repeated; ++k)
            if (std::count(labels.begin(), labels.end(), labels[k]) > 1) repeated = labels[k];
        if (!repeated) return x;
        const std::vector<int> on = einsum_positions(labels, [&](int l) { return l == *repeated; });
        const std::vector<int> off = einsum_positions(labels, [&](int l) { return l != *repeated; });
        Axes perm;
        Shape merged;
        std::vector<int> remaining;
        for (int k : off) {
            perm.push_back(k);
            merged.push_back(x->shape[static_cast<std::size_t>(k)]);
            remaining.push_back(labels[static_cast<std::size_t>(k)]);
        }
        for (int k : on) perm.push_back(k);
        const std::int64_t n = x->shape[static_cast<std::size_t>(on[0])];
        const bool gather = on.size() == 2 && einsum_gathers_diagonal(x.get());
        x = graph::permute(x, perm, "einsum");
        if (numel(x->shape) == 0) {  // nothing to read (and n^k need not fit in 64 bits)
            merged.push_back(n);
            x = graph::constant(Scalar::of<std::int64_t>(0), x->dtype, merged, x->device);
        } else if (gather) {
            Shape positions = merged;
            positions.push_back(n);
            positions.push_back(1);
            const int last = static_cast<int>(merged.size()) + 1;
            x = graph::gather(x, last, graph::iota(positions, last - 1, x->device));  // x[..., i, i]
            merged.push_back(n);
            x = graph::reshape(x, merged, "einsum");
        } else {
            std::int64_t flat = 1, step = 0;
            for (std::size_t j = 0; j < on.size(); ++j) {
                step += flat;  // 1 + n + ... + n^(k-1)
                flat *= n;
            }
            merged.push_back(flat);
            x = graph::slice(graph::reshape(x, merged, "einsum"), -1, 0, std::nullopt, step);
        }
        remaining.push_back(*repeated);
        labels = remaining;
    }
}

/// x summed over the axes whose labels are not in `keep` (for bool: any).
template <class Keep>
NodePtr einsum_sum_out(const NodePtr& x, std::vector<int>& labels, Keep&& keep) {
    Axes axes;
    std::vector<int> kept;
    for (std::size_t k = 0; k < labels.size(); ++k) {
        if (keep(labels[k])) kept.push_back(labels[k]);
        else axes.push_back(static_cast<int>(k));
    }
    if (axes.empty()) return x;
    labels = kept;
    if (x->dtype == DType::Bool) return graph::any_all(false, x, axes, false);
    return graph::cast(graph::reduce(ReduceOp::Sum, x, axes, false, "einsum"), x->dtype);  // integers wrap, as matmul's
}

/// The product of two operands summed over their shared labels that are not in `keep`: a
/// batched matrix product [batch, m, k] x [batch, k, n] (batch: shared labels kept; m, n: the
/// labels of one side only), or, when nothing is contracted or neither side has labels of its
/// own (a dot product per batch element), a broadcast product and a sum: one fused kernel.
template <class Keep>
NodePtr einsum_pair(NodePtr a, std::vector<int>& la, NodePtr b, std::vector<int> lb, Keep&& keep) {
    namespace g = graph;
    a = einsum_sum_out(a, la, [&](int l) { return keep(l) || einsum_has(lb, l); });
    b = einsum_sum_out(b, lb, [&](int l) { return keep(l) || einsum_has(la, l); });
    std::vector<int> batch, contracted, left, right;
    for (int l : la) {
        if (!einsum_has(lb, l)) left.push_back(l);
        else if (keep(l)) batch.push_back(l);
        else contracted.push_back(l);
    }
    for (int l : lb)
        if (!einsum_has(la, l)) right.push_back(l);
    auto extent = [](const NodePtr& x, const std::vector<int>& labels, int l) {
        return x->shape[static_cast<std::size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin())];
    };
    // x's axes in the order of `groups`, each group merged into one axis where `merge` says, or
    // spread over the axes of the labels it stands for (extent 1 where x lacks the label).
    auto arrange = [&](const NodePtr& x, const std::vector<int>& labels,
                       std::initializer_list<std::pair<const std::vector<int>*, bool>> groups) {
        Axes perm;
        Shape shape;
        for (const auto& [group, merge] : groups) {
            std::int64_t size = 1;
            for (int l : *group) {
                const bool has = einsum_has(labels, l);
                if (has) perm.push_back(static_cast<int>(std::find(labels.begin(), labels.end(), l) - labels.begin()));
                if (merge) size *= extent(x, labels, l);
                else shape.push_back(has ? extent(x, labels, l) : 1);
            }
            if (merge) shape.push_back(size);
        }
        return g::reshape(g::permute(x, perm, "einsum"), shape, "einsum");
    };
    std::vector<int> labels = batch;
    labels.insert(labels.end(), left.begin(), left.end());
    labels.insert(labels.end(), right.begin(), right.end());
    Shape shape;
    for (int l : batch) shape.push_back(extent(a, la, l));
    for (int l : left) shape.push_back(extent(a, la, l));
    for (int l : right) shape.push_back(extent(b, lb, l));
    if (numel(a->shape) == 0 || numel(b->shape) == 0) {  // every sum is empty (and merged extents need not fit)
        la = labels;
        return g::constant(Scalar::of<std::int64_t>(0), a->dtype, shape, a->device);
    }
    if (contracted.empty() || (left.empty() && right.empty())) {
        // [batch, contracted, left, 1...] x [batch, contracted, 1..., right], then the sum.
        const NodePtr x = arrange(a, la, {{&batch, false}, {&contracted, false}, {&left, false}, {&right, false}});
        const NodePtr y = arrange(b, lb, {{&batch, false}, {&contracted, false}, {&left, false}, {&right, false}});
        std::vector<int> spread = batch;
        spread.insert(spread.end(), contracted.begin(), contracted.end());
        spread.insert(spread.end(), left.begin(), left.end());
        spread.insert(spread.end(), right.begin(), right.end());
        NodePtr product = g::binary(a->dtype == DType::Bool ? BinaryOp::LogicalAnd : BinaryOp::Mul, x, y);
        product = einsum_sum_out(product, spread, [&](int l) { return !einsum_has(contracted, l); });
        la = labels;
        return product;
    }
    const NodePtr x = arrange(a, la, {{&batch, false}, {&left, true}, {&contracted, true}});
    const NodePtr y = arrange(b, lb, {{&batch, false}, {&contracted, true}, {&right, true}});
    la = labels;
    return g::reshape(g::matmul(x, y), shape, "einsum");
}

/// einsum over nodes: the result's dtype is the operands' promoted one (half and bfloat16
/// compute in float32 and are rounded once, as matmul's).
inline NodePtr einsum(const std::string& subscripts, const std::vector<NodePtr>& operands) {
    namespace g = graph;
    if (operands.empty()) fail<ValueError>("einsum: needs at least one operand (\"", subscripts, "\")");
    Promotion promotion;
    for (std::size_t i = 0; i < operands.size(); ++i) {
        promotion = promotion.with_tensor(operands[i]->dtype);
        if (operands[i]->device != operands[0]->device)
            fail<DeviceError>("einsum: operand ", i, " is on ", operands[i]->device, " but operand 0 is on ",
                              operands[0]->device, "; move one with .to(device)");
    }
    const DType promoted = promotion.result(), t = value_dtype(promoted);
    const EinsumSpec spec = parse_einsum(subscripts, operands);
    const std::vector<int>& out = spec.output;

    NodePtr result;
    std::vector<int> labels;
    for (std::size_t i = 0; i < operands.size(); ++i) {
        std::vector<int> own = spec.inputs[i];
        NodePtr x = einsum_diagonals(g::cast(einsum_unpermute(operands[i], own), t), own);
        Shape full;
        for (int l : own) full.push_back(spec.extents[static_cast<std::size_t>(l)]);
        x = g::expand(x, full, "einsum");  // extents of 1 broadcast against the other operands'
        // Labels still needed after this step: the output's and those of the operands to come.
        auto keep = [&](int l) {
            if (einsum_has(out, l)) return true;
            for (std::size_t j = i + 1; j < operands.size(); ++j)
                if (einsum_has(spec.inputs[j], l)) return true;
            return false;
        };
        if (i == 0) {
            result = einsum_sum_out(x, own, keep);
            labels = own;
        } else {
            result = einsum_pair(result, labels, x, own, keep);
        }
    }
    Axes perm;
    for (int l : out) perm.push_back(static_cast<int>(std::find(labels.begin(), labels.end(), l) - labels.begin()));
    return g::cast(g::permute(result, perm, "einsum"), promoted);
}

template <class... T>
constexpr DType promote_all() {
    Promotion p;
    ((p = p.with_tensor(dtype_of<T>())), ...);
    return p.result();
}

}  // namespace detail

/// Einstein summation, NumPy's and PyTorch's einsum: lt::einsum("ij,jk->ik", a, b). The
/// subscripts give each operand's axes a letter (a-z, A-Z; spaces are ignored); "..." stands for
/// the axes no letter names (at most one per operand; they broadcast across operands, NumPy's
/// rule, and the output must place them). After "->" the output's letters, in order; without
/// it, the output is "..." then the letters used exactly once, in ASCII order (A-Z before a-z).
/// Every letter not in the output is summed over, after the operands are multiplied: a letter
/// repeated in one operand takes its diagonal ("ii->i", "ii->" the trace), one in one operand
/// only is a sum ("ij->i"), one shared by two is contracted. Axes of one letter must have one
/// extent, or 1, which broadcasts. Operands are combined left to right, each pair one batched
/// matrix product (a GEMM for float and double, reading permuted operands in place where their
/// layout allows; "bij,bjk->bik" is exactly matmul) or, when no letter is contracted or the pair
/// is a dot product per output element ("i,i->", "bij,bij->ij"), a product and a sum fused into
/// one kernel. The result has the operands' promoted type; integers wrap in it (as
/// matmul's), bool gives or-of-ands, half and bfloat16 compute in float32 and are rounded once. Lazy.
/// ValueError for malformed subscripts (a character other than letters, ",", "->", "...";
/// a letter twice in the output or in no operand; subscripts for another number of operands;
/// "..." in the operands but not in an explicit output);
/// ShapeError for an operand whose rank its subscript does not match or extents that disagree;
/// DeviceError across devices.
template <class... E, class = std::enable_if_t<(detail::is_tensor_like_v<E> && ...)>>
auto einsum(const std::string& subscripts, const E&... operands) {
    static_assert(sizeof...(E) > 0, "lazytensor: einsum needs at least one operand: lt::einsum(\"ii\", x)");
    using R = dtype_type_t<detail::promote_all<typename E::value_type...>()>;
    return Tensor<R>(detail::einsum(subscripts, std::vector<detail::NodePtr>{operands.build()...}));
}

/// einsum of a list of tensors of one type (ValueError if it is empty).
template <class T>
Tensor<T> einsum(const std::string& subscripts, const std::vector<Tensor<T>>& operands) {
    std::vector<detail::NodePtr> nodes;
    for (const Tensor<T>& x : operands) nodes.push_back(x.build());
    return Tensor<T>(detail::einsum(subscripts, nodes));
}

/// einsum("ij,jk", {a, b}): the braced form.
template <class T>
Tensor<T> einsum(const std::string& subscripts, std::initializer_list<Tensor<T>> operands) {
    return lazytensor::einsum<T>(subscripts, std::vector<Tensor<T>>(operands));
}

}  // namespace lazytensor
