// SPDX-License-Identifier: MIT
// Reliability under threads: realizing, reading, building expressions and creating and
// destroying tensors on several threads at once. realize() runs one schedule at a time (a
// global lock), but everything around it (building graphs from tensors another thread is
// realizing, reading results, freeing buffers, the kernel and plan caches) happens
// concurrently. These tests also run under ThreadSanitizer, so each is kept short.
//
// Worker threads never use doctest's assertions: they record what they saw (values, error
// messages) and the test's own thread checks it afterwards.
#include <atomic>
#include <chrono>
#include <exception>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

/// Runs body(thread_index) on `count` threads that start together (each waits until all have
/// started), and joins them. Returns the what() of every exception a thread let escape.
template <class F>
std::vector<std::string> run_threads(int count, F&& body) {
    std::atomic<int> ready{0};
    std::mutex errors_mutex;
    std::vector<std::string> errors;
    std::vector<std::thread> threads;
    threads.reserve(static_cast<std::size_t>(count));
    for (int t = 0; t < count; ++t) {
        threads.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < count) std::this_thread::yield();
            try {
                body(t);
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> lock(errors_mutex);
                errors.push_back("thread " + std::to_string(t) + ": " + e.what());
            } catch (...) {
                std::lock_guard<std::mutex> lock(errors_mutex);
                errors.push_back("thread " + std::to_string(t) + ": an exception not derived from std::exception");
            }
        });
    }
    for (auto& th : threads) th.join();
    return errors;
}

/// Fails the test once per exception a worker thread reported.
void check_no_errors(const std::vector<std::string>& errors) {
    for (const auto& e : errors) FAIL_CHECK("a worker thread threw: " << e);
    CHECK(errors.empty());
}

/// Empty when `got` matches `expected` elementwise (within rtol * |e| + atol); otherwise a
/// description of the first mismatches. Usable on any thread (no doctest calls).
template <class T>
std::string mismatch(const std::vector<T>& got, const Ref& expected, double rtol = 1e-4, double atol = 1e-4) {
    std::ostringstream out;
    if (got.size() != expected.v.size()) {
        out << "got " << got.size() << " elements, expected " << expected.v.size();
        return out.str();
    }
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 3; ++i) {
        const double g = static_cast<double>(got[i]), e = expected.v[i];
        if (!(std::fabs(g - e) <= rtol * std::fabs(e) + atol)) {
            ++failures;
            out << "element " << i << ": got " << g << ", expected " << e << "; ";
        }
    }
    return out.str();
}

Ref softmax_rows_ref(const Ref& a) {
    Ref mx = reduce(a, {1}, true, -INFINITY, ref_max);
    Ref e = zip(a, mx, [](double x, double m) { return std::exp(x - m); });
    Ref s = reduce(e, {1}, true, 0.0, ref_add);
    return zip(e, s, [](double x, double y) { return x / y; });
}

}  // namespace

