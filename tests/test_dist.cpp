// SPDX-License-Identifier: MIT
// lt::dist over MPI: run alone (a group of one) and under mpirun with 2 and 3 ranks
// (tests/CMakeLists.txt). Every rank computes the expected values itself from every rank's inputs,
// which it can make (they come from seeds), without any collective.
#include "common.hpp"

#if LAZYTENSOR_OPENCL
#include <lazytensor/backend/opencl/opencl_backend.hpp>
#endif

#include <chrono>
#include <cstdlib>
#include <map>
#include <thread>

namespace {

/// The ranks mpirun started (1 without it): read before init, as doctest's decorators run first.
int dist_launched() {
    for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"})
        if (const char* v = std::getenv(name)) return std::atoi(v);
    return 1;
}

/// Rank r's input of this shape and dtype: values from seed 1000 + r (small integers where T is
/// one, so that sums are exact in every order).
template <class T>
lt::Tensor<T> dist_input(int r, const lt::Shape& shape, int salt = 0) {
    const lt::Tensor<float> u = lt::rand<float>(shape, static_cast<std::uint64_t>(1000 + 17 * salt + r));
    if constexpr (std::is_same_v<T, bool>) return u > 0.5f;
    else if constexpr (std::is_integral_v<T>) return lt::cast<T>(lt::floor(u * 50.0f));
    else return lt::cast<T>(u * 4.0f - 2.0f);
}

template <class T>
std::vector<double> dist_values(const lt::Tensor<T>& t) {
    std::vector<double> out;
    for (T v : t.to_vector()) out.push_back(static_cast<double>(v));
    return out;
}

/// Whether every rank holds the same bits in `t` (compared through an all_gather of the bytes).
template <class T>
bool dist_same_everywhere(const lt::Tensor<T>& t) {
    const lt::dist::Group world = lt::dist::world();
    const lt::Tensor<T> all = lt::dist::all_gather(t.reshape({1, -1}), 0);
    const std::vector<T> v = all.to_vector();
    const std::size_t n = static_cast<std::size_t>(t.numel());
    for (int r = 1; r < world.size(); ++r)
        if (std::memcmp(v.data(), v.data() + static_cast<std::size_t>(r) * n, n * sizeof(T)) != 0) return false;
    return true;
}

template <class T>
void dist_check_reductions() {
    const lt::dist::Group world = lt::dist::world();
    const lt::Shape shape{3, 5};
    const lt::Tensor<T> mine = dist_input<T>(world.rank(), shape);
    std::vector<double> sum(15, 0.0), most(15, -1e300), least(15, 1e300);
    for (int r = 0; r < world.size(); ++r) {
        const std::vector<double> v = dist_values(dist_input<T>(r, shape));
        for (std::size_t i = 0; i < v.size(); ++i) {
            sum[i] += v[i];
            most[i] = std::max(most[i], v[i]);
            least[i] = std::min(least[i], v[i]);
        }
    }
    const double tolerance = std::is_same_v<T, lt::half> ? 2e-3 : std::is_same_v<T, float> ? 1e-6 : 1e-12;
    if constexpr (!std::is_same_v<T, bool>) {
        const lt::Tensor<T> s = lt::dist::all_sum(mine);
        const std::vector<double> got = dist_values(s);
        for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(sum[i]).epsilon(tolerance));
        CHECK(dist_same_everywhere(s));
        const auto m = lt::dist::all_mean(mine);
        const std::vector<double> mean = dist_values(m);
        for (std::size_t i = 0; i < mean.size(); ++i)
            CHECK(mean[i] == doctest::Approx(sum[i] / world.size()).epsilon(std::max(tolerance, 1e-6)));
    }
    const std::vector<double> hi = dist_values(lt::dist::all_max(mine)), lo = dist_values(lt::dist::all_min(mine));
    for (std::size_t i = 0; i < hi.size(); ++i) {
        CHECK(hi[i] == most[i]);
        CHECK(lo[i] == least[i]);
    }
}

