// SPDX-License-Identifier: MIT
// Running matrix products on an OpenCL device: which GEMM runs a product (lazytensor's own
// kernel, gemm_kernel.hpp, or CLBlast, clblast_gemm.hpp: LAZYTENSOR_OPENCL_GEMM and the shape
// choose), which products run as reductions instead, and the drivers of both GEMMs. On the own
// kernel, a product's element-wise consumer runs in its stores and a simple producer of an
// operand in its loads (gemm_epilogue.hpp).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/device.hpp"
#include "../../core/error.hpp"
#include "../../ir/gemm.hpp"
#include "../../ir/kernel.hpp"
#include "../backend.hpp"
#include "../compile_log.hpp"
#include "cl_api.hpp"
#include "clblast_gemm.hpp"
#include "clblast_tuning.hpp"
#include "fused_code.hpp"
#include "gemm_kernel.hpp"
#include "launch.hpp"
#include "programs.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

class GemmRoutines {
public:
    explicit GemmRoutines(RoutineContext context) : c_(context) {
#if LAZYTENSOR_CLBLAST
        clblast_tuned_ = apply_clblast_tuning(c_.device.id(), c_.device.name());
#endif
        set_choice(gemm_choice_from_env());
    }

    /// Backend::gemm.
    void run(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c) {
        require_fp64(g);
        if (uses_own(g)) return own(g, a, b, c);
#if LAZYTENSOR_CLBLAST
        run_clblast(g, a, b, c);
#else
        (void)a, (void)b, (void)c;
#endif
    }

#if LAZYTENSOR_CLBLAST
    /// c = a x b through CLBlast (its first call per routine and precision reported as the
    /// library's build).
    void run_clblast(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c) {
        using ms_t = std::chrono::duration<double, std::milli>;
        ir::Gemm spec = g;
        BufferPtr a_copy = blas_readable_copy(spec, a, spec.a, spec.m, spec.k);
        BufferPtr b_copy = blas_readable_copy(spec, b, spec.b, spec.k, spec.n);
        cl_mem ma = static_cast<cl_mem>((a_copy ? a_copy.get() : &a)->handle());
        cl_mem mb = static_cast<cl_mem>((b_copy ? b_copy.get() : &b)->handle());
        cl_mem mc = static_cast<cl_mem>(c.handle());
        const bool timed = c_.launcher.record_times();
        if (timed) c_.backend.synchronize();  // time the whole product: CLBlast may run several kernels
        const auto start = std::chrono::steady_clock::now();
        // CLBlast builds its programs inside its first call per routine and precision (enqueueing
        // takes microseconds after): that call is timed and reported as the library's build.
        const std::string called = concat("CLBlast ", spec.dtype == DType::Float64 ? "d" : "s", clblast_routine(spec));
        std::optional<BuildReport> first;
        if (clblast_called_.insert(called).second) first.emplace(c_.device.device(), CompileEvent::Kind::Library, called);
        const clblast::StatusCode status = spec.dtype == DType::Float64
                                               ? clblast_gemm<double>(spec, ma, mb, mc, c_.device.queue(), nullptr)
                                               : clblast_gemm<float>(spec, ma, mb, mc, c_.device.queue(), nullptr);
        if (status != clblast::StatusCode::kSuccess) {
            const std::string error =
                concat("OpenCL: CLBlast ", routine(spec), " failed on ", c_.device.describe(), ": ", clblast_status_name(status),
                       " (", static_cast<int>(status), ") for ", spec.dtype, " batch ", spec.batch, ", m ", spec.m, ", n ",
                       spec.n, ", k ", spec.k, lost_device_hint(static_cast<cl_int>(status)));  // CLBlast reuses OpenCL's codes
            if (first) {
                c_.backend.add_build_time(CompileEvent::Kind::Library, first->failed(error));
                clblast_called_.erase(called);  // (its build is tried again by the next call)
            }
            fail<BackendError>(error);
        }
        if (first) c_.backend.add_build_time(CompileEvent::Kind::Library, first->finished(CompileEvent::Source::Compiler));
        if (timed) {
            c_.backend.synchronize();
            c_.launcher.record_time(ms_t(std::chrono::steady_clock::now() - start).count());
        }
    }

