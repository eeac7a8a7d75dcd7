// SPDX-License-Identifier: MIT
// The scheduler: cuts the lazy graph behind a set of outputs into kernels (ug's rule).
//
// Uses are counted over the unrealized graph reachable from the outputs. Walking from the
// outputs towards the inputs, each node joins the kernel of its consumers when they all sit
// in one kernel (a single use is inlined; several uses inside one kernel are computed there);
// otherwise it is materialized: computed once, into its own buffer, by a kernel of its own.
// Views and constants cost nothing and join every kernel that reads them. A reduction joins
// its consumer's kernel when the consumer reads it element-wise over the reduced shape, or
// broadcasts it back over exactly the reduced axes (softmax, layer norm: one kernel per row).
// A matmul is an item of its own, run by the backend's GEMM; what it reads must be in buffers
// (through views it reads in place), so its non-view operands are materialized, and its
// consumers read its result like any buffer (relu(x @ w + b) is one GEMM and one kernel).
// A scan (cumsum, cumprod) is an item of its own in the same way, run by the backend's scan.
// Every item records why its output is materialized.
//
// Inlining has a cost rule. Lowering computes a node once per (phase, index map, padding gate)
// it is read at in a kernel, so a node that its kernel reads through several index maps
// (shifted slices, flips, pads, broadcasts along different axes) is computed once per map, and
// a chain of such reads multiplies: a stencil iterated k times lazily would cost 2^k. The
// scheduler follows those reads down the graph as lowering will (ReadTracker) and materializes
// a node read through more than kMaxRecomputations maps in one phase, unless it is one
// operation over buffers and constants (recomputing it costs no more than the loads it needs).
// A kernel's work is then at most kMaxRecomputations times its graph's, phase by phase.
//
// Lowering (codegen/lower.hpp) can still find a node that cannot be read in place (a reshape
// that the index math cannot follow, a reduction read through a transposing view); it names
// the node, which is then materialized, and the schedule is made again.
#pragma once

#include <algorithm>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../ir/attention.hpp"
#include "../ir/collective.hpp"
#include "../ir/device_policy.hpp"
#include "../ir/gemm.hpp"
#include "../ir/index_map.hpp"
#include "../ir/kernel.hpp"
#include "../ir/linalg.hpp"
#include "../ir/node.hpp"
#include "../ir/scan.hpp"

namespace lazytensor::detail {

/// Where a loadable node's elements are: a base node that owns (or will own) a buffer, and
/// the node's layout in that buffer.
struct Source {
    Node* base = nullptr;
    std::int64_t offset = 0;
    Strides strides;
};

/// Whether a node of this kind is always a schedule item of its own (run by the backend's GEMM,
/// scan, sort or LAPACK, not by a generated kernel).
inline bool runs_alone(NodeKind kind) {
    return kind == NodeKind::Matmul || kind == NodeKind::Scan || kind == NodeKind::Sort || kind == NodeKind::Linalg ||
           kind == NodeKind::Collective || kind == NodeKind::Scatter || kind == NodeKind::Fft;
}

/// One schedule item: a kernel that materializes `root`, a matrix product (root is a matmul
/// node), a scan (root is a scan node), or a zero-copy view of another buffer.
struct Group {
    Node* root = nullptr;
    std::string reason;
    bool view_only = false;
    Source view;  // view_only: the layout of root in its base's buffer
    bool copy = false;  // computed into memory of its own even where it is a view (Materialize::copy)
    // Filled in by lowering:
    ir::Kernel kernel;
    ir::Gemm gemm;              // a matmul item: the product, over the buffers of `inputs`
    ir::Scan scan;              // a scan item: the scan, over the buffer of inputs[0] (or of
                                // `kernel`'s contiguous copy of it, when kernel has phases)
    std::vector<Node*> inputs;  // per input parameter: the base node whose buffer is read
    std::vector<Node*> scalars; // per scalar parameter: the node whose `value` is passed
    std::vector<std::string> ops;
    // Domain chosen while grouping (reductions that joined the kernel must agree on it).
    bool has_domain = false;
    Shape domain;
    Axes reduced;
    Node* domain_reduce = nullptr;  // the reduction that set the domain

