// SPDX-License-Identifier: MIT
// The scatter on host memory (Backend::scatter): the host backend's, and every other backend's
// fallback through host copies. One pass over the positions, in order: repeated positions keep
// the last value written, or sum in index order.
#pragma once

#include <cstdint>
#include <type_traits>

#include "../core/dtype.hpp"

namespace lazytensor::detail {

/// a + b as a scatter adds: integers wrap, bool or-s, half rounds once.
template <class T>
T scatter_sum(T a, T b) {
    if constexpr (std::is_same_v<T, bool>) {
        return a || b;
    } else if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    } else {
        return static_cast<T>(a + b);
    }
}

/// out[positions[j]] = values[j] (accumulate: out[...] = scatter_sum(out[...], values[j])) for
/// j < count, skipping positions outside [0, numel).
inline void scatter_elements(DType dtype, void* out, std::int64_t numel, const std::int64_t* positions, const void* values,
                             std::int64_t count, bool accumulate) {
    visit_dtype(dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* o = static_cast<T*>(out);
        const T* v = static_cast<const T*>(values);
        for (std::int64_t j = 0; j < count; ++j) {
            const std::int64_t p = positions[j];
            if (p < 0 || p >= numel) continue;
            o[p] = accumulate ? scatter_sum(o[p], v[j]) : v[j];
        }
    });
}

}  // namespace lazytensor::detail