template <class T>
void dist_check_movers() {
    const lt::dist::Group world = lt::dist::world();
    const int n = world.size();
    const lt::Shape shape{2, 3};
    std::vector<std::vector<double>> each;
    for (int r = 0; r < n; ++r) each.push_back(dist_values(dist_input<T>(r, shape, 1)));
    const lt::Tensor<T> mine = dist_input<T>(world.rank(), shape, 1);
    // Along axis 0: rank r's rows at 2r, 2r + 1.
    const lt::Tensor<T> rows = lt::dist::all_gather(mine, 0);
    CHECK(rows.shape() == lt::Shape{2 * n, 3});
    const std::vector<double> rv = dist_values(rows);
    for (int r = 0; r < n; ++r)
        for (int i = 0; i < 6; ++i) CHECK(rv[static_cast<std::size_t>(6 * r + i)] == each[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
    // Along the last axis: row i is every rank's row i in turn.
    const lt::Tensor<T> cols = lt::dist::all_gather(mine, -1);
    CHECK(cols.shape() == lt::Shape{2, 3 * n});
    const std::vector<double> cv = dist_values(cols);
    for (int i = 0; i < 2; ++i)
        for (int r = 0; r < n; ++r)
            for (int j = 0; j < 3; ++j)
                CHECK(cv[static_cast<std::size_t>(i * 3 * n + 3 * r + j)] ==
                      each[static_cast<std::size_t>(r)][static_cast<std::size_t>(3 * i + j)]);
    for (int root = 0; root < n; ++root) {
        const std::vector<double> b = dist_values(lt::dist::broadcast(mine, root));
        CHECK(b == each[static_cast<std::size_t>(root)]);
    }
}

/// Checks that the plan for `outputs` starts each collective as early as the graph allows: the
/// items between one collective and the next are all needed by the next (what is not needed
/// yet, such as the update that reads the previous collective, comes after it), and product
/// work is left after the first one to overlap with it.
void dist_check_collectives_early(const std::vector<lt::TensorRef>& outputs) {
    std::vector<lt::detail::Node*> nodes;
    for (const lt::TensorRef& t : outputs) nodes.push_back(t.node());
    const lt::detail::GraphWalk w = lt::detail::walk_graph(nodes);
    const lt::detail::Plan plan = lt::detail::make_plan(w);
    const auto& items = plan.items;
    std::map<int, std::size_t> made_by;
    for (std::size_t i = 0; i < items.size(); ++i) {
        made_by[items[i].root] = i;
        for (int f : items[i].fused_away()) made_by[f] = i;
    }
    auto needed_by = [&](std::size_t c) {
        std::vector<char> needed(items.size(), 0);
        std::vector<std::size_t> stack{c};
        while (!stack.empty()) {
            const std::size_t k = stack.back();
            stack.pop_back();
            for (int in : items[k].inputs) {
                auto it = made_by.find(in);
                if (it != made_by.end() && it->second != k && !needed[it->second]) {
                    needed[it->second] = 1;
                    stack.push_back(it->second);
                }
            }
        }
        return needed;
    };
    std::size_t previous = 0, collectives = 0, products_after_first = 0;
    for (std::size_t c = 0; c < items.size(); ++c) {
        if (collectives > 0 && items[c].kind() == lt::ScheduleItem::Kind::Matmul) ++products_after_first;
        if (items[c].kind() != lt::ScheduleItem::Kind::Collective) continue;
        const std::vector<char> needed = needed_by(c);
        for (std::size_t k = previous; k < c; ++k) {
            INFO("collective at item " << c << ", item " << k << " before it");
            CHECK((needed[k] || !items[k].computes() || items[k].kind() == lt::ScheduleItem::Kind::Collective));
        }
        previous = c + 1;
        ++collectives;
    }
    CHECK(collectives >= 2);
    CHECK(products_after_first > 0);
}

}  // namespace

TEST_CASE("lt::dist: init gives the launcher's ranks, once") {
    const lt::dist::Group world = lt::dist::init();
    CHECK(world.size() == dist_launched());
    CHECK(world.rank() >= 0);
    CHECK(world.rank() < world.size());
    CHECK(lt::dist::init() == world);
    CHECK(lt::dist::rank() == world.rank());
    CHECK(lt::dist::local_rank() >= 0);
    if (world.size() > 1) {
        CHECK(world.transport() == lt::dist::Transport::Mpi);
        CHECK(world.describe().find("MPI (") == 0);
    } else {
        CHECK(world.transport() == lt::dist::Transport::Single);
    }
    world.barrier();
}

TEST_CASE("lt::dist: sums, means, maxima and minima over the ranks, every dtype") {
    for_each_device([](lt::Device d) {
        dist_check_reductions<float>();
        dist_check_reductions<std::int32_t>();
        dist_check_reductions<std::int64_t>();
        dist_check_reductions<std::uint8_t>();
        dist_check_reductions<lt::half>();
        dist_check_reductions<bool>();
        if (lt::detail::supports_float64(d)) dist_check_reductions<double>();
    });
}

TEST_CASE("lt::dist: all_gather along any axis and broadcast from every root, every dtype") {
    for_each_device([](lt::Device d) {
        dist_check_movers<float>();
        dist_check_movers<std::int64_t>();
        dist_check_movers<std::uint8_t>();
        dist_check_movers<lt::half>();
        dist_check_movers<bool>();
        if (lt::detail::supports_float64(d)) dist_check_movers<double>();
    });
}

TEST_CASE("lt::dist: reduce_scatter keeps this rank's piece of the sum") {
    for_each_device([](lt::Device) {
        const lt::dist::Group world = lt::dist::world();
        const int n = world.size();
        for (int axis : {0, 1}) {
            const lt::Shape shape = axis == 0 ? lt::Shape{2 * n, 3} : lt::Shape{3, 2 * n};
            std::vector<double> sum(static_cast<std::size_t>(6 * n), 0.0);
            for (int r = 0; r < n; ++r) {
                const std::vector<double> v = dist_values(dist_input<float>(r, shape, 2));
                for (std::size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
            }
            const lt::Tensor<float> piece = lt::dist::reduce_scatter(dist_input<float>(world.rank(), shape, 2), axis);
            CHECK(piece.shape() == (axis == 0 ? lt::Shape{2, 3} : lt::Shape{3, 2}));
            const std::vector<double> got = dist_values(piece);
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 3; ++j) {
                    // Element (i, j) of the piece (axis 0), or (j, i) (axis 1).
                    const std::size_t at = axis == 0 ? static_cast<std::size_t>((2 * world.rank() + i) * 3 + j)
                                                     : static_cast<std::size_t>(j * 2 * n + 2 * world.rank() + i);
                    const std::size_t here = axis == 0 ? static_cast<std::size_t>(i * 3 + j) : static_cast<std::size_t>(j * 2 + i);
                    CHECK(got[here] == doctest::Approx(sum[at]).epsilon(1e-6));
                }
        }
    });
}

TEST_CASE("lt::dist: views of realized tensors are read in place or copied; empty tensors") {
    for_each_device([](lt::Device) {
        const lt::dist::Group world = lt::dist::world();
        lt::Tensor<float> x = lt::arange<float>(0, 12).reshape({3, 4}) + static_cast<float>(world.rank());
        x.realize();
        const float ranks = static_cast<float>(world.size()), offsets = ranks * (ranks - 1) / 2;
        // A slice (contiguous, at an offset) and a transpose (copied first).
        const std::vector<float> rows = lt::dist::all_sum(x.slice(0, 1, 3)).to_vector();
        for (int i = 0; i < 8; ++i) CHECK(rows[static_cast<std::size_t>(i)] == ranks * static_cast<float>(4 + i) + offsets);
        const std::vector<float> t = lt::dist::all_sum(x.transpose(0, 1)).to_vector();
        for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 3; ++i)
                CHECK(t[static_cast<std::size_t>(j * 3 + i)] == ranks * static_cast<float>(i * 4 + j) + offsets);
        // A realized transpose (a strided view of x's memory, no producer to compute it again): copied too.
        const lt::Tensor<float> xt = x.transpose(0, 1).realize();
        CHECK(lt::dist::all_sum(xt).to_vector() == t);
        // A transpose realized by the user after the collective was built: the item copies it.
        lt::Tensor<float> late = x.transpose(0, 1);
        const lt::Tensor<float> late_sum = lt::dist::all_sum(late), late_gather = lt::dist::all_gather(late, 1);
        late.realize();
        const std::vector<float> got = late_sum.to_vector(), gathered = late_gather.to_vector();
        const int size = world.size();
        for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 3; ++i) {
                CHECK(got[static_cast<std::size_t>(j * 3 + i)] == t[static_cast<std::size_t>(j * 3 + i)]);
                for (int r = 0; r < size; ++r)  // [4, 3 * size]: rank r's transpose in columns 3r..3r+2
                    CHECK(gathered[static_cast<std::size_t>(j * 3 * size + 3 * r + i)] ==
                          static_cast<float>(i * 4 + j) + static_cast<float>(r));
            }
        const lt::Tensor<float> empty = lt::dist::all_gather(lt::zeros<float>({0, 3}), 0);
        CHECK(empty.shape() == lt::Shape{0, 3});
        CHECK(empty.to_vector().empty());
        CHECK(lt::dist::all_sum(lt::zeros<float>({0})).to_vector().empty());
    });
}

