// SPDX-License-Identifier: MIT
// The OpenCL backend: one context and one in-order queue per device; buffers from a caching
// allocator; kernels rendered from the IR (renderer.hpp), built once per source (in memory, and
// across processes through the disk cache, program_cache.hpp) and launched on the queue.
//
// Matrix products run on the same queue through lazytensor's own GEMM kernel (gemm_kernel.hpp)
// or CLBlast (clblast_gemm.hpp), whichever LAZYTENSOR_OPENCL_GEMM and the shape choose; on
// the own kernel, a product's element-wise consumer runs in its stores and a simple producer of
// an operand in its loads (gemm_epilogue.hpp).
//
// Caches, from the outside in: Backend::get_kernel keys compiled kernels (program + cl_kernel
// objects) by the normalized IR, so a hit costs neither a build nor clCreateKernel; below it,
// programs are keyed by their source, and then by source, options, device and driver on disk.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "../../core/lru_cache.hpp"
#include "../backend.hpp"
#include "../../core/config.hpp"
#include "allocator.hpp"
#include "cl_api.hpp"
#include "device.hpp"
#include "clblast_gemm.hpp"
#include "attention_kernel.hpp"
#include "clblast_tuning.hpp"
#include "gemm_epilogue.hpp"
#include "gemm_kernel.hpp"
#include "launch.hpp"
#include "program_cache.hpp"
#include "programs.hpp"
#include "renderer.hpp"
#include "scan.hpp"
#include "sort.hpp"

namespace lazytensor::detail::opencl {

/// A kernel ready to launch: its program, one cl_kernel per stage, and how to launch them.
class OpenCLKernel final : public CompiledKernel {
public:
    RenderedKernel rendered;
    std::shared_ptr<ProgramOwner> program;
    std::vector<KernelOwner> kernels;  // per stage
    std::vector<DType> scalars;        // the kernel's scalar parameters, passed after its buffers
    std::size_t fits = 0;              // (while compiling: a smaller work-group it must be rendered for)
};

class OpenCLBackend final : public Backend {
public:
    OpenCLBackend(int index, cl_platform_id platform, cl_device_id device)
        : device_(index, platform, device), memory_(device_),
          programs_(device_, [this](bool from_disk) { count_program(from_disk); }), launcher_(device_) {
#if LAZYTENSOR_CLBLAST
        clblast_tuned_ = apply_clblast_tuning(device_.id(), device_.name());
#endif
        set_gemm_choice(gemm_choice_from_env());
    }

    Device device() const override { return device_.device(); }
    std::string name() const override {
        return device_.name() + " (" + device_.platform_name() + ", " + device_.kind() + ")";
    }
    /// "gpu", "cpu" or "accelerator".
    const std::string& kind() const { return device_.kind(); }
    const std::string& platform_name() const { return device_.platform_name(); }
    bool supports_float64() const override { return device_.fp64(); }
    cl_context context() const { return device_.context(); }
    cl_command_queue queue() const { return device_.queue(); }
    cl_device_id device_id() const { return device_.id(); }
    const DeviceTraits& traits() const { return device_.traits(); }
    ProgramDiskCache& disk_cache() { return programs_.disk(); }
    const std::string& build_options() const { return programs_.options(); }

    // ------------------------------------------------------------------------------- memory

    void release_cached() noexcept override { memory_.release_cached(); }
    /// A cl_mem made elsewhere (DLPack) as a buffer: BlockAllocator::wrap.
    BufferPtr wrap(DType dtype, std::int64_t numel, void* handle, std::function<void()> release, bool writable) override {
        return memory_.wrap(dtype, numel, handle, std::move(release), writable);
    }

    void write(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) override {
        if (!bytes) return;
        check(clEnqueueWriteBuffer(queue(), static_cast<cl_mem>(dst.handle()), CL_TRUE, at, bytes, src, 0, nullptr, nullptr),
              "clEnqueueWriteBuffer", concat("copying ", bytes, " bytes to ", describe()));
    }
    void read(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) override {
        if (!bytes) return;
        const cl_int err =
            clEnqueueReadBuffer(queue(), static_cast<cl_mem>(src.handle()), CL_TRUE, at, bytes, dst, 0, nullptr, nullptr);
        launcher_.check_launched(true);  // first: a failed kernel is named, and reported once (NVIDIA's wait reports it too)
        check(err, "clEnqueueReadBuffer", concat("copying ", bytes, " bytes from ", describe()));
    }

    // ------------------------------------------------------------------------------ running

    void launch(CompiledKernel& compiled, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) override {
        auto& k = static_cast<OpenCLKernel&>(compiled);
        if (scalars.size() != k.scalars.size())
            fail<Error>("lazytensor internal error: a kernel with ", k.scalars.size(), " scalar parameters launched with ",
                        scalars.size());
        if (k.rendered.stages.empty()) return;
        BufferPtr scratch;
        if (k.rendered.scratch_elems) scratch = allocate(k.rendered.scratch_dtype, k.rendered.scratch_elems);
        const bool timed = launcher_.record_times();
        double ms = 0;
        for (std::size_t s = 0; s < k.rendered.stages.size(); ++s) {
            const Stage& st = k.rendered.stages[s];
            cl_kernel kernel = k.kernels[s].kernel;
            KernelArgs args(kernel, params);
            if (scratch) args.add(*scratch);
            for (std::size_t i = 0; i < scalars.size(); ++i) args.add(ScalarArg(scalars[i], k.scalars[i]));
            if (st.units >= 0) {
                if (st.long_units) args.add(static_cast<cl_long>(st.units));
                else args.add(static_cast<cl_int>(st.units));
            }
            ms += launcher_.enqueue(kernel, st.name, 2, st.global, st.local, timed);
        }
        if (timed) launcher_.record_time(ms);
    }

