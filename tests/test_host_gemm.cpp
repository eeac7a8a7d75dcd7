// SPDX-License-Identifier: MIT
// host::gemm against a double-precision naive product on random data: odd and edge sizes,
// every kind of operand stride (row-major, column-major, gaps, neither, negative, zero), batches
// with broadcast axes, empty products, float and double, one thread and several.
//
// Every operand lives in the smallest buffer that holds the elements its layout names; the
// rest of that buffer is NaN, and so is C before the call, so a read of the wrong element or an
// element of C left unwritten shows up as a NaN in the result.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the host GEMM
#include <lazytensor/backend/host/gemm.hpp>
#endif
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace lt = lazytensor;
namespace host = lazytensor::detail::host;
namespace ir = lazytensor::detail::ir;

enum class Layout { row_major, col_major, row_gaps, strided, reversed, repeated_rows };

const char* layout_name(Layout l) {
    switch (l) {
        case Layout::row_major: return "row-major";
        case Layout::col_major: return "col-major";
        case Layout::row_gaps: return "row-major with gaps";
        case Layout::strided: return "no unit stride";
        case Layout::reversed: return "reversed";
        case Layout::repeated_rows: return "repeated rows";
    }
    return "?";
}

/// Row and column strides of a rows x cols matrix laid out as `l` (before any offset).
void matrix_strides(Layout l, std::int64_t rows, std::int64_t cols, std::int64_t& rs, std::int64_t& cs) {
    switch (l) {
        case Layout::row_major: rs = cols, cs = 1; return;
        case Layout::col_major: rs = 1, cs = rows; return;
        case Layout::row_gaps: rs = 3 * cols + 1, cs = 1; return;
        case Layout::strided: rs = 2, cs = 2 * rows + 3; return;
        case Layout::reversed: rs = -cols, cs = -1; return;
        case Layout::repeated_rows: rs = 0, cs = 1; return;
    }
}

template <class T>
struct Operand {
    std::vector<T> data;
    ir::MatrixLayout layout;
};

/// A rows x cols operand for every index of `batch`; batch axes flagged in `broadcast` get
/// stride 0. Its offset makes the lowest element it names the first of `data`.
template <class T>
Operand<T> make_operand(std::int64_t rows, std::int64_t cols, const lt::Shape& batch, const std::vector<bool>& broadcast,
                        Layout l, std::mt19937& gen) {
    Operand<T> op;
    matrix_strides(l, rows, cols, op.layout.row_stride, op.layout.col_stride);
    // One matrix spans [lo, hi] relative to its origin; batches sit one span apart.
    const auto extent = [](std::int64_t n, std::int64_t s) { return n > 0 ? (n - 1) * s : 0; };
    const std::int64_t lo = std::min<std::int64_t>(0, extent(rows, op.layout.row_stride)) +
                            std::min<std::int64_t>(0, extent(cols, op.layout.col_stride));
    const std::int64_t hi = std::max<std::int64_t>(0, extent(rows, op.layout.row_stride)) +
                            std::max<std::int64_t>(0, extent(cols, op.layout.col_stride));
    std::int64_t stride = hi - lo + 1;
    op.layout.batch_strides = lt::Strides(batch.size(), 0);
    for (std::size_t t = batch.size(); t-- > 0;) {
        if (broadcast[t]) continue;
        op.layout.batch_strides[t] = stride;
        stride *= batch[t];
    }
    op.layout.offset = -lo;
    op.data.assign(static_cast<std::size_t>(stride), std::numeric_limits<T>::quiet_NaN());
    ir::Gemm g;  // only for batch_offsets
    g.batch = batch;
    g.a = op.layout;
    g.b = op.layout;
    std::vector<std::int64_t> offsets, unused;
    g.batch_offsets(offsets, unused);
    std::uniform_real_distribution<double> dist(-1, 1);
    for (const std::int64_t base : offsets)
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                op.data[static_cast<std::size_t>(base + i * op.layout.row_stride + j * op.layout.col_stride)] =
                    static_cast<T>(dist(gen));
    return op;
}

