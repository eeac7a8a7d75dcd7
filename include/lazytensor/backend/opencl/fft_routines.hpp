// SPDX-License-Identifier: MIT
// Backend::fft on an OpenCL device through VkFFT (MIT, header-only; Debian libvkfft-dev), where
// the build has it (LAZYTENSOR_VKFFT, core/config.hpp) and a VkFFT configuration expresses the
// call's layout: the transformed axes, with the axes between them, make at most three
// dimensions (the untransformed ones inside the innermost transformed axis run as an omitted,
// coalesced dimension; those outside the outermost one are VkFFT's batch), and a real
// transform's axis is the innermost one longer than 1. Everything else, and double on a device
// without fp64, goes through host memory (Backend::fft); routine() says which path a call takes.
//
// LAZYTENSOR_OPENCL_FFT chooses: auto (VkFFT on GPUs and accelerators; on CPU devices the host
// engine through host memory, which on PoCL here ran 1.3 to 3 times faster than VkFFT's kernels),
// vkfft (wherever it can run) or host.
//
// VkFFT is a 32,768-line header: only the units that hold the engine's definitions see it
// (fft_routines_definitions.hpp), so the class here has the same layout whether the engine was
// built with VkFFT or not, and programs built against lazytensor::runtime compile without it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "../../core/config.hpp"
#include "../../core/engine_mode.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/fft.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

/// The VkFFT plans of one device (defined where the engine is).
struct FftPlanCache;

enum class FftChoice { Auto, VkFFT, Host };

/// LAZYTENSOR_OPENCL_FFT: auto (default), vkfft or host; anything else is a ValueError.
inline FftChoice fft_choice_from_env() {
    return static_cast<FftChoice>(env_choice("LAZYTENSOR_OPENCL_FFT", {"auto", "vkfft", "host"}, 0,
                                             "auto, vkfft or host (the host engine through host memory)"));
}

class FftRoutines {
public:
    explicit FftRoutines(RoutineContext context) : c_(context) {}

    /// Runs `call` from `in` into `out` (both contiguous) with VkFFT where it can, else through
    /// host memory (Backend::fft).
    LAZYTENSOR_ENGINE_API void run(const ir::Fft& call, const Buffer& in, Buffer& out);
    /// How run() runs `call`: VkFFT's configuration, or the fallback and why.
    LAZYTENSOR_ENGINE_API std::string routine(const ir::Fft& call) const;
    /// Whether run() runs `call` through VkFFT (else through host memory).
    LAZYTENSOR_ENGINE_API bool uses_vkfft(const ir::Fft& call) const;
    /// Plans held (bounded like the kernel cache, least recently used first out).
    LAZYTENSOR_ENGINE_API std::size_t cached_plans() const;
    /// Forgets the plans (with the kernel cache).
    LAZYTENSOR_ENGINE_API void clear_cache();
    /// Whether the engine was built with VkFFT (LAZYTENSOR_VKFFT).
    LAZYTENSOR_ENGINE_API static bool built_with_vkfft();

    /// Which FFT runs transforms (LAZYTENSOR_OPENCL_FFT; Auto: by device kind).
    FftChoice choice() const { return choice_; }
    /// Chooses the FFT for the transforms run from now on (VkFFT in a build without it is a
    /// DeviceError).
    void set_choice(FftChoice choice) {
        if (choice == FftChoice::VkFFT && !built_with_vkfft())
            fail<DeviceError>("VkFFT cannot run FFTs on ", c_.device.describe(), ": this build has LAZYTENSOR_VKFFT off");
        choice_ = choice;
    }

private:
    RoutineContext c_;
    mutable std::mutex mutex_;             // guards plans_ and each plan's use (VkFFT keeps its buffers in the plan)
    std::shared_ptr<FftPlanCache> plans_;  // made on first use
    FftChoice choice_ = fft_choice_from_env();
};

}  // namespace lazytensor::detail::opencl

#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "fft_routines_definitions.hpp"
#endif
