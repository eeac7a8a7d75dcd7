// SPDX-License-Identifier: MIT
// The host interpreter's plan of a kernel: what kernel_exec.hpp runs, decided once when the
// kernel is compiled. Plain data (the SIMD routines it calls are function pointers chosen here);
// plan_kernel does all the analysis. Nothing here runs a kernel; of the thread pool, only its
// size is an input (it sets the blocking and the split).
//
// The domain's axes split into the outer space O (kept) and the reduced space A. Lanes run
// along one of them (LaneMode):
//   - VecOuter: lanes are a block of outer indices; the reduced space is walked one index at a
//     time and folded lane by lane (column sums, element-wise kernels);
//   - VecReduce: for each outer index, lanes are blocks of the reduced space, folded into a
//     lane accumulator and then pairwise (row sums, softmax rows).
// Instructions that do not depend on the reduced index (slots, constants, broadcast loads) are
// hoisted: evaluated once per block of outer indices. A reduction with few outputs may be split
// along its reduced space (HostKernelPlan::split). Values a later phase would compute again are
// given a per-thread row cache; outputs of 16 MiB and more are marked for streaming stores; and
// an element-wise kernel whose expression template brought a compiled loop
// (ir/static_kernel.hpp) is bound to it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../ir/kernel.hpp"
#include "../../ir/static_kernel.hpp"
#include "../../simd/simd_ops.hpp"

namespace lazytensor::detail::host {

inline constexpr std::int64_t kBlock = LAZYTENSOR_HOST_BLOCK;
inline constexpr std::int64_t kSplitChunk = 16 * kBlock;  // reduced elements per split work item
inline constexpr std::size_t kRowCacheBytes = std::size_t(1) << 20;  // per thread, for values reused across phases

/// A set of domain axes walked as one row-major linear index.
struct Space {
    SmallVector<int, 6> axes;
    Shape extents;
    std::int64_t total = 1;
};

/// A load or store, with its strides split between the outer and the reduced space.
struct AccessPlan {
    std::int64_t offset = 0;
    Strides o_strides, a_strides;
    bool a_invariant = true;  // the same element for every reduced index
};

struct PInstr {
    ir::Op op = ir::Op::Const;
    DType dtype = DType::Float32;  // of the IR; registers hold value_dtype(dtype) (float16: float)
    std::size_t esize = 4;         // of a register element
    int a = -1, b = -1, c = -1;
    bool invariant = true;  // does not depend on the reduced index
    bool broadcast = false; // invariant, but read per reduced index (needs a per-outer-index fill)
    int param = -1;
    AccessPlan access;
    std::int64_t dyn_stride = 0, dyn_extent = 0;  // a gathering load (b >= 0)
    bool plain = true;                            // a load neither gathered nor gated
    int slot = -1;
    int scalar = -1;  // Param: which scalar parameter of the launch
    UnaryFn unary = nullptr;
    BinaryFn binary = nullptr;
    UnaryOp unary_op = UnaryOp::Neg;     // of a Unary
    BinaryOp binary_op = BinaryOp::Add;  // of a Binary
    WhereFn where = nullptr;
    UnaryFn fill = nullptr;
    ExpOfBinaryFn exp_of = nullptr;  // an Exp that computes its operand too: exp(a op b)
    int uniform = 0;                 // for exp_of: which operand is one value for all lanes (1: a, 2: b)
    bool read_as_one_value = false;  // a broadcast that every inner reader reads as one value: fill one lane
    // A comparison of an index with a constant (a pad's bounds): computed from `access` and
    // `bound` run by run, without the index's values.
    bool index_compare = false;
    std::int64_t bound = 0;
    alignas(8) unsigned char value[8] = {};  // Const, in value_dtype(dtype)
    std::size_t own = 0, shadow = 0;         // arena offsets: value registers (own) and broadcast copy
    int forward_store = -1;                  // store that may receive this value in place
    bool live = true;                        // needed by the phase's fold or stores
    int cache_write = -1;                    // a later phase reads this value: keep it in this cache
    int cache_read = -1;                     // an earlier phase computed this value: read this cache
    bool placed = false;                     // its register is laid out (lay_out_arena)