struct Case {
    std::int64_t m, n, k;
    Layout a = Layout::row_major, b = Layout::row_major;
    lt::Shape batch{};
    std::vector<bool> a_broadcast{}, b_broadcast{};
};

/// Runs host::gemm on random operands laid out as `c` says and returns how many elements of C
/// differ from the reference by more than a rounding bound that grows with k.
template <class T>
std::int64_t count_wrong(const Case& c, host::ThreadPool& pool, unsigned seed = 1) {
    std::mt19937 gen(seed);
    const std::vector<bool> a_bc = c.a_broadcast.empty() ? std::vector<bool>(c.batch.size()) : c.a_broadcast;
    const std::vector<bool> b_bc = c.b_broadcast.empty() ? std::vector<bool>(c.batch.size()) : c.b_broadcast;
    const Operand<T> a = make_operand<T>(c.m, c.k, c.batch, a_bc, c.a, gen);
    const Operand<T> b = make_operand<T>(c.k, c.n, c.batch, b_bc, c.b, gen);
    ir::Gemm g;
    g.dtype = std::is_same_v<T, float> ? lt::DType::Float32 : lt::DType::Float64;
    g.batch = c.batch;
    g.m = c.m, g.n = c.n, g.k = c.k;
    g.a = a.layout;
    g.b = b.layout;
    const std::int64_t batches = g.batch_count();
    // One NaN past the end: it must stay as it is.
    std::vector<T> out(static_cast<std::size_t>(batches * c.m * c.n + 1), std::numeric_limits<T>::quiet_NaN());
    host::gemm<T>(g, a.data.data(), b.data.data(), out.data(), pool);

    std::vector<std::int64_t> a_off, b_off;
    g.batch_offsets(a_off, b_off);
    const double eps = std::numeric_limits<T>::epsilon();
    std::int64_t wrong = 0;
    for (std::int64_t t = 0; t < batches; ++t)
        for (std::int64_t i = 0; i < c.m; ++i)
            for (std::int64_t j = 0; j < c.n; ++j) {
                double ref = 0, magnitude = 0;
                for (std::int64_t p = 0; p < c.k; ++p) {
                    const double x = a.data[static_cast<std::size_t>(a_off[t] + i * g.a.row_stride + p * g.a.col_stride)];
                    const double y = b.data[static_cast<std::size_t>(b_off[t] + p * g.b.row_stride + j * g.b.col_stride)];
                    ref += x * y;
                    magnitude += std::fabs(x * y);
                }
                const double got = out[static_cast<std::size_t>((t * c.m + i) * c.n + j)];
                if (!(std::fabs(got - ref) <= double(c.k + 2) * eps * magnitude)) ++wrong;
            }
    if (!std::isnan(out.back())) ++wrong;
    return wrong;
}

template <class T>
void check(const Case& c, host::ThreadPool& pool) {
    CAPTURE(c.m);
    CAPTURE(c.n);
    CAPTURE(c.k);
    CAPTURE(std::string(layout_name(c.a)));
    CAPTURE(std::string(layout_name(c.b)));
    CAPTURE(c.batch);
    CAPTURE(pool.size());
    CHECK(count_wrong<T>(c, pool) == 0);
}

template <class F>
void for_each_pool(F&& f) {
    host::ThreadPool one(1), three(3);
    f(one);
    f(three);
}

const std::int64_t edge_sizes[] = {1, 2, 7, 31, 64, 65, 127, 257};

}  // namespace

TEST_CASE_TEMPLATE("host gemm: square sizes, row-major", T, float, double) {
    for_each_pool([](host::ThreadPool& pool) {
        for (const std::int64_t s : edge_sizes) check<T>({s, s, s}, pool);
    });
}

TEST_CASE_TEMPLATE("host gemm: non-square sizes, every pair of layouts", T, float, double) {
    const Case shapes[] = {{1, 257, 7}, {257, 1, 31}, {7, 65, 1}, {31, 127, 64}, {65, 7, 127}, {127, 31, 2}, {2, 64, 65}};
    const Layout layouts[] = {Layout::row_major, Layout::col_major, Layout::row_gaps, Layout::strided};
    for_each_pool([&](host::ThreadPool& pool) {
        for (Case c : shapes)
            for (const Layout a : layouts)
                for (const Layout b : layouts) {
                    c.a = a, c.b = b;
                    check<T>(c, pool);
                }
    });
}

