// SPDX-License-Identifier: MIT
// A small fixed thread pool for the host backend. parallel_for hands out items through one
// atomic counter (dynamic load balance); the calling thread works too. Workers spin briefly
// (spin_us, LAZYTENSOR_SPIN_US) before sleeping so that back-to-back kernels do not pay a
// wake-up each, and no longer: an idle process uses no CPU.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace lazytensor::detail::host {

class ThreadPool {
public:
    explicit ThreadPool(int threads, std::int64_t spin_us = 200) : spin_us_(spin_us) { start(threads); }
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;
    ~ThreadPool() { stop(); }

    /// Threads that run items, the caller included.
    int size() const { return size_.load(std::memory_order_relaxed); }
    /// Makes the pool `threads` threads (the caller included): waits for the job running now.
    void resize(int threads) {
        std::lock_guard<std::mutex> busy(busy_);
        if (threads == size()) return;
        stop();
        start(threads);
    }
    /// How long an idle worker spins for the next job before it sleeps, in microseconds.
    std::int64_t spin_us() const { return spin_us_.load(std::memory_order_relaxed); }
    void set_spin_us(std::int64_t us) { spin_us_.store(us < 0 ? 0 : us, std::memory_order_relaxed); }

    /// Calls f(item, thread) for every item in [0, n); returns when all are done. Runs on the
    /// caller alone when nested, when another thread holds the pool, or for a single item.
    template <class F>
    void parallel_for(std::int64_t n, F&& f) {
        if (n <= 0) return;
        std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
        if (n == 1 || size() == 1 || inside_ || !busy.owns_lock()) {
            for (std::int64_t i = 0; i < n; ++i) f(i, 0);
            return;
        }
        const int size = this->size();
        using Fn = std::remove_reference_t<F>;
        job_ = [](void* ctx, std::int64_t i, int t) { (*static_cast<Fn*>(ctx))(i, t); };
        ctx_ = &f;
        items_ = n;
        next_.store(0);
        error_ = nullptr;
        pending_.store(size - 1);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            generation_.fetch_add(1);
        }
        wake_.notify_all();
        run_items(0);
        while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
        if (error_) std::rethrow_exception(error_);
    }

private:
    void start(int threads) {
        size_.store(threads < 1 ? 1 : threads);
        stop_ = false;
        const std::uint64_t now = generation_.load();
        for (int t = 1; t < size(); ++t) workers_.emplace_back([this, t, now] { work(t, now); });
    }
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
            generation_.fetch_add(1);
        }
        wake_.notify_all();
        for (auto& w : workers_) w.join();
        workers_.clear();
    }

    void run_items(int thread) {
        inside_ = true;
        try {
            for (std::int64_t i; (i = next_.fetch_add(1)) < items_;) job_(ctx_, i, thread);
        } catch (...) {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!error_) error_ = std::current_exception();
            next_.store(items_);
        }
        inside_ = false;
    }

    void work(int thread, std::uint64_t seen) {
        for (;;) {
            // Spin for a short while, then sleep until the next job.
            const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us());
            while (generation_.load(std::memory_order_acquire) == seen &&
                   std::chrono::steady_clock::now() < spin_until)
                std::this_thread::yield();
            if (generation_.load(std::memory_order_acquire) == seen) {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return generation_.load() != seen; });
            }
            seen = generation_.load();
            if (stop_) return;
            run_items(thread);
            pending_.fetch_sub(1, std::memory_order_release);
        }
    }

    std::atomic<int> size_{1};
    std::atomic<std::int64_t> spin_us_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::mutex busy_;
    std::condition_variable wake_;
    std::atomic<std::uint64_t> generation_{0};
    std::atomic<std::int64_t> next_{0};
    std::atomic<int> pending_{0};
    std::atomic<bool> stop_{false};
    void (*job_)(void*, std::int64_t, int) = nullptr;
    void* ctx_ = nullptr;
    std::int64_t items_ = 0;
    std::exception_ptr error_;
    static inline thread_local bool inside_ = false;
};

/// The threads that run host work for devices other than the host (LAPACK's batches, the FFT
/// through host copies; the host backend's pool belongs to it): one per core, made on first use,
/// never destroyed (like the backends).
inline ThreadPool& staging_pool() {
    static ThreadPool* pool = new ThreadPool(static_cast<int>(std::thread::hardware_concurrency()));
    return *pool;
}

}  // namespace lazytensor::detail::host