    /// A Const or a Param: one value for every lane, filled in once per launch.
    bool is_scalar() const { return op == ir::Op::Const || op == ir::Op::Param; }
};

/// A scalar's bytes as a register element of `dtype` holds them (float16: rounded, then float).
inline void scalar_register_bytes(const Scalar& s, DType dtype, unsigned char* out) {
    const Scalar v = s.cast(dtype);
    visit_value_dtype(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T x = v.as<T>();
        std::memcpy(out, &x, sizeof(T));
    });
}

struct PStore {
    int param = -1;
    int value = -1;
    AccessPlan access;
    bool variant = false;  // runs once per reduced index
    bool stream = false;   // a large output: written with non-temporal stores
    bool reduced = false;  // a float16 or bfloat16 output: the float value is rounded as it is stored
    DType dtype = DType::Float32;  // the output's dtype
    std::size_t esize = 4;
};

struct PPhase {
    ir::Phase::Kind kind = ir::Phase::Kind::Store;
    bool outer = false;
    std::vector<PInstr> instrs;
    std::vector<int> hoisted, inner;  // instruction indices by class, in program order
    std::vector<PStore> stores;
    int reduce_value = -1;
    DType reduce_dtype = DType::Float32;
    ReduceFns reduce;
    std::size_t acc = 0, slot = 0;  // arena offsets
    std::size_t ptr_base = 0;       // first entry of this phase in the pointer tables
    // A row reduction of a plain load and nothing else (a row sum, max, ...): that load, folded
    // straight from memory a row at a time instead of block by block (set by classify).
    int row_load = -1;
};

/// Which space the lanes of a block walk (see the top of this file).
enum class LaneMode { VecOuter, VecReduce };

/// Everything the execution needs to run a kernel, decided by plan_kernel.
struct HostKernelPlan {
    Shape domain;
    std::size_t n_params = 0, n_scalars = 0;  // buffers and scalar parameters of a launch
    Space o, a;                               // the outer (kept) and reduced axes
    LaneMode mode = LaneMode::VecOuter;
    std::int64_t oblock = kBlock;             // outer indices per block
    std::vector<PPhase> phases;
    std::size_t ptr_count = 0;                // register pointers of all phases
    bool split = false;                       // split along the reduced space (few outputs)
    const StaticKernel* static_loop = nullptr;  // the expression's compiled loop, when it matches
    StaticBinding binding;                      // and how its leaves bind to this kernel
    std::vector<std::size_t> cache_bytes, cache_at;  // row caches: size and arena offset
    std::size_t arena_bytes = 0;                     // per-thread scratch of a launch
};