    /// Runs scan `s` from in into out (which may be in itself): `data` (scan_program, with the
    /// fused kernels whose arguments `fused` holds) reads `in` and writes `out`; `plain` (without
    /// them) scans the chunks' totals.
    void scan_with(const ProgramOwner& plain, const ProgramOwner& data, const ir::Scan& s, const Buffer& in, Buffer& out,
                   const FusedArgs& fused) {
        const DeviceTraits& traits = device_.traits();
        const std::size_t size = dtype_size(s.dtype);
        const cl_long offset = s.offset, outer_stride = s.outer_stride, stride = s.stride, inner_stride = s.inner_stride;
        const cl_long outer = s.outer, length = s.length, inner = s.inner;
        std::size_t G = 256;  // work-group size: a tile of G * kScanPerItem elements (and pads) in local memory
        while (G > 1 && (G > traits.max_work_group || (G * kScanPerItem * 33 / 32 + G) * size > traits.local_memory)) G >>= 1;
        auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
        auto run = [&](const ProgramOwner& program, const char* name, std::size_t work, const auto&... args) {
            launcher_.run(programs_.make_kernel(program, name), name, work, G, args...);
        };
        if (s.inner == 1 && s.length >= std::int64_t(G)) {  // rows: a work-group per (row, chunk)
            const std::int64_t tile = std::int64_t(G) * kScanPerItem, tiles = ceil_div(s.length, tile);
            std::int64_t chunks = std::clamp<std::int64_t>(ceil_div(8 * traits.compute_units, s.outer), 1, tiles);
            const cl_long chunk_length = ceil_div(tiles, chunks) * tile;
            chunks = ceil_div(s.length, chunk_length);
            const std::size_t work = std::size_t(s.outer * chunks) * G;
            BufferPtr totals;
            if (chunks > 1) {
                totals = allocate(s.dtype, s.outer * chunks);
                run(data, "lt_fold_rows", work, in, *totals, offset, outer_stride, stride, length, cl_long(chunks), chunk_length,
                    LocalBytes{G * size}, fused);
                scan_with(plain, plain, ir::Scan{s.dtype, s.op, s.outer, chunks, 1, 0, chunks, 1, 0}, *totals, *totals, {});
            }
            const Buffer& carries = totals ? *totals : in;
            run(data, "lt_scan_rows", work, in, out, carries, cl_int(chunks > 1), offset, outer_stride, stride, length,
                cl_long(chunks), chunk_length, LocalBytes{std::size_t(tile + tile / 32) * size}, LocalBytes{G * size}, fused);
            return;
        }
        // Columns (or short rows): a work-item per (outer index, chunk, column), chunks of at
        // least 64 elements, enough work-items to fill the device.
        const std::int64_t lines = s.outer * s.inner, wanted = traits.compute_units * (traits.gpu ? 2048 : 64);
        std::int64_t chunks = std::clamp<std::int64_t>(ceil_div(wanted, lines), 1, std::max<std::int64_t>(1, s.length / 64));
        const cl_long chunk_length = ceil_div(s.length, chunks);
        chunks = ceil_div(s.length, chunk_length);
        const std::size_t work = std::size_t(ceil_div(lines * chunks, std::int64_t(G))) * G;
        BufferPtr totals;
        if (chunks > 1) {
            totals = allocate(s.dtype, lines * chunks);
            run(data, "lt_fold_columns", work, in, *totals, offset, outer_stride, stride, inner_stride, outer, length, inner,
                cl_long(chunks), chunk_length, fused);
            scan_with(plain, plain, ir::Scan{s.dtype, s.op, s.outer, chunks, s.inner, 0, chunks * s.inner, s.inner, 1},
                      *totals, *totals, {});
        }
        const Buffer& carries = totals ? *totals : in;
        run(data, "lt_scan_columns", work, in, out, carries, cl_int(chunks > 1), offset, outer_stride, stride, inner_stride,
            outer, length, inner, cl_long(chunks), chunk_length, fused);
    }