    // A product or scan with kernels fused into it (fuse_products.hpp). Producers of its
    // operands run in its loads: prologue[o] computes operand o (fused_producer[o]) from
    // inputs[o], with the first scalars (a scan has operand 0 only). A consumer runs in its
    // stores: root is then the consumer, `kernel` its kernel, whose buffers follow the operands'
    // in `inputs` (the product's or scan's, parameter product_param, unallocated) and whose
    // scalars follow the prologues'.
    ir::Kernel prologue[2];
    Node* fused_producer[2] = {nullptr, nullptr};
    Node* fused_product = nullptr;
    int product_param = -1;
    // Attention run as one item (fuse_attention.hpp): root is the second product's node; the
    // scores and the weights (fused_scores, fused_weights) are computed on the way, and reach
    // memory only when kept. inputs: q, kt and v; scalars: the softmax's.
    ir::Attention attention;
    Node* fused_scores = nullptr;
    Node* fused_weights = nullptr;
    // A sort that also stores the values at its positions (items/sort_item.hpp): the gather
    // node that reads them, whose item it replaced.
    Node* sorted_values = nullptr;
    // A linear-algebra routine (items/linalg_item.hpp): over the buffers of `inputs`.
    ir::Linalg linalg;
    // A collective (items/collective_item.hpp): its operand's buffer is inputs[0].
    ir::Collective collective;

    /// The matmul or scan node the item computes (before its epilogue, if it has one).
    const Node* core() const { return fused_product ? fused_product : root; }
    bool is_attention() const { return fused_weights != nullptr; }
    bool is_gemm() const { return !is_attention() && core()->kind == NodeKind::Matmul; }
    bool is_scan() const { return core()->kind == NodeKind::Scan; }
    bool is_sort() const { return root->kind == NodeKind::Sort; }
    bool is_linalg() const { return root->kind == NodeKind::Linalg; }
    bool is_collective() const { return root->kind == NodeKind::Collective; }
    bool is_scatter() const { return root->kind == NodeKind::Scatter; }
    bool is_fft() const { return root->kind == NodeKind::Fft; }
    /// A generated kernel alone (not a view, nor an item run by a routine of the backend's).
    bool is_kernel() const { return !view_only && !is_attention() && !runs_alone(core()->kind); }
};

struct Schedule {
    std::vector<Group> groups;  // execution order
    std::unordered_map<Node*, int> group_of_root;
    std::vector<int> uses;  // per node of the GraphOrder: consumer edges inside the graph

    bool is_loadable(Node* n, const Group* current) const {
        if (n->realized()) return true;
        auto it = group_of_root.find(n);
        return it != group_of_root.end() && &groups[static_cast<std::size_t>(it->second)] != current;
    }

    /// Where a loadable node's elements are.
    Source source(Node* n) const {
        if (n->realized()) return Source{n, n->offset, n->strides};
        const Group& g = groups[static_cast<std::size_t>(group_of_root.at(n))];
        if (g.view_only) return g.view;
        return Source{n, 0, contiguous_strides(n->shape)};
    }
};

/// The reason lowering gives for computing an assigned value into memory of its own: it reads
/// the memory being assigned at other positions. Such a group is a copy even when it is a view.
inline const char* const kCopyBeforeAssign = "the assigned value reads the memory it overwrites: computed into a copy first";

/// Lowering's answer where it cannot lower an item yet: `node` must get its own buffer before
/// its consumers can read it (the schedule is then made again).
struct Materialize {
    Node* node;
    std::string reason;
    bool copy = false;  // into memory of its own even where it is a view (an assign's value, kCopyBeforeAssign)
};

/// Strips reshapes from a kernel's output: a contiguous buffer is the same memory in both shapes.
inline Node* peel_reshapes(Node* n) {
    while (n->kind == NodeKind::Reshape && !n->realized()) n = n->src[0].get();
    return n;
}

/// The longest chain of operations fused into one kernel.
inline constexpr int kMaxFusedDepth = 256;

/// A map from pointers (nodes, buffers) to ints: open addressing over a power-of-two table.
/// Every realize orders its graph (a cached one too), and a node-based std::unordered_map costs
/// an allocation per entry there.
template <class Key>
class PointerIndex {
public:
    PointerIndex() : slots_(16) {}

