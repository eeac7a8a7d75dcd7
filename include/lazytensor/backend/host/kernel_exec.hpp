// SPDX-License-Identifier: MIT
// Runs a host kernel's plan (kernel_plan.hpp) on buffers and scalars: blocks of lanes over the
// thread pool, each instruction evaluated for a whole block at once with the SIMD routines of
// simd/simd_ops.hpp (a vectorized interpreter, like numexpr), so dispatch costs once per block and
// the inner loops are SIMD loops over cache-resident registers. Contiguous loads read the input
// buffer in place, and the last operation before a contiguous store writes straight into the
// output.
//
// Work is split across the thread pool by blocks of outer indices; a split plan also splits
// its reduction along the reduced space, in chunks of a fixed size so that results do not
// depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../core/half.hpp"
#include "../../core/shape.hpp"
#include "../../core/small_vector.hpp"
#include "../../ir/kernel.hpp"
#include "../../ir/static_kernel.hpp"
#include "../backend.hpp"
#include "kernel_plan.hpp"
#include "../../simd/simd_ops.hpp"
#include "thread_pool.hpp"

namespace lazytensor::detail::host {

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
        case 2: gather<std::uint16_t>(dst, src, stride, len); break;
        case 4: gather<std::uint32_t>(dst, src, stride, len); break;
        default: gather<std::uint64_t>(dst, src, stride, len); break;
    }
}