TEST_CASE_TEMPLATE("host gemm: negative and zero strides", T, float, double) {
    for_each_pool([](host::ThreadPool& pool) {
        check<T>({31, 65, 33, Layout::reversed, Layout::row_major}, pool);
        check<T>({31, 65, 33, Layout::col_major, Layout::reversed}, pool);
        check<T>({40, 20, 70, Layout::repeated_rows, Layout::reversed}, pool);
        check<T>({20, 40, 70, Layout::row_major, Layout::repeated_rows}, pool);
    });
}

TEST_CASE_TEMPLATE("host gemm: several k slices, A panels and B blocks", T, float, double) {
    // Past the blocking sizes: k beyond one slice, m beyond one A panel, n beyond one B block.
    for_each_pool([](host::ThreadPool& pool) {
        check<T>({70, 90, 1000, Layout::row_major, Layout::row_major}, pool);
        check<T>({70, 90, 1000, Layout::col_major, Layout::col_major}, pool);
        check<T>({13, 1500, 400, Layout::row_major, Layout::row_major}, pool);
        check<T>({13, 1500, 400, Layout::strided, Layout::col_major}, pool);
        check<T>({3000, 3, 5, Layout::row_major, Layout::row_major}, pool);
        check<T>({300, 300, 300, Layout::row_major, Layout::col_major}, pool);
    });
}

TEST_CASE_TEMPLATE("host gemm: batches", T, float, double) {
    for_each_pool([](host::ThreadPool& pool) {
        // Two batch axes, each broadcast on one side.
        check<T>({7, 9, 5, Layout::row_major, Layout::col_major, {2, 3}, {true, false}, {false, true}}, pool);
        check<T>({33, 65, 31, Layout::row_gaps, Layout::row_major, {3, 2}, {false, true}, {true, false}}, pool);
        // Many small products, shared out whole; a few big ones, each split across threads.
        check<T>({5, 3, 4, Layout::row_major, Layout::row_major, {50, 4}}, pool);
        check<T>({1, 1, 1, Layout::row_major, Layout::row_major, {1000}}, pool);
        check<T>({65, 70, 64, Layout::col_major, Layout::row_major, {3}}, pool);
        // Both operands broadcast over a batch axis: every batch of C is the same product.
        check<T>({31, 33, 17, Layout::row_major, Layout::row_major, {4}, {true}, {true}}, pool);
    });
}

TEST_CASE_TEMPLATE("host gemm: empty products", T, float, double) {
    for_each_pool([](host::ThreadPool& pool) {
        // k = 0: C is all zeros (it starts as NaN).
        check<T>({7, 9, 0}, pool);
        check<T>({65, 33, 0, Layout::row_major, Layout::row_major, {3}}, pool);
        // m = 0, n = 0 or no batches: nothing is written (the NaN past the end stays).
        check<T>({0, 9, 5}, pool);
        check<T>({9, 0, 5}, pool);
        check<T>({4, 5, 6, Layout::row_major, Layout::row_major, {0, 3}}, pool);
    });
}

TEST_CASE("host gemm: results do not depend on the thread count") {
    host::ThreadPool one(1), two(2);
    for (const std::int64_t s : {65, 300}) {
        ir::Gemm g;
        g.m = g.n = g.k = s;
        g.a.row_stride = s, g.a.col_stride = 1;
        g.b.row_stride = s, g.b.col_stride = 1;
        std::vector<float> a(static_cast<std::size_t>(s * s)), b(a.size()), c1(a.size()), c2(a.size());
        std::mt19937 gen(3);
        std::uniform_real_distribution<float> dist(-1, 1);
        for (auto& x : a) x = dist(gen);
        for (auto& x : b) x = dist(gen);
        host::gemm<float>(g, a.data(), b.data(), c1.data(), one);
        host::gemm<float>(g, a.data(), b.data(), c2.data(), two);
        CHECK(c1 == c2);
    }
}
