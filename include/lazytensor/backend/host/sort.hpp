// Row sorts on the host, for sort, argsort and topk: every row of a contiguous [rows, n]
// buffer, in parallel over rows, stably (ties keep their order), NaN after every number in
// ascending order and before them in descending order (PyTorch's order); -0 equals +0.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "../../core/dtype.hpp"
#include "thread_pool.hpp"

namespace lazytensor::detail::host {

/// a before b in ascending order: NaN is greater than every number.
template <class V>
bool sorts_before(V a, V b) {
    if constexpr (std::is_floating_point_v<V>) {
        if (b != b) return a == a;
        return a < b;
    } else {
        return a < b;
    }
}

/// The first k of each row of `in` ([rows, n], storage type S) in order, into values and
/// indices ([rows, k]).
template <class S>
void sort_rows(const S* in, S* values, std::int64_t* indices, std::int64_t rows, std::int64_t n, std::int64_t k,
               bool descending, ThreadPool& pool) {
    using V = std::conditional_t<std::is_same_v<S, half>, float, S>;  // half compares as float
    pool.parallel_for(rows, [&](std::int64_t r, int) {
        const S* row = in + r * n;
        std::vector<std::pair<V, std::int64_t>> items(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) items[static_cast<std::size_t>(i)] = {static_cast<V>(row[i]), i};
        auto before = [descending](const auto& a, const auto& b) {
            return descending ? sorts_before(b.first, a.first) : sorts_before(a.first, b.first);
        };
        if (k == n) {
            std::stable_sort(items.begin(), items.end(), before);
        } else {  // ties by position, as a stable sort would order them
            std::partial_sort(items.begin(), items.begin() + k, items.end(), [&](const auto& a, const auto& b) {
                return before(a, b) || (!before(b, a) && a.second < b.second);
            });
        }
        for (std::int64_t i = 0; i < k; ++i) {
            const std::int64_t j = items[static_cast<std::size_t>(i)].second;
            values[r * k + i] = row[j];
            indices[r * k + i] = j;
        }
    });
}

}  // namespace lazytensor::detail::host