inline void strided_store(char* dst, const void* src, std::int64_t stride, std::int64_t len, std::size_t esize) {
    switch (esize) {
        case 1: scatter<std::uint8_t>(dst, src, stride, len); break;
        case 2: scatter<std::uint16_t>(dst, src, stride, len); break;
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

/// Runs a kernel's plan. The steps are member functions, not free ones, on purpose: GCC turns
/// the steps that read nothing of the plan into local copies without `this` (IPA-SRA) and
/// inlines them into eval, their one caller. As free functions, load stayed a call per block at
/// -O2 and -O3 (and load_reduced and index_compare at -O2).
class KernelRunner {
public:
    explicit KernelRunner(HostKernelPlan plan) : plan_(std::move(plan)) {}

    /// Runs the kernel once on these buffers and scalar parameters.
    void run(const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars, ThreadPool& pool) const {
        if (scalars.size() != plan_.n_scalars)
            fail<Error>("lazytensor internal error: a kernel with ", plan_.n_scalars, " scalar parameters launched with ",
                        scalars.size());
        SmallVector<char*, 8> base(plan_.n_params);
        for (std::size_t i = 0; i < plan_.n_params; ++i) base[i] = static_cast<char*>(params[i]->handle());
        if (plan_.o.total == 0) return;
        // An empty reduced space leaves only the stores made once per outer index (a sum over an
        // empty axis is its identity); stores per element of the domain have no element to write.
        if (plan_.a.total == 0 &&
            std::none_of(plan_.phases.begin(), plan_.phases.end(), [](const PPhase& p) { return p.outer && !p.stores.empty(); }))
            return;
        const std::int64_t blocks = (plan_.o.total + plan_.oblock - 1) / plan_.oblock;
        const bool parallel = numel(plan_.domain) * static_cast<std::int64_t>(plan_.phases.size()) >= LAZYTENSOR_HOST_PARALLEL_MIN;
        const Launch launch{base.data(), scalars};
        if (plan_.split && parallel) return run_split(launch, pool);
        // Work items are runs of consecutive blocks: a few per thread balance the load without
        // contending for the item counter, and streaming stores are fenced once per run.
        const std::int64_t runs = parallel ? std::min<std::int64_t>(blocks, 8 * pool.size()) : 1;
        auto blocks_of = [&](Frame& f, std::int64_t run) {
            const std::int64_t last = blocks * (run + 1) / runs;
            for (std::int64_t b = blocks * run / runs; b < last; ++b) {
                const std::int64_t start = b * plan_.oblock;
                f.set_oblock(start, std::min(plan_.oblock, plan_.o.total - start));
                if (plan_.static_loop)
                    run_static(f);
                else
                    for (std::size_t p = 0; p < plan_.phases.size(); ++p) run_phase(p, f, 0, plan_.a.total);
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
    /// What one launch runs on: buffer base addresses and scalar parameter values.
    struct Launch {
        char* const* base;
        const std::vector<Scalar>& scalars;
    };

    // Per-thread state of one launch: register pointers into the thread's arena.
    struct Frame {
        const KernelRunner& k;
        char* const* base;
        const std::vector<Scalar>& scalars;
        char* arena;
        std::vector<void*> hoisted_ptr, inner_ptr;
        std::vector<void*> forward;  // per store of the current phase: destination written in place
        std::vector<Segment> osegs, asegs;
        SmallVector<std::int64_t, 6> oindex, aindex, zero_o, zero_a;
        std::int64_t olen = 0, ostart = 0;

        Frame(const KernelRunner& kernel, const Launch& launch)
            : k(kernel), base(launch.base), scalars(launch.scalars), arena(thread_arena(kernel.plan_.arena_bytes)),
              hoisted_ptr(kernel.plan_.static_loop ? 0 : kernel.plan_.ptr_count, nullptr),  // (the compiled loop has no registers)
              inner_ptr(kernel.plan_.static_loop ? 0 : kernel.plan_.ptr_count, nullptr) {
            zero_o.resize(k.plan_.o.axes.size(), 0);
            zero_a.resize(k.plan_.a.axes.size(), 0);
            oindex = zero_o;
            aindex = zero_a;
            if (k.plan_.static_loop) return;  // the compiled loop needs only the segments
            for (const PPhase& p : k.plan_.phases)
                for (std::size_t i = 0; i < p.instrs.size(); ++i) {
                    const PInstr& in = p.instrs[i];
                    if (!in.live) continue;  // has no register
                    if (in.is_scalar()) {
                        alignas(8) unsigned char param[8];
                        if (in.op == ir::Op::Param) scalar_register_bytes(scalars[static_cast<std::size_t>(in.scalar)], in.dtype, param);
                        in.fill(arena + in.own, in.op == ir::Op::Param ? param : in.value, kBlock);
                        hoisted_ptr[p.ptr_base + i] = inner_ptr[p.ptr_base + i] = arena + in.own;
                    } else if (in.op == ir::Op::Slot) {
                        hoisted_ptr[p.ptr_base + i] = arena + k.plan_.phases[static_cast<std::size_t>(in.slot)].slot;
                    }
                }
        }

        void set_oblock(std::int64_t start, std::int64_t len) {
            ostart = start;
            olen = len;
            cut_segments(k.plan_.o, start, len, osegs);
        }
    };

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
        if (in.dtype == DType::Float16) return load_reduced<half>(in, ctx, w, base, reg, own);
        if (in.dtype == DType::BFloat16) return load_reduced<bfloat16>(in, ctx, w, base, reg, own);
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

    /// A float16 or bfloat16 (S) load widens every element into the float register (never read
    /// in place).
    template <class S>
    void load_reduced(const PInstr& in, const BlockCtx& ctx, const LaneWalk& w, char* const* base, void** reg,
                      char* own) const {
        const auto* src = reinterpret_cast<const S*>(base[static_cast<std::size_t>(in.param)]);
        auto* out = reinterpret_cast<float*>(own);
        if (!in.plain) {
            for_each_indexed_lane(in, ctx, w, reg, [&](std::int64_t lane, bool inside, std::int64_t at) {
                out[lane] = inside ? float(src[at]) : 0.0f;
            });
            return;
        }
        for (const Segment& s : *ctx.segments) {
            const S* from = src + w.fixed + dot(s.index, *w.vs);
            if (w.step == 1) {
                if constexpr (std::is_same_v<S, half>)
                    half_to_float(from, out + s.lane, s.len);
                else
                    bfloat16_to_float(from, out + s.lane, s.len);
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
        if (st.dtype == DType::Float16) return store_reduced<half>(st, ctx, w, base, static_cast<const float*>(value));
        if (st.dtype == DType::BFloat16) return store_reduced<bfloat16>(st, ctx, w, base, static_cast<const float*>(value));
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

    /// A float16 or bfloat16 (S) store rounds the float register to S (nearest even).
    template <class S>
    void store_reduced(const PStore& st, const BlockCtx& ctx, const LaneWalk& w, char* const* base,
                       const float* value) const {
        const std::int64_t step = w.step;
        auto* dst = reinterpret_cast<S*>(base[static_cast<std::size_t>(st.param)]);
        for (const Segment& s : *ctx.segments) {
            S* to = dst + w.fixed + dot(s.index, *w.vs);
            const float* from = value + s.lane;
            if (step == 1) {
                if constexpr (std::is_same_v<S, half>)
                    float_to_half(from, to, s.len);
                else
                    float_to_bfloat16(from, to, s.len);
            } else if (step == 0 && s.len > 0) {
                to[0] = S(from[s.len - 1]);  // every lane writes one element: the last wins
            } else {
                for (std::int64_t t = 0; t < s.len; ++t) to[t * step] = S(from[t]);
            }
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
        return f.arena + plan_.cache_at[static_cast<std::size_t>(cache)] + ctx.cache_at * static_cast<std::int64_t>(esize);
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
        const PPhase& p = plan_.phases[pi];
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
        if (plan_.mode == LaneMode::VecOuter) {
            for (int i : p.hoisted) f.inner_ptr[p.ptr_base + static_cast<std::size_t>(i)] = f.hoisted_ptr[p.ptr_base + static_cast<std::size_t>(i)];
            if (reduce) p.reduce.init(acc, f.olen);
            unravel(plan_.a, a0, f.aindex);
            BlockCtx ctx{f.olen, &f.osegs, true, &f.aindex};
            for (std::int64_t a = a0; a < a1; ++a) {
                prepare_forwarding(p, f, ctx, true);
                eval(p, p.inner, f.inner_ptr, f, ctx);
                if (reduce) p.reduce.fold(acc, f.inner_ptr[p.ptr_base + static_cast<std::size_t>(p.reduce_value)], f.olen);
                run_stores(p, f, ctx, true, f.inner_ptr);
                increment(plan_.a, f.aindex);
            }
            if (reduce) std::memcpy(f.arena + p.slot, acc, static_cast<std::size_t>(f.olen) * rsize);
            return;
        }
        // VecReduce: one outer index at a time, lanes along the reduced space.
        for (std::int64_t l = 0; l < f.olen; ++l) {
            unravel(plan_.o, f.ostart + l, f.oindex);
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
                cut_segments(plan_.a, start, n, f.asegs);
                BlockCtx ctx{n, &f.asegs, false, &f.oindex, l * plan_.a.total + start};
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
        const PPhase& p = plan_.phases[0];
        const PStore& st = p.stores[0];
        SmallVector<LeafView, 16> leaves(plan_.binding.leaf_loads.size());
        auto at = [&](int param, const AccessPlan& a, std::size_t esize, const Segment& seg) {
            return f.base[static_cast<std::size_t>(param)] + (a.offset + dot(seg.index, a.o_strides)) * static_cast<std::int64_t>(esize);
        };
        for (const Segment& seg : f.osegs) {
            for (std::size_t i = 0; i < leaves.size(); ++i) {
                const PInstr& in = p.instrs[static_cast<std::size_t>(plan_.binding.leaf_loads[i])];
                leaves[i].ptr = at(in.param, in.access, in.esize, seg);
                leaves[i].step = in.access.o_strides.empty() ? 0 : in.access.o_strides.back();
            }
            const std::int64_t out_step = st.access.o_strides.empty() ? 0 : st.access.o_strides.back();
            plan_.static_loop->run(plan_.binding, f.scalars.data(), leaves.data(), at(st.param, st.access, st.esize, seg), out_step, seg.len,
                         st.stream);
        }
    }

    // A reduction with few outputs: items are (outer block, chunk of the reduced space); the
    // chunk results are folded in chunk order, then the per-output phases run.
    void run_split(const Launch& launch, ThreadPool& pool) const {
        const PPhase& red = plan_.phases[0];
        const std::size_t rsize = dtype_size(red.reduce_dtype);
        const std::int64_t oblocks = (plan_.o.total + plan_.oblock - 1) / plan_.oblock;
        const std::int64_t chunks = (plan_.a.total + kSplitChunk - 1) / kSplitChunk;
        std::vector<char> partial(static_cast<std::size_t>(chunks * plan_.o.total) * rsize);
        std::vector<std::unique_ptr<Frame>> frames(static_cast<std::size_t>(pool.size()));
        pool.parallel_for(oblocks * chunks, [&](std::int64_t item, int thread) {
            auto& slot = frames[static_cast<std::size_t>(thread)];
            if (!slot) slot = std::make_unique<Frame>(*this, launch);
            Frame& f = *slot;
            const std::int64_t ob = item / chunks, chunk = item % chunks;
            const std::int64_t start = ob * plan_.oblock;
            f.set_oblock(start, std::min(plan_.oblock, plan_.o.total - start));
            const std::int64_t a0 = chunk * kSplitChunk;
            run_phase(0, f, a0, std::min(plan_.a.total, a0 + kSplitChunk));
            std::memcpy(partial.data() + static_cast<std::size_t>(chunk * plan_.o.total + start) * rsize, f.arena + red.slot,
                        static_cast<std::size_t>(f.olen) * rsize);
        });
        frames.clear();  // this thread's frame is rebuilt below; its arena is the same memory
        Frame f(*this, launch);
        for (std::int64_t ob = 0; ob < oblocks; ++ob) {
            const std::int64_t start = ob * plan_.oblock;
            f.set_oblock(start, std::min(plan_.oblock, plan_.o.total - start));
            char* slot = f.arena + red.slot;
            std::memcpy(slot, partial.data() + static_cast<std::size_t>(start) * rsize, static_cast<std::size_t>(f.olen) * rsize);
            for (std::int64_t chunk = 1; chunk < chunks; ++chunk)
                red.reduce.fold(slot, partial.data() + static_cast<std::size_t>(chunk * plan_.o.total + start) * rsize, f.olen);
            for (std::size_t p = 1; p < plan_.phases.size(); ++p) run_phase(p, f, 0, plan_.a.total);
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

    HostKernelPlan plan_;
};

}  // namespace lazytensor::detail::host
