// SPDX-License-Identifier: MIT
// The host interpreter: runs kernel IR on blocks of elements with xsimd (the reference
// semantics for every other backend).
//
// Each instruction is evaluated for a whole block of lanes at once (a vectorized interpreter,
// like numexpr), so dispatch costs once per block and the inner loops are SIMD loops over
// cache-resident registers. Contiguous loads read the input buffer in place, and the last
// operation before a contiguous store writes straight into the output.
//
// The domain's axes split into the outer space O (kept) and the reduced space A. Lanes run
// along one of them:
//   - VecOuter: lanes are a block of outer indices; the reduced space is walked one index at a
//     time and folded lane by lane (column sums, element-wise kernels);
//   - VecReduce: for each outer index, lanes are blocks of the reduced space, folded into a
//     lane accumulator and then pairwise (row sums, softmax rows).
// Instructions that do not depend on the reduced index (slots, constants, broadcast loads) are
// hoisted: evaluated once per block of outer indices. Work is split across the thread pool by
// blocks of outer indices, and a reduction with few outputs is also split along its reduced
// space, in chunks of a fixed size so that results do not depend on the thread count.
//
// Also here: values a later phase would compute again are kept in a per-thread row cache;
// outputs of 16 MiB and more are written with streaming stores; and an element-wise kernel
// whose expression template brought a compiled loop (ir/static_kernel.hpp) runs that loop.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "../../core/config.hpp"
#include "../../ir/kernel.hpp"
#include "../../ir/static_kernel.hpp"
#include "../backend.hpp"
#include "../../simd/simd_ops.hpp"
#include "thread_pool.hpp"

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
    bool half = false;     // a float16 output: the float value is rounded as it is stored
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

/// Lanes of a block: a linear range of one space, cut into runs along its last axis.
struct Segment {
    std::int64_t lane = 0, len = 0;
    SmallVector<std::int64_t, 6> index;  // multi-index over the space at the run's start
};

struct BlockCtx {
    std::int64_t n = 0;
    const std::vector<Segment>* segments = nullptr;
    bool lanes_outer = true;                     // lanes walk O (else A)
    const SmallVector<std::int64_t, 6>* fixed;   // multi-index of the other space
    std::int64_t cache_at = 0;                   // element offset of these lanes in a row cache
};

inline void cut_segments(const Space& space, std::int64_t start, std::int64_t n, std::vector<Segment>& out) {
    const std::size_t d = space.extents.size();
    if (d == 1) {  // one run (the common row): reuse the segment, no allocation
        out.resize(1);
        out[0].lane = 0;
        out[0].len = n;
        out[0].index.resize(1);
        out[0].index[0] = start;
        return;
    }
    out.clear();
    if (space.axes.empty()) {
        out.push_back(Segment{0, n, {}});
        return;
    }
    Segment seg;
    seg.index.resize(d, 0);
    std::int64_t rest = start;
    for (std::size_t k = d; k-- > 0;) {
        seg.index[k] = space.extents[k] ? rest % space.extents[k] : 0;
        rest = space.extents[k] ? rest / space.extents[k] : 0;
    }
    std::int64_t lane = 0;
    while (lane < n) {
        seg.lane = lane;
        seg.len = std::min(space.extents[d - 1] - seg.index[d - 1], n - lane);
        out.push_back(seg);
        lane += seg.len;
        // Advance the multi-index past this run.
        seg.index[d - 1] += seg.len;
        for (std::size_t k = d; k-- > 1 && seg.index[k] >= space.extents[k];) {
            seg.index[k] = 0;
            ++seg.index[k - 1];
        }
    }
}

inline std::int64_t dot(const SmallVector<std::int64_t, 6>& idx, const Strides& strides) {
    std::int64_t s = 0;
    for (std::size_t k = 0; k < idx.size(); ++k) s += idx[k] * strides[k];
    return s;
}

template <class E>
inline void gather(void* dst, const char* src, std::int64_t stride, std::int64_t len) {
    E* d = static_cast<E*>(dst);
    const E* s = reinterpret_cast<const E*>(src);
    for (std::int64_t t = 0; t < len; ++t) std::memcpy(d + t, s + t * stride, sizeof(E));
}

template <class E>
inline void scatter(char* dst, const void* src, std::int64_t stride, std::int64_t len) {
    E* d = reinterpret_cast<E*>(dst);
    const E* s = static_cast<const E*>(src);
    for (std::int64_t t = 0; t < len; ++t) std::memcpy(d + t * stride, s + t, sizeof(E));
}

inline void strided_copy(void* dst, const char* src, std::int64_t stride, std::int64_t len, std::size_t esize) {
    switch (esize) {
        case 1: gather<std::uint8_t>(dst, src, stride, len); break;
        case 4: gather<std::uint32_t>(dst, src, stride, len); break;
        default: gather<std::uint64_t>(dst, src, stride, len); break;
    }
}

inline void strided_store(char* dst, const void* src, std::int64_t stride, std::int64_t len, std::size_t esize) {
    switch (esize) {
        case 1: scatter<std::uint8_t>(dst, src, stride, len); break;
        case 4: scatter<std::uint32_t>(dst, src, stride, len); break;
        default: scatter<std::uint64_t>(dst, src, stride, len); break;
    }
}

/// Per-thread scratch memory, grown on demand and kept between launches.
inline char* thread_arena(std::size_t bytes) {
    struct Arena {
        char* data = nullptr;
        std::size_t size = 0;
        ~Arena() { std::free(data); }
    };
    static thread_local Arena arena;
    if (arena.size < bytes) {
        std::free(arena.data);
        arena.size = (bytes + 63) / 64 * 64;
        arena.data = static_cast<char*>(std::aligned_alloc(64, arena.size));
        if (!arena.data) {
            arena.size = 0;
            throw BackendError("host backend: out of memory allocating kernel scratch");
        }
    }
    return arena.data;
}

