// SPDX-License-Identifier: MIT
// The definitions of fft_routines.hpp (documented there), compiled where the engine is: the only
// place that includes VkFFT.
//
// How a call becomes a VkFFT configuration (VkFFT's dimensions are innermost first, W H D, each
// contiguous inside the next, then numberBatches outside them):
//   - axes of length 1 are dropped (a transform of length 1 is the identity; VkFFT refuses it);
//   - runs of untransformed axes merge into one; the outermost run becomes numberBatches, an
//     inner one an omitted dimension (omitDimension: moved along, coalesced, not transformed);
//   - what remains must be at most three dimensions, and for R2C and C2R the real axis must be
//     the innermost (VkFFT's real transforms run along W only).
// Transforms are out of place and never write `in`. C2C and R2C: isInputFormatted and
// isOutputFormatted read `in` and write `out`, which is VkFFT's own buffer too (the intermediate
// of multi-dimensional transforms). C2R: `in` is copied on the device into a complex-sized
// temporary, VkFFT's buffer, which the inverse transforms in place and returns, real, to `out`
// (isInputFormatted with inverseReturnToInputBuffer, `out` as the "input" buffer: VkFFT's usual
// out-of-place real transform). Reading `in` and writing `out` directly (isOutputFormatted) gave
// wrong results on PoCL for n = 2^20 (a multi-upload real transform; n = 65536 was right), and
// the C2R inverse transforms in place where it has more than one stage.
//
// C2R runs with disableMergeSequencesR2C: merging two real sequences into one complex transform
// assumes Hermitian input, and gave wrong results on PoCL (relative error 0.2) for batches of an
// even count whose bins 0 and n/2 have imaginary parts, which irfftn ignores.
//
// Scale: VkFFT's normalize where `scale` is the inverse's 1/n; any other scale but 1 is one
// multiply over the output afterwards (a small kernel of ours).
#pragma once

#include "../../core/config.hpp"

#if LAZYTENSOR_VKFFT
#if defined(VKFFT_BACKEND) && VKFFT_BACKEND != 3
#error "lazytensor: LAZYTENSOR_VKFFT needs VkFFT's OpenCL backend (VKFFT_BACKEND 3)"
#endif
#ifndef VKFFT_BACKEND
#define VKFFT_BACKEND 3
#endif
#include <vkFFT.h>
#endif

#include <cmath>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/lru_cache.hpp"
#include "cl_api.hpp"
#include "fft_routines.hpp"
#include "launch.hpp"
#include "../compile_log.hpp"
#include "programs.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: backend/opencl/fft_routines_definitions.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