    /// The value of `n`, inserted as -1 when absent.
    int& operator[](const Key* n) { return emplace(n, -1).first; }
    /// Inserts (n, value) unless n is present; the value in the map, and whether it was inserted.
    std::pair<int&, bool> emplace(const Key* n, int value) {
        if (2 * (size_ + 1) > slots_.size()) grow();
        Slot& s = slot(n);
        if (s.node) return {s.value, false};
        s = Slot{n, value};
        ++size_;
        return {s.value, true};
    }
    std::size_t count(const Key* n) const { return slot(n).node ? 1 : 0; }
    std::size_t size() const { return size_; }
    int at(const Key* n) const {
        const Slot& s = slot(n);
        if (!s.node) fail<Error>("lazytensor internal error: a node outside the graph being scheduled");
        return s.value;
    }

private:
    struct Slot {
        const Key* node = nullptr;  // (the key)
        int value = -1;
    };
    std::size_t home(const Key* n) const {
        auto h = reinterpret_cast<std::uintptr_t>(n);
        h ^= h >> 17;
        h *= 0x9e3779b97f4a7c15ull;
        return static_cast<std::size_t>(h >> 20) & (slots_.size() - 1);
    }
    const Slot& slot(const Key* n) const { return const_cast<PointerIndex*>(this)->slot(n); }
    Slot& slot(const Key* n) {
        for (std::size_t i = home(n);; i = (i + 1) & (slots_.size() - 1))
            if (slots_[i].node == n || !slots_[i].node) return slots_[i];
    }
    void grow() {
        std::vector<Slot> old(slots_.size() * 2);
        old.swap(slots_);
        for (const Slot& s : old)
            if (s.node) slot(s.node) = s;
    }

    std::vector<Slot> slots_;
    std::size_t size_ = 0;
};
using NodeIndex = PointerIndex<Node>;

/// The graph behind some outputs: every node reachable through unrealized nodes, sources
/// before consumers (depth-first post-order, sources in order), each with its position.
struct GraphOrder {
    std::vector<Node*> nodes;
    NodeIndex index;
};

inline GraphOrder order_graph(const std::vector<Node*>& outputs) {
    GraphOrder g;
    struct Visit {
        Node* n;
        bool expanded;  // its sources are placed: place it
    };
    SmallVector<Visit, 32> stack;
    g.nodes.reserve(16);
    for (auto it = outputs.rbegin(); it != outputs.rend(); ++it) stack.push_back({*it, false});
    while (!stack.empty()) {
        auto [n, expanded] = stack.back();
        stack.pop_back();
        if (expanded) {
            g.index[n] = static_cast<int>(g.nodes.size());
            g.nodes.push_back(n);
            continue;
        }
        if (!g.index.emplace(n, -1).second) continue;  // seen (-1 until placed)
        stack.push_back({n, true});
        if (n->realized()) continue;
        for (int k = n->nsrc; k-- > 0;) {
            Node* src = n->src[static_cast<std::size_t>(k)].get();
            if (!g.index.count(src)) stack.push_back({src, false});
        }
    }
    return g;
}

namespace schedule_detail {

/// Whether reduction r may join group g (same domain and reduced axes); fixes g's domain.
inline bool reduction_fits(Group& g, Node* r) {
    const Shape& in = r->src[0]->shape;
    if (!g.has_domain) {
        Node* root = peel_reshapes(g.root);
        if (in != root->shape && numel(r->shape) != numel(root->shape)) return false;
        g.has_domain = true;
        g.domain = in;
        g.reduced = r->axes;
        g.domain_reduce = r;
        return true;
    }
    return in == g.domain && r->axes == g.reduced;
}

inline Group new_group(Node* root, std::string reason) {
    Group g;
    g.root = root;
    g.reason = std::move(reason);
    Node* base = peel_reshapes(root);
    if (base->kind == NodeKind::Reduce) {
        g.has_domain = true;
        g.domain = base->src[0]->shape;
        g.reduced = base->axes;
        g.domain_reduce = base;
    }
    return g;
}

}  // namespace schedule_detail

/// What a read of node `n` at index map `map` reaches after following views.
struct Reached {
    Node* node = nullptr;    // a computed node (read at `map`), or the base node of a load
    IndexMap map;
    bool load = false;       // `node` is a base buffer read at `access`
    Access access;
    Node* failed = nullptr;  // a reshape the map cannot follow (`map` is the map at it)
    ReshapeResult split;     // Split: the domain must be refined first
};

/// Follows views from `n` until a loadable node (a load) or a computed node. A reshape of a
/// contiguous loadable node reads it through the linear index, so it never fails.
inline Reached walk_views(const Schedule& s, const Group* current, Node* n, IndexMap map) {
    Reached r;
    for (;;) {
        if (s.is_loadable(n, current)) {
            Source src = s.source(n);
            r.load = true;
            r.node = src.base;
            r.access = map.access(src.offset, src.strides);
            return r;
        }
        if (!is_view(n->kind)) {
            r.node = n;
            r.map = std::move(map);
            return r;
        }
        Node* below = n->src[0].get();
        if (n->kind == NodeKind::Reshape && s.is_loadable(below, current)) {
            Source src = s.source(below);
            if (is_contiguous_layout(below->shape, src.strides, 0)) {
                r.load = true;
                r.node = src.base;
                r.access = map.access(src.offset, contiguous_strides(n->shape));
                return r;
            }
        }
        ReshapeResult step = map.through_view(*n);
        if (step.kind == ReshapeResult::Kind::Split) {
            r.split = step;
            return r;
        }
        if (step.kind == ReshapeResult::Kind::Fail) {
            r.failed = n;
            r.map = std::move(map);  // at the reshape's own index
            return r;
        }
        n = below;
    }
}

/// A kernel domain refined for reshapes: each axis of the coarse (node) shape may be split
/// into several iteration axes, so that reshapes which merge axes stay affine.
struct Refinement {
    Shape fine;
    std::vector<std::size_t> coarse_of;  // per fine axis