TEST_CASE("lt::dist: a group of one makes no collective; bad arguments are errors there too") {
    const lt::dist::Group world = lt::dist::world();
    const lt::Tensor<float> x = lt::ones<float>({4, 6});
    CHECK_THROWS_AS(lt::dist::broadcast(x, world.size()), lt::ValueError);
    CHECK_THROWS_AS(lt::dist::broadcast(x, -1), lt::ValueError);
    CHECK_THROWS_AS(lt::dist::all_gather(x, 2), lt::AxisError);
    CHECK_THROWS_AS(lt::dist::all_sum(x > 0.0f), lt::DTypeError);
    CHECK_THROWS_AS(lt::dist::all_gather(lt::full<float>({}, 1.0f)), lt::ShapeError);
    if (world.size() > 1) CHECK_THROWS_AS(lt::dist::reduce_scatter(lt::ones<float>({world.size() + 1})), lt::ShapeError);
    std::size_t collectives = 0;
    for (const lt::ScheduleItem& item : lt::schedule(lt::dist::all_sum(x * 2.0f) + 1.0f))
        collectives += item.kind == lt::ScheduleItem::Kind::Collective;
    CHECK(collectives == (world.size() > 1 ? 1u : 0u));
}

TEST_CASE("lt::dist: a collective is one item; what produces and reads it fuses; a repeat plans nothing" *
          doctest::skip(dist_launched() < 2)) {
    for_each_device([](lt::Device) {
        auto step = [](float scale) {
            const lt::Tensor<float> x = lt::full<float>({64, 64}, 1.0f);
            return lt::exp(lt::dist::all_mean(x * scale)) - 1.0f;
        };
        const std::vector<lt::ScheduleItem> items = lt::schedule(step(2.0f));
        REQUIRE(items.size() == 3);
        CHECK(items[0].kind == lt::ScheduleItem::Kind::Kernel);
        CHECK(items[1].kind == lt::ScheduleItem::Kind::Collective);
        CHECK(items[2].kind == lt::ScheduleItem::Kind::Kernel);
        CHECK(items[2].ops.size() >= 2);  // the mean's division and exp, sub: one kernel
        CHECK(step(2.0f).to_vector()[5] == doctest::Approx(std::exp(2.0f) - 1.0f));
        const std::size_t plans = lt::detail::plan_cache().made();
        CHECK(step(0.5f).to_vector()[7] == doctest::Approx(std::exp(0.5f) - 1.0f));
        CHECK(lt::detail::plan_cache().made() == plans);
    });
}