namespace lazytensor::detail::opencl {

namespace fft_routines_detail {

/// A call as VkFFT dimensions (see the file's comment).
struct VkfftLayout {
    int dims = 0;                         // FFTdim, 1 to 3
    std::uint64_t size[3] = {1, 1, 1};    // W H D, real-space lengths
    bool omit[3] = {false, false, false};  // not transformed (untransformed axes moved as one)
    std::uint64_t batches = 1;            // the untransformed axes outside every dimension
};

/// The VkFFT layout of `f` in `layout`; the empty string, or why VkFFT cannot run it.
inline std::string vkfft_layout(const ir::Fft& f, VkfftLayout& layout) {
    const int d = static_cast<int>(f.shape.size());
    std::vector<bool> transformed(static_cast<std::size_t>(d), false);
    for (int a : f.axes) transformed[static_cast<std::size_t>(a)] = true;
    const int real_axis = f.kind == FftKind::C2C ? -1 : f.axes.back();
    for (int i = 0; i < d; ++i)
        if (f.shape[static_cast<std::size_t>(i)] == 0) return "an empty axis";
    if (real_axis >= 0) {
        if (f.shape[static_cast<std::size_t>(real_axis)] == 1) return "a real transform of length 1 (VkFFT has no length 1)";
        for (int i = real_axis + 1; i < d; ++i)
            if (f.shape[static_cast<std::size_t>(i)] != 1)
                return concat("the real transform's axis ", real_axis, " is not the innermost (VkFFT runs real transforms along it only)");
    }
    std::vector<std::pair<std::uint64_t, bool>> groups;  // innermost first: length, transformed
    for (int i = d - 1; i >= 0; --i) {
        const auto n = static_cast<std::uint64_t>(f.shape[static_cast<std::size_t>(i)]);
        if (n == 1) continue;  // the identity either way
        if (transformed[static_cast<std::size_t>(i)]) groups.emplace_back(n, true);
        else if (!groups.empty() && !groups.back().second) groups.back().first *= n;
        else groups.emplace_back(n, false);
    }
    if (!groups.empty() && !groups.back().second) {
        layout.batches = groups.back().first;
        groups.pop_back();
    }
    if (groups.empty()) return "no transformed axis longer than 1 (the result is the input, scaled)";
    if (groups.size() > 3)
        return concat("the transformed axes and the untransformed ones between them make ", groups.size(),
                      " dimensions (VkFFT has three)");
    layout.dims = static_cast<int>(groups.size());
    for (std::size_t i = 0; i < groups.size(); ++i) {
        layout.size[i] = groups[i].first;
        layout.omit[i] = !groups[i].second;
    }
    return "";
}

/// The product of the transformed lengths (the n of the inverse's 1/n).
inline double transform_length(const ir::Fft& f) {
    double n = 1;
    for (int a : f.axes) n *= static_cast<double>(f.shape[static_cast<std::size_t>(a)]);
    return n;
}

/// Whether `scale` is the inverse's 1/n, which VkFFT's normalize applies.
inline bool normalizes(const ir::Fft& f) {
    if (f.forward()) return false;
    const double n = transform_length(f);
    return std::abs(f.scale * n - 1) <= 1e-13;
}

/// Why `f` does not run through VkFFT on `device` under `choice`; empty when it does.
inline std::string fallback_reason(const ir::Fft& f, const OpenCLDevice& device, FftChoice choice, VkfftLayout& layout) {
#if LAZYTENSOR_VKFFT
    if (choice == FftChoice::Host) return "LAZYTENSOR_OPENCL_FFT=host";
    // Measured on PoCL (2 shared cores, float, after the first call): c2c 2^20 took 22 ms
    // through VkFFT against 17 through host memory (copies included), r2c 1024^2 8.3 against
    // 2.6, 256 c2c of 1024 1.6 against 0.6. And an r2c of 131072 crashed PoCL 3.1 (a segfault
    // in VkFFT's kernel, work-groups of 4096 and 1 MiB of local memory being what PoCL reports).
    if (choice == FftChoice::Auto && device.kind() == "cpu")
        return "a CPU device, where the host engine runs faster than VkFFT's kernels (LAZYTENSOR_OPENCL_FFT=vkfft forces VkFFT)";
    if (f.dtype == DType::Float64 && !device.fp64()) return concat(device.describe(), " has no float64");
    return vkfft_layout(f, layout);
#else
    (void)f;
    (void)device;
    (void)choice;
    (void)layout;
    return "this build has no VkFFT (LAZYTENSOR_VKFFT; Debian: libvkfft-dev)";
#endif
}

/// The program that multiplies the n elements of x by s.
inline std::string scale_source(DType t) {
    const std::string T = t == DType::Float64 ? "double" : "float";
    return std::string(t == DType::Float64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") +
           "__kernel void lt_fft_scale(__global " + T + "* x, " + T + " s, long n) {\n"
           "    const long i = get_global_id(0);\n"
           "    if (i < n) x[i] *= s;\n"
           "}\n";
}

#if LAZYTENSOR_VKFFT

/// A VkFFT result's name (VKFFT_ERROR_...), with its number.
inline std::string vkfft_result_name(VkFFTResult r) {
    const int code = static_cast<int>(r);
    const char* name = nullptr;
    switch (r) {
        case VKFFT_ERROR_MALLOC_FAILED: name = "VKFFT_ERROR_MALLOC_FAILED"; break;
        case VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER: name = "VKFFT_ERROR_INSUFFICIENT_CODE_BUFFER"; break;
        case VKFFT_ERROR_INSUFFICIENT_TEMP_BUFFER: name = "VKFFT_ERROR_INSUFFICIENT_TEMP_BUFFER"; break;
        case VKFFT_ERROR_PLAN_NOT_INITIALIZED: name = "VKFFT_ERROR_PLAN_NOT_INITIALIZED"; break;
        case VKFFT_ERROR_INVALID_DEVICE: name = "VKFFT_ERROR_INVALID_DEVICE"; break;
        case VKFFT_ERROR_INVALID_QUEUE: name = "VKFFT_ERROR_INVALID_QUEUE"; break;
        case VKFFT_ERROR_INVALID_CONTEXT: name = "VKFFT_ERROR_INVALID_CONTEXT"; break;
        case VKFFT_ERROR_EMPTY_buffer: name = "VKFFT_ERROR_EMPTY_buffer"; break;
        case VKFFT_ERROR_UNSUPPORTED_RADIX: name = "VKFFT_ERROR_UNSUPPORTED_RADIX"; break;
        case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH: name = "VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH"; break;
        case VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C: name = "VKFFT_ERROR_UNSUPPORTED_FFT_LENGTH_R2C"; break;
        case VKFFT_ERROR_UNSUPPORTED_FFT_OMIT: name = "VKFFT_ERROR_UNSUPPORTED_FFT_OMIT"; break;
        case VKFFT_ERROR_FAILED_TO_ALLOCATE: name = "VKFFT_ERROR_FAILED_TO_ALLOCATE"; break;
        case VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM: name = "VKFFT_ERROR_FAILED_TO_CREATE_PROGRAM"; break;
        case VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM: name = "VKFFT_ERROR_FAILED_TO_COMPILE_PROGRAM"; break;
        case VKFFT_ERROR_FAILED_TO_CREATE_PIPELINE: name = "VKFFT_ERROR_FAILED_TO_CREATE_PIPELINE"; break;
        case VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG: name = "VKFFT_ERROR_FAILED_TO_SET_KERNEL_ARG"; break;
        case VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL: name = "VKFFT_ERROR_FAILED_TO_LAUNCH_KERNEL"; break;
        default: break;
    }
    return name ? concat(name, " (", code, ")") : concat("VkFFT result ", code);
}

/// One VkFFT application and what its configuration points to (VkFFT keeps the pointers).
struct VkfftPlan {
    VkFFTApplication app{};
    cl_device_id device = nullptr;
    cl_context context = nullptr;
    cl_command_queue queue = nullptr;
    cl_mem buffer = nullptr, input = nullptr, output = nullptr;  // this launch's (set before each)
    std::uint64_t buffer_bytes = 0, input_bytes = 0, output_bytes = 0;
    bool initialized = false;

    VkfftPlan() = default;
    VkfftPlan(const VkfftPlan&) = delete;
    VkfftPlan& operator=(const VkfftPlan&) = delete;
    ~VkfftPlan() {
        if (initialized) deleteVkFFT(&app);
    }
};

#endif

}  // namespace fft_routines_detail

struct FftPlanCache {
#if LAZYTENSOR_VKFFT
    LruCache<fft_routines_detail::VkfftPlan> plans{kernel_cache_capacity_from_env()};
#else
    LruCache<int> plans{1};
#endif
};

LAZYTENSOR_ENGINE_API bool FftRoutines::uses_vkfft(const ir::Fft& call) const {
    fft_routines_detail::VkfftLayout layout;
    return fft_routines_detail::fallback_reason(call, c_.device, choice_, layout).empty();
}

LAZYTENSOR_ENGINE_API std::string FftRoutines::routine(const ir::Fft& call) const {
    using namespace fft_routines_detail;
    VkfftLayout l;
    const std::string why = fallback_reason(call, c_.device, choice_, l);
    if (!why.empty())
        return concat("the host FFT engine through host copies (", c_.device.describe(), "): ", why);
    std::string dims;
    for (int i = 0; i < l.dims; ++i) dims += concat(i ? " x " : "", l.size[i], l.omit[i] ? " (moved)" : "");
    std::string s = concat("VkFFT ", fft_kind_name(call.kind), " on ", c_.device.describe(), ": ", dims);
    if (l.batches > 1) s += concat(", ", l.batches, " batches");
    if (normalizes(call)) s += ", normalized";
    else if (call.scale != 1) s += concat(", then scaled by ", call.scale);
    return s;
}

LAZYTENSOR_ENGINE_API bool FftRoutines::built_with_vkfft() { return LAZYTENSOR_VKFFT != 0; }

LAZYTENSOR_ENGINE_API std::size_t FftRoutines::cached_plans() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return plans_ ? plans_->plans.size() : 0;
}

LAZYTENSOR_ENGINE_API void FftRoutines::clear_cache() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (plans_) plans_->plans.clear();
}