    void sort_rows(const Buffer& in, std::int64_t rows, std::int64_t n, std::int64_t k, bool descending, Buffer& values,
                   Buffer& indices) override {
        const DType t = in.dtype();
        if (t == DType::Float64 && !device_.fp64())
            fail<DeviceError>(device_.describe(), " does not compute float64 (no cl_khr_fp64): cannot sort a float64 tensor there");
        if (n > std::int64_t(UINT32_MAX))
            fail<ValueError>("sorting rows of ", n, " elements on ", device_.describe(), ": at most 2^32 - 1 per row");
        const DeviceTraits& traits = device_.traits();
        std::int64_t P = 1;
        while (P < n) P <<= 1;
        const bool select = k <= 16 && k < n;  // topk_program: one read of each row
        const bool radix = !select && rows == 1 && n >= (std::int64_t(1) << 16);  // radix_program: one long row
        const RadixShape shape = radix_shape(t, traits.max_work_group, traits.local_memory);
        const std::shared_ptr<ProgramOwner> program =
            programs_.build(select ? topk_program(t, k) : radix ? radix_program(t, shape) : sort_program(t));
        // Pairs of 12 bytes: a block of 2 L of them in local memory, at most 24 KiB (OpenCL 1.2
        // devices have at least 32).
        std::int64_t L = std::max<std::int64_t>(1, std::min<std::int64_t>(P / 2, 1024));
        while (L > 1 && std::size_t(L) > traits.max_work_group) L >>= 1;
        const std::int64_t B = 2 * L;
        auto kernel = [&](const char* name) { return programs_.make_kernel(*program, name); };
        Launcher& launcher = launcher_;
        const cl_long n_l = n, P_l = P, k_l = k;
        if (select) {
            std::size_t group = 256;
            while (group > 1 && group > traits.max_work_group) group >>= 1;
            launcher.run(kernel("lt_topk_rows"), "lt_topk_rows", std::size_t(rows) * group, group, in, values, indices, n_l,
                         cl_int(descending), LocalBytes{group * sizeof(cl_ulong)}, LocalBytes{group * sizeof(cl_uint)},
                         LocalBytes{group * sizeof(cl_uint)});
            return;
        }
        if (radix) {
            // Keys of 1-byte types have 8 significant bits, of 2- and 4-byte types 32 (half sorts
            // by its float), others 64.
            const int bits = dtype_size(t) == 1 ? 8 : dtype_size(t) <= 4 ? 32 : 64;
            const std::int64_t tiles = (n + shape.tile() - 1) / shape.tile();
            const std::size_t group = std::size_t(shape.group);
            const DType key_type = bits == 64 ? DType::Int64 : DType::Int32;
                        BufferPtr keys[2] = {allocate(key_type, n), allocate(key_type, n)};
            BufferPtr places[2] = {allocate(DType::Int32, n), allocate(DType::Int32, n)};
            BufferPtr counts = allocate(DType::Int32, 256 * tiles), totals = allocate(DType::Int32, 256);
            const cl_long tiles_l = tiles;
            KernelOwner count = kernel("lt_radix_count"), scan = kernel("lt_radix_scan"), digits = kernel("lt_radix_digits"),
                        scatter = kernel("lt_radix_scatter");
            for (int shift = 0, from = 0; shift < bits; shift += 8, from ^= 1) {
                const Buffer& key_in = *keys[from];
                const Buffer& pos_in = *places[from];
                const Buffer& key_out = *keys[from ^ 1];
                const Buffer& pos_out = *places[from ^ 1];
                const cl_int first = shift == 0, last = shift + 8 == bits;
                launcher.run(count, "lt_radix_count", std::size_t(tiles) * group, group, in, key_in, n_l, cl_int(shift), first,
                             cl_int(descending), *counts);
                launcher.run(scan, "lt_radix_scan", 256 * group, group, *counts, tiles_l, *totals);
                launcher.run(digits, "lt_radix_digits", group, group, *totals);
                launcher.run(scatter, "lt_radix_scatter", std::size_t(tiles) * group, group, in, key_in, pos_in, key_out,
                             pos_out, values, indices, n_l, k_l, cl_int(shift), first, last, cl_int(descending), *counts,
                             *totals);
            }
            return;
        }
        BufferPtr key = allocate(DType::Int64, rows * P), pos = allocate(DType::Int32, rows * P);
        KernelOwner keys = kernel("lt_sort_keys"), local = kernel("lt_sort_local"), global = kernel("lt_sort_global"),
                    gather = kernel("lt_sort_gather");
        launcher.run(keys, "lt_sort_keys", std::size_t(rows * P), 0, in, *key, *pos, n_l, P_l, cl_int(descending));
        if (P > 1) {
            const std::size_t pairs = std::size_t(rows * P / 2);
            const LocalBytes lk{std::size_t(B) * sizeof(cl_ulong)}, lp{std::size_t(B) * sizeof(cl_uint)};
            launcher.run(local, "lt_sort_local", pairs, std::size_t(L), *key, *pos, P_l, cl_long(2), cl_long(std::min(B, P)),
                         cl_long(1), lk, lp);
            for (std::int64_t kk = 2 * B; kk <= P; kk <<= 1) {
                for (std::int64_t j = kk / 2; j >= B; j >>= 1)
                    launcher.run(global, "lt_sort_global", pairs, 0, *key, *pos, P_l, cl_long(kk), cl_long(j));
                launcher.run(local, "lt_sort_local", pairs, std::size_t(L), *key, *pos, P_l, cl_long(kk), cl_long(kk),
                             cl_long(B / 2), lk, lp);
            }
        }
        launcher.run(gather, "lt_sort_gather", std::size_t(rows * k), 0, in, *pos, values, indices, n_l, P_l, k_l);
    }

    void scan(const ir::Scan& s, const Buffer& in, Buffer& out) override {
        if (s.dtype == DType::Float64 && !supports_float64())
            fail<DeviceError>(describe(), " does not compute float64 (no cl_khr_fp64): cannot scan (cumsum, cumprod) a float64 tensor there");
        if (s.numel() == 0) return;
        const auto program = build_program(scan_program(s.dtype, s.op));
        scan_with(*program, *program, s, in, out, {});
    }

    bool fuses_scan_prologue(const ir::Scan& s, const ir::Kernel& prologue) const override {
        return fuse_epilogues_ && device_.computes(s.dtype) && device_.computes(prologue);
    }
    bool fuses_scan_epilogue(const ir::Scan& s, const ir::Kernel& epilogue, int) const override {
        return fuse_epilogues_ && device_.computes(s.dtype) && device_.computes(epilogue);
    }

    void scan_fused(const ir::Scan& s, const FusedKernels& fusion, const Buffer& in, const std::vector<Buffer*>& params,
                    const std::vector<Scalar>& scalars) override {
        if (s.numel() == 0) return;
        const FusedCode code = fused_code_.for_scan(s, fusion, device_.traits(), cache_capacity());
        const FusedArgs args = fused_args(fusion, 1, params, scalars);
        const auto plain = programs_.build(scan_program(s.dtype, s.op));
        const auto data = programs_.build(scan_program(s.dtype, s.op, *code.prologue[0], *code.epilogue));
        scan_with(*plain, *data, s, in, *params.back(), args);
    }

    std::string scan_fused_source(const ir::Scan& s, const FusedKernels& fusion) override {
        const FusedCode code = fused_code_.for_scan(s, fusion, device_.traits(), cache_capacity());
        return scan_program(s.dtype, s.op, *code.prologue[0], *code.epilogue);
    }
    std::string gemm_fused_source(const ir::Gemm& g, const FusedKernels& fusion) override {
        const FusedCode code = fused_code_.for_gemm(g, fusion, device_.traits(), cache_capacity());
        const GemmKernelParams p = own_gemm_params(g);
        return gemm_kernel_source(g.dtype, own_gemm_layout(g, p), p, *code.epilogue, *code.prologue[0], *code.prologue[1]);
    }