TEST_CASE("threads realizing different expressions of shared inputs each get the right values") {
    for_each_device([](lt::Device d) {
        const Ref ra = random_ref<float>({64, 48}, 11), rb = random_ref<float>({64, 48}, 12);
        const Ref rw = random_ref<float>({48, 32}, 13), rv = random_ref<float>({48}, 14);
        const lt::Tensor<float> a = make_tensor<float>(ra, d), b = make_tensor<float>(rb, d);
        const lt::Tensor<float> w = make_tensor<float>(rw, d), v = make_tensor<float>(rv, d);
        REQUIRE(a.is_realized());

        // One expression per thread, and its reference.
        constexpr int kThreads = 6;
        std::vector<Ref> expected(kThreads);
        expected[0] = zip(zip(map(ra, [](double x) { return std::exp(x); }), rb, [](double x, double y) { return x * y; }),
                          rv, [](double x, double y) { return x + 0.5 * y; });
        expected[1] = reduce(zip(ra, rb, [](double x, double y) { return x * y; }), {1}, false, 0.0, ref_add);
        expected[2] = map(ref_matmul_2d(ra, rw), [](double x) { return std::max(x + 1.0, 0.0); });
        expected[3] = zip(reduce(ra, {0}, false, -INFINITY, ref_max), reduce(rb, {0}, false, INFINITY, ref_min),
                          [](double x, double y) { return x - y; });
        expected[4] = softmax_rows_ref(ra);
        {
            Ref sum_b = reduce(rb, {}, false, 0.0, ref_add);
            const double mean_b = sum_b.v[0] / static_cast<double>(rb.size());
            expected[5] = map(zip(ra, rv, [](double x, double y) { return x * y; }), [&](double x) { return x - mean_b; });
        }
        auto make = [&](int which) -> lt::Tensor<float> {
            switch (which) {
                case 0: return lt::exp(a) * b + v * 0.5f;
                case 1: return (a * b).sum(1);
                case 2: return lt::relu(lt::matmul(a, w) + 1.0f);
                case 3: return a.max(0) - b.min(0);
                case 4: {
                    lt::Tensor<float> e = lt::exp(a - a.max(1, true));
                    return e / e.sum(1, true);
                }
                default: return a * v - b.mean();
            }
        };

        constexpr int kRounds = 3;
        std::vector<std::vector<std::string>> found(kThreads);
        auto errors = run_threads(kThreads, [&](int t) {
            for (int r = 0; r < kRounds; ++r) {
                lt::Tensor<float> y = make(t).realize();
                const std::string m = mismatch(y.to_vector(), expected[static_cast<std::size_t>(t)]);
                if (!m.empty()) found[static_cast<std::size_t>(t)].push_back(m);
            }
        });
        check_no_errors(errors);
        for (int t = 0; t < kThreads; ++t) {
            INFO("expression " << t);
            CHECK(found[static_cast<std::size_t>(t)].empty());
            for (const auto& m : found[static_cast<std::size_t>(t)]) MESSAGE(m);
        }
        // The shared inputs are unchanged.
        CHECK(mismatch(a.to_vector(), ra, 0, 0).empty());
        CHECK(mismatch(w.to_vector(), rw, 0, 0).empty());
    });
}

TEST_CASE("threads realizing and reading the same lazy tensor at once all see the same correct values") {
    for_each_device([](lt::Device d) {
        const Ref ra = random_ref<float>({32, 40}, 21), rb = random_ref<float>({40}, 22);
        const lt::Tensor<float> a = make_tensor<float>(ra, d), b = make_tensor<float>(rb, d);
        // y has a shared intermediate (several kernels); s is a 0-d tensor built on y.
        const Ref rshared = zip(map(ra, [](double x) { return std::exp(x * 0.5); }), rb, [](double x, double y) { return x + y; });
        const Ref ry = zip(rshared, reduce(rshared, {1}, true, 0.0, ref_add), [](double x, double s) { return x * 2.0 - s / 40.0; });
        const Ref rs = reduce(ry, {}, false, 0.0, ref_add);

        constexpr int kThreads = 8, kRounds = 6;
        for (int round = 0; round < kRounds; ++round) {
            CAPTURE(round);
            lt::Tensor<float> shared = lt::exp(a * 0.5f) + b;
            lt::Tensor<float> y = shared * 2.0f - shared.sum(1, true) / 40.0f;
            lt::Tensor<float> s = y.sum();
            REQUIRE_FALSE(y.is_realized());
            std::vector<std::vector<float>> seen_y(kThreads);
            std::vector<float> seen_s(kThreads, 0.0f);
            auto errors = run_threads(kThreads, [&](int t) {
                switch ((t + round) % 4) {
                    case 0: y.realize(); break;
                    case 1: seen_s[static_cast<std::size_t>(t)] = s.item(); break;
                    case 2: lt::realize({s, y}); break;
                    default: break;
                }
                seen_y[static_cast<std::size_t>(t)] = y.to_vector();
                if ((t + round) % 4 != 1) seen_s[static_cast<std::size_t>(t)] = s.item();
            });
            check_no_errors(errors);
            CHECK(y.is_realized());
            CHECK(s.is_realized());
            CHECK(mismatch(seen_y[0], ry).empty());
            CHECK(std::fabs(seen_s[0] - rs.v[0]) <= 1e-4 * std::fabs(rs.v[0]) + 1e-2);
            for (int t = 1; t < kThreads; ++t) {
                CAPTURE(t);
                CHECK(seen_y[static_cast<std::size_t>(t)] == seen_y[0]);  // one value, computed once
                CHECK(seen_s[static_cast<std::size_t>(t)] == seen_s[0]);
            }
        }
    });
}