LAZYTENSOR_ENGINE_API void FftRoutines::run(const ir::Fft& call, const Buffer& in, Buffer& out) {
    using namespace fft_routines_detail;
    if (call.output_count() == 0) return;
    VkfftLayout l;
    if (!fallback_reason(call, c_.device, choice_, l).empty()) {
        c_.backend.Backend::fft(call, in, out);
        return;
    }
#if LAZYTENSOR_VKFFT
    const bool wide = call.dtype == DType::Float64;
    const std::uint64_t real_size = wide ? 8 : 4;
    const bool normalize = normalizes(call);
    // VkFFT's buffer: `out`, except for C2R (see the file's comment).
    const std::int64_t complex_count = 2 * numel(call.complex_shape());
    BufferPtr temporary;
    if (call.kind == FftKind::C2R) temporary = c_.backend.allocate(call.dtype, complex_count);
    const Buffer& intermediate = temporary ? *temporary : out;

    std::lock_guard<std::mutex> lock(mutex_);
    if (!plans_) plans_ = std::make_shared<FftPlanCache>();
    plans_->plans.set_capacity(c_.backend.cache_capacity());
    std::string axes;
    for (int a : call.axes) axes += concat(a, ',');
    const std::string key = concat(fft_kind_name(call.kind), call.inverse, ' ', call.dtype, ' ', call.shape, ' ', axes, ' ', normalize);
    std::shared_ptr<VkfftPlan> plan = plans_->plans.find(key);
    const bool fresh = !plan;
    if (fresh) plan = std::make_shared<VkfftPlan>();
    plan->buffer = static_cast<cl_mem>(intermediate.handle());
    plan->input = static_cast<cl_mem>(call.kind == FftKind::C2R ? out.handle() : in.handle());
    plan->output = static_cast<cl_mem>(out.handle());
    plan->queue = c_.device.queue();
    auto failure = [&](const char* what, VkFFTResult r) {
        std::string described = ir::to_string(call);  // "    fft ...\n"
        described = described.substr(described.find_first_not_of(' '));
        while (!described.empty() && described.back() == '\n') described.pop_back();
        fail<BackendError>("VkFFT could not ", what, " an ", described, " on ", c_.device.describe(), ": ", vkfft_result_name(r));
    };
    if (fresh) {
        plan->device = c_.device.id();
        plan->context = c_.device.context();
        const std::uint64_t w = l.size[0], wc = call.kind == FftKind::C2C ? w : w / 2 + 1;
        VkFFTConfiguration config{};
        config.FFTdim = static_cast<std::uint64_t>(l.dims);
        for (int i = 0; i < 3; ++i) {
            config.size[i] = l.size[i];
            config.omitDimension[i] = l.omit[i] ? 1 : 0;
        }
        config.numberBatches = l.batches;
        config.device = &plan->device;
        config.context = &plan->context;
        config.commandQueue = &plan->queue;
        config.doublePrecision = wide ? 1 : 0;
        config.performR2C = call.kind == FftKind::C2C ? 0 : 1;
        config.disableMergeSequencesR2C = call.kind == FftKind::C2R ? 1 : 0;
        config.normalize = normalize ? 1 : 0;
        if (call.forward()) config.makeForwardPlanOnly = 1;
        else config.makeInversePlanOnly = 1;
        // Element strides of the W, H and D dimensions' next elements in each buffer (complex
        // elements where complex, real numbers where real).
        const bool c2r = call.kind == FftKind::C2R;
        const std::uint64_t in_w = call.kind == FftKind::C2C ? wc : w, out_w = wc;
        config.bufferStride[0] = wc;
        config.inputBufferStride[0] = in_w;
        config.outputBufferStride[0] = out_w;
        for (int i = 1; i < 3; ++i) {
            config.bufferStride[i] = config.bufferStride[i - 1] * l.size[i];
            config.inputBufferStride[i] = config.inputBufferStride[i - 1] * l.size[i];
            config.outputBufferStride[i] = config.outputBufferStride[i - 1] * l.size[i];
        }
        plan->buffer_bytes = static_cast<std::uint64_t>(complex_count) * real_size;
        plan->input_bytes = static_cast<std::uint64_t>(c2r ? call.output_count() : call.input_count()) * real_size;
        plan->output_bytes = static_cast<std::uint64_t>(call.output_count()) * real_size;
        config.isInputFormatted = 1;
        config.bufferSize = &plan->buffer_bytes;
        config.inputBufferSize = &plan->input_bytes;
        config.buffer = &plan->buffer;
        config.inputBuffer = &plan->input;
        if (c2r) {
            config.inverseReturnToInputBuffer = 1;
        } else {
            config.isOutputFormatted = 1;
            config.outputBufferSize = &plan->output_bytes;
            config.outputBuffer = &plan->output;
        }
        if (static_cast<std::uint64_t>(complex_count) >= (std::uint64_t(1) << 31)) config.useUint64 = 1;
        // VkFFT builds the plan's programs here: reported as a library's build (library_ms).
        BuildReport report(c_.device.device(), CompileEvent::Kind::Library,
                           [&] { return concat("VkFFT plan: ", fft_kind_name(call.kind), " ", call.dtype, call.shape); });
        const VkFFTResult r = initializeVkFFT(&plan->app, config);
        if (r != VKFFT_SUCCESS) {
            c_.backend.add_build_time(CompileEvent::Kind::Library, report.failed(concat("VkFFT: ", vkfft_result_name(r))));
            failure("plan", r);  // initializeVkFFT has freed what it made
        }
        c_.backend.add_build_time(CompileEvent::Kind::Library, report.finished(CompileEvent::Source::Compiler));
        plan->initialized = true;
        plan = plans_->plans.insert(key, plan).first;
    }
    if (call.kind == FftKind::C2R)
        check(clEnqueueCopyBuffer(c_.device.queue(), static_cast<cl_mem>(in.handle()), plan->buffer, 0, 0,
                                  static_cast<std::size_t>(plan->buffer_bytes), 0, nullptr, nullptr),
              "clEnqueueCopyBuffer", concat("copying an irfft's operand on ", c_.device.describe()));
    VkFFTLaunchParams launch{};
    launch.commandQueue = &plan->queue;
    launch.buffer = &plan->buffer;
    launch.inputBuffer = &plan->input;
    if (call.kind != FftKind::C2R) launch.outputBuffer = &plan->output;
    const VkFFTResult r = VkFFTAppend(&plan->app, call.forward() ? -1 : 1, &launch);
    if (r != VKFFT_SUCCESS) failure("run", r);
    if (!normalize && call.scale != 1) {
        const std::shared_ptr<ProgramOwner> program = c_.programs.build(scale_source(call.dtype));
        const KernelOwner kernel = c_.programs.make_kernel(*program, "lt_fft_scale");
        const auto n = static_cast<std::size_t>(call.output_count());
        if (wide) c_.launcher.run(kernel, "lt_fft_scale", n, 0, out, cl_double(call.scale), cl_long(n));
        else c_.launcher.run(kernel, "lt_fft_scale", n, 0, out, cl_float(static_cast<float>(call.scale)), cl_long(n));
    }
#endif
}

}  // namespace lazytensor::detail::opencl
