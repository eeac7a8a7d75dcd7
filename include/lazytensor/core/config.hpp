// SPDX-License-Identifier: MIT
// Configuration macros, with their defaults, in one place. Define them before including
// <lazytensor.hpp> to change them. Environment variables are read at run time (runtime/device.hpp).
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>

#include "env.hpp"

/// Lanes the host interpreter evaluates per instruction at once (a multiple of the SIMD width).
#ifndef LAZYTENSOR_HOST_BLOCK
#define LAZYTENSOR_HOST_BLOCK 1024
#endif

/// Kernels with fewer domain points than this run on the calling thread alone.
#ifndef LAZYTENSOR_HOST_PARALLEL_MIN
#define LAZYTENSOR_HOST_PARALLEL_MIN 32768
#endif

/// Outputs of at least this many bytes are written with non-temporal (streaming) stores on the
/// host: they would not stay in cache anyway, and streaming saves reading them first.
#ifndef LAZYTENSOR_HOST_STREAM_MIN
#define LAZYTENSOR_HOST_STREAM_MIN (std::int64_t(16) << 20)
#endif

/// The OpenCL backend is compiled in when LAZYTENSOR_OPENCL is 1: then link the OpenCL ICD
/// loader (CMake: the lazytensor::lazytensor target does both). LAZYTENSOR_NO_OPENCL forces a
/// host-only library whatever else is defined (and needs no OpenCL headers or libraries).
#if defined(LAZYTENSOR_NO_OPENCL)
#undef LAZYTENSOR_OPENCL
#define LAZYTENSOR_OPENCL 0
#elif !defined(LAZYTENSOR_OPENCL)
#define LAZYTENSOR_OPENCL 0
#endif

/// With LAZYTENSOR_CLBLAST 1 (and LAZYTENSOR_OPENCL), float and double matrix products on OpenCL
/// devices may run through CLBlast (where LAZYTENSOR_OPENCL_GEMM chooses it): link libclblast
/// (CMake does when CLBlast is found). Without it (or with LAZYTENSOR_NO_CLBLAST), they all run
/// on lazytensor's own GEMM kernel (backend/opencl/gemm_kernel.hpp).
#if defined(LAZYTENSOR_NO_CLBLAST) || !LAZYTENSOR_OPENCL
#undef LAZYTENSOR_CLBLAST
#define LAZYTENSOR_CLBLAST 0
#elif !defined(LAZYTENSOR_CLBLAST)
#define LAZYTENSOR_CLBLAST 0
#endif

/// With LAZYTENSOR_VKFFT 1 (and LAZYTENSOR_OPENCL), FFTs on OpenCL devices run through VkFFT
/// (Debian: libvkfft-dev, the header vkFFT.h; backend/opencl/fft_routines.hpp). Only the unit
/// holding the engine's definitions includes it: CMake defines it for lazytensor::runtime when it
/// finds vkFFT.h, so programs built against the runtime get it; a header-only program defines it
/// itself (in every unit alike). Without it (or with LAZYTENSOR_NO_VKFFT), FFTs on OpenCL devices
/// run on the host engine through host memory.
#if defined(LAZYTENSOR_NO_VKFFT) || !LAZYTENSOR_OPENCL
#undef LAZYTENSOR_VKFFT
#define LAZYTENSOR_VKFFT 0
#elif !defined(LAZYTENSOR_VKFFT)
#define LAZYTENSOR_VKFFT 0
#endif

/// With LAZYTENSOR_LAPACK 1, lt::linalg's decompositions and solvers run LAPACK through LAPACKE
/// (Debian: liblapacke-dev; link lapacke, CMake does when it finds it). Without it (or with
/// LAZYTENSOR_NO_LAPACK) they throw an Error that says so where the expression is written.
#if defined(LAZYTENSOR_NO_LAPACK)
#undef LAZYTENSOR_LAPACK
#define LAZYTENSOR_LAPACK 0
#elif !defined(LAZYTENSOR_LAPACK)
#define LAZYTENSOR_LAPACK 0
#endif

/// With LAZYTENSOR_MPI 1, lt::dist connects the ranks an MPI launcher started, through MPI
/// (dist/mpi.hpp: compile and link with MPI; the CMake target lazytensor::distributed does).
/// Without it, a program is a group of one, and started by a launcher, lt::dist::init says so.
/// Only the program's own units need it: the engine holds no MPI.
#if !defined(LAZYTENSOR_MPI)
#define LAZYTENSOR_MPI 0
#endif

// A hot SIMD loop whose callees (xsimd's exp, tanh, ...) must be inlined into it whatever the
// user's optimization level: -O2 inlines less than -O3, and a call per batch spills every vector
// register (all are caller-saved), which made the compiled loop 2.3 times slower (issue 17).
// Nothing at -O0, where nothing is inlined and compile time matters more.
#if defined(__GNUC__) && defined(__OPTIMIZE__)
#define LAZYTENSOR_HOT_LOOP __attribute__((flatten))
#else
#define LAZYTENSOR_HOT_LOOP
#endif

/// GCC 12 reports its own AVX-512 intrinsics (_mm512_undefined_*) as uninitialized once they are
/// inlined (GCC bug 105593): the host backend's files that inline xsimd code are wrapped in these.
#if defined(__GNUC__) && !defined(__clang__)
#define LAZYTENSOR_XSIMD_WARNINGS_OFF                                   \
    _Pragma("GCC diagnostic push") _Pragma("GCC diagnostic ignored \"-Wuninitialized\"") \
        _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")
#define LAZYTENSOR_XSIMD_WARNINGS_ON _Pragma("GCC diagnostic pop")
#else
#define LAZYTENSOR_XSIMD_WARNINGS_OFF
#define LAZYTENSOR_XSIMD_WARNINGS_ON
#endif

namespace lazytensor {
namespace detail {
inline std::atomic<bool>& static_kernels_flag() {
    static std::atomic<bool> enabled{env_flag("LAZYTENSOR_STATIC_KERNELS", true)};
    return enabled;
}
inline std::atomic<int>& debug_level_ref() {
    static std::atomic<int> level{static_cast<int>(env_int("LAZYTENSOR_DEBUG", 0, 0, 3, "a debug level"))};
    return level;
}
}  // namespace detail

/// 0 silent; 1 prints each schedule; 2 adds kernel IR; 3 adds each kernel's time. Starts at
/// LAZYTENSOR_DEBUG.
inline int debug_level() { return detail::debug_level_ref().load(); }
inline void set_debug_level(int level) { detail::debug_level_ref().store(level); }

/// Whether element-wise float expressions run as compiled loops (ir/static_kernel.hpp) rather
/// than interpreted. On by default; LAZYTENSOR_STATIC_KERNELS=0 turns it off.
inline bool static_kernels_enabled() { return detail::static_kernels_flag().load(); }
inline void set_static_kernels_enabled(bool on) { detail::static_kernels_flag().store(on); }
}  // namespace lazytensor