class HostKernel final : public CompiledKernel {
public:
    HostKernel(const ir::Kernel& k, int threads)
        : domain_(k.domain), n_params_(k.params.size()), n_scalars_(k.scalars.size()), threads_(threads), in_place_(k.in_place) {
        for (std::size_t j = 0; j < k.domain.size(); ++j) {
            Space& s = k.reduced[j] ? a_ : o_;
            s.axes.push_back(static_cast<int>(j));
            s.extents.push_back(k.domain[j]);
            s.total *= k.domain[j];
        }
        choose_mode();
        std::size_t ptrs = 0;
        for (const ir::Phase& ph : k.phases) {
            PPhase p;
            p.kind = ph.kind;
            p.outer = ph.outer || a_.axes.empty();
            p.ptr_base = ptrs;
            ptrs += ph.instrs.size();
            for (const ir::Instr& in : ph.instrs) p.instrs.push_back(prepare(in, p));
            for (const ir::Store& st : ph.stores) {
                PStore s;
                s.param = st.param;
                s.value = st.value;
                s.access = split(st.access);
                s.esize = dtype_size(k.params[static_cast<std::size_t>(st.param)].dtype);
                s.half = k.params[static_cast<std::size_t>(st.param)].dtype == DType::Float16;
                s.variant = !p.outer && (!s.access.a_invariant || !p.instrs[static_cast<std::size_t>(st.value)].invariant);
                const std::int64_t written = s.variant ? o_.total * a_.total : o_.total;
                // (written * esize can pass int64 for a domain that is refused later, at allocation)
                s.stream = written >= LAZYTENSOR_HOST_STREAM_MIN / static_cast<std::int64_t>(s.esize);
                p.stores.push_back(std::move(s));
            }
            if (ph.kind == ir::Phase::Kind::Reduce) {
                p.reduce_value = ph.reduce_value;
                p.reduce_dtype = value_dtype(p.instrs[static_cast<std::size_t>(ph.reduce_value)].dtype);
                p.reduce = reduce_fns(ph.reduce_op, p.reduce_dtype);
            }
            phases_.push_back(std::move(p));
        }
        ptr_count_ = ptrs;
        split_ = can_split();
        if (mode_ == Mode::VecReduce && !split_) plan_row_caches(k);
        for (PPhase& p : phases_) {
            fuse_index_compares(p);
            classify(p);
            fuse_exp_of_binary(p);
        }
        lay_out_arena();
        if (k.candidate && mode_ == Mode::VecOuter && k.candidate->match(k, binding_)) static_ = k.candidate;
    }

    void run(const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars, ThreadPool& pool) const {
        if (scalars.size() != n_scalars_)
            fail<Error>("lazytensor internal error: a kernel with ", n_scalars_, " scalar parameters launched with ",
                        scalars.size());
        SmallVector<char*, 8> base(n_params_);
        for (std::size_t i = 0; i < n_params_; ++i) base[i] = static_cast<char*>(params[i]->handle());
        if (o_.total == 0) return;
        // An empty reduced space leaves only the stores made once per outer index (a sum over an
        // empty axis is its identity); stores per element of the domain have no element to write.
        if (a_.total == 0 && std::none_of(phases_.begin(), phases_.end(), [](const PPhase& p) { return p.outer && !p.stores.empty(); }))
            return;
        const std::int64_t blocks = (o_.total + oblock_ - 1) / oblock_;
        const bool parallel = numel(domain_) * static_cast<std::int64_t>(phases_.size()) >= LAZYTENSOR_HOST_PARALLEL_MIN;
        const Launch launch{base.data(), scalars};
        if (split_ && parallel) return run_split(launch, pool);
        // Work items are runs of consecutive blocks: a few per thread balance the load without
        // contending for the item counter, and streaming stores are fenced once per run.
        const std::int64_t runs = parallel ? std::min<std::int64_t>(blocks, 8 * pool.size()) : 1;
        auto blocks_of = [&](Frame& f, std::int64_t run) {
            const std::int64_t last = blocks * (run + 1) / runs;
            for (std::int64_t b = blocks * run / runs; b < last; ++b) {
                const std::int64_t start = b * oblock_;
                f.set_oblock(start, std::min(oblock_, o_.total - start));
                if (static_)
                    run_static(f);
                else
                    for (std::size_t p = 0; p < phases_.size(); ++p) run_phase(p, f, 0, a_.total);
            }
            stream_fence();
        };
        if (runs == 1) {  // small launches: no frame on the heap
            Frame f(*this, launch);
            return blocks_of(f, 0);
        }
        std::vector<std::unique_ptr<Frame>> frames(static_cast<std::size_t>(pool.size()));
        pool.parallel_for(runs, [&](std::int64_t run, int thread) {
            auto& slot = frames[static_cast<std::size_t>(thread)];
            if (!slot) slot = std::make_unique<Frame>(*this, launch);
            blocks_of(*slot, run);
        });
    }

private:
    enum class Mode { VecOuter, VecReduce };

    /// What one launch runs on: buffer base addresses and scalar parameter values.
    struct Launch {
        char* const* base;
        const std::vector<Scalar>& scalars;
    };