TEST_CASE("lt::dist: ranks that realize different collectives all get an error naming each, and go on" *
          doctest::skip(dist_launched() < 2)) {
    for_each_device([](lt::Device) {
        const lt::dist::Group world = lt::dist::world();
        const lt::Tensor<float> x = lt::zeros<float>({world.rank() == 0 ? 4 : 5});
        const lt::Tensor<float> s = lt::dist::all_sum(x + 1.0f);
        std::string message;
        try {
            s.realize();
        } catch (const lt::DistributedError& e) {
            message = e.what();
        }
        INFO(message);
        CHECK(message.find("the ranks realize different collectives") != std::string::npos);
        CHECK(message.find("rank 0: all_sum float32[4]") != std::string::npos);
        CHECK(message.find("rank 1: all_sum float32[5]") != std::string::npos);
        CHECK_FALSE(s.is_realized());
        // A different order of two collectives is caught the same way.
        const lt::Tensor<float> a = lt::dist::all_sum(lt::ones<float>({3}));
        const lt::Tensor<std::int32_t> b = lt::dist::all_max(lt::ones<std::int32_t>({3}));
        std::string order;
        try {
            if (world.rank() == 0) lt::realize({lt::TensorRef(a), lt::TensorRef(b)});
            else lt::realize({lt::TensorRef(b), lt::TensorRef(a)});
        } catch (const lt::DistributedError& e) {
            order = e.what();
        }
        INFO(order);
        CHECK(order.find("rank 0: all_sum float32[3]; all_max int32[3]") != std::string::npos);
        CHECK(order.find("rank 1: all_max int32[3]; all_sum float32[3]") != std::string::npos);
        CHECK_FALSE(a.is_realized());
        lt::realize({lt::TensorRef(a), lt::TensorRef(b)});
        CHECK(a.to_vector() == std::vector<float>(3, static_cast<float>(world.size())));
        CHECK(b.to_vector() == std::vector<std::int32_t>(3, 1));
        // The group still works.
        CHECK(lt::dist::all_sum(lt::ones<float>({2})).to_vector() == std::vector<float>(2, static_cast<float>(world.size())));
    });
}