TEST_CASE("building expressions from a tensor while another thread realizes it gives correct values") {
    for_each_device([](lt::Device d) {
        const Ref ra = random_ref<float>({24, 36}, 31), rb = random_ref<float>({24, 36}, 32);
        const lt::Tensor<float> a = make_tensor<float>(ra, d), b = make_tensor<float>(rb, d);
        const Ref rsub = map(ra, [](double x) { return x * 2.0; });
        const Ref rmid = zip(rsub, rb, [](double x, double y) { return x + y; });
        const Ref rtop = zip(rmid, reduce(rmid, {1}, true, 0.0, ref_add), [](double x, double s) { return x + s * 0.125; });
        // What the builder threads compute from top, mid, sub and a.
        std::vector<Ref> expected(4);
        expected[0] = zip(zip(rtop, rmid, [](double x, double y) { return x * 0.5 + y; }), rsub,
                          [](double x, double y) { return x - y; });
        expected[1] = reduce(zip(rtop, rsub, [](double x, double y) { return x * y; }), {0}, false, 0.0, ref_add);
        expected[2] = zip(rtop, ra, [](double x, double y) { return std::max(x, y); });
        expected[3] = reduce(map(rmid, [](double x) { return std::tanh(x); }), {1}, true, 0.0, ref_add);
        auto build = [&](int which, const lt::Tensor<float>& top, const lt::Tensor<float>& mid,
                         const lt::Tensor<float>& sub) -> lt::Tensor<float> {
            switch (which) {
                case 0: return top * 0.5f + mid - sub;
                case 1: return (top * sub).sum(0);
                case 2: return lt::maximum(top, a);
                default: return lt::tanh(mid).sum(1, true);
            }
        };

        constexpr int kThreads = 5, kRounds = 8;
        for (int round = 0; round < kRounds; ++round) {
            CAPTURE(round);
            lt::Tensor<float> sub = a * 2.0f;
            lt::Tensor<float> mid = sub + b;
            lt::Tensor<float> top = mid + mid.sum(1, true) * 0.125f;
            std::vector<std::string> found(kThreads);
            std::vector<float> top_seen;
            auto errors = run_threads(kThreads, [&](int t) {
                if (t == 0) {  // the realizer; in odd rounds it realizes a sub-expression first
                    if (round % 2) mid.realize();
                    top_seen = top.to_vector();
                    return;
                }
                // Builders: several expressions from the tensors being realized, each realized.
                for (int k = 0; k < 4; ++k) {
                    const int which = (t + k) % 4;
                    lt::Tensor<float> e = build(which, top, mid, sub);
                    found[static_cast<std::size_t>(t)] += mismatch(e.to_vector(), expected[static_cast<std::size_t>(which)]);
                }
            });
            check_no_errors(errors);
            CHECK(mismatch(top_seen, rtop).empty());
            for (int t = 1; t < kThreads; ++t) {
                CAPTURE(t);
                CHECK_MESSAGE(found[static_cast<std::size_t>(t)].empty(), found[static_cast<std::size_t>(t)]);
            }
            // Afterwards every tensor still reads back its value.
            CHECK(mismatch(sub.to_vector(), rsub).empty());
            CHECK(mismatch(mid.to_vector(), rmid).empty());
        }
    });
}

TEST_CASE("threads realizing overlapping groups of tensors together get the right values") {
    for_each_device([](lt::Device d) {
        const Ref ra = random_ref<float>({16, 48}, 41), rb = random_ref<float>({16, 48}, 42);
        const lt::Tensor<float> a = make_tensor<float>(ra, d), b = make_tensor<float>(rb, d);
        const Ref rshared = map(ra, [](double x) { return std::exp(x) + 1.0; });
        const Ref rx = reduce(rshared, {0}, false, 0.0, ref_add);
        const Ref ry = reduce(rshared, {1}, true, -INFINITY, ref_max);
        const Ref rz = zip(rshared, rb, [](double x, double y) { return x * y; });
        const Ref rw = reduce(rz, {}, false, 0.0, ref_add);

        constexpr int kThreads = 6, kRounds = 6;
        for (int round = 0; round < kRounds; ++round) {
            CAPTURE(round);
            lt::Tensor<float> shared = lt::exp(a) + 1.0f;
            lt::Tensor<float> x = shared.sum(0), y = shared.max(1, true), z = shared * b;
            lt::Tensor<float> w = z.sum();
            auto errors = run_threads(kThreads, [&](int t) {
                switch ((t + round) % 6) {
                    case 0: lt::realize({x, y}); break;
                    case 1: lt::realize({y, z}); break;
                    case 2: lt::realize({z, w, x}); break;
                    case 3: lt::realize({w, shared}); break;
                    case 4: lt::realize(std::vector<lt::TensorRef>{x, y, z, w}); break;
                    default: lt::realize({shared, x}); break;
                }
            });
            check_no_errors(errors);
            CHECK(x.is_realized());
            CHECK(y.is_realized());
            CHECK(z.is_realized());
            CHECK(w.is_realized());
            CHECK(mismatch(x.to_vector(), rx).empty());
            CHECK(mismatch(y.to_vector(), ry).empty());
            CHECK(mismatch(z.to_vector(), rz).empty());
            CHECK(std::fabs(w.item() - rw.v[0]) <= 1e-4 * std::fabs(rw.v[0]) + 1e-2);
            CHECK(mismatch(shared.to_vector(), rshared).empty());
        }
    });
}