    // Per-thread state of one launch: register pointers into the thread's arena.
    struct Frame {
        const HostKernel& k;
        char* const* base;
        const std::vector<Scalar>& scalars;
        char* arena;
        std::vector<void*> hoisted_ptr, inner_ptr;
        std::vector<void*> forward;  // per store of the current phase: destination written in place
        std::vector<Segment> osegs, asegs;
        SmallVector<std::int64_t, 6> oindex, aindex, zero_o, zero_a;
        std::int64_t olen = 0, ostart = 0;

        Frame(const HostKernel& kernel, const Launch& launch)
            : k(kernel), base(launch.base), scalars(launch.scalars), arena(thread_arena(kernel.arena_bytes_)),
              hoisted_ptr(kernel.static_ ? 0 : kernel.ptr_count_, nullptr),  // (the compiled loop has no registers)
              inner_ptr(kernel.static_ ? 0 : kernel.ptr_count_, nullptr) {
            zero_o.resize(k.o_.axes.size(), 0);
            zero_a.resize(k.a_.axes.size(), 0);
            oindex = zero_o;
            aindex = zero_a;
            if (k.static_) return;  // the compiled loop needs only the segments
            for (const PPhase& p : k.phases_)
                for (std::size_t i = 0; i < p.instrs.size(); ++i) {
                    const PInstr& in = p.instrs[i];
                    if (!in.live) continue;  // has no register
                    if (in.is_scalar()) {
                        alignas(8) unsigned char param[8];
                        if (in.op == ir::Op::Param) scalar_register_bytes(scalars[static_cast<std::size_t>(in.scalar)], in.dtype, param);
                        in.fill(arena + in.own, in.op == ir::Op::Param ? param : in.value, kBlock);
                        hoisted_ptr[p.ptr_base + i] = inner_ptr[p.ptr_base + i] = arena + in.own;
                    } else if (in.op == ir::Op::Slot) {
                        hoisted_ptr[p.ptr_base + i] = arena + k.phases_[static_cast<std::size_t>(in.slot)].slot;
                    }
                }
        }

        void set_oblock(std::int64_t start, std::int64_t len) {
            ostart = start;
            olen = len;
            cut_segments(k.o_, start, len, osegs);
        }
    };

    void choose_mode() {
        if (a_.axes.empty()) {
            mode_ = Mode::VecOuter;
        } else {
            mode_ = a_.axes.back() == static_cast<int>(domain_.size()) - 1 ? Mode::VecReduce : Mode::VecOuter;
            if (mode_ == Mode::VecOuter && o_.total < 256 && a_.total >= 4096) mode_ = Mode::VecReduce;
            if (mode_ == Mode::VecReduce && a_.total < 64 && o_.total >= 64) mode_ = Mode::VecOuter;
        }
        if (mode_ == Mode::VecOuter) {
            oblock_ = kBlock;
        } else {
            // Outer indices per block: their rows should stay in cache from one phase to the next.
            const std::int64_t row_bytes = std::max<std::int64_t>(1, a_.total) * 8;
            oblock_ = std::clamp<std::int64_t>((256 << 10) / row_bytes, 1, kBlock);
            const std::int64_t want_items = 4 * threads_;
            oblock_ = std::max<std::int64_t>(1, std::min(oblock_, (o_.total + want_items - 1) / want_items));
        }
    }

    AccessPlan split(const Access& a) const {
        AccessPlan p;
        p.offset = a.offset;
        for (int j : o_.axes) p.o_strides.push_back(a.strides[static_cast<std::size_t>(j)]);
        for (int j : a_.axes) {
            p.a_strides.push_back(a.strides[static_cast<std::size_t>(j)]);
            if (a.strides[static_cast<std::size_t>(j)] != 0) p.a_invariant = false;
        }
        return p;
    }