TEST_CASE("lt::dist: differentiating through a collective is an error that says what to do" *
          doctest::skip(dist_launched() < 2)) {
    const lt::Tensor<float> w = lt::ones<float>({3});
    const lt::Tensor<float> loss = lt::dist::all_sum(w * w).sum();
    CHECK_THROWS_WITH_AS(lt::grad(loss, w), doctest::Contains("average them"), lt::ValueError);
}

#if LAZYTENSOR_OPENCL
TEST_CASE("lt::dist: a rank whose realize fails before its collectives tells the others, who throw too" *
          doctest::skip(dist_launched() < 2 || !has_test_device(lt::Device::Kind::OpenCL) ||
                        std::string(std::getenv("LAZYTENSOR_CACHE_DIR") ? std::getenv("LAZYTENSOR_CACHE_DIR") : "") != "off")) {
    // (With the disk cache on, rank 1 may load the program rank 0 built, and build nothing.)
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        const lt::dist::Group world = lt::dist::world();
        auto& backend = lt::detail::opencl::opencl_backend(d.index);
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3});
        x.realize();
        // Constants no other test uses: realize must build this kernel now, and on rank 1 it fails.
        const lt::Tensor<float> s = lt::dist::all_sum(lt::cos(x) * 0.31415f + 2.71828f);
        const std::string bad = "-cl-std=CL1.2 -lazytensor-no-such-option";
        const std::string options = world.rank() == 1 ? backend.exchange_build_options(bad) : std::string();
        std::string message;
        try {
            s.realize();
        } catch (const lt::Error& e) {
            message = e.what();
        }
        if (world.rank() == 1) backend.exchange_build_options(options);
        INFO(message);
        if (world.rank() == 1) {
            CHECK(message.find("--- build log ---") != std::string::npos);
        } else {
            CHECK(message.find("rank 1's realize failed before its collectives started") != std::string::npos);
        }
        CHECK_FALSE(s.is_realized());
        const std::vector<float> v = s.to_vector();
        CHECK(v[1] == doctest::Approx(world.size() * (std::cos(2.0f) * 0.31415f + 2.71828f)));
    });
}
#endif