TEST_CASE("the kernel and plan caches stay correct while threads race to fill them and evict from them") {
    for_each_device([](lt::Device d) {
        lt::detail::Backend& backend = lt::detail::backend_for(d);
        KernelCacheCapacity small(d, 3);  // far fewer than the kernels used below: constant eviction

        // Every thread realizes, at step s:
        //  - the same new structure as every other thread (they race to plan and compile it),
        //    in a shape per thread that normalizes to the same kernel (24 * (s + 1) elements);
        //  - a structure of its own (a reduction over a shape no other thread uses).
        constexpr int kThreads = 6, kSteps = 4;
        const Ref rsrc = random_ref<float>({24 * kSteps}, 51);
        const lt::Tensor<float> src = make_tensor<float>(rsrc, d);
        auto same_shape = [](int t, int s) -> lt::Shape {
            const std::int64_t n = 24 * (s + 1);
            switch (t % 3) {
                case 0: return {n};
                case 1: return {4, n / 4};
                default: return {2, 3, n / 6};
            }
        };
        std::vector<std::string> found(kThreads);
        auto errors = run_threads(kThreads, [&](int t) {
            std::string& out = found[static_cast<std::size_t>(t)];
            for (int s = 0; s < kSteps; ++s) {
                const std::int64_t n = 24 * (s + 1);
                // The same kernel for every thread: 1 / (1 + exp(-x)) * 3 over n elements.
                lt::Tensor<float> x = src.slice(0, 0, n).reshape(same_shape(t, s));
                std::vector<float> got = (lt::sigmoid(x) * 3.0f).to_vector();
                Ref head{{n}, std::vector<double>(rsrc.v.begin(), rsrc.v.begin() + n)};
                out += mismatch(got, map(head, [](double v) { return 3.0 / (1.0 + std::exp(-v)); }));
                // A kernel of this thread's own: row sums of a [t + 2, s + 3] slab.
                const std::int64_t rows = t + 2, cols = s + 3;
                lt::Tensor<float> own = src.slice(0, 0, rows * cols).reshape({rows, cols});
                Ref rown{{rows, cols}, std::vector<double>(rsrc.v.begin(), rsrc.v.begin() + rows * cols)};
                out += mismatch((own * own).sum(1).to_vector(),
                                reduce(map(rown, [](double v) { return v * v; }), {1}, false, 0.0, ref_add));
            }
        });
        check_no_errors(errors);
        for (int t = 0; t < kThreads; ++t) {
            CAPTURE(t);
            CHECK_MESSAGE(found[static_cast<std::size_t>(t)].empty(), found[static_cast<std::size_t>(t)]);
        }
        CHECK(backend.cached_kernels() <= 3);

        // Capacity changes and cache clears racing with realizes on other threads.
        std::atomic<int> finished{0};
        std::vector<std::string> found2(kThreads);
        auto errors2 = run_threads(kThreads, [&](int t) {
            if (t == 0) {  // churns the kernel cache until every other thread is done
                for (int k = 0; finished.load() < kThreads - 1; ++k) {
                    backend.set_cache_capacity(static_cast<std::size_t>(1 + k % 4));
                    if (k % 5 == 0) backend.clear_kernel_cache();
                    std::this_thread::yield();
                }
                return;
            }
            try {
                for (int s = 0; s < kSteps; ++s) {
                    const std::int64_t n = 24 * (s + 1) - t;  // distinct shapes: new plans, new kernels
                    Ref head{{n}, std::vector<double>(rsrc.v.begin(), rsrc.v.begin() + n)};
                    found2[static_cast<std::size_t>(t)] += mismatch((src.slice(0, 0, n) * 2.0f + 1.0f).to_vector(),
                                                                    map(head, [](double v) { return v * 2.0 + 1.0; }));
                }
            } catch (...) {
                finished.fetch_add(1);
                throw;
            }
            finished.fetch_add(1);
        });
        check_no_errors(errors2);
        for (int t = 1; t < kThreads; ++t) {
            CAPTURE(t);
            CHECK_MESSAGE(found2[static_cast<std::size_t>(t)].empty(), found2[static_cast<std::size_t>(t)]);
        }
    });
}