    void flush() override { check(clFlush(queue()), "clFlush", concat("on ", describe())); }

    void synchronize() override {
        const cl_int err = clFinish(queue());
        launcher_.check_launched(true);  // first: a failed kernel is named, and reported once (NVIDIA's wait reports it too)
        check(err, "clFinish", concat("on ", describe()));
    }

    /// Keeps `event` (a command queued on this device's queue; the reference passes to the backend)
    /// until a wait checks it, as for a kernel: a copy that fails is reported by the next wait.
    void track(cl_event event, const std::string& name) { launcher_.remember(event, name); }

    /// Whether every launch keeps its event until a wait checks it (LAZYTENSOR_OPENCL_LAUNCH_EVENTS).
    bool launch_events() const { return launcher_.launch_events(); }
    /// Tests only: turns launch events on or off (after a wait: the list must be empty).
    void set_launch_events(bool on) {
        synchronize();
        launcher_.set_launch_events(on);
    }

    /// Tests only: the next kernel launched on this device waits for this event (a user event the
    /// test sets to an error status stands in for a kernel that fails while the device runs it).
    /// One per device: another device's launches neither wait for it nor take it.
    std::atomic<cl_event>& detail_launch_dependency() { return launcher_.launch_dependency(); }

    void gemm(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c) override {
        require_fp64(g);
        if (uses_own_gemm(g)) return own_gemm(g, a, b, c);
#if LAZYTENSOR_CLBLAST
        using ms_t = std::chrono::duration<double, std::milli>;
        ir::Gemm spec = g;
        BufferPtr a_copy = blas_readable_copy(spec, a, spec.a, spec.m, spec.k);
        BufferPtr b_copy = blas_readable_copy(spec, b, spec.b, spec.k, spec.n);
        cl_mem ma = static_cast<cl_mem>((a_copy ? a_copy.get() : &a)->handle());
        cl_mem mb = static_cast<cl_mem>((b_copy ? b_copy.get() : &b)->handle());
        cl_mem mc = static_cast<cl_mem>(c.handle());
        const bool timed = launcher_.record_times();
        if (timed) synchronize();  // time the whole product: CLBlast may run several kernels
        const auto start = std::chrono::steady_clock::now();
        const clblast::StatusCode status = spec.dtype == DType::Float64
                                               ? clblast_gemm<double>(spec, ma, mb, mc, device_.queue(), nullptr)
                                               : clblast_gemm<float>(spec, ma, mb, mc, device_.queue(), nullptr);
        const double enqueue_ms = ms_t(std::chrono::steady_clock::now() - start).count();
        if (status != clblast::StatusCode::kSuccess)
            fail<BackendError>("OpenCL: CLBlast ", gemm_routine(spec), " failed on ", device_.describe(), ": ",
                               clblast_status_name(status), " (", static_cast<int>(status), ") for ", spec.dtype,
                               " batch ", spec.batch, ", m ", spec.m, ", n ", spec.n, ", k ", spec.k,
                               lost_device_hint(static_cast<cl_int>(status)));  // CLBlast reuses OpenCL's codes
        // Enqueueing takes microseconds; a slow call is CLBlast compiling its kernels.
        if (enqueue_ms > 20 && debug_level() >= 1)
            std::cerr << "[lazytensor] CLBlast compiled its " << (spec.dtype == DType::Float64 ? "d" : "s")
                      << "gemm kernels for " << device_.describe() << " on first use: " << enqueue_ms
                      << " ms (once per process and kernel variant)\n";
        if (timed) {
            synchronize();
            launcher_.record_time(ms_t(std::chrono::steady_clock::now() - start).count());
        }
#else
        (void)a, (void)b, (void)c;
#endif
    }

    bool fuses_epilogue(const ir::Gemm& g, const ir::Kernel& epilogue, int) const override {
        return fuses(g, epilogue);
    }
    bool fuses_prologue(const ir::Gemm& g, const ir::Kernel& prologue) const override {
        if (prologue.params[0].dtype == DType::Float16 && !fuse_half_loads_.value_or(!device_.traits().gpu)) return false;
        return fuses(g, prologue);
    }

    void gemm_fused(const ir::Gemm& g, const FusedKernels& fusion, const Buffer& a, const Buffer& b,
                    const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) override {
        require_fp64(g);
        const FusedCode code = fused_code_.for_gemm(g, fusion, device_.traits(), cache_capacity());
        own_gemm(g, a, b, *params.back(), *code.epilogue, fused_args(fusion, 2, params, scalars), *code.prologue[0],
                 *code.prologue[1]);
    }

    bool fuses_attention(const ir::Attention& a) const override {
        return fuse_attention_ && attention_params(a).has_value() && device_.computes(a.score_function);
    }
    /// Tests and benchmarks: whether attention runs as one kernel from now on
    /// (LAZYTENSOR_FUSE_ATTENTION=0 turns it off from the start).
    void set_fuse_attention(bool on) {
        fuse_attention_ = on;
        ++gemm_config_generation();
    }
    /// Benchmarks: the attention kernel's block and work-group shape from now on (nullopt: the
    /// device's choice); where it cannot run a product's depths, attention is not fused.
    void set_attention_params(std::optional<AttentionParams> params) {
        if (params) check_attention_params(*params, device_.traits().max_work_group);
        attention_params_override_ = params;
        ++gemm_config_generation();
    }
    std::string attention_routine(const ir::Attention& a) const override {
        const std::optional<AttentionParams> p = attention_params(a);
        if (!p) return "attention kernel";
        return concat("lazytensor attention kernel ", p->bm, "x", p->bn, "; scores and weights never stored");
    }
    std::string attention_source(const ir::Attention& a) override {
        const std::optional<AttentionParams> p = attention_params(a);
        if (!p) return {};
        return attention_kernel_source(a.depth(), a.value_depth(), *p, attention_layout(a), prologue_code(a.score_function, "s", device_.traits()));
    }