    /// Has CLBlast build the program a product `g` would run, by a product of the same routine
    /// and precision on 1 x 1 matrices of scratch buffers: CLBlast builds one program per
    /// routine, precision and device (all of the routine's kernels: direct and indirect,
    /// every transpose), whatever the sizes, and keeps it for the process.
    void prepare_clblast(const ir::Gemm& g) {
        if (clblast_called_.count(concat("CLBlast ", g.dtype == DType::Float64 ? "d" : "s", clblast_routine(g)))) return;
        ir::Gemm tiny;
        tiny.dtype = g.dtype;
        tiny.m = tiny.n = tiny.k = 1;
        tiny.a.row_stride = tiny.a.col_stride = tiny.b.row_stride = tiny.b.col_stride = 1;
        const std::string routine = clblast_routine(g);
        if (routine != "Gemm") {  // a batch of two: along one axis (strided), or along two (batched)
            tiny.batch = routine == "GemmStridedBatched" ? Shape{2} : Shape{2, 1};
            tiny.a.batch_strides = tiny.b.batch_strides = routine == "GemmStridedBatched" ? Strides{1} : Strides{1, 1};
        }
        BufferPtr a = c_.backend.allocate(g.dtype, 2), b = c_.backend.allocate(g.dtype, 2), c = c_.backend.allocate(g.dtype, 2);
        run_clblast(tiny, *a, *b, *c);
    }
#endif

    /// Backend::gemm_fused: on the own kernel, with the fused kernels' code and arguments.
    void run_fused(const ir::Gemm& g, const FusedKernels& fusion, const Buffer& a, const Buffer& b,
                   const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) {
        require_fp64(g);
        const FusedCode code = code_of(g, fusion);
        own(g, a, b, *params.back(), *code.epilogue, fused_args(fusion, 2, params, scalars), *code.prologue[0],
            *code.prologue[1]);
    }

    /// The own kernel's source for `g` with these kernels fused into it.
    std::string fused_source(const ir::Gemm& g, const FusedKernels& fusion) {
        const FusedCode code = code_of(g, fusion);
        const GemmKernelParams p = params(g);
        return gemm_kernel_source(g.dtype, layout(g, p), p, *code.epilogue, *code.prologue[0], *code.prologue[1]);
    }

    /// Whether kernel `k` can run fused into `g`: on the own GEMM kernel, computing in float64
    /// only where the device has it.
    bool can_fuse(const ir::Gemm& g, const ir::Kernel& k) const {
        return uses_own(g) && c_.device.computes(g.dtype) && c_.device.computes(k);
    }
    bool can_fuse_prologue(const ir::Gemm& g, const ir::Kernel& prologue) const {
        if (prologue.params[0].dtype == DType::Float16 && !fuse_half_loads_.value_or(!c_.device.traits().gpu)) return false;
        return can_fuse(g, prologue);
    }

    /// Backend::gemm_routine.
    std::string routine(const ir::Gemm& g) const {
#if LAZYTENSOR_CLBLAST
        if (!uses_own(g))
            return std::string("CLBlast ") + clblast_routine(g) +
                   (clblast_tuned_.empty() || g.dtype != DType::Float32 ? "" : ", tuned " + clblast_tuned_);
#endif
        const GemmKernelParams p = params(g);
        const bool capped = p.max_registers && c_.device.nvidia();
        return concat("lazytensor GEMM kernel ", p.block_m(), "x", p.block_n(), "x", p.bk, " (", p.wm, "x", p.wn,
                      " per work-item", capped ? concat(", at most ", p.max_registers, " registers") : "",
                      layout(g, p).whole_tiles ? ", whole tiles" : "", ")");
    }