TEST_CASE("tensors created and destroyed on several threads while others realize keep their values") {
    for_each_device([](lt::Device d) {
        const Ref ra = random_ref<float>({48, 64}, 61);
        const lt::Tensor<float> a = make_tensor<float>(ra, d);
        const Ref rexpected = reduce(map(ra, [](double x) { return std::exp(x * 0.25) - x; }), {1}, false, 0.0, ref_add);
        const lt::MemoryStats before = lt::memory_stats(d);

        constexpr int kThreads = 8, kIterations = 12;
        std::vector<std::string> found(kThreads);
        // Tensors handed from the realizing threads to the others, which destroy them.
        std::mutex handoff_mutex;
        std::vector<lt::Tensor<float>> handoff;
        auto errors = run_threads(kThreads, [&](int t) {
            std::string& out = found[static_cast<std::size_t>(t)];
            for (int i = 0; i < kIterations; ++i) {
                if (t % 2 == 0) {
                    // Realizers: a result with an intermediate freed inside the schedule; the
                    // result goes to another thread half of the time.
                    lt::Tensor<float> e = lt::exp(a * 0.25f) - a;
                    lt::Tensor<float> r = e.sum(1);
                    out += mismatch(r.to_vector(), rexpected);
                    if (i % 2) {
                        std::lock_guard<std::mutex> lock(handoff_mutex);
                        handoff.push_back(r);
                    }
                } else {
                    // Creators: tensors of fresh data (new buffers, some large enough for the
                    // allocator's cache), lazy values that are dropped unrealized, and values
                    // handed over by the realizers, all destroyed here.
                    const std::int64_t n = (i % 6 == 0) ? (1 << 18) + t : 100 + 37 * t + i;
                    std::vector<float> data(static_cast<std::size_t>(n));
                    for (std::int64_t k = 0; k < n; ++k) data[static_cast<std::size_t>(k)] = static_cast<float>((k * 7 + t + i) % 101);
                    lt::Tensor<float> fresh = lt::tensor<float>(data, {n}, d);
                    if (fresh.to_vector() != data) out += "a new tensor read back other values; ";
                    lt::Tensor<float> unused = lt::exp(a) + fresh.sum();  // never realized
                    lt::Tensor<float> view = fresh.slice(0, 1, 5);
                    fresh = lt::Tensor<float>();  // the view keeps the buffer
                    std::vector<float> head = view.to_vector();
                    if (head != std::vector<float>(data.begin() + 1, data.begin() + 5)) out += "a view lost its base's values; ";
                    lt::Tensor<float> taken;
                    {
                        std::lock_guard<std::mutex> lock(handoff_mutex);
                        if (!handoff.empty()) {
                            taken = handoff.back();
                            handoff.pop_back();
                        }
                    }
                    if (taken.node_ptr()) out += mismatch(taken.to_vector(), rexpected);
                }
            }
        });
        check_no_errors(errors);
        for (int t = 0; t < kThreads; ++t) {
            CAPTURE(t);
            CHECK_MESSAGE(found[static_cast<std::size_t>(t)].empty(), found[static_cast<std::size_t>(t)]);
        }
        for (const auto& r : handoff) CHECK(mismatch(r.to_vector(), rexpected).empty());
        handoff.clear();
        CHECK(mismatch(a.to_vector(), ra, 0, 0).empty());
        // Every buffer freed on whichever thread was accounted for: only `a` is left.
        const lt::MemoryStats after = lt::memory_stats(d);
        CHECK(after.live_bytes == before.live_bytes);
        CHECK(after.live_buffers == before.live_buffers);
    });
}