    explicit Refinement(const Shape& coarse) : fine(coarse) {
        for (std::size_t k = 0; k < coarse.size(); ++k) coarse_of.push_back(k);
    }
    void split(std::size_t axis, std::int64_t factor) {
        const std::int64_t extent = fine[axis];
        fine[axis] = extent / factor;
        fine.insert(axis + 1, factor);
        coarse_of.insert(coarse_of.begin() + static_cast<std::ptrdiff_t>(axis) + 1, coarse_of[axis]);
    }
    /// Merges strides over the fine axes back into strides over the coarse axes, if every
    /// coarse axis is walked by its parts as one.
    bool merge(const Strides& fine_strides, std::size_t coarse_rank, Strides& out) const {
        out = Strides(coarse_rank, 0);
        std::vector<std::size_t> last(coarse_rank, fine.size());  // last part of extent > 1 seen
        for (std::size_t j = 0; j < fine.size(); ++j) {
            const std::size_t c = coarse_of[j];
            if (fine[j] == 1) continue;
            if (last[c] != fine.size() && fine_strides[last[c]] != fine_strides[j] * fine[j]) return false;
            last[c] = j;
            out[c] = fine_strides[j];
        }
        return true;
    }
};

/// The most index maps (with padding gates) through which one phase of a kernel may read a node
/// that is more than one operation over buffers: past it, the node is materialized.
inline constexpr int kMaxRecomputations = 2;

/// The reads of every node inside the kernels it is computed in, as lowering will make them: a
/// node is evaluated once per distinct read. A read follows its consumer's read through views
/// (their index maps), pads (a window and a gate), element-wise nodes (unchanged) and
/// reductions (a phase of their own, at the identity of their input).
class ReadTracker {
public:
    struct Read {
        int group = -1;
        const Node* phase = nullptr;  // the reduction whose phase reads it; null: the store phase
        int gate = -1;                // the padding gate it is read under (-1: none)
        int opaque = 0;               // nonzero: a map the analysis cannot follow (equal to no other)
        IndexMap map;
    };

    explicit ReadTracker(std::size_t nodes) : reads_(nodes) {}

    /// Node i is computed by `group` at its own index: its root.
    void set_root(std::size_t i, int group, const Node* n) {
        reads_[i].clear();
        Read r;
        r.group = group;
        r.map = IndexMap::identity(n->shape);
        reads_[i].push_back(std::move(r));
    }

