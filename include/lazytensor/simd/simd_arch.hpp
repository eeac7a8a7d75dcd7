// SPDX-License-Identifier: MIT
// The instruction set of the host backend's SIMD batches, chosen in one place.
#pragma once

#include "../core/config.hpp"
#include <type_traits>

LAZYTENSOR_XSIMD_WARNINGS_OFF
#include <xsimd/xsimd.hpp>
#if XSIMD_WITH_AVX512F
#include <immintrin.h>
#endif
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

#if XSIMD_WITH_AVX512F
inline constexpr bool simd_is_avx512 = std::is_base_of_v<xsimd::avx512f, simd_arch>;
#else
inline constexpr bool simd_is_avx512 = false;
#endif

/// x * y + z in one rounding. xsimd 8 has no AVX-512 fma: its generic x * y + z is left to the
/// compiler to contract, which clang does not do by default and GCC does only from -O2 on (a
/// -O1 build computed float tanh to 5.4 ulp instead of 4.9).
template <class T>
xsimd::batch<T, simd_arch> multiply_add(const xsimd::batch<T, simd_arch>& x, const xsimd::batch<T, simd_arch>& y,
                                        const xsimd::batch<T, simd_arch>& z) {
#if XSIMD_WITH_AVX512F
    if constexpr (simd_is_avx512 && std::is_same_v<T, float>) return _mm512_fmadd_ps(x, y, z);
    if constexpr (simd_is_avx512 && std::is_same_v<T, double>) return _mm512_fmadd_pd(x, y, z);
#endif
    return xsimd::fma(x, y, z);
}

}  // namespace lazytensor::detail::host