    /// Which GEMM runs matrix products (LAZYTENSOR_OPENCL_GEMM; Auto: per shape and device).
    GemmChoice choice() const { return choice_; }
    /// Chooses the GEMM for the products run from now on (CLBlast in a build without it is a
    /// DeviceError).
    void set_choice(GemmChoice choice) {
        if (choice == GemmChoice::CLBlast && !LAZYTENSOR_CLBLAST)
            fail<DeviceError>("CLBlast cannot run matrix products on ", c_.device.describe(),
                              ": this build has LAZYTENSOR_CLBLAST off");
        choice_ = choice;
        ++gemm_config_generation();
    }
    /// The parameters of the own GEMM kernel from now on (nullopt: the device's set).
    void set_params(std::optional<GemmKernelParams> params) {
        if (params) {
            check_gemm_params(*params);
            if (std::size_t(params->threads()) > c_.device.traits().max_work_group)
                fail<ValueError>("OpenCL GEMM kernel parameters tm ", params->tm, ", tn ", params->tn, ": work-groups of ",
                                 params->threads(), " work-items, but ", c_.device.describe(), " allows ",
                                 c_.device.traits().max_work_group);
        }
        params_override_ = params;
    }
    /// The own GEMM kernel computes element offsets in 64 bits whatever the sizes (as it does
    /// for matrices of 2^31 elements or more).
    void set_wide_index(bool on) { wide_index_ = on; }
    /// Whether a cast from float16 runs in the product's loads (null: the default, not on GPUs).
    void set_fuse_half_loads(std::optional<bool> on) {
        fuse_half_loads_ = on;
        ++gemm_config_generation();
    }

    /// The parameters the own GEMM kernel runs `g` with on this device.
    GemmKernelParams params(const ir::Gemm& g) const {
        if (params_override_) return *params_override_;
        const DeviceTraits& traits = c_.device.traits();
        return gemm_params_for(g, traits.gpu, c_.device.name(), traits.max_work_group, traits.local_memory);
    }
    /// The layout class the own GEMM kernel runs `g` with (parameter set `p`).
    GemmLayoutClass layout(const ir::Gemm& g, const GemmKernelParams& p) const {
        GemmLayoutClass layout = gemm_layout_class(g);
        layout.wide_index = layout.wide_index || wide_index_;
        layout.whole_tiles = gemm_whole_tiles(g, layout, p);
        return layout;
    }
    /// Whether `g` runs on the own GEMM kernel (else CLBlast).
    bool uses_own(const ir::Gemm& g) const {
        if (!LAZYTENSOR_CLBLAST || choice_ == GemmChoice::Own) return true;
        if (choice_ == GemmChoice::CLBlast) return false;
        return own_gemm_faster(g, c_.device.traits().gpu, c_.device.name());
    }

    /// c = a x b on the own GEMM kernel: one launch, operands read in place; `epilogue` is
    /// applied to each result before its store, with `fused` as its arguments, and the
    /// prologues to each element of A and B as it is loaded.
    void own(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c, const FusedEpilogue& epilogue = {},
             const FusedArgs& fused = {}, const FusedPrologue& prologue_a = {}, const FusedPrologue& prologue_b = {}) {
        own_into(g, a, b, c, nullptr, epilogue, fused, prologue_a, prologue_b);
    }

    /// Where a product's C lies when it is a block of a larger row-major matrix.
    struct CBlock {
        std::int64_t offset = 0, ld = 0, batch_stride = 0;
    };
    /// A product (a batch of one axis at most) on the own GEMM kernel whose C is the m x n block
    /// of `c` at block.offset (+ block.batch_stride per matrix) with rows block.ld apart, `epilogue` given each product as `v` and the
    /// block's element as `out[col]` (blocked linear algebra updates its matrix so in place;
    /// A and B may be other blocks of the same buffer, not overlapping C).
    void own_block(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c, CBlock block, const FusedEpilogue& epilogue,
                   const FusedArgs& fused) {
        if (g.batch.size() > 1)
            fail<Error>("lazytensor internal error: a GEMM into blocks of a matrix takes a batch of one axis, not ", g.batch);
        own_into(g, a, b, c, &block, epilogue, fused, {}, {});
    }