    /// The most distinct reads of node i in one phase of `group`.
    int evaluations(std::size_t i, int group) const {
        int most = 0;
        const auto& rs = reads_[i];
        for (std::size_t a = 0; a < rs.size(); ++a) {
            if (rs[a].group != group) continue;
            int same_phase = 0;
            for (const Read& b : rs)
                if (b.group == group && b.phase == rs[a].phase) ++same_phase;
            most = std::max(most, same_phase);
        }
        return most;
    }

    /// Passes the reads of node n (at position i) on to its sources (`at` maps a node to its
    /// position).
    template <class At>
    void pass_to_sources(std::size_t i, Node* n, const At& at) {
        for (const Read& r : reads_[i]) {
            switch (n->kind) {
                case NodeKind::Unary:
                case NodeKind::Binary:
                case NodeKind::Where:
                case NodeKind::Cast:
                    for (int k = 0; k < n->nsrc; ++k) add(at(source(n, k)), r);
                    break;
                case NodeKind::Reduce:    // its phase reads the input once, at the input's index
                case NodeKind::Sort: {    // its operand's kernel does
                    Read in;
                    in.group = r.group;
                    in.phase = n;
                    in.map = IndexMap::identity(source(n, 0)->shape);
                    add(at(source(n, 0)), std::move(in));
                    break;
                }
                case NodeKind::Pad: {
                    Read in = r;
                    in.gate = gate(n, r);
                    if (!r.opaque) {
                        SmallVector<std::int64_t, 12> starts_steps;
                        for (std::size_t k = 0; k < n->shape.size(); ++k) {
                            starts_steps.push_back(-n->params[k]);
                            starts_steps.push_back(1);
                        }
                        in.map.window(starts_steps, source(n, 0)->shape);
                    }
                    add(at(source(n, 0)), std::move(in));
                    break;
                }
                case NodeKind::Reshape:
                case NodeKind::Permute:
                case NodeKind::Expand:
                case NodeKind::Slice:
                case NodeKind::Unfold: {
                    Read in = r;
                    if (!r.opaque && !in.map.through_view(*n)) in.opaque = ++opaque_;
                    add(at(source(n, 0)), std::move(in));
                    break;
                }
                case NodeKind::Gather:  // the positions like an element-wise operand; the data apart
                    add(at(source(n, 1)), r);
                    add(at(source(n, 0)), opaque(r));
                    break;
                default:  // products, scans and the rest read their operands in ways of their own
                    for (int k = 0; k < n->nsrc; ++k) add(at(source(n, k)), opaque(r));
                    break;
            }
        }
    }

private:
    static Node* source(Node* n, int k) { return n->src[static_cast<std::size_t>(k)].get(); }

    Read opaque(const Read& r) {
        Read o = r;
        o.opaque = ++opaque_;
        return o;
    }

    static bool same(const Read& a, const Read& b) {
        return a.group == b.group && a.phase == b.phase && a.gate == b.gate && !a.opaque && !b.opaque && a.map == b.map;
    }

    void add(std::size_t i, Read r) {
        auto& rs = reads_[i];
        for (const Read& have : rs)
            if (same(have, r)) return;
        rs.push_back(std::move(r));
    }

    // Lowering makes one gate per (pad, read of the pad): the same pad read at the same map under
    // the same outer gate shares it.
    int gate(const Node* pad, const Read& r) {
        auto range = gates_.equal_range(pad);
        for (auto it = range.first; it != range.second; ++it) {
            const Read& g = gate_reads_[static_cast<std::size_t>(it->second)];
            if (same(g, r)) return it->second;
        }
        const int id = static_cast<int>(gate_reads_.size());
        gate_reads_.push_back(r);
        gates_.emplace(pad, id);
        return id;
    }