TEST_CASE("lt::dist: data-parallel training equals training on the whole batch; gradients overlap the backward pass") {
    // 20 steps of a 2-32-32-2 perceptron (tanh, mean squared error) on 96 * size rows: each rank
    // trains on its rows with averaged gradients, and also (alone, without collectives) on all
    // rows; the parameters must agree.
    for_each_device([](lt::Device) {
        const lt::dist::Group world = lt::dist::world();
        const int n = world.size();
        const std::int64_t rows = 96 * n;
        const lt::Tensor<float> inputs = lt::rand<float>({rows, 2}, 7) * 2.0f - 1.0f;
        const lt::Tensor<float> targets = lt::sin(inputs * 3.0f);
        auto initial = [] {
            return std::vector<lt::Tensor<float>>{lt::randn<float>({2, 32}, 1) * 0.5f, lt::zeros<float>({32}),
                                                  lt::randn<float>({32, 32}, 2) * 0.2f, lt::zeros<float>({32}),
                                                  lt::randn<float>({32, 2}, 3) * 0.2f, lt::zeros<float>({2})};
        };
        auto loss_of = [](const lt::Tensor<float>& x, const lt::Tensor<float>& y) {
            return [x, y](const std::vector<lt::Tensor<float>>& p) {
                const lt::Tensor<float> h1 = lt::tanh(lt::matmul(x, p[0]) + p[1]);
                const lt::Tensor<float> h2 = lt::tanh(lt::matmul(h1, p[2]) + p[3]);
                const lt::Tensor<float> out = lt::matmul(h2, p[4]) + p[5];
                return ((out - y) * (out - y)).mean();
            };
        };
        auto train = [&](const lt::Tensor<float>& x, const lt::Tensor<float>& y, bool averaged) {
            std::vector<lt::Tensor<float>> params = initial();
            for (int step = 0; step < 20; ++step) {
                auto [loss, grads] = lt::value_and_grad(loss_of(x, y), params);
                // Small buckets: several all-reduces per step.
                if (averaged) grads = lt::dist::average_gradients(grads, world, 1024);
                std::vector<lt::TensorRef> outputs;
                for (std::size_t i = 0; i < params.size(); ++i) {
                    params[i] = params[i] - 0.2f * grads[i];
                    outputs.emplace_back(params[i]);
                }
                if (averaged && step == 0 && n > 1) dist_check_collectives_early(outputs);
                lt::realize(outputs);
            }
            return params;
        };
        const std::int64_t mine = 96 * world.rank();
        const std::vector<lt::Tensor<float>> parallel =
            train(inputs.slice(0, mine, mine + 96), targets.slice(0, mine, mine + 96), true);
        const std::vector<lt::Tensor<float>> whole = train(inputs, targets, false);
        for (std::size_t i = 0; i < parallel.size(); ++i) {
            const std::vector<float> a = parallel[i].to_vector(), b = whole[i].to_vector();
            for (std::size_t k = 0; k < a.size(); ++k) CHECK(a[k] == doctest::Approx(b[k]).epsilon(1e-5).scale(1e-3));
            CHECK(dist_same_everywhere(parallel[i]));
        }
    });
}

TEST_CASE("lt::dist: a rank that never arrives ends the job with an error naming the wait" *
          doctest::skip(std::getenv("LAZYTENSOR_TEST_DIST_TIMEOUT") == nullptr)) {
    // Run alone by the dist_timeout test (LAZYTENSOR_DIST_TIMEOUT=2): rank 1 skips the realize.
    const lt::dist::Group world = lt::dist::world();
    const lt::Tensor<float> s = lt::dist::all_sum(lt::ones<float>({4}));
    if (world.rank() == 1) {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return;
    }
    s.realize();
    FAIL("rank 0's realize returned without rank 1");
}