    void attention(const ir::Attention& a, const Buffer& q, const Buffer& kt, const Buffer& v, Buffer& out,
                   const std::vector<Scalar>& scalars) override {
        const std::optional<AttentionParams> p = attention_params(a);
        if (!p)
            fail<BackendError>("lazytensor internal error: attention of depth ", a.depth(), " and ", a.value_depth(),
                               " cannot run on ", device_.describe());
        const ir::Gemm& g = a.scores;
        const std::int64_t count = g.batch_count();
        if (count == 0 || g.m == 0) return;
        const AttentionLayout layout = attention_layout(a);
        const std::string key = concat(ir::key(a.score_function), '|', a.depth(), ',', a.value_depth(), ',', p->bm, ',', p->bn,
                                       ',', p->ty, ',', layout.q_vec, layout.k_vec, layout.v_vec);
        cl_kernel kernel = attention_kernels_.get(
            key, [&] { return attention_source(a); }, attention_kernel_name(), programs_, cache_capacity());
        auto batch_stride = [](const ir::MatrixLayout& l) { return static_cast<cl_long>(l.batch_strides.empty() ? 0 : l.batch_strides[0]); };
        KernelArgs args(kernel, out, q, kt, v, static_cast<cl_int>(g.m), static_cast<cl_int>(g.n), FirstMatrix{});
        for (const ir::MatrixLayout* l : {&g.a, &g.b, &a.values.b})
            args.add(static_cast<cl_long>(l->offset), batch_stride(*l), static_cast<cl_long>(l->row_stride),
                     static_cast<cl_long>(l->col_stride));
        for (std::size_t i = 0; i < a.score_function.scalars.size(); ++i)
            args.add(ScalarArg(scalars.at(i), a.score_function.scalars[i]));
        const std::size_t local[3] = {std::size_t(p->tx), std::size_t(p->ty), 1};
        launcher_.run_per_matrix(args, attention_kernel_name(), count,
                                   static_cast<std::size_t>((g.m + p->bm - 1) / p->bm) * local[0], local);
    }

    /// Tests and benchmarks: whether products fuse their element-wise consumers from now on
    /// (LAZYTENSOR_GEMM_EPILOGUE=0 turns it off from the start).
    void set_fuse_epilogues(bool on) {
        fuse_epilogues_ = on;
        ++gemm_config_generation();
    }
    bool fuse_epilogues() const { return fuse_epilogues_; }
    /// Tests: whether a cast from float16 runs in the product's loads (null: the default, not on
    /// GPUs, where the H100 ran relu(x16.float() @ w1 + b1) at 8192x784x512 slower fused, 0.242
    /// ms, than as a cast kernel and a product, 0.231 ms).
    void set_fuse_half_loads(std::optional<bool> on) {
        fuse_half_loads_ = on;
        ++gemm_config_generation();
    }

    std::string gemm_routine(const ir::Gemm& g) const override {
        if (uses_own_gemm(g)) {
            const GemmKernelParams p = own_gemm_params(g);
            const bool capped = p.max_registers && device_.nvidia();
            return concat("lazytensor GEMM kernel ", p.block_m(), "x", p.block_n(), "x", p.bk, " (", p.wm, "x", p.wn,
                          " per work-item", capped ? concat(", at most ", p.max_registers, " registers") : "",
                          own_gemm_layout(g, p).whole_tiles ? ", whole tiles" : "", ")");
        }
#if LAZYTENSOR_CLBLAST
        return std::string("CLBlast ") + clblast_routine(g) +
               (clblast_tuned_.empty() || g.dtype != DType::Float32 ? "" : ", tuned " + clblast_tuned_);
#else
        return Backend::gemm_routine(g);
#endif
    }

    /// Which GEMM runs matrix products (LAZYTENSOR_OPENCL_GEMM; Auto: per shape and device).
    GemmChoice gemm_choice() const { return gemm_choice_; }
    /// Tests and benchmarks: chooses the GEMM for the products run from now on (CLBlast in a
    /// build without it is a DeviceError).
    void set_gemm_choice(GemmChoice choice) {
        if (choice == GemmChoice::CLBlast && !LAZYTENSOR_CLBLAST)
            fail<DeviceError>("CLBlast cannot run matrix products on ", describe(), ": this build has LAZYTENSOR_CLBLAST off");
        gemm_choice_ = choice;
        ++gemm_config_generation();
    }
    /// Benchmarks: the parameters of the own GEMM kernel from now on (nullopt: the device's set).
    void set_gemm_params(std::optional<GemmKernelParams> params) {
        if (params) {
            check_gemm_params(*params);
            if (std::size_t(params->threads()) > device_.traits().max_work_group)
                fail<ValueError>("OpenCL GEMM kernel parameters tm ", params->tm, ", tn ", params->tn, ": work-groups of ",
                                 params->threads(), " work-items, but ", describe(), " allows ", device_.traits().max_work_group);
        }
        gemm_params_override_ = params;
    }
    /// Tests only: the own GEMM kernel computes element offsets in 64 bits whatever the sizes
    /// (as it does for matrices of 2^31 elements or more).
    void set_gemm_wide_index(bool on) { gemm_wide_index_ = on; }
    /// The parameters the own GEMM kernel runs `g` with on this device.
    GemmKernelParams own_gemm_params(const ir::Gemm& g) const {
        if (gemm_params_override_) return *gemm_params_override_;
        return gemm_params_for(g, device_.traits().gpu, device_.name(), device_.traits().max_work_group, device_.traits().local_memory);
    }
    /// The layout class the own GEMM kernel runs `g` with (parameter set `p`).
    GemmLayoutClass own_gemm_layout(const ir::Gemm& g, const GemmKernelParams& p) const {
        GemmLayoutClass layout = gemm_layout_class(g);
        layout.wide_index = layout.wide_index || gemm_wide_index_;
        layout.whole_tiles = gemm_whole_tiles(g, layout, p);
        return layout;
    }
    /// On a CPU device (PoCL), a product with at most kThinProduct rows or columns (matrix x
    /// vector, vector x matrix, a few columns; batched too) or with k = 1 runs as a reduction
    /// kernel once it moves kThinElements elements or more (its largest operand or its result):
    /// CLBlast's GEMM pads such a product to its tiles and ran [100000, 64] x [64] at 0.3-0.75
    /// GFLOP/s, the reduction 3-5x faster, and up to 8 columns 4-9x faster (16 columns 2x too,
    /// but attention's second product, weights x v, has that many and fuses only as products;
    /// bench/bench_thin_matmul.cpp, bench/README.md). Smaller products cost a launch either way
    /// and keep the GEMM; GPUs keep their GEMM (not measured there).
    static constexpr std::int64_t kThinProduct = 8;
    static constexpr std::int64_t kThinElements = std::int64_t(1) << 16;
    bool product_as_reduction(DType, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) const override {
        if (device_.traits().gpu || (std::min(m, n) > kThinProduct && k != 1)) return false;
        return batch * std::max({m * k, k * n, m * n}) >= kThinElements;
    }
    /// Whether `g` runs on the own GEMM kernel (else CLBlast).
    bool uses_own_gemm(const ir::Gemm& g) const {
        if (!LAZYTENSOR_CLBLAST || gemm_choice_ == GemmChoice::Own) return true;
        if (gemm_choice_ == GemmChoice::CLBlast) return false;
        return own_gemm_faster(g, device_.traits().gpu, device_.name());
    }