    std::vector<std::vector<Read>> reads_;  // per node of the GraphOrder
    std::unordered_multimap<const Node*, int> gates_;
    std::vector<Read> gate_reads_;  // per gate: the read of its pad
    int opaque_ = 0;
};

/// Whether node n is one operation over buffers and constants (through views): recomputing it
/// per read costs no more than the loads it makes.
inline bool reads_only_buffers(const Node* n) {
    for (int k = 0; k < n->nsrc; ++k) {
        const Node* s = n->src[static_cast<std::size_t>(k)].get();
        while (!s->realized() && is_view(s->kind)) s = s->src[0].get();
        if (!s->realized() && s->kind != NodeKind::Const && s->kind != NodeKind::Index) return false;
    }
    return true;
}

/// Groups the graph behind `outputs` (ordered by order_graph) into schedule items; lowering
/// is done separately. `forced` names nodes that lowering found must be materialized.
inline Schedule assign_groups(const GraphOrder& g, const std::vector<Node*>& outputs,
                              const std::unordered_map<Node*, Materialize>& forced) {
    using namespace schedule_detail;
    Schedule s;
    auto at = [&](const Node* n) { return static_cast<std::size_t>(g.index.at(n)); };
    // Distinct consumers of every node, and the number of edges into it.
    std::vector<SmallVector<int, 2>> consumers(g.nodes.size());
    s.uses.assign(g.nodes.size(), 0);
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        Node* n = g.nodes[i];
        if (n->realized()) continue;
        for (int k = 0; k < n->nsrc; ++k) {
            const std::size_t src = at(n->src[static_cast<std::size_t>(k)].get());
            ++s.uses[src];
            if (std::find(consumers[src].begin(), consumers[src].end(), static_cast<int>(i)) == consumers[src].end())
                consumers[src].push_back(static_cast<int>(i));
        }
    }
    std::unordered_set<Node*> is_output(outputs.begin(), outputs.end());

    // Lowering walks a kernel's graph recursively, so a fused chain may not be arbitrarily deep;
    // and a kernel's buffers and arguments are limited. Each node knows the distinct buffers
    // (materialized nodes) and scalar values (Const and Pad nodes) its fused computation reads,
    // as sorted node indices: lowering gives each one parameter, however many paths read it.
    std::unordered_map<Node*, std::string> cuts;
    {
        using Set = std::vector<int>;
        auto merge_into = [](Set& into, const Set& from) {
            Set merged;
            merged.reserve(into.size() + from.size());
            std::set_union(into.begin(), into.end(), from.begin(), from.end(), std::back_inserter(merged));
            into.swap(merged);
        };
        std::vector<int> depth(g.nodes.size(), 0);
        std::vector<Set> buffers(g.nodes.size()), scalars(g.nodes.size());
        auto materialize = [&](std::size_t i) {
            depth[i] = 0;  // a chain starts again after it
            buffers[i] = {static_cast<int>(i)};
            scalars[i].clear();
        };
        for (std::size_t i = 0; i < g.nodes.size(); ++i) {
            Node* n = g.nodes[i];
            if (n->realized()) {
                materialize(i);
                continue;
            }
            const DevicePolicy& policy = device_policy(n->device);
            if (n->kind == NodeKind::Const || n->kind == NodeKind::Pad) scalars[i] = {static_cast<int>(i)};
            for (;;) {
                Set in = buffers[i], arg = scalars[i];
                int d = 0;
                for (int k = 0; k < n->nsrc; ++k) {
                    const std::size_t src = at(n->src[static_cast<std::size_t>(k)].get());
                    d = std::max(d, depth[src]);
                    merge_into(in, buffers[src]);
                    merge_into(arg, scalars[src]);
                }
                const int max_inputs = policy.max_fused_inputs(), max_arguments = policy.max_kernel_arguments();
                const bool too_many_buffers = in.size() > static_cast<std::size_t>(max_inputs);
                if (!too_many_buffers && in.size() + arg.size() <= static_cast<std::size_t>(max_arguments)) {
                    buffers[i] = std::move(in);
                    scalars[i] = std::move(arg);
                    depth[i] = d + 1;
                    break;
                }
                // Materialize the source that brings the most buffers (or arguments).
                auto weight = [&](std::size_t src) {
                    return too_many_buffers ? buffers[src].size() : buffers[src].size() + scalars[src].size();
                };
                std::size_t widest = at(n->src[0].get());
                for (int k = 1; k < n->nsrc; ++k) {
                    const std::size_t src = at(n->src[static_cast<std::size_t>(k)].get());
                    if (weight(src) > weight(widest)) widest = src;
                }
                cuts[g.nodes[widest]] =
                    too_many_buffers
                        ? concat("a kernel reads at most ", max_inputs, " buffers; a new kernel starts here")
                        : concat("a kernel takes at most ", max_arguments,
                                 " arguments (buffers and scalar values); a new kernel starts here");
                materialize(widest);
            }
            if (is_output.count(n) || forced.count(n) || runs_alone(n->kind)) {
                materialize(i);  // materialized anyway
            } else if (depth[i] > kMaxFusedDepth) {
                cuts[n] = concat("a chain of more than ", kMaxFusedDepth, " fused operations ends here");
                materialize(i);
            }
        }
    }