TEST_CASE("first builds race safely: threads realizing new structures at once") {
    for_each_device([](lt::Device d) {
        lt::detail::backend_for(d).clear_kernel_cache();
        std::atomic<int> failures{0};
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t)
            threads.emplace_back([&, t] {
                try {
                    lt::Tensor<float> x = lt::full<float>({5, 19 + t}, 1.0f + static_cast<float>(t), d);
                    lt::Tensor<float> a = lt::exp(x).sum(0), b = (x * 3.0f).max(1), c = lt::sqrt(x) + 2.0f;
                    lt::realize({a, b, c});
                    const float v = 1.0f + static_cast<float>(t);
                    for (float e : a.to_vector())
                        if (std::fabs(e - 5 * std::exp(v)) > 1e-4f * 5 * std::exp(v)) ++failures;
                    for (float e : b.to_vector())
                        if (e != 3 * v) ++failures;
                    for (float e : c.to_vector())
                        if (e != std::sqrt(v) + 2.0f) ++failures;
                } catch (...) {
                    ++failures;
                }
            });
        for (auto& th : threads) th.join();
        CHECK(failures.load() == 0);
    });
}

TEST_CASE("warmup_async, realizes of the same structures and a log handler swapped meanwhile: right values, no race") {
    for_each_device([](lt::Device d) {
        lt::detail::backend_for(d).clear_kernel_cache();
        std::atomic<int> heard{0};
        std::vector<std::string> wrong(4);
        auto errors = run_threads(4, [&](int t) {
            if (t == 0) {  // swaps the handler while the others build
                for (int r = 0; r < 20; ++r) {
                    lt::set_log_handler([&heard](const lt::CompileEvent&) { ++heard; });
                    std::this_thread::yield();
                    lt::set_log_handler(nullptr);
                }
                return;
            }
            const float v = 0.5f * static_cast<float>(t);
            lt::Tensor<float> x = lt::full<float>({4, 21}, v, d);
            lt::Tensor<float> y = lt::exp(x) * 2.0f - x;
            std::future<void> warming = lt::warmup_async({y});
            lt::Tensor<float> z = lt::exp(x) * 2.0f - x;  // the same structure, realized meanwhile
            const std::vector<float> zs = z.to_vector();
            warming.get();
            const std::vector<float> ys = y.to_vector();
            const float want = 2.0f * std::exp(v) - v;
            for (float e : zs)
                if (std::fabs(e - want) > 1e-5f * std::fabs(want)) wrong[static_cast<std::size_t>(t)] = "z";
            for (float e : ys)
                if (std::fabs(e - want) > 1e-5f * std::fabs(want)) wrong[static_cast<std::size_t>(t)] += "y";
        });
        lt::set_log_handler(nullptr);
        check_no_errors(errors);
        for (const std::string& w : wrong) CHECK(w.empty());
    });
}

TEST_CASE("print options changed by one thread while others print: each print uses one whole set of options") {
    for_each_device([](lt::Device d) {
        const lt::PrintOptions before = lt::print_options();
        const lt::Tensor<float> x = lt::tensor<float>({1.5f, -2.25f}, d);
        const std::string tail = ", shape=[2], dtype=float32, device=" + d.str() + ")";
        std::atomic<int> wrong{0};
        auto errors = run_threads(4, [&](int t) {
            for (int i = 0; i < 100; ++i) {
                if (t == 0) {
                    lt::PrintOptions options;
                    options.precision = i % 2 ? 2 : 4;
                    lt::set_print_options(options);
                    continue;
                }
                std::ostringstream out;
                out << x;
                if (out.str() != "tensor([ 1.50, -2.25]" + tail && out.str() != "tensor([ 1.5000, -2.2500]" + tail) ++wrong;
            }
        });
        lt::set_print_options(before);
        check_no_errors(errors);
        CHECK(wrong.load() == 0);
    });
}

// ------------------------------------------------------------------- realizes on several devices

namespace {

/// Every device lt::devices() lists, whatever LAZYTENSOR_TEST_DEVICES says: the host first, then
/// the OpenCL devices (none under TSan, whose build is host-only).
std::vector<lt::Device> every_device() {
    std::vector<lt::Device> out;
    for (const auto& info : lt::devices()) out.push_back(info.device);
    return out;
}

}  // namespace