    /// Makes launch() time every kernel with profiling events (waits for each kernel).
    void set_record_times(bool on) override { launcher_.set_record_times(on); }
    bool record_times() const override { return launcher_.record_times(); }
    std::vector<double> take_device_times_ms() override { return launcher_.take_times_ms(); }

    std::string kernel_source(const CompiledKernel& compiled) const override {
        return static_cast<const OpenCLKernel&>(compiled).rendered.source;
    }

    // --------------------------------------------------------------------------- programs

    using ProgramSource = opencl::ProgramSource;
    /// A built program for `source` (ProgramCache::build).
    std::shared_ptr<ProgramOwner> build_program(const std::string& source, ProgramSource* from = nullptr,
                                                int max_registers = 0) {
        return programs_.build(source, from, max_registers);
    }

    /// Built programs held in memory (bounded like the kernel cache).
    std::size_t cached_programs() const { return programs_.size(); }

    /// The kernel cache and the program cache below it keep `kernels` entries each.
    void set_cache_capacity(std::size_t kernels) override {
        Backend::set_cache_capacity(kernels);
        programs_.set_capacity(kernels);
    }

    /// Forgets compiled kernels and built programs held in memory (the disk cache stays).
    void clear_kernel_cache() override {
        Backend::clear_kernel_cache();
        programs_.clear();
        gemm_kernels_.clear();
        attention_kernels_.clear();
        fused_code_.clear();
    }

    std::string describe() const { return device_.describe(); }

    /// Tests only: replaces the command queue and returns the old one. A null queue stands in
    /// for a device that was lost mid-run (every call then fails with CL_INVALID_COMMAND_QUEUE).
    cl_command_queue exchange_queue(cl_command_queue queue) { return device_.exchange_queue(queue); }
    /// Tests only: replaces the program build options and returns the old ones (bad options
    /// stand in for a driver whose compiler fails).
    std::string exchange_build_options(std::string options) { return programs_.exchange_options(std::move(options)); }

protected:
    // A kernel is rendered once per cache miss: the rendering is kept with the compiled kernel
    // (kernel_source shows it), and a kernel built with others takes its rendering under another
    // name (renamed) rather than a second rendering. It is rendered again only for a smaller
    // work-group, where the built kernel cannot run the one it was rendered for.
    std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel, CompileOutcome& outcome) override {
        return compile_rendered(kernel, render(kernel, device_.traits()), outcome);
    }

    /// The kernel of `rendered` (a rendering of `kernel` for the device's work-groups), built.
    std::shared_ptr<OpenCLKernel> compile_rendered(const ir::Kernel& kernel, RenderedKernel rendered, CompileOutcome& outcome) {
        DeviceTraits traits = device_.traits();
        for (;;) {
            if (rendered.stages.empty()) return with_program(kernel, std::move(rendered), nullptr, traits);
            require_fp64(rendered);
            ProgramSource from = ProgramSource::Memory;
            std::shared_ptr<ProgramOwner> program = build_program(rendered.source, &from);
            outcome.built_from_source = outcome.built_from_source || from == ProgramSource::Compiler;
            outcome.from_disk = outcome.from_disk || from == ProgramSource::Disk;
            auto k = with_program(kernel, std::move(rendered), std::move(program), traits);
            if (k->kernels.size() == k->rendered.stages.size()) return k;
            // The compiled kernel needs too many registers for its work-group: render it for
            // smaller work-groups.
            traits.max_work_group = k->fits;
            rendered = render(kernel, traits);
        }
    }