    /// Backend::prepare_gemm: builds the own kernel that run or run_fused would use for `g`, or
    /// has CLBlast build its program for `g`'s routine (prepare_clblast) (lt::warmup).
    void prepare(const ir::Gemm& g, const FusedKernels& fusion) {
        const bool fused = fusion.prologue[0] || fusion.prologue[1] || fusion.epilogue;
        require_fp64(g);
        if (!fused && !uses_own(g)) {
#if LAZYTENSOR_CLBLAST
            if (g.m != 0 && g.n != 0 && g.batch_count() != 0) prepare_clblast(g);
#endif
            return;
        }
        if (g.m == 0 || g.n == 0 || g.batch_count() == 0) return;
        const GemmKernelParams p = params(g);
        const GemmLayoutClass layout = this->layout(g, p);
        if (!fused) {
            own_kernel(g, p, layout, FusedEpilogue{}, FusedPrologue{}, FusedPrologue{});
            return;
        }
        const FusedCode code = code_of(g, fusion);
        own_kernel(g, p, layout, *code.epilogue, *code.prologue[0], *code.prologue[1]);
    }

    /// Forgets the own GEMM kernels built (with the kernel cache).
    void clear_cache() { kernels_.clear(); }

private:
    void own_into(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c, const CBlock* block,
                  const FusedEpilogue& epilogue, const FusedArgs& fused, const FusedPrologue& prologue_a,
                  const FusedPrologue& prologue_b) {
        const std::int64_t count = g.batch_count();
        if (g.m == 0 || g.n == 0 || count == 0) return;
        const GemmKernelParams p = params(g);
        GemmLayoutClass layout = this->layout(g, p);
        if (block) {
            layout.c_block = true;
            // Whole tiles store runs of V as aligned vectors: C's block must start and step at multiples of V.
            // CPU devices (PoCL: blocked linear algebra runs there only when asked) build one variant, not two.
            if (block->offset % p.v != 0 || block->ld % p.v != 0 || block->batch_stride % p.v != 0 || !c_.device.traits().gpu)
                layout.whole_tiles = false;
        }
        cl_kernel kernel = own_kernel(g, p, layout, epilogue, prologue_a, prologue_b);
        cl_long a_batch_stride = 0, b_batch_stride = 0;
        cl_int per_matrix = 0;
        BufferPtr table;  // a batch of several axes: each matrix's offsets of A and B
        if (g.batch.size() == 1) {
            a_batch_stride = g.a.batch_strides[0];
            b_batch_stride = g.b.batch_strides[0];
        } else if (g.batch.size() > 1) {
            std::vector<std::int64_t> a_offsets, b_offsets;
            g.batch_offsets(a_offsets, b_offsets);
            std::vector<cl_long> pairs;
            pairs.reserve(2 * a_offsets.size());
            for (std::size_t i = 0; i < a_offsets.size(); ++i) pairs.push_back(a_offsets[i]), pairs.push_back(b_offsets[i]);
            table = c_.backend.allocate(DType::Int64, static_cast<std::int64_t>(pairs.size()));
            c_.backend.write(*table, 0, pairs.data(), pairs.size() * sizeof(cl_long));
            per_matrix = 1;
        }
        KernelArgs args(kernel, c, a, b, table ? *table : c);
        for (std::int64_t v : {g.m, g.n, g.k, g.a.row_stride, g.a.col_stride, g.b.row_stride, g.b.col_stride}) {
            if (layout.wide_index) args.add(static_cast<cl_long>(v));
            else args.add(static_cast<cl_int>(v));
        }
        args.add(static_cast<cl_long>(g.a.offset), a_batch_stride, static_cast<cl_long>(g.b.offset), b_batch_stride, per_matrix,
                 FirstMatrix{});
        if (block)
            args.add(static_cast<cl_long>(block->offset), static_cast<cl_long>(block->ld), static_cast<cl_long>(block->batch_stride));
        args.add(fused);
        auto blocks = [](std::int64_t extent, int block) { return static_cast<std::size_t>((extent + block - 1) / block); };
        const std::size_t local[3] = {std::size_t(p.tn), std::size_t(p.tm), 1};
        c_.launcher.run_per_matrix(args, gemm_kernel_name(), count, blocks(g.m, p.block_m()) * blocks(g.n, p.block_n()) * local[0],
                                   local);
    }