    // Per node: the reduction its value is computed from through element-wise ops and views
    // alone (null: none; `mixed`: reductions over different domains). An element-wise node
    // over reductions of another domain than its consumer's kernel is better materialized
    // itself than each of its reductions apart: cross_entropy's per-row loss (a logsumexp and
    // a picked logit) is then one kernel, not one per reduction.
    Node* const mixed = reinterpret_cast<Node*>(&consumers);
    std::vector<Node*> reduced_from(g.nodes.size(), nullptr);
    auto same_domain = [](const Node* a, const Node* b) { return a->src[0]->shape == b->src[0]->shape && a->axes == b->axes; };
    for (std::size_t i = 0; i < g.nodes.size(); ++i) {
        Node* n = g.nodes[i];
        if (n->realized()) continue;
        // (A node its builder stores is read as a buffer: what reads it is computed from no
        // reduction of its, as Winograd's second sums read the first's stored results.)
        if (n->own_buffer) continue;
        if (n->kind == NodeKind::Reduce) {
            reduced_from[i] = n;
            continue;
        }
        const bool elementwise = n->kind == NodeKind::Unary || n->kind == NodeKind::Binary || n->kind == NodeKind::Where ||
                                 n->kind == NodeKind::Cast || is_view(n->kind);
        if (!elementwise) continue;
        for (int k = 0; k < n->nsrc; ++k) {
            Node* below = reduced_from[at(n->src[static_cast<std::size_t>(k)].get())];
            Node*& mine = reduced_from[i];
            if (!below || mine == mixed) continue;
            mine = !mine ? below : (below == mixed || !same_domain(mine, below)) ? mixed : mine;
        }
    }

