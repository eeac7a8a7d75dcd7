// SPDX-License-Identifier: MIT
// Running attention (ir/attention.hpp) as one kernel on an OpenCL device (attention_kernel.hpp):
// whether it can, with which block shape, and its launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "../../core/device.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/attention.hpp"
#include "../backend.hpp"
#include "attention_kernel.hpp"
#include "cl_api.hpp"
#include "gemm_epilogue.hpp"
#include "launch.hpp"
#include "programs.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

class AttentionRoutines {
public:
    explicit AttentionRoutines(RoutineContext context) : c_(context) {}

    /// Backend::fuses_attention.
    bool fuses(const ir::Attention& a) const {
        return fuse_ && params(a).has_value() && c_.device.computes(a.score_function);
    }
    /// Whether attention runs as one kernel from now on (LAZYTENSOR_FUSE_ATTENTION=0 turns it
    /// off from the start).
    void set_fuse(bool on) {
        fuse_ = on;
        ++gemm_config_generation();
    }
    /// The kernel's block and work-group shape from now on (nullopt: the device's choice); where
    /// it cannot run a product's depths, attention is not fused.
    void set_params(std::optional<AttentionParams> params) {
        if (params) check_attention_params(*params, c_.device.traits().max_work_group);
        params_override_ = params;
        ++gemm_config_generation();
    }

    /// Backend::attention_routine.
    std::string routine(const ir::Attention& a) const {
        const std::optional<AttentionParams> p = params(a);
        if (!p) return "attention kernel";
        return concat("lazytensor attention kernel ", p->bm, "x", p->bn, "; scores and weights never stored");
    }
    /// Backend::attention_source.
    std::string source(const ir::Attention& a) const {
        const std::optional<AttentionParams> p = params(a);
        if (!p) return {};
        return source(a, *p, attention_layout(a));
    }

    /// Backend::attention.
    void run(const ir::Attention& a, const Buffer& q, const Buffer& kt, const Buffer& v, Buffer& out,
             const std::vector<Scalar>& scalars) {
        const std::optional<AttentionParams> p = params(a);
        if (!p)
            fail<BackendError>("lazytensor internal error: attention of depth ", a.depth(), " and ", a.value_depth(),
                               " cannot run on ", c_.device.describe());
        const ir::Gemm& g = a.scores;
        const std::int64_t count = g.batch_count();
        if (count == 0 || g.m == 0) return;
        const AttentionLayout layout = attention_layout(a);
        cl_kernel kernel = kernel_for(a, *p, layout);
        auto batch_stride = [](const ir::MatrixLayout& l) { return static_cast<cl_long>(l.batch_strides.empty() ? 0 : l.batch_strides[0]); };
        KernelArgs args(kernel, out, q, kt, v, static_cast<cl_int>(g.m), static_cast<cl_int>(g.n), FirstMatrix{});
        for (const ir::MatrixLayout* l : {&g.a, &g.b, &a.values.b})
            args.add(static_cast<cl_long>(l->offset), batch_stride(*l), static_cast<cl_long>(l->row_stride),
                     static_cast<cl_long>(l->col_stride));
        for (std::size_t i = 0; i < a.score_function.scalars.size(); ++i)
            args.add(ScalarArg(scalars.at(i), a.score_function.scalars[i]));
        const std::size_t local[3] = {std::size_t(p->tx), std::size_t(p->ty), 1};
        c_.launcher.run_per_matrix(args, attention_kernel_name(), count,
                                   static_cast<std::size_t>((g.m + p->bm - 1) / p->bm) * local[0], local);
    }

    /// Backend::prepare_attention: builds the kernel run() would use for `a` (lt::warmup).
    void prepare(const ir::Attention& a) {
        const std::optional<AttentionParams> p = params(a);
        if (!p || a.scores.batch_count() == 0 || a.scores.m == 0) return;
        kernel_for(a, *p, attention_layout(a));
    }

    /// Forgets the attention kernels built (with the kernel cache).
    void clear_cache() { kernels_.clear(); }

private:
    /// The kernel for `a` with these parameters and layout, built the first time.
    cl_kernel kernel_for(const ir::Attention& a, const AttentionParams& p, const AttentionLayout& layout) {
        const std::string key = concat(ir::key(a.score_function), '|', a.depth(), ',', a.value_depth(), ',', p.bm, ',', p.bn,
                                       ',', p.ty, ',', layout.q_vec, layout.k_vec, layout.v_vec);
        return kernels_.get(
            key, [&] { return source(a, p, layout); }, attention_kernel_name(), c_.programs, c_.backend.cache_capacity(), 0,
            concat("attention kernel ", p.bm, "x", p.bn, ", depths ", a.depth(), " and ", a.value_depth()));
    }

    std::string source(const ir::Attention& a, const AttentionParams& p, const AttentionLayout& layout) const {
        return attention_kernel_source(a.depth(), a.value_depth(), p, layout,
                                       prologue_code(a.score_function, "s", c_.device.traits()));
    }

    /// The parameters attention `a` runs with here, if it can run as one kernel: float32 with
    /// int sizes (a batch of one axis at most; normalization merges the others where it can).
    std::optional<AttentionParams> params(const ir::Attention& a) const {
        const ir::Gemm& g = a.scores;
        if (g.batch.size() > 1 || g.m > INT32_MAX || g.n > INT32_MAX) return std::nullopt;
        if (params_override_)  // (local memory unchecked: NVIDIA allows more than it reports)
            return a.depth() <= 256 && a.value_depth() <= 256 ? params_override_ : std::nullopt;
        const DeviceTraits& traits = c_.device.traits();
        return attention_params_for(a.depth(), a.value_depth(), g.batch_count() * ((g.m + 255) / 256), traits,
                                    c_.device.nvidia_cc());
    }

    RoutineContext c_;
    bool fuse_ = env_flag("LAZYTENSOR_FUSE_ATTENTION", true);
    std::optional<AttentionParams> params_override_;
    KernelsByKey kernels_;  // by score function, depths, parameters and layout
};

}  // namespace lazytensor::detail::opencl