// The steps of plan_kernel.
namespace planning {

inline void choose_mode(HostKernelPlan& plan, int threads) {
    if (plan.a.axes.empty()) {
        plan.mode = LaneMode::VecOuter;
    } else {
        plan.mode = plan.a.axes.back() == static_cast<int>(plan.domain.size()) - 1 ? LaneMode::VecReduce : LaneMode::VecOuter;
        if (plan.mode == LaneMode::VecOuter && plan.o.total < 256 && plan.a.total >= 4096) plan.mode = LaneMode::VecReduce;
        if (plan.mode == LaneMode::VecReduce && plan.a.total < 64 && plan.o.total >= 64) plan.mode = LaneMode::VecOuter;
    }
    if (plan.mode == LaneMode::VecOuter) {
        plan.oblock = kBlock;
    } else {
        // Outer indices per block: their rows should stay in cache from one phase to the next.
        const std::int64_t row_bytes = std::max<std::int64_t>(1, plan.a.total) * 8;
        plan.oblock = std::clamp<std::int64_t>((256 << 10) / row_bytes, 1, kBlock);
        const std::int64_t want_items = 4 * threads;
        plan.oblock = std::max<std::int64_t>(1, std::min(plan.oblock, (plan.o.total + want_items - 1) / want_items));
    }
}

inline AccessPlan split_access(const HostKernelPlan& plan, const Access& a) {
    AccessPlan p;
    p.offset = a.offset;
    for (int j : plan.o.axes) p.o_strides.push_back(a.strides[static_cast<std::size_t>(j)]);
    for (int j : plan.a.axes) {
        p.a_strides.push_back(a.strides[static_cast<std::size_t>(j)]);
        if (a.strides[static_cast<std::size_t>(j)] != 0) p.a_invariant = false;
    }
    return p;
}

inline PInstr prepare_instr(const HostKernelPlan& plan, const ir::Instr& in, const PPhase& phase) {
    PInstr p;
    p.op = in.op;
    p.dtype = in.dtype;
    p.esize = dtype_size(value_dtype(in.dtype));
    p.a = in.a;
    p.b = in.b;
    p.c = in.c;
    auto operand_invariant = [&](int i) { return i < 0 || phase.instrs[static_cast<std::size_t>(i)].invariant; };
    switch (in.op) {
        case ir::Op::Load:
            p.param = in.arg;
            p.access = split_access(plan, in.access);
            p.dyn_stride = in.dyn_stride;
            p.dyn_extent = in.dyn_extent;
            p.plain = in.plain_load();
            p.invariant = (phase.outer || p.access.a_invariant) && operand_invariant(in.b) && operand_invariant(in.c);
            break;
        case ir::Op::Index:
            p.access = split_access(plan, in.access);
            p.invariant = phase.outer || p.access.a_invariant;
            break;
        case ir::Op::Const: scalar_register_bytes(in.value, in.dtype, p.value); break;
        case ir::Op::Param: p.scalar = in.arg; break;
        case ir::Op::Slot: p.slot = in.arg; break;
        case ir::Op::Unary:
            p.unary = unary_fn(in.unary, phase.instrs[static_cast<std::size_t>(in.a)].dtype);  // a predicate returns bool
            p.unary_op = in.unary;
            p.invariant = operand_invariant(in.a);
            break;
        case ir::Op::Binary:
            p.binary = binary_fn(in.binary, phase.instrs[static_cast<std::size_t>(in.a)].dtype);
            p.binary_op = in.binary;
            p.invariant = operand_invariant(in.a) && operand_invariant(in.b);
            break;
        case ir::Op::Where:
            p.where = where_fn(in.dtype);
            p.invariant = operand_invariant(in.a) && operand_invariant(in.b) && operand_invariant(in.c);
            break;
        case ir::Op::Cast:
            p.unary = cast_fn(in.dtype, phase.instrs[static_cast<std::size_t>(in.a)].dtype);
            p.invariant = operand_invariant(in.a);
            break;
    }
    if ((in.op == ir::Op::Unary || in.op == ir::Op::Binary || in.op == ir::Op::Cast) && !p.unary && !p.binary)
        fail<BackendError>("host backend: no implementation of this op for ", in.dtype);
    p.fill = fill_fn(in.dtype);
    return p;
}

// Marks what the phase's fold and stores need; values read from a row cache need nothing.
inline void mark_live(PPhase& p) {
    for (PInstr& in : p.instrs) in.live = false;
    auto need = [&](int i) {
        if (i >= 0) p.instrs[static_cast<std::size_t>(i)].live = true;
    };
    need(p.reduce_value);
    for (const PStore& st : p.stores) need(st.value);
    for (std::size_t i = 0; i < p.instrs.size(); ++i)
        if (p.instrs[i].cache_write >= 0) need(static_cast<int>(i));  // a later phase reads it
    for (std::size_t i = p.instrs.size(); i-- > 0;) {
        const PInstr& in = p.instrs[i];
        if (!in.live || in.cache_read >= 0) continue;
        need(in.a);
        need(in.b);
        need(in.c);
    }
}

// Values a later phase recomputes (the exp of softmax: summed in one phase, divided in the
// next) are kept in a per-thread row cache instead, when the rows of a block fit. Found by
// numbering the values of every phase; a cached value cuts the code below it in later phases.
inline void plan_row_caches(HostKernelPlan& plan, const ir::Kernel& k) {
    std::map<std::vector<std::int64_t>, int> numbers;
    std::map<int, std::pair<std::size_t, int>> first_computed;  // value -> (phase, instr)
    std::vector<std::vector<int>> value(k.phases.size());
    for (std::size_t q = 0; q < k.phases.size(); ++q) {
        const ir::Phase& ph = k.phases[q];
        mark_live(plan.phases[q]);  // a dead instruction never runs: it cannot fill a cache
        for (std::size_t i = 0; i < ph.instrs.size(); ++i) {
            const ir::Instr& in = ph.instrs[i];
            std::vector<std::int64_t> sig{static_cast<std::int64_t>(in.op), static_cast<std::int64_t>(in.dtype),
                                          static_cast<std::int64_t>(in.unary), static_cast<std::int64_t>(in.binary), in.arg};
            for (int o : {in.a, in.b, in.c}) sig.push_back(o < 0 ? -1 : value[q][static_cast<std::size_t>(o)]);
            if (in.op == ir::Op::Load || in.op == ir::Op::Index) {
                sig.push_back(in.access.offset);
                for (auto st : in.access.strides) sig.push_back(st);
                sig.push_back(in.dyn_stride);
            }
            if (in.op == ir::Op::Const) {
                sig.push_back(static_cast<std::int64_t>(in.value.i));
                std::int64_t bits;
                std::memcpy(&bits, &in.value.f, sizeof(bits));
                sig.push_back(bits);
            }
            const int v = numbers.emplace(std::move(sig), static_cast<int>(numbers.size())).first->second;
            value[q].push_back(v);
            PInstr& pi = plan.phases[q].instrs[i];
            const bool computed = in.op == ir::Op::Unary || in.op == ir::Op::Binary || in.op == ir::Op::Where || in.op == ir::Op::Cast;
            if (!computed || pi.invariant || plan.phases[q].outer) continue;
            auto first = first_computed.find(v);
            if (first == first_computed.end()) {
                if (pi.live) first_computed.emplace(v, std::make_pair(q, static_cast<int>(i)));
            }
            else pi.cache_read = v;  // provisional: the value number
        }
        mark_live(plan.phases[q]);
    }
    // Give each value that a live reader needs one cache, written where it is first computed.
    const std::int64_t row_elems = plan.oblock * std::max<std::int64_t>(plan.a.total, 1);
    std::map<int, int> cache_of;
    std::size_t bytes = 0;
    for (PPhase& p : plan.phases)
        for (PInstr& in : p.instrs) {
            if (in.cache_read < 0) continue;
            if (!in.live) {
                in.cache_read = -1;
                continue;
            }
            auto it = cache_of.find(in.cache_read);
            if (it == cache_of.end()) {
                const std::size_t need = static_cast<std::size_t>(row_elems) * in.esize;
                if (bytes + need > kRowCacheBytes) {  // does not fit: recompute instead
                    in.cache_read = -1;
                    continue;
                }
                bytes += need;
                const auto [q, i] = first_computed.at(in.cache_read);
                it = cache_of.emplace(in.cache_read, static_cast<int>(plan.cache_bytes.size())).first;
                plan.phases[q].instrs[static_cast<std::size_t>(i)].cache_write = it->second;
                plan.cache_bytes.push_back(need);
            }
            in.cache_read = it->second;
        }
    for (PPhase& p : plan.phases) mark_live(p);
}

// Places registers, accumulators, slots and row caches in the per-thread arena.
inline void lay_out_arena(HostKernelPlan& plan) {
    std::size_t arena = 0, registers = 0;
    auto reserve = [&](std::size_t bytes) {
        // Stagger registers by a few cache lines: blocks of 4 KiB multiples would otherwise
        // all map to the same L1 sets (and alias each other's loads and stores).
        const std::size_t at = arena;
        arena += (bytes + 63) / 64 * 64 + 64 * (1 + (registers++ % 13));
        return at;
    };
    for (PPhase& p : plan.phases) {
        if (p.kind == ir::Phase::Kind::Reduce) {
            p.acc = reserve(static_cast<std::size_t>(kBlock) * dtype_size(p.reduce_dtype));
            p.slot = reserve(static_cast<std::size_t>(kBlock) * dtype_size(p.reduce_dtype));
        }
        // A hoisted value that only hoisted instructions read is dead after its last reader:
        // a later hoisted instruction takes its register, so that a long element-wise
        // expression (a composite) keeps a few registers in the L1 cache rather than one
        // per instruction. Never reused: scalars (filled once per launch), and values read
        // later in the phase (by inner instructions, stores, the fold, the row cache, as
        // broadcasts or in place of a store).
        const std::size_t n = p.instrs.size();
        std::vector<bool> kept(n, false);
        std::vector<std::size_t> last_read(n, 0);
        auto keep = [&](int i) {
            if (i >= 0) kept[static_cast<std::size_t>(i)] = true;
        };
        for (int i : p.inner) {
            const PInstr& in = p.instrs[static_cast<std::size_t>(i)];
            keep(i), keep(in.a), keep(in.b), keep(in.c);
        }
        for (const PStore& st : p.stores) keep(st.value);
        keep(p.reduce_value);
        for (std::size_t i = 0; i < n; ++i) {
            const PInstr& in = p.instrs[i];
            if (in.is_scalar() || in.cache_write >= 0 || in.broadcast || in.forward_store >= 0 || in.op == ir::Op::Slot)
                kept[i] = true;
        }
        for (std::size_t k = 0; k < p.hoisted.size(); ++k) {
            const PInstr& in = p.instrs[static_cast<std::size_t>(p.hoisted[k])];
            for (int o : {in.a, in.b, in.c})
                if (o >= 0) last_read[static_cast<std::size_t>(o)] = k;
        }
        std::map<std::size_t, std::vector<std::size_t>> free_registers;  // by size
        for (std::size_t k = 0; k < p.hoisted.size(); ++k) {
            const auto i = static_cast<std::size_t>(p.hoisted[k]);
            PInstr& in = p.instrs[i];
            if (!in.live || in.cache_read >= 0 || in.op == ir::Op::Slot) continue;
            const std::size_t bytes = static_cast<std::size_t>(kBlock) * in.esize;
            std::vector<std::size_t>& pool = free_registers[bytes];
            if (!in.is_scalar() && !pool.empty()) {
                in.own = pool.back();
                pool.pop_back();
            } else {
                in.own = reserve(bytes);
            }
            in.placed = true;
            const int operands[3] = {in.a, in.b, in.c};
            for (int j = 0; j < 3; ++j) {
                const int o = operands[j];
                if (o < 0 || (j > 0 && o == operands[0]) || (j > 1 && o == operands[1])) continue;  // each operand once
                const auto u = static_cast<std::size_t>(o);
                const PInstr& operand = p.instrs[u];
                if (kept[u] || last_read[u] != k || !operand.placed || operand.cache_read >= 0) continue;
                free_registers[static_cast<std::size_t>(kBlock) * operand.esize].push_back(operand.own);
            }
        }
        for (PInstr& in : p.instrs) {
            if (!in.live || in.cache_read >= 0) continue;
            if (in.op != ir::Op::Slot && !in.placed) in.own = reserve(static_cast<std::size_t>(kBlock) * in.esize);  // slots live in p.slot
            if (in.broadcast && !in.is_scalar()) in.shadow = reserve(static_cast<std::size_t>(kBlock) * in.esize);
        }
    }
    for (std::size_t bytes : plan.cache_bytes) plan.cache_at.push_back(reserve(bytes));
    plan.arena_bytes = arena;
}

// Splits instructions into hoisted and inner lists; marks values read across the split,
// and values that a store may receive in place.
inline void classify(const HostKernelPlan& plan, PPhase& p, bool in_place) {
    auto read_inner = [&](int i) {
        if (i >= 0 && p.instrs[static_cast<std::size_t>(i)].invariant) p.instrs[static_cast<std::size_t>(i)].broadcast = true;
    };
    if (plan.mode != LaneMode::VecReduce || plan.split) mark_live(p);
    for (std::size_t i = 0; i < p.instrs.size(); ++i) {
        PInstr& in = p.instrs[i];
        if (!in.live) continue;
        (in.invariant ? p.hoisted : p.inner).push_back(static_cast<int>(i));
        if (!in.invariant && in.cache_read < 0) {
            read_inner(in.a);
            read_inner(in.b);
            read_inner(in.c);
        }
    }
    if (p.kind == ir::Phase::Kind::Reduce && !p.outer) read_inner(p.reduce_value);
    if (plan.mode == LaneMode::VecReduce && p.kind == ir::Phase::Kind::Reduce && !p.outer && p.stores.empty() &&
        p.reduce.fold_batches && plan.a.axes.size() == 1 && p.inner.size() == 1 && p.inner[0] == p.reduce_value) {
        const PInstr& in = p.instrs[static_cast<std::size_t>(p.reduce_value)];
        if (in.op == ir::Op::Load && in.plain && !is_reduced_float(in.dtype) && in.cache_write < 0 &&
            in.access.a_strides.size() == 1 && in.access.a_strides[0] == 1)
            p.row_load = p.reduce_value;
    }
    for (std::size_t s = 0; s < p.stores.size(); ++s) {
        const PStore& st = p.stores[s];
        PInstr& v = p.instrs[static_cast<std::size_t>(st.value)];
        if (st.variant) read_inner(st.value);
        const bool computed = v.op == ir::Op::Unary || v.op == ir::Op::Binary || v.op == ir::Op::Where || v.op == ir::Op::Cast;
        // (A float16 or bfloat16 output cannot receive the float register in place.)
        // (Nor an assign's output: its block may still be read after the value is computed.)
        if (computed && !st.stream && !st.reduced && !in_place && v.invariant != st.variant && v.forward_store < 0)
            v.forward_store = static_cast<int>(s);
    }
}

// index >= c, index < c (and > and <=), the bounds of a pad: true along one run of each
// segment (an index is affine in the lane), so they are computed by runs and the index
// itself is not computed where nothing else reads it.
inline void fuse_index_compares(PPhase& p) {
    bool fused = false;
    for (PInstr& in : p.instrs) {
        if (in.op != ir::Op::Binary || in.cache_read >= 0 || in.a < 0 || in.b < 0) continue;
        if (in.binary_op != BinaryOp::Ge && in.binary_op != BinaryOp::Gt && in.binary_op != BinaryOp::Lt &&
            in.binary_op != BinaryOp::Le)
            continue;
        const PInstr& index = p.instrs[static_cast<std::size_t>(in.a)];
        const PInstr& bound = p.instrs[static_cast<std::size_t>(in.b)];
        if (index.op != ir::Op::Index || bound.op != ir::Op::Const || bound.dtype != DType::Int64 || index.cache_read >= 0) continue;
        in.index_compare = true;
        in.access = index.access;
        std::memcpy(&in.bound, bound.value, sizeof(in.bound));
        in.a = in.b = -1;
        fused = true;
    }
    if (fused) mark_live(p);
}

// exp(a op b) whose a op b nothing else reads runs as one instruction: the intermediate stays
// in vector registers instead of a block written and read again (softmax's exp(x - max)).
inline void fuse_exp_of_binary(const HostKernelPlan& plan, PPhase& p) {
    std::vector<int> readers(p.instrs.size(), 0);
    for (const PInstr& in : p.instrs)
        if (in.live && in.cache_read < 0)
            for (int o : {in.a, in.b, in.c})
                if (o >= 0) ++readers[static_cast<std::size_t>(o)];
    std::vector<bool> removed(p.instrs.size(), false);
    for (PInstr& in : p.instrs) {
        if (!in.live || in.op != ir::Op::Unary || in.cache_read >= 0 || in.a < 0) continue;
        if (in.dtype != DType::Float32 && in.dtype != DType::Float64) continue;
        PInstr& op = p.instrs[static_cast<std::size_t>(in.a)];
        if (op.op != ir::Op::Binary || op.dtype != in.dtype || op.invariant != in.invariant || op.broadcast ||
            op.cache_read >= 0 || op.cache_write >= 0 || op.forward_store >= 0 || readers[static_cast<std::size_t>(in.a)] != 1)
            continue;
        if (in.unary_op != UnaryOp::Exp) continue;
        const auto fused = exp_of_binary_fn(op.binary_op, in.dtype);
        if (!fused || in.a == p.reduce_value ||
            std::any_of(p.stores.begin(), p.stores.end(), [&](const PStore& st) { return st.value == in.a; }))
            continue;
        // One value for every lane: a scalar, or (lanes along a row) a value of the row.
        auto uniform = [&](int o) {
            const PInstr& x = p.instrs[static_cast<std::size_t>(o)];
            return x.is_scalar() || (plan.mode == LaneMode::VecReduce && !in.invariant && x.invariant);
        };
        removed[static_cast<std::size_t>(in.a)] = true;
        op.live = false;
        in.exp_of = fused;
        in.uniform = uniform(op.b) ? 2 : uniform(op.a) ? 1 : 0;
        in.b = op.b;
        in.a = op.a;
    }
    auto drop = [&](std::vector<int>& list) {
        list.erase(std::remove_if(list.begin(), list.end(), [&](int i) { return removed[static_cast<std::size_t>(i)]; }),
                   list.end());
    };
    drop(p.hoisted);
    drop(p.inner);
    // A row's value that only fused instructions read (softmax's max) needs no block of copies.
    std::vector<bool> whole(p.instrs.size(), false);  // read at every lane by some inner reader
    for (int i : p.inner) {
        const PInstr& in = p.instrs[static_cast<std::size_t>(i)];
        if (in.cache_read >= 0) continue;
        for (int j = 0; j < 3; ++j) {
            const int o = j == 0 ? in.a : j == 1 ? in.b : in.c;
            if (o >= 0 && !(in.exp_of && in.uniform == j + 1)) whole[static_cast<std::size_t>(o)] = true;
        }
    }
    for (const PStore& st : p.stores) whole[static_cast<std::size_t>(st.value)] = true;
    if (p.reduce_value >= 0) whole[static_cast<std::size_t>(p.reduce_value)] = true;
    for (std::size_t i = 0; i < p.instrs.size(); ++i)
        p.instrs[i].read_as_one_value = p.instrs[i].broadcast && !whole[i];
}

inline bool can_split(const HostKernelPlan& plan, int threads) {
    // One reduction over a long reduced space with few outputs, then per-output stores.
    if (plan.mode != LaneMode::VecReduce || plan.o.total > kBlock || plan.a.total < 2 * kSplitChunk) return false;
    if ((plan.o.total + plan.oblock - 1) / plan.oblock >= 2 * threads) return false;
    if (plan.phases.empty() || plan.phases[0].kind != ir::Phase::Kind::Reduce || plan.phases[0].outer) return false;
    if (!plan.phases[0].stores.empty()) return false;
    for (std::size_t p = 1; p < plan.phases.size(); ++p)
        if (!plan.phases[p].outer) return false;
    return true;
}

}  // namespace planning