    void require_fp64(const ir::Gemm& g) const {
        if (g.dtype == DType::Float64 && !c_.device.fp64())
            fail<DeviceError>(c_.device.describe(), " does not support float64 (the device lacks cl_khr_fp64): matmul of float64 ",
                              "tensors cannot run there; use float32, or run it on the host");
    }

    /// The own kernel for `g` with this code fused into it, built the first time.
    cl_kernel own_kernel(const ir::Gemm& g, const GemmKernelParams& p, const GemmLayoutClass& layout,
                         const FusedEpilogue& epilogue, const FusedPrologue& prologue_a, const FusedPrologue& prologue_b) {
        // Keyed by what the source is made of: a product that hits costs no source generation.
        const std::string key = concat(g.dtype, ' ', layout.a_k_fast, layout.b_n_fast, layout.wide_index, layout.whole_tiles,
                                       layout.c_block, ' ', p.str(), ' ', epilogue.parameters, '\n', epilogue.code, '\n',
                                       epilogue.output.value_or(g.dtype), ' ', prologue_a.storage, prologue_a.function, '\n',
                                       prologue_b.storage, prologue_b.function);
        const bool fused = !epilogue.code.empty() || !prologue_a.function.empty() || !prologue_b.function.empty();
        return kernels_.get(
            key, [&] { return gemm_kernel_source(g.dtype, layout, p, epilogue, prologue_a, prologue_b); }, gemm_kernel_name(),
            c_.programs, c_.backend.cache_capacity(), p.max_registers,
            concat("GEMM kernel ", p.block_m(), "x", p.block_n(), " tile, ", g.dtype, fused ? ", with fused code" : ""));
    }

    FusedCode code_of(const ir::Gemm& g, const FusedKernels& fusion) {
        return c_.fused_code.for_gemm(g, fusion, c_.device.traits(), c_.backend.cache_capacity());
    }

    /// A contiguous copy of a gemm operand that BLAS cannot read in place (no unit stride), or
    /// null; `layout` becomes the copy's.
    BufferPtr blas_readable_copy(const ir::Gemm& g, const Buffer& operand, ir::MatrixLayout& layout, std::int64_t rows,
                                 std::int64_t cols) {
        if (ir::blas_operand(layout, rows, cols)) return nullptr;
        const ir::Kernel copy = ir::contiguous_copy(g.dtype, g.batch, rows, cols, layout);
        BufferPtr out = c_.backend.allocate(g.dtype, g.batch_count() * rows * cols);
        c_.backend.launch(*c_.backend.get_kernel(copy), {const_cast<Buffer*>(&operand), out.get()}, {});
        return out;
    }

    RoutineContext c_;
    GemmChoice choice_ = GemmChoice::Auto;
    std::optional<GemmKernelParams> params_override_;
    bool wide_index_ = false;
    std::optional<bool> fuse_half_loads_;
    KernelsByKey kernels_;  // the own kernels, by dtype, layout class, parameters and fused code
    std::string clblast_tuned_;  // the CLBlast kernels given tuned parameters (clblast_tuning.hpp)
    std::set<std::string> clblast_called_;  // the CLBlast routines and precisions called once (built)
};

}  // namespace lazytensor::detail::opencl
