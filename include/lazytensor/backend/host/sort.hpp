// SPDX-License-Identifier: MIT
// Row sorts on the host, for sort, argsort and topk: every row of a contiguous [rows, n]
// buffer, in parallel over rows, stably (ties keep their order), NaN after every number in
// ascending order and before them in descending order (PyTorch's order); -0 equals +0.
//
// Every dtype sorts (key, position) pairs of 64-bit integers that order as its values do (the
// OpenCL sort's keys, backend/opencl/sort.hpp), so the sort itself is compiled once, not once
// per dtype, and positions break ties as a stable sort would.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"
#include "thread_pool.hpp"

namespace lazytensor::detail::host {

/// An integer that orders as `v` does: floats with the sign bit flipped (every bit for negative
/// values), -0 as +0, every NaN above +inf; integers with the sign bit flipped.
template <class S>
std::uint64_t sort_key(S v) {
    if constexpr (is_floating_v<S>) {
        using F = std::conditional_t<std::is_same_v<S, double>, double, float>;  // half as float
        using U = std::conditional_t<std::is_same_v<F, double>, std::uint64_t, std::uint32_t>;
        F x = static_cast<F>(v);
        if (x != x) x = std::numeric_limits<F>::quiet_NaN();
        if (x == F(0)) x = F(0);
        U u;
        std::memcpy(&u, &x, sizeof u);
        constexpr U sign = U(1) << (8 * sizeof(U) - 1);
        return (u & sign) ? U(~u) : U(u | sign);
    } else if constexpr (std::is_signed_v<S>) {
        return static_cast<std::uint64_t>(static_cast<std::int64_t>(v)) ^ (std::uint64_t(1) << 63);
    } else {
        return static_cast<std::uint64_t>(v);
    }
}

/// Orders the (key, position) pairs of one row: all of them, or the first k.
inline void sort_pairs(std::vector<std::pair<std::uint64_t, std::int64_t>>& items, std::int64_t k) {
    if (k == static_cast<std::int64_t>(items.size())) std::sort(items.begin(), items.end());
    else std::partial_sort(items.begin(), items.begin() + k, items.end());
}

/// The first k of each row of `in` ([rows, n], storage type S) in order, into values and
/// indices ([rows, k]).
template <class S>
void sort_rows(const S* in, S* values, std::int64_t* indices, std::int64_t rows, std::int64_t n, std::int64_t k,
               bool descending, ThreadPool& pool) {
    pool.parallel_for(rows, [&](std::int64_t r, int) {
        const S* row = in + r * n;
        std::vector<std::pair<std::uint64_t, std::int64_t>> items(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) {
            const std::uint64_t key = sort_key(row[i]);
            items[static_cast<std::size_t>(i)] = {descending ? ~key : key, i};
        }
        sort_pairs(items, k);
        for (std::int64_t i = 0; i < k; ++i) {
            const std::int64_t j = items[static_cast<std::size_t>(i)].second;
            values[r * k + i] = row[j];
            indices[r * k + i] = j;
        }
    });
}

}  // namespace lazytensor::detail::host