/// Plans kernel k for a pool of `threads` threads (the blocking and the split depend on it).
inline HostKernelPlan plan_kernel(const ir::Kernel& k, int threads) {
    using namespace planning;
    HostKernelPlan plan;
    plan.domain = k.domain;
    plan.n_params = k.params.size();
    plan.n_scalars = k.scalars.size();
    for (std::size_t j = 0; j < k.domain.size(); ++j) {
        Space& s = k.reduced[j] ? plan.a : plan.o;
        s.axes.push_back(static_cast<int>(j));
        s.extents.push_back(k.domain[j]);
        s.total *= k.domain[j];
    }
    // Lanes run along the last outer axis, and every run costs the same setup: a short last
    // axis (a stride's residues, pairs) makes runs of a few lanes. Where nothing is reduced the
    // order of the axes is free: a long one goes last instead, read with strides.
    bool reordered = false;
    if (plan.a.axes.empty() && plan.o.axes.size() >= 2 && plan.o.extents.back() <= 4) {
        for (std::size_t j = plan.o.axes.size() - 1; j-- > 0;) {
            if (plan.o.extents[j] < 8) continue;
            const int axis = plan.o.axes[j];
            const std::int64_t extent = plan.o.extents[j];
            plan.o.axes.erase(j);
            plan.o.extents.erase(j);
            plan.o.axes.push_back(axis);
            plan.o.extents.push_back(extent);
            reordered = true;
            break;
        }
    }
    choose_mode(plan, threads);
    std::size_t ptrs = 0;
    for (const ir::Phase& ph : k.phases) {
        PPhase p;
        p.kind = ph.kind;
        p.outer = ph.outer || plan.a.axes.empty();
        p.ptr_base = ptrs;
        ptrs += ph.instrs.size();
        for (const ir::Instr& in : ph.instrs) p.instrs.push_back(prepare_instr(plan, in, p));
        for (const ir::Store& st : ph.stores) {
            PStore s;
            s.param = st.param;
            s.value = st.value;
            s.access = split_access(plan, st.access);
            s.esize = dtype_size(k.params[static_cast<std::size_t>(st.param)].dtype);
            s.dtype = k.params[static_cast<std::size_t>(st.param)].dtype;
            s.reduced = is_reduced_float(s.dtype);
            s.variant = !p.outer && (!s.access.a_invariant || !p.instrs[static_cast<std::size_t>(st.value)].invariant);
            const std::int64_t written = s.variant ? plan.o.total * plan.a.total : plan.o.total;
            // (written * esize can pass int64 for a domain that is refused later, at allocation)
            s.stream = written >= LAZYTENSOR_HOST_STREAM_MIN / static_cast<std::int64_t>(s.esize);
            p.stores.push_back(std::move(s));
        }
        if (ph.kind == ir::Phase::Kind::Reduce) {
            p.reduce_value = ph.reduce_value;
            p.reduce_dtype = value_dtype(p.instrs[static_cast<std::size_t>(ph.reduce_value)].dtype);
            p.reduce = reduce_fns(ph.reduce_op, p.reduce_dtype);
        }
        plan.phases.push_back(std::move(p));
    }
    plan.ptr_count = ptrs;
    plan.split = can_split(plan, threads);
    if (plan.mode == LaneMode::VecReduce && !plan.split) plan_row_caches(plan, k);
    for (PPhase& p : plan.phases) {
        fuse_index_compares(p);
        classify(plan, p, k.in_place);
        fuse_exp_of_binary(plan, p);
    }
    lay_out_arena(plan);
    if (k.candidate && !reordered && plan.mode == LaneMode::VecOuter && k.candidate->match(k, plan.binding))
        plan.static_loop = k.candidate;
    return plan;
}

}  // namespace lazytensor::detail::host
