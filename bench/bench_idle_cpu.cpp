// SPDX-License-Identifier: MIT
// How much CPU the host backend's threads use after a realize returns: the process's CPU time
// (less this thread's, which sleeps) in windows after each of many realizes, as busy cores. The
// workers spin for LAZYTENSOR_SPIN_US (lt::set_thread_spin) before they sleep; the rows compare
// spin times. A window's value is the mean over the realizes.
//
//   bench_idle_cpu [threads]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <lazytensor.hpp>
#include <thread>
#include <vector>

namespace lt = lazytensor;

namespace {

double cpu_seconds(clockid_t clock) {
    timespec t{};
    clock_gettime(clock, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
double others_cpu() { return cpu_seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu_seconds(CLOCK_THREAD_CPUTIME_ID); }

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1) lt::set_num_threads(std::atoi(argv[1]));
    const lt::Tensor<float> a = lt::rand<float>({1 << 22}, 1).realize();
    const double edges_ms[] = {0, 0.25, 1, 10, 50};  // windows [edge_i, edge_i+1) after the realize returns
    const int windows = 4, rounds = 40;
    std::printf("host threads: %d; busy cores in each window after a realize returns (mean of %d realizes)\n",
                lt::num_threads(), rounds);
    std::printf("%-12s %12s %12s %12s %12s\n", "spin (us)", "0-0.25 ms", "0.25-1 ms", "1-10 ms", "10-50 ms");
    for (int spin : {200, 0, 1000, 5000}) {
        lt::set_thread_spin(std::chrono::microseconds(spin));
        std::vector<double> busy(windows, 0.0);
        for (int r = 0; r < rounds; ++r) {
            (lt::exp(a) * 0.5f + 1.0f).realize();
            const auto done = std::chrono::steady_clock::now();
            double last = others_cpu();
            for (int w = 0; w < windows; ++w) {
                std::this_thread::sleep_until(done + std::chrono::microseconds(static_cast<long>(edges_ms[w + 1] * 1000)));
                const double now = others_cpu();
                busy[static_cast<std::size_t>(w)] += (now - last) / ((edges_ms[w + 1] - edges_ms[w]) * 1e-3) / rounds;
                last = now;
            }
        }
        std::printf("%-12d %12.2f %12.2f %12.2f %12.2f\n", spin, busy[0], busy[1], busy[2], busy[3]);
    }
}