TEST_CASE("a realize on one device does not wait for another device's lock" * doctest::skip(every_device().size() < 2)) {
    for (lt::Device busy : every_device()) {
        for (lt::Device free : every_device()) {
            if (busy == free) continue;
            INFO("busy: " << busy.str() << ", realizing on: " << free.str());
            std::future<std::vector<float>> done;
            {
                const lt::detail::DeviceLock held(busy);  // as a long realize on `busy` would
                done = std::async(std::launch::async, [free] {
                    return lt::Tensor<float>(lt::arange<float>(0, 4, 1, free) * 2.0f).to_vector();
                });
                REQUIRE(done.wait_for(std::chrono::seconds(60)) == std::future_status::ready);
            }
            CHECK(done.get() == std::vector<float>{0, 2, 4, 6});
        }
    }
}

TEST_CASE("threads realizing on every device at once all get their own right values") {
    const std::vector<lt::Device> devices = every_device();
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0}, errors{0};
    for (std::size_t t = 0; t < devices.size() * 2; ++t) {
        threads.emplace_back([&, t] {
            const lt::Device d = devices[t % devices.size()];
            try {
                for (int step = 0; step < 20; ++step) {
                    const float k = static_cast<float>(t * 100 + step);
                    lt::Tensor<float> x = lt::arange<float>(0, 1000, 1, d);
                    const float total = lt::Tensor<float>(lt::sum(x * 2.0f + k)).item();
                    if (total != 999.0f * 1000.0f + 1000.0f * k) ++wrong;
                }
            } catch (...) {
                ++errors;
            }
        });
    }
    for (auto& th : threads) th.join();
    CHECK(wrong.load() == 0);
    CHECK(errors.load() == 0);
}

TEST_CASE("a failure on one device while another realizes leaves the other's results intact" *
          doctest::skip(every_device().size() < 2)) {
    const lt::Device gpu = every_device()[1];
    lt::set_memory_limit(gpu, 1 << 20);
    std::atomic<bool> failed{false};
    std::thread failing([&] {
        try {
            lt::Tensor<float> big = lt::full<float>({1 << 22}, 1.0f, gpu) * 2.0f;  // 16 MiB past a 1 MiB limit
            big.realize();
        } catch (const lt::OutOfMemoryError&) {
            failed = true;
        }
    });
    lt::Tensor<float> host_result = lt::arange<float>(0, 1 << 16, 1, lt::Device::host()) + 1.0f;
    host_result.realize();
    failing.join();
    lt::set_memory_limit(gpu, 0);
    CHECK(failed.load());
    CHECK(lt::Tensor<float>(lt::sum(host_result)).item() == doctest::Approx(65536.0 * 65537.0 / 2.0));
    // The failing device works again.
    CHECK(lt::Tensor<float>(lt::full<float>({4}, 1.0f, gpu) * 3.0f).to_vector() == std::vector<float>{3, 3, 3, 3});
}


TEST_CASE("set_num_threads changes the host's threads between realizes, with the same results") {
    const int before = lt::num_threads();
    const lt::Tensor<float> x = lt::arange<float>(1 << 16).realize();
    const float want = (x * 0.5f).sum().item();  // 2^15 (2^16 - 1), exact in float
    CHECK(want == 0.5f * 65536.0f * 65535.0f / 2.0f);
    for (int threads : {1, 3, 2, before}) {
        lt::set_num_threads(threads);
        CHECK(lt::num_threads() == threads);
        CHECK((x * 0.5f).sum().item() == want);
        CHECK(lt::cumsum(lt::arange<std::int64_t>(1 << 16), 0).to_vector().back() == std::int64_t(65536) * 65535 / 2);
    }
    // A change while other threads realize waits for their work, and every result stays right.
    std::atomic<int> wrong{0};
    const std::vector<std::string> errors = run_threads(3, [&](int t) {
        for (int i = 0; i < 20; ++i) {
            if (t == 0) lt::set_num_threads(1 + i % 3);
            else if ((x * 0.5f).sum().item() != want) ++wrong;
        }
    });
    CHECK(errors.empty());
    CHECK(wrong.load() == 0);
    lt::set_num_threads(before);
    CHECK_THROWS_AS(lt::set_num_threads(0), lt::ValueError);
    CHECK_THROWS_AS(lt::set_thread_spin(std::chrono::microseconds(-1)), lt::ValueError);
    lt::set_thread_spin(std::chrono::microseconds(0));  // sleep at once: still correct
    CHECK((x * 0.5f).sum().item() == want);
    lt::set_thread_spin(std::chrono::microseconds(200));
    CHECK(lt::num_threads() == before);
}
