// SPDX-License-Identifier: MIT
// Philox 4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011): a
// counter-based generator. The value for a counter depends on nothing else, so every backend,
// thread count and evaluation order gives the same numbers. lazytensor uses the counter
// (c0, c1) = the 64-bit element index, (c2, c3) = 0, the key = the 64-bit seed, and returns
// the first two output words (w0 in the low half).
//
// The host function and the OpenCL C function below are the same algorithm, kept side by side.
#pragma once

#include <cstdint>

namespace lazytensor::detail {

inline constexpr std::uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;

/// The full Philox 4x32-10 block function (tests check it against the published vectors).
inline void philox4x32_10(std::uint32_t c[4], std::uint32_t k0, std::uint32_t k1) {
    for (int round = 0; round < 10; ++round) {
        if (round) {
            k0 += kPhiloxW0;
            k1 += kPhiloxW1;
        }
        const std::uint64_t p0 = std::uint64_t(kPhiloxM0) * c[0], p1 = std::uint64_t(kPhiloxM1) * c[2];
        const std::uint32_t n0 = static_cast<std::uint32_t>(p1 >> 32) ^ c[1] ^ k0;
        const std::uint32_t n2 = static_cast<std::uint32_t>(p0 >> 32) ^ c[3] ^ k1;
        c[1] = static_cast<std::uint32_t>(p1);
        c[3] = static_cast<std::uint32_t>(p0);
        c[0] = n0;
        c[2] = n2;
    }
}

/// 64 random bits for `counter` under `key`.
inline std::uint64_t philox_bits(std::uint64_t counter, std::uint64_t key) {
    std::uint32_t c[4] = {static_cast<std::uint32_t>(counter), static_cast<std::uint32_t>(counter >> 32), 0, 0};
    philox4x32_10(c, static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32));
    return std::uint64_t(c[0]) | (std::uint64_t(c[1]) << 32);
}

/// Key derivation (lt::Key, frontend/random.hpp): the first two output words of the Philox block
/// for the counter (data, tag, purpose) under `key`. Draws from seeds use counters whose upper
/// half (c2, c3) is 0, and every `purpose` is nonzero, so a derived key is never one of the
/// words a seed's draws are made of; distinct (data, tag, purpose) give distinct counters and,
/// Philox being a pseudorandom function of its counter, unrelated 64-bit keys.
inline std::uint64_t philox_derive(std::uint64_t key, std::uint64_t data, std::uint32_t tag, std::uint32_t purpose) {
    std::uint32_t c[4] = {static_cast<std::uint32_t>(data), static_cast<std::uint32_t>(data >> 32), tag, purpose};
    philox4x32_10(c, static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32));
    return std::uint64_t(c[0]) | (std::uint64_t(c[1]) << 32);
}

/// philox_bits in OpenCL C, as `ulong lt_philox(ulong counter, ulong key)`.
inline const char* philox_opencl_source() {
    return "inline ulong lt_philox(ulong counter, ulong key) {\n"
           "    uint c0 = (uint)counter, c1 = (uint)(counter >> 32), c2 = 0u, c3 = 0u;\n"
           "    uint k0 = (uint)key, k1 = (uint)(key >> 32);\n"
           "    for (int round = 0; round < 10; ++round) {\n"
           "        if (round) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }\n"
           "        const uint hi0 = mul_hi(0xD2511F53u, c0), lo0 = 0xD2511F53u * c0;\n"
           "        const uint hi1 = mul_hi(0xCD9E8D57u, c2), lo1 = 0xCD9E8D57u * c2;\n"
           "        const uint n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;\n"
           "        c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;\n"
           "    }\n"
           "    return (ulong)c0 | ((ulong)c1 << 32);\n"
           "}\n";
}

}  // namespace lazytensor::detail
