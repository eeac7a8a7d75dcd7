// SPDX-License-Identifier: MIT
// The timing of bench_sort and bench_scan (and of their PyTorch peers): the wall clock of one
// call and a synchronize of the device, median of 15 (or `runs`) after a warm-up call.
#pragma once

#include <algorithm>
#include <chrono>
#include <functional>
#include <lazytensor.hpp>
#include <vector>

inline double median_ms(lazytensor::Device d, const std::function<void()>& f, int runs = 15) {
    using Clock = std::chrono::steady_clock;
    f();
    lazytensor::synchronize(d);
    std::vector<double> t;
    for (int i = 0; i < runs; ++i) {
        const auto t0 = Clock::now();
        f();
        lazytensor::synchronize(d);
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}