    // A program of several kernels builds faster than as many programs (NVIDIA's driver builds
    // one program at a time in a process, whatever the threads or contexts: bench/README.md), so
    // the kernels one realize needs are built as one program (functions named apart, helpers
    // shared).
    std::vector<std::shared_ptr<CompiledKernel>> compile_batch(const std::vector<const ir::Kernel*>& kernels,
                                                               std::vector<CompileOutcome>& outcomes) override {
        std::vector<std::shared_ptr<CompiledKernel>> out(kernels.size());
        std::vector<RenderedKernel> alone(kernels.size());  // each kernel as a program of its own
        std::vector<std::size_t> together;
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            alone[i] = render(*kernels[i], device_.traits());
            if (alone[i].stages.empty()) continue;
            require_fp64(alone[i]);
            // A kernel whose own program is in memory already (built alone before) uses it.
            if (programs_.find(alone[i].source)) continue;
            together.push_back(i);
        }
        if (together.size() >= 2) {
            bool fp64 = false;
            std::vector<std::string> helpers;
            std::string functions;
            std::vector<RenderedKernel> named;
            for (std::size_t i : together) {
                named.push_back(renamed(alone[i], "lt_kernel" + std::to_string(i)));
                fp64 = fp64 || named.back().uses_fp64;
                for (const std::string& h : named.back().helpers)
                    if (std::find(helpers.begin(), helpers.end(), h) == helpers.end()) helpers.push_back(h);
                functions += named.back().functions;
            }
            std::shared_ptr<ProgramOwner> program;
            ProgramSource from = ProgramSource::Memory;
            try {
                program = build_program(program_source(fp64, helpers, functions), &from);
            } catch (const BackendError&) {
                // Built one by one below: the kernel that fails reports its own log and source.
            }
            for (std::size_t n = 0; n < together.size() && program; ++n) {
                const std::size_t i = together[n];
                auto k = with_program(*kernels[i], std::move(named[n]), program, device_.traits());
                if (k->kernels.size() != k->rendered.stages.size()) continue;  // too big a work-group: alone below
                outcomes[i].built_from_source = from == ProgramSource::Compiler;
                outcomes[i].from_disk = from == ProgramSource::Disk;
                out[i] = std::move(k);
            }
        }
        for (std::size_t i = 0; i < kernels.size(); ++i)
            if (!out[i]) out[i] = compile_rendered(*kernels[i], std::move(alone[i]), outcomes[i]);
        return out;
    }

    void require_fp64(const RenderedKernel& rendered) const {
        if (rendered.uses_fp64 && !device_.fp64())
            fail<DeviceError>(describe(), " does not support float64 (the device lacks cl_khr_fp64); "
                              "use float32 tensors, or run this on the host");
    }

    /// The kernel of `rendered` in `program`: a cl_kernel per stage. When a stage needs a
    /// smaller work-group than it was rendered for, the result has no cl_kernels and `fits`
    /// says the largest work-group that can run.
    std::shared_ptr<OpenCLKernel> with_program(const ir::Kernel& kernel, RenderedKernel rendered,
                                               std::shared_ptr<ProgramOwner> program, const DeviceTraits& traits) {
        auto k = std::make_shared<OpenCLKernel>();
        k->rendered = std::move(rendered);
        k->scalars = kernel.scalars;
        k->program = std::move(program);
        std::size_t fits = traits.max_work_group;
        std::vector<KernelOwner> made;
        for (const Stage& st : k->rendered.stages) {
            made.push_back(programs_.make_kernel(*k->program, st.name.c_str()));
            std::size_t most = 0;
            check(clGetKernelWorkGroupInfo(made.back().kernel, device_.id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most,
                                           nullptr),
                  "clGetKernelWorkGroupInfo");
            if (st.local[0] * st.local[1] > most) fits = std::min(fits, most);
        }
        if (fits == traits.max_work_group) {
            k->kernels = std::move(made);
            return k;
        }
        std::size_t p = 1;
        while (p * 2 <= fits) p *= 2;
        if (p >= traits.max_work_group || p == 0)
            fail<BackendError>("OpenCL: ", describe(), " cannot run the kernel with any work-group size");
        k->fits = p;
        return k;
    }

    std::size_t largest_buffer() const override { return device_.largest_buffer(); }
    void* allocate_memory(std::size_t bytes, std::int64_t numel, DType dtype) override {
        return memory_.allocate(bytes, numel, dtype);
    }
    void free_memory(void* handle, std::size_t bytes) noexcept override { memory_.free(handle, bytes); }
    std::size_t cached_bytes() const override { return memory_.cached_bytes(); }

private:
public:
    /// c = a x b on the own GEMM kernel: one launch, operands read in place; `epilogue` is
    /// applied to each result before its store, with `fused` as its arguments, and the
    /// prologues to each element of A and B as it is loaded.
    void own_gemm(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c, const FusedEpilogue& epilogue = {},
                  const std::vector<const Buffer*>& epilogue_buffers = {}, const std::vector<ScalarArg>& epilogue_values = {},
                  const FusedPrologue& prologue_a = {}, const FusedPrologue& prologue_b = {}) {
        own_gemm(g, a, b, c, epilogue, FusedArgs{epilogue_buffers, epilogue_values}, prologue_a, prologue_b);
    }
    void own_gemm(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c, const FusedEpilogue& epilogue,
                  const FusedArgs& fused, const FusedPrologue& prologue_a, const FusedPrologue& prologue_b) {
        const std::int64_t count = g.batch_count();
        if (g.m == 0 || g.n == 0 || count == 0) return;
        const GemmKernelParams p = own_gemm_params(g);
        const GemmLayoutClass layout = own_gemm_layout(g, p);
        // Keyed by what the source is made of: a product that hits costs no source generation.
        const std::string key = concat(g.dtype, ' ', layout.a_k_fast, layout.b_n_fast, layout.wide_index, layout.whole_tiles,
                                       ' ', p.str(), ' ', epilogue.parameters, '\n', epilogue.code, '\n',
                                       epilogue.output.value_or(g.dtype), ' ', prologue_a.storage, prologue_a.function, '\n',
                                       prologue_b.storage, prologue_b.function);
        cl_kernel kernel = gemm_kernels_.get(
            key, [&] { return gemm_kernel_source(g.dtype, layout, p, epilogue, prologue_a, prologue_b); }, gemm_kernel_name(),
            programs_, cache_capacity(), p.max_registers);
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
            table = allocate(DType::Int64, static_cast<std::int64_t>(pairs.size()));
            write(*table, 0, pairs.data(), pairs.size() * sizeof(cl_long));
            per_matrix = 1;
        }
        KernelArgs args(kernel, c, a, b, table ? *table : c);
        for (std::int64_t v : {g.m, g.n, g.k, g.a.row_stride, g.a.col_stride, g.b.row_stride, g.b.col_stride}) {
            if (layout.wide_index) args.add(static_cast<cl_long>(v));
            else args.add(static_cast<cl_int>(v));
        }
        args.add(static_cast<cl_long>(g.a.offset), a_batch_stride, static_cast<cl_long>(g.b.offset), b_batch_stride, per_matrix,
                 FirstMatrix{}, fused);
        auto blocks = [](std::int64_t extent, int block) { return static_cast<std::size_t>((extent + block - 1) / block); };
        const std::size_t local[3] = {std::size_t(p.tn), std::size_t(p.tm), 1};
        launcher_.run_per_matrix(args, gemm_kernel_name(), count, blocks(g.m, p.block_m()) * blocks(g.n, p.block_n()) * local[0],
                                   local);
    }