    std::vector<Group> groups;  // in creation order (outputs first)
    std::vector<SmallVector<int, 2>> groups_of(g.nodes.size());  // per node: the kernels it is computed in
    ReadTracker reads(g.nodes.size());
    // Places node t, whose consumers are placed: in their kernel, or at the root of a new one.
    auto place = [&](std::size_t t, Node* n) {
        std::string reason;
        if (is_output.count(n)) {
            reason = "output";
        } else if (auto f = forced.find(n); f != forced.end()) {
            reason = f->second.reason;
        } else if (auto c = cuts.find(n); c != cuts.end()) {
            reason = c->second;
        } else if (n->own_buffer) {
            reason = "a buffer of its own, as its builder asks (convolutions and pools go through buffers on this device)";
        } else if (n->kind == NodeKind::Matmul) {
            reason = "matrix product (an item of its own, run by the GEMM)";
        } else if (n->kind == NodeKind::Scan) {
            reason = "scan (an item of its own, run by the backend's scan)";
        } else if (n->kind == NodeKind::Sort) {
            reason = "sort (an item of its own, run by the backend's sort)";
        } else if (n->kind == NodeKind::Linalg) {
            reason = "linear-algebra routine (an item of its own, run by LAPACK)";
        } else if (n->kind == NodeKind::Collective) {
            reason = "collective (an item of its own, run by the group's transport)";
        } else if (n->kind == NodeKind::Scatter) {
            reason = "scatter (an item of its own, run by the backend's scatter)";
        } else if (n->kind == NodeKind::Fft) {
            reason = "fft (an item of its own, run by the backend's FFT)";
        } else {
            SmallVector<int, 2> cons;
            for (int c : consumers[t])
                for (int id : groups_of[static_cast<std::size_t>(c)])
                    if (std::find(cons.begin(), cons.end(), id) == cons.end()) cons.push_back(id);
            if (n->kind == NodeKind::Const || n->kind == NodeKind::Index || is_view(n->kind)) {
                groups_of[t] = cons;  // free to recompute in every kernel that reads it
                return;
            }
            if (cons.size() == 1 && groups[static_cast<std::size_t>(cons[0])].is_gemm()) {
                reason = "operand of a matrix product";
            } else if (cons.size() == 1 && groups[static_cast<std::size_t>(cons[0])].is_scan()) {
                reason = "operand of a scan";
            } else if (cons.size() == 1 && groups[static_cast<std::size_t>(cons[0])].is_linalg()) {
                reason = "operand of a linear-algebra routine";
            } else if (cons.size() == 1 && groups[static_cast<std::size_t>(cons[0])].is_collective()) {
                reason = "operand of a collective";
            } else if (cons.size() == 1 && groups[static_cast<std::size_t>(cons[0])].is_scatter()) {
                reason = "operand of a scatter";
            } else if (cons.size() == 1 && groups[static_cast<std::size_t>(cons[0])].is_fft()) {
                reason = "operand of an fft";
            } else if (cons.size() == 1 && n->kind == NodeKind::Reduce && groups[static_cast<std::size_t>(cons[0])].is_sort()) {
                reason = "reduction read by a sort's operand (a kernel without a reduced domain)";
            } else if (cons.size() == 1) {
                Group& target = groups[static_cast<std::size_t>(cons[0])];
                // (A reduction is one phase of its kernel however often it is read.)
                const int maps = n->kind == NodeKind::Reduce || reads_only_buffers(n) ? 1 : reads.evaluations(t, cons[0]);
                Node* below = reduced_from[t];
                const bool other_domain = n->kind != NodeKind::Reduce && !is_view(n->kind) && target.has_domain && below &&
                                          below != mixed &&
                                          !(below->src[0]->shape == target.domain && below->axes == target.reduced);
                if (maps > kMaxRecomputations) {
                    reason = concat("read through ", maps, " index maps in one kernel: materialized to avoid recomputation");
                } else if (other_domain) {
                    reason = concat("computed from reductions over ", below->src[0]->shape, " axes ", below->axes,
                                    ", not the domain of its consumer's kernel");
                } else if (n->kind != NodeKind::Reduce || reduction_fits(target, n)) {
                    groups_of[t] = cons;
                    return;
                } else {
                    reason = concat("reduction over ", n->src[0]->shape, " axes ", n->axes,
                                    " does not match the domain of its consumer's kernel");
                }
            } else {
                reason = concat("used by ", consumers[t].size(), " consumers in ", cons.size(), " kernels");
            }
        }
        groups_of[t] = {static_cast<int>(groups.size())};
        groups.push_back(new_group(n, std::move(reason)));
        if (auto f = forced.find(n); f != forced.end()) groups.back().copy = f->second.copy;
    };
    for (std::size_t t = g.nodes.size(); t-- > 0;) {
        Node* n = g.nodes[t];
        if (n->realized()) continue;
        place(t, n);
        const SmallVector<int, 2>& in = groups_of[t];
        if (in.size() == 1 && groups[static_cast<std::size_t>(in[0])].root == n) reads.set_root(t, in[0], n);
        reads.pass_to_sources(t, n, at);
    }

    // Execution order: a kernel's inputs are its root's ancestors, so topological order of roots.
    std::sort(groups.begin(), groups.end(),
              [&](const Group& a, const Group& b) { return at(a.root) < at(b.root); });
    s.groups = std::move(groups);
    for (std::size_t i = 0; i < s.groups.size(); ++i) s.group_of_root[s.groups[i].root] = static_cast<int>(i);

    // A group whose root is only a view of a buffer needs no kernel: zero-copy when the layout
    // allows (the same rule as PyTorch's view: merged axes must be walked as one).
    for (Group& grp : s.groups) {
        if (!is_view(grp.root->kind) || grp.copy) continue;
        Refinement ref(grp.root->shape);
        for (;;) {
            IndexMap map = IndexMap::identity(ref.fine);
            if (!map.reshape(grp.root->shape)) break;
            Reached r = walk_views(s, &grp, grp.root, std::move(map));
            if (r.split.kind == ReshapeResult::Kind::Split) {
                ref.split(r.split.axis, r.split.factor);
                continue;
            }
            Strides strides;
            if (r.load && ref.merge(r.access.strides, grp.root->shape.size(), strides)) {
                grp.view_only = true;
                grp.view = Source{r.node, r.access.offset, std::move(strides)};
            }
            break;
        }
    }
    return s;
}

}  // namespace lazytensor::detail