    PInstr prepare(const ir::Instr& in, const PPhase& phase) const {
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
                p.access = split(in.access);
                p.dyn_stride = in.dyn_stride;
                p.dyn_extent = in.dyn_extent;
                p.plain = in.plain_load();
                p.invariant = (phase.outer || p.access.a_invariant) && operand_invariant(in.b) && operand_invariant(in.c);
                break;
            case ir::Op::Index:
                p.access = split(in.access);
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

    // Values a later phase recomputes (the exp of softmax: summed in one phase, divided in the
    // next) are kept in a per-thread row cache instead, when the rows of a block fit. Found by
    // numbering the values of every phase; a cached value cuts the code below it in later phases.
    void plan_row_caches(const ir::Kernel& k) {
        std::map<std::vector<std::int64_t>, int> numbers;
        std::map<int, std::pair<std::size_t, int>> first_computed;  // value -> (phase, instr)
        std::vector<std::vector<int>> value(k.phases.size());
        for (std::size_t q = 0; q < k.phases.size(); ++q) {
            const ir::Phase& ph = k.phases[q];
            mark_live(phases_[q]);  // a dead instruction never runs: it cannot fill a cache
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
                PInstr& pi = phases_[q].instrs[i];
                const bool computed = in.op == ir::Op::Unary || in.op == ir::Op::Binary || in.op == ir::Op::Where || in.op == ir::Op::Cast;
                if (!computed || pi.invariant || phases_[q].outer) continue;
                auto first = first_computed.find(v);
                if (first == first_computed.end()) {
                    if (pi.live) first_computed.emplace(v, std::make_pair(q, static_cast<int>(i)));
                }
                else pi.cache_read = v;  // provisional: the value number
            }
            mark_live(phases_[q]);
        }
        // Give each value that a live reader needs one cache, written where it is first computed.
        const std::int64_t row_elems = oblock_ * std::max<std::int64_t>(a_.total, 1);
        std::map<int, int> cache_of;
        std::size_t bytes = 0;
        for (PPhase& p : phases_)
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
                    it = cache_of.emplace(in.cache_read, static_cast<int>(cache_bytes_.size())).first;
                    phases_[q].instrs[static_cast<std::size_t>(i)].cache_write = it->second;
                    cache_bytes_.push_back(need);
                }
                in.cache_read = it->second;
            }
        for (PPhase& p : phases_) mark_live(p);
    }

    // Marks what the phase's fold and stores need; values read from a row cache need nothing.
    static void mark_live(PPhase& p) {
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

    // Places registers, accumulators, slots and row caches in the per-thread arena.
    void lay_out_arena() {
        std::size_t arena = 0, registers = 0;
        auto reserve = [&](std::size_t bytes) {
            // Stagger registers by a few cache lines: blocks of 4 KiB multiples would otherwise
            // all map to the same L1 sets (and alias each other's loads and stores).
            const std::size_t at = arena;
            arena += (bytes + 63) / 64 * 64 + 64 * (1 + (registers++ % 13));
            return at;
        };
        for (PPhase& p : phases_) {
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
        for (std::size_t bytes : cache_bytes_) cache_at_.push_back(reserve(bytes));
        arena_bytes_ = arena;
    }

    // Splits instructions into hoisted and inner lists; marks values read across the split,
    // and values that a store may receive in place.
    void classify(PPhase& p) const {
        auto read_inner = [&](int i) {
            if (i >= 0 && p.instrs[static_cast<std::size_t>(i)].invariant) p.instrs[static_cast<std::size_t>(i)].broadcast = true;
        };
        if (mode_ != Mode::VecReduce || split_) mark_live(p);
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
        if (mode_ == Mode::VecReduce && p.kind == ir::Phase::Kind::Reduce && !p.outer && p.stores.empty() &&
            p.reduce.fold_batches && a_.axes.size() == 1 && p.inner.size() == 1 && p.inner[0] == p.reduce_value) {
            const PInstr& in = p.instrs[static_cast<std::size_t>(p.reduce_value)];
            if (in.op == ir::Op::Load && in.plain && in.dtype != DType::Float16 && in.cache_write < 0 &&
                in.access.a_strides.size() == 1 && in.access.a_strides[0] == 1)
                p.row_load = p.reduce_value;
        }
        for (std::size_t s = 0; s < p.stores.size(); ++s) {
            const PStore& st = p.stores[s];
            PInstr& v = p.instrs[static_cast<std::size_t>(st.value)];
            if (st.variant) read_inner(st.value);
            const bool computed = v.op == ir::Op::Unary || v.op == ir::Op::Binary || v.op == ir::Op::Where || v.op == ir::Op::Cast;
            // (A float16 output cannot receive the float register in place.)
            // (Nor an assign's output: its block may still be read after the value is computed.)
            if (computed && !st.stream && !st.half && !in_place_ && v.invariant != st.variant && v.forward_store < 0)
                v.forward_store = static_cast<int>(s);
        }
    }

    // index >= c, index < c (and > and <=), the bounds of a pad: true along one run of each
    // segment (an index is affine in the lane), so they are computed by runs and the index
    // itself is not computed where nothing else reads it.
    static void fuse_index_compares(PPhase& p) {
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
    void fuse_exp_of_binary(PPhase& p) const {
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
                return x.is_scalar() || (mode_ == Mode::VecReduce && !in.invariant && x.invariant);
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

    bool can_split() const {
        // One reduction over a long reduced space with few outputs, then per-output stores.
        if (mode_ != Mode::VecReduce || o_.total > kBlock || a_.total < 2 * kSplitChunk) return false;
        if ((o_.total + oblock_ - 1) / oblock_ >= 2 * threads_) return false;
        if (phases_.empty() || phases_[0].kind != ir::Phase::Kind::Reduce || phases_[0].outer) return false;
        if (!phases_[0].stores.empty()) return false;
        for (std::size_t p = 1; p < phases_.size(); ++p)
            if (!phases_[p].outer) return false;
        return true;
    }

    // --------------------------------------------------------------------------- evaluation

    /// Where an access's lanes lie in this block: the element of lane s.lane + t of segment s
    /// is fixed + dot(s.index, *vs) + t * step.
    struct LaneWalk {
        const Strides* vs;
        std::int64_t fixed, step;
    };
    static LaneWalk lane_walk(const AccessPlan& a, const BlockCtx& ctx) {
        const Strides& vs = ctx.lanes_outer ? a.o_strides : a.a_strides;
        const Strides& fs = ctx.lanes_outer ? a.a_strides : a.o_strides;
        return LaneWalk{&vs, a.offset + dot(*ctx.fixed, fs), vs.empty() ? 0 : vs[vs.size() - 1]};
    }

    /// Calls f(lane, inside, element) for every lane of a gathered or gated load: `inside` is
    /// false where the gate is off (nothing may be read there); a gather's position is clamped.
    template <class F>
    static void for_each_indexed_lane(const PInstr& in, const BlockCtx& ctx, const LaneWalk& w, void** reg, F&& f) {
        const auto* position = in.b >= 0 ? static_cast<const std::int64_t*>(reg[in.b]) : nullptr;
        const auto* inside = in.c >= 0 ? static_cast<const bool*>(reg[in.c]) : nullptr;
        for (const Segment& s : *ctx.segments) {
            const std::int64_t first = w.fixed + dot(s.index, *w.vs);
            for (std::int64_t t = 0; t < s.len; ++t) {
                const std::int64_t lane = s.lane + t;
                if (inside && !inside[lane]) {
                    f(lane, false, std::int64_t(0));
                    continue;
                }
                std::int64_t at = first + t * w.step;
                if (position) at += std::clamp<std::int64_t>(position[lane], 0, in.dyn_extent - 1) * in.dyn_stride;
                f(lane, true, at);
            }
        }
    }

    void load(const PInstr& in, const BlockCtx& ctx, char* const* base, void** reg, void*& ptr,
              char* own) const {
        const LaneWalk w = lane_walk(in.access, ctx);
        ptr = own;
        if (in.dtype == DType::Float16) return load_half(in, ctx, w, base, reg, own);
        const char* src = base[static_cast<std::size_t>(in.param)];
        const auto es = static_cast<std::int64_t>(in.esize);
        if (!in.plain && in.b < 0) return load_gated(in, ctx, w, reg, src, own, ptr);
        if (!in.plain) {
            for_each_indexed_lane(in, ctx, w, reg, [&](std::int64_t lane, bool inside, std::int64_t at) {
                if (inside) std::memcpy(own + lane * es, src + at * es, in.esize);
                else std::memset(own + lane * es, 0, in.esize);
            });
            return;
        }
        const auto& segs = *ctx.segments;
        if (segs.size() == 1 && w.step == 1) {  // contiguous: read in place
            ptr = const_cast<char*>(src) + (w.fixed + dot(segs[0].index, *w.vs)) * es;
            return;
        }
        for (const Segment& s : segs) {
            const char* from = src + (w.fixed + dot(s.index, *w.vs)) * es;
            char* to = own + s.lane * es;
            if (w.step == 1)
                std::memcpy(to, from, static_cast<std::size_t>(s.len) * in.esize);
            else if (w.step == 0)
                in.fill(to, from, s.len);
            else
                strided_copy(to, from, w.step, s.len, in.esize);
        }
    }

    /// A gated load (a pad's operand): the lanes inside the gate lie in runs (a pad's border is
    /// at the ends of a row), each copied as a plain load's segment would be; zeros elsewhere.
    static void load_gated(const PInstr& in, const BlockCtx& ctx, const LaneWalk& w, void** reg, const char* src,
                           char* own, void*& ptr) {
        const auto* inside = static_cast<const bool*>(reg[in.c]);
        const auto es = static_cast<std::int64_t>(in.esize);
        const auto& segs = *ctx.segments;
        if (segs.size() == 1 && w.step == 1 && std::find(inside + segs[0].lane, inside + segs[0].lane + segs[0].len, false) ==
                                                    inside + segs[0].lane + segs[0].len) {
            ptr = const_cast<char*>(src) + (w.fixed + dot(segs[0].index, *w.vs)) * es;  // all inside: read in place
            return;
        }
        for (const Segment& s : *ctx.segments) {
            const std::int64_t first = w.fixed + dot(s.index, *w.vs);
            const bool* gate = inside + s.lane;
            for (std::int64_t t = 0; t < s.len;) {
                const bool on = gate[t];
                const std::int64_t end = std::find(gate + t + 1, gate + s.len, !on) - gate;
                char* to = own + (s.lane + t) * es;
                const auto len = static_cast<std::size_t>(end - t);
                if (!on)
                    std::memset(to, 0, len * in.esize);
                else if (w.step == 1)
                    std::memcpy(to, src + (first + t) * es, len * in.esize);
                else if (w.step == 0)
                    in.fill(to, src + first * es, end - t);
                else
                    strided_copy(to, src + (first + t * w.step) * es, w.step, end - t, in.esize);
                t = end;
            }
        }
    }

    /// A float16 load widens every element into the float register (never read in place).
    void load_half(const PInstr& in, const BlockCtx& ctx, const LaneWalk& w, char* const* base, void** reg,
                   char* own) const {
        const auto* src = reinterpret_cast<const half*>(base[static_cast<std::size_t>(in.param)]);
        auto* out = reinterpret_cast<float*>(own);
        if (!in.plain) {
            for_each_indexed_lane(in, ctx, w, reg, [&](std::int64_t lane, bool inside, std::int64_t at) {
                out[lane] = inside ? float(src[at]) : 0.0f;
            });
            return;
        }
        for (const Segment& s : *ctx.segments) {
            const half* from = src + w.fixed + dot(s.index, *w.vs);
            if (w.step == 1) {
                half_to_float(from, out + s.lane, s.len);
                continue;
            }
            for (std::int64_t t = 0; t < s.len; ++t) out[s.lane + t] = from[t * w.step];
        }
    }

    /// The values of an Index instruction: offset + strides . index, for every lane.
    void index_values(const PInstr& in, const BlockCtx& ctx, char* own) const {
        const LaneWalk w = lane_walk(in.access, ctx);
        auto* out = reinterpret_cast<std::int64_t*>(own);
        using B = batch<std::int64_t>;
        constexpr std::int64_t W = B::size;
        alignas(64) std::int64_t ramp[W];
        for (std::int64_t t = 0; t < W; ++t) ramp[t] = t * w.step;
        const B steps = B::load_aligned(ramp), stride(W * w.step);
        for (const Segment& s : *ctx.segments) {
            const std::int64_t first = w.fixed + dot(s.index, *w.vs);
            std::int64_t t = 0;
            for (B v = steps + B(first); t + W <= s.len; t += W, v += stride) v.store_unaligned(out + s.lane + t);
            for (; t < s.len; ++t) out[s.lane + t] = first + t * w.step;
        }
    }

    void index_compare(const PInstr& in, const BlockCtx& ctx, bool* out) const {
        const LaneWalk w = lane_walk(in.access, ctx);
        auto holds = [&](std::int64_t index) {
            switch (in.binary_op) {
                case BinaryOp::Ge: return index >= in.bound;
                case BinaryOp::Gt: return index > in.bound;
                case BinaryOp::Lt: return index < in.bound;
                default: return index <= in.bound;
            }
        };
        for (const Segment& s : *ctx.segments) {
            const std::int64_t first = w.fixed + dot(s.index, *w.vs);
            bool* o = out + s.lane;
            if (s.len <= 0) continue;
            const bool at_start = holds(first);
            // The lanes where it holds are a prefix or a suffix (the index is monotone in the
            // lane): lanes [0, change) agree with lane 0, the rest do not.
            std::int64_t lo = 0, change = s.len;
            while (change - lo > 1) {
                const std::int64_t mid = lo + (change - lo) / 2;
                (holds(first + mid * w.step) == at_start ? lo : change) = mid;
            }
            std::memset(o, at_start, static_cast<std::size_t>(change));
            std::memset(o + change, !at_start, static_cast<std::size_t>(s.len - change));
        }
    }

    /// Where a store writes its segment-0 run, if the block is one contiguous run (else null).
    void* contiguous_target(const PStore& st, const BlockCtx& ctx, char* const* base) const {
        const LaneWalk w = lane_walk(st.access, ctx);
        const auto& segs = *ctx.segments;
        if (segs.size() != 1 || w.step != 1) return nullptr;
        const std::int64_t at = w.fixed + dot(segs[0].index, *w.vs);
        return base[static_cast<std::size_t>(st.param)] + at * static_cast<std::int64_t>(st.esize);
    }

    void store(const PStore& st, const BlockCtx& ctx, char* const* base, const void* value) const {
        const LaneWalk w = lane_walk(st.access, ctx);
        const Strides& vs = *w.vs;
        const std::int64_t fixed = w.fixed, step = w.step;
        if (st.half) return store_half(st, ctx, w, base, static_cast<const float*>(value));
        char* dst = base[static_cast<std::size_t>(st.param)];
        const auto es = static_cast<std::int64_t>(st.esize);
        for (const Segment& s : *ctx.segments) {
            char* to = dst + (fixed + dot(s.index, vs)) * es;
            const char* from = static_cast<const char*>(value) + s.lane * es;
            if (to == from) continue;  // computed in place
            if (step == 1 && st.stream)
                stream_copy(to, from, static_cast<std::size_t>(s.len) * st.esize);
            else if (step == 1)
                std::memcpy(to, from, static_cast<std::size_t>(s.len) * st.esize);
            else if (step == 0 && s.len > 0)
                std::memcpy(to, from + (s.len - 1) * es, st.esize);  // every lane writes one element: the last wins
            else
                strided_store(to, from, step, s.len, st.esize);
        }
    }

    /// A float16 store rounds the float register to half (nearest even).
    void store_half(const PStore& st, const BlockCtx& ctx, const LaneWalk& w, char* const* base,
                    const float* value) const {
        const std::int64_t step = w.step;
        auto* dst = reinterpret_cast<half*>(base[static_cast<std::size_t>(st.param)]);
        for (const Segment& s : *ctx.segments) {
            half* to = dst + w.fixed + dot(s.index, *w.vs);
            const float* from = value + s.lane;
            if (step == 1)
                float_to_half(from, to, s.len);
            else if (step == 0 && s.len > 0)
                to[0] = half(from[s.len - 1]);  // every lane writes one element: the last wins
            else
                for (std::int64_t t = 0; t < s.len; ++t) to[t * step] = half(from[t]);
        }
    }

    /// Evaluates the listed instructions of a phase over one block.
    void eval(const PPhase& p, const std::vector<int>& list, std::vector<void*>& ptr, Frame& f, const BlockCtx& ctx) const {
        void** reg = ptr.data() + p.ptr_base;
        for (int i : list) {
            const PInstr& in = p.instrs[static_cast<std::size_t>(i)];
            char* own = f.arena + in.own;
            void* out = own;
            if (in.cache_read >= 0) {
                reg[i] = row_cache(f, in.cache_read, in.esize, ctx);
                continue;
            }
            if (in.cache_write >= 0) out = row_cache(f, in.cache_write, in.esize, ctx);
            if (in.forward_store >= 0 && f.forward[static_cast<std::size_t>(in.forward_store)])
                out = f.forward[static_cast<std::size_t>(in.forward_store)];
            switch (in.op) {
                case ir::Op::Load: load(in, ctx, f.base, reg, reg[i], own); continue;
                case ir::Op::Index:
                    index_values(in, ctx, own);
                    reg[i] = own;
                    continue;
                case ir::Op::Const:
                case ir::Op::Param:
                case ir::Op::Slot: continue;
                case ir::Op::Unary:
                    if (in.exp_of) in.exp_of(out, reg[in.a], reg[in.b], in.uniform, ctx.n);
                    else in.unary(out, reg[in.a], ctx.n);
                    break;
                case ir::Op::Cast: in.unary(out, reg[in.a], ctx.n); break;
                case ir::Op::Binary:
                    if (in.index_compare) index_compare(in, ctx, static_cast<bool*>(out));
                    else in.binary(out, reg[in.a], reg[in.b], ctx.n);
                    break;
                case ir::Op::Where: in.where(out, reg[in.a], reg[in.b], reg[in.c], ctx.n); break;
            }
            reg[i] = out;
        }
    }

    char* row_cache(Frame& f, int cache, std::size_t esize, const BlockCtx& ctx) const {
        return f.arena + cache_at_[static_cast<std::size_t>(cache)] + ctx.cache_at * static_cast<std::int64_t>(esize);
    }

    void prepare_forwarding(const PPhase& p, Frame& f, const BlockCtx& ctx, bool variant) const {
        f.forward.assign(p.stores.size(), nullptr);
        for (std::size_t s = 0; s < p.stores.size(); ++s)
            if (p.stores[s].variant == variant) f.forward[s] = contiguous_target(p.stores[s], ctx, f.base);
    }

    void run_stores(const PPhase& p, Frame& f, const BlockCtx& ctx, bool variant, const std::vector<void*>& ptr) const {
        for (const PStore& st : p.stores)
            if (st.variant == variant) store(st, ctx, f.base, ptr[p.ptr_base + static_cast<std::size_t>(st.value)]);
    }

    // Runs phase p for the frame's block of outer indices, over reduced indices [a0, a1).
    // A split work item passes a chunk; it then leaves the per-lane result in the accumulator.
    void run_phase(std::size_t pi, Frame& f, std::int64_t a0, std::int64_t a1) const {
        const PPhase& p = phases_[pi];
        if (!p.outer && p.kind == ir::Phase::Kind::Reduce && a1 <= a0) {
            // An empty reduced axis: the identity, and no load (not even a hoisted one: an empty
            // input has no element 0).
            char* acc = f.arena + p.acc;
            p.reduce.init(acc, f.olen);
            std::memcpy(f.arena + p.slot, acc, static_cast<std::size_t>(f.olen) * dtype_size(p.reduce_dtype));
            return;
        }
        BlockCtx octx{f.olen, &f.osegs, true, &f.zero_a};
        prepare_forwarding(p, f, octx, false);
        eval(p, p.hoisted, f.hoisted_ptr, f, octx);
        run_stores(p, f, octx, false, f.hoisted_ptr);
        if (p.outer) {
            if (p.kind == ir::Phase::Kind::Reduce)  // nothing to reduce over: the value itself
                std::memcpy(f.arena + p.slot, f.hoisted_ptr[p.ptr_base + static_cast<std::size_t>(p.reduce_value)],
                            static_cast<std::size_t>(f.olen) * dtype_size(p.reduce_dtype));
            return;
        }
        const bool reduce = p.kind == ir::Phase::Kind::Reduce;
        const std::size_t rsize = dtype_size(p.reduce_dtype);
        char* acc = f.arena + p.acc;
        if (mode_ == Mode::VecOuter) {
            for (int i : p.hoisted) f.inner_ptr[p.ptr_base + static_cast<std::size_t>(i)] = f.hoisted_ptr[p.ptr_base + static_cast<std::size_t>(i)];
            if (reduce) p.reduce.init(acc, f.olen);
            unravel(a_, a0, f.aindex);
            BlockCtx ctx{f.olen, &f.osegs, true, &f.aindex};
            for (std::int64_t a = a0; a < a1; ++a) {
                prepare_forwarding(p, f, ctx, true);
                eval(p, p.inner, f.inner_ptr, f, ctx);
                if (reduce) p.reduce.fold(acc, f.inner_ptr[p.ptr_base + static_cast<std::size_t>(p.reduce_value)], f.olen);
                run_stores(p, f, ctx, true, f.inner_ptr);
                increment(a_, f.aindex);
            }
            if (reduce) std::memcpy(f.arena + p.slot, acc, static_cast<std::size_t>(f.olen) * rsize);
            return;
        }
        // VecReduce: one outer index at a time, lanes along the reduced space.
        for (std::int64_t l = 0; l < f.olen; ++l) {
            unravel(o_, f.ostart + l, f.oindex);
            for (int i : p.hoisted) {
                const PInstr& in = p.instrs[static_cast<std::size_t>(i)];
                void*& dst = f.inner_ptr[p.ptr_base + static_cast<std::size_t>(i)];
                if (!in.broadcast || in.is_scalar()) continue;
                const char* v = static_cast<const char*>(f.hoisted_ptr[p.ptr_base + static_cast<std::size_t>(i)]) +
                                l * static_cast<std::int64_t>(in.esize);
                dst = f.arena + in.shadow;
                in.fill(dst, v, in.read_as_one_value ? 1 : std::min(kBlock, a1 - a0));
            }
            if (p.row_load >= 0) {
                const PInstr& in = p.instrs[static_cast<std::size_t>(p.row_load)];
                const char* row = f.base[static_cast<std::size_t>(in.param)] +
                                  (in.access.offset + dot(f.oindex, in.access.o_strides) + a0) * static_cast<std::int64_t>(in.esize);
                p.reduce.init(acc, p.reduce.batch_lanes);
                // Block by block as below (the same rounding), but without the block machinery.
                for (std::int64_t start = 0; start < a1 - a0; start += kBlock)
                    p.reduce.fold_batches(acc, row + start * static_cast<std::int64_t>(in.esize), std::min(kBlock, a1 - a0 - start));
                p.reduce.horizontal(acc, p.reduce.batch_lanes, f.arena + p.slot + l * static_cast<std::int64_t>(rsize));
                continue;
            }
            // Into one SIMD batch where the dtype has them (a block folds to a batch first), else
            // into a block of lanes; then pairwise across the lanes.
            const bool batches = p.reduce.fold_batches != nullptr;
            if (reduce) p.reduce.init(acc, batches ? p.reduce.batch_lanes : kBlock);
            for (std::int64_t start = a0; start < a1; start += kBlock) {
                const std::int64_t n = std::min(kBlock, a1 - start);
                cut_segments(a_, start, n, f.asegs);
                BlockCtx ctx{n, &f.asegs, false, &f.oindex, l * a_.total + start};
                prepare_forwarding(p, f, ctx, true);
                eval(p, p.inner, f.inner_ptr, f, ctx);
                if (reduce)
                    (batches ? p.reduce.fold_batches : p.reduce.fold)(
                        acc, f.inner_ptr[p.ptr_base + static_cast<std::size_t>(p.reduce_value)], n);
                run_stores(p, f, ctx, true, f.inner_ptr);
            }
            if (reduce)
                p.reduce.horizontal(acc, batches ? p.reduce.batch_lanes : std::min(kBlock, std::max<std::int64_t>(a1 - a0, 0)),
                                    f.arena + p.slot + l * static_cast<std::int64_t>(rsize));
        }
    }

    // The expression's compiled loop, run of lanes by run of lanes.
    void run_static(Frame& f) const {
        const PPhase& p = phases_[0];
        const PStore& st = p.stores[0];
        SmallVector<LeafView, 16> leaves(binding_.leaf_loads.size());
        auto at = [&](int param, const AccessPlan& a, std::size_t esize, const Segment& seg) {
            return f.base[static_cast<std::size_t>(param)] + (a.offset + dot(seg.index, a.o_strides)) * static_cast<std::int64_t>(esize);
        };
        for (const Segment& seg : f.osegs) {
            for (std::size_t i = 0; i < leaves.size(); ++i) {
                const PInstr& in = p.instrs[static_cast<std::size_t>(binding_.leaf_loads[i])];
                leaves[i].ptr = at(in.param, in.access, in.esize, seg);
                leaves[i].step = in.access.o_strides.empty() ? 0 : in.access.o_strides.back();
            }
            const std::int64_t out_step = st.access.o_strides.empty() ? 0 : st.access.o_strides.back();
            static_->run(binding_, f.scalars.data(), leaves.data(), at(st.param, st.access, st.esize, seg), out_step, seg.len,
                         st.stream);
        }
    }

    // A reduction with few outputs: items are (outer block, chunk of the reduced space); the
    // chunk results are folded in chunk order, then the per-output phases run.
    void run_split(const Launch& launch, ThreadPool& pool) const {
        const PPhase& red = phases_[0];
        const std::size_t rsize = dtype_size(red.reduce_dtype);
        const std::int64_t oblocks = (o_.total + oblock_ - 1) / oblock_;
        const std::int64_t chunks = (a_.total + kSplitChunk - 1) / kSplitChunk;
        std::vector<char> partial(static_cast<std::size_t>(chunks * o_.total) * rsize);
        std::vector<std::unique_ptr<Frame>> frames(static_cast<std::size_t>(pool.size()));
        pool.parallel_for(oblocks * chunks, [&](std::int64_t item, int thread) {
            auto& slot = frames[static_cast<std::size_t>(thread)];
            if (!slot) slot = std::make_unique<Frame>(*this, launch);
            Frame& f = *slot;
            const std::int64_t ob = item / chunks, chunk = item % chunks;
            const std::int64_t start = ob * oblock_;
            f.set_oblock(start, std::min(oblock_, o_.total - start));
            const std::int64_t a0 = chunk * kSplitChunk;
            run_phase(0, f, a0, std::min(a_.total, a0 + kSplitChunk));
            std::memcpy(partial.data() + static_cast<std::size_t>(chunk * o_.total + start) * rsize, f.arena + red.slot,
                        static_cast<std::size_t>(f.olen) * rsize);
        });
        frames.clear();  // this thread's frame is rebuilt below; its arena is the same memory
        Frame f(*this, launch);
        for (std::int64_t ob = 0; ob < oblocks; ++ob) {
            const std::int64_t start = ob * oblock_;
            f.set_oblock(start, std::min(oblock_, o_.total - start));
            char* slot = f.arena + red.slot;
            std::memcpy(slot, partial.data() + static_cast<std::size_t>(start) * rsize, static_cast<std::size_t>(f.olen) * rsize);
            for (std::int64_t chunk = 1; chunk < chunks; ++chunk)
                red.reduce.fold(slot, partial.data() + static_cast<std::size_t>(chunk * o_.total + start) * rsize, f.olen);
            for (std::size_t p = 1; p < phases_.size(); ++p) run_phase(p, f, 0, a_.total);
        }
        stream_fence();
    }

    static void unravel(const Space& s, std::int64_t linear, SmallVector<std::int64_t, 6>& index) {
        for (std::size_t k = s.extents.size(); k-- > 0;) {
            index[k] = s.extents[k] ? linear % s.extents[k] : 0;
            linear = s.extents[k] ? linear / s.extents[k] : 0;
        }
    }

    static void increment(const Space& s, SmallVector<std::int64_t, 6>& index) {
        for (std::size_t k = s.extents.size(); k-- > 0;) {
            if (++index[k] < s.extents[k]) return;
            index[k] = 0;
        }
    }

    Shape domain_;
    std::size_t n_params_, n_scalars_;
    int threads_;
    bool in_place_;
    Space o_, a_;
    Mode mode_ = Mode::VecOuter;
    std::int64_t oblock_ = kBlock;
    std::vector<PPhase> phases_;
    std::size_t arena_bytes_ = 0;
    std::size_t ptr_count_ = 0;
    bool split_ = false;
    const StaticKernel* static_ = nullptr;  // the expression's compiled loop, when it matches
    StaticBinding binding_;
    std::vector<std::size_t> cache_bytes_, cache_at_;  // row caches: size and arena offset
};

}  // namespace lazytensor::detail::host
