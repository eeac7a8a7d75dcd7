// The instruction set of the host backend's SIMD batches, chosen in one place.
#pragma once

#include "../../core/config.hpp"
LAZYTENSOR_XSIMD_WARNINGS_OFF
#include <xsimd/xsimd.hpp>
LAZYTENSOR_XSIMD_WARNINGS_ON

namespace lazytensor::detail::host {

// xsimd's best for the target, except in an unoptimized GCC build (-O0, CMake's Debug) with
// AVX-512BW: there GCC defines some AVX-512BW intrinsics as macros that xsimd 8's select cannot
// compile with, so those builds use AVX-512DQ's kernels (the same 512-bit registers).
#if XSIMD_WITH_AVX512BW && defined(__GNUC__) && !defined(__clang__) && !defined(__OPTIMIZE__)
using simd_arch = xsimd::avx512dq;
#else
using simd_arch = xsimd::default_arch;
#endif

}  // namespace lazytensor::detail::host