private:
    void require_fp64(const ir::Gemm& g) const {
        if (g.dtype == DType::Float64 && !device_.fp64())
            fail<DeviceError>(describe(), " does not support float64 (the device lacks cl_khr_fp64): matmul of float64 ",
                              "tensors cannot run there; use float32, or run it on the host");
    }

    /// A contiguous copy of a gemm operand that BLAS cannot read in place (no unit stride), or
    /// null; `layout` becomes the copy's.
    BufferPtr blas_readable_copy(const ir::Gemm& g, const Buffer& operand, ir::MatrixLayout& layout, std::int64_t rows,
                                 std::int64_t cols) {
        if (ir::blas_operand(layout, rows, cols)) return nullptr;
        const ir::Kernel copy = ir::contiguous_copy(g.dtype, g.batch, rows, cols, layout);
        BufferPtr out = allocate(g.dtype, g.batch_count() * rows * cols);
        launch(*get_kernel(copy), {const_cast<Buffer*>(&operand), out.get()}, {});
        return out;
    }

    // Destroyed in reverse: the launcher (which waits for the queue and releases the
    // launches' events), the programs, the cached blocks, and last the queue and context.
    OpenCLDevice device_;
    BlockAllocator memory_;
    ProgramCache programs_;
    FusedCodeCache fused_code_;
    Launcher launcher_;

    KernelsByKey gemm_kernels_;  // by dtype, layout class, parameters and epilogue
    /// Whether a kernel fused into `g` can run: on the own GEMM kernel, computing in float64
    /// only where the device has it.
    bool fuses(const ir::Gemm& g, const ir::Kernel& k) const {
        return fuse_epilogues_ && uses_own_gemm(g) && device_.computes(g.dtype) && device_.computes(k);
    }
    /// The parameters attention `a` runs with here, if it can run as one kernel: float32 with
    /// int sizes (a batch of one axis at most; normalization merges the others where it can).
    std::optional<AttentionParams> attention_params(const ir::Attention& a) const {
        const ir::Gemm& g = a.scores;
        if (g.batch.size() > 1 || g.m > INT32_MAX || g.n > INT32_MAX) return std::nullopt;
        if (attention_params_override_)  // (local memory unchecked: NVIDIA allows more than it reports)
            return a.depth() <= 256 && a.value_depth() <= 256 ? attention_params_override_ : std::nullopt;
        return attention_params_for(a.depth(), a.value_depth(), g.batch_count() * ((g.m + 255) / 256), device_.traits(), device_.nvidia_cc());
    }
    bool fuse_attention_ = env_flag("LAZYTENSOR_FUSE_ATTENTION", true);
    std::optional<AttentionParams> attention_params_override_;
    KernelsByKey attention_kernels_;  // by score function, depths, parameters and layout
    bool fuse_epilogues_ = env_flag("LAZYTENSOR_GEMM_EPILOGUE", true);
    std::optional<bool> fuse_half_loads_;
    GemmChoice gemm_choice_ = GemmChoice::Auto;
    std::optional<GemmKernelParams> gemm_params_override_;
    bool gemm_wide_index_ = false;
    std::string clblast_tuned_;  // the CLBlast kernels given tuned parameters (clblast_tuning.hpp)
};

// ------------------------------------------------------------------------------------ registry

/// The backend of opencl:N, created on first use and kept for the process's lifetime (buffers
/// of static tensors may outlive any destruction order).
inline OpenCLBackend& opencl_backend(int index) {
    static std::mutex mutex;
    // Never destroyed, like the backends it points to: a static vector would be freed at exit,
    // leaving the backends unreachable (LeakSanitizer reported their kernel caches).
    static std::vector<OpenCLBackend*>& backends = *new std::vector<OpenCLBackend*>();
    const auto& ids = opencl_device_ids();
    if (ids.empty())
        fail<DeviceError>("device opencl:", index, " is not available: no OpenCL device was found (no OpenCL platform "
                          "is installed; on Debian, `apt-get install pocl-opencl-icd` gives one on the CPU)");
    if (index < 0 || static_cast<std::size_t>(index) >= ids.size())
        fail<DeviceError>("device opencl:", index, " does not exist: this machine has ", ids.size(), " OpenCL device",
                          ids.size() == 1 ? "" : "s", " (opencl:0 to opencl:", ids.size() - 1, ")");
    std::lock_guard<std::mutex> lock(mutex);
    if (backends.empty()) backends.resize(ids.size(), nullptr);
    auto& b = backends[static_cast<std::size_t>(index)];
    if (!b) b = new OpenCLBackend(index, ids[static_cast<std::size_t>(index)].first, ids[static_cast<std::size_t>(index)].second);
    return *b;
}

}  // namespace lazytensor::detail::opencl
