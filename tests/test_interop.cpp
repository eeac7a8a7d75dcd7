// SPDX-License-Identifier: MIT
// Interop: wrapping user memory without a copy (from_blob, data(), strides(), copy_to), Eigen
// matrices (LAZYTENSOR_TEST_EIGEN) and DLPack (LAZYTENSOR_TEST_DLPACK).
#include "common.hpp"

#include <chrono>
#include <memory>
#include <thread>
#include <type_traits>

#if LAZYTENSOR_TEST_EIGEN
#include <lazytensor/interop/eigen.hpp>
#endif
#if LAZYTENSOR_TEST_DLPACK
#include <lazytensor/interop/dlpack.hpp>
#endif

namespace {

/// The message of the error of type E that f throws (the check fails if it throws none, or another).
template <class E, class F>
std::string interop_error(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        FAIL_CHECK("threw another error than expected: " << e.what());
        return {};
    }
    FAIL_CHECK("threw nothing");
    return {};
}

#define INTEROP_CHECK_CONTAINS(text, part)                                              \
    do {                                                                               \
        const std::string interop_text_ = (text);                                      \
        CHECK_MESSAGE(interop_text_.find(part) != std::string::npos, interop_text_);   \
    } while (0)

/// A distinct, exactly representable value of T for each i (bool: a pattern).
template <class T>
T interop_value(int i) {
    if constexpr (std::is_same_v<T, bool>) return i % 3 == 1;
    else if constexpr (std::is_same_v<T, std::uint8_t>) return static_cast<std::uint8_t>(200 - 7 * i);
    else if constexpr (std::is_same_v<T, std::int64_t>) return (std::int64_t(1) << 40) * (i - 3) + i;
    else if constexpr (std::is_same_v<T, lt::half> || std::is_same_v<T, lt::bfloat16>) return T(0.5f * static_cast<float>(i) - 2.0f);
    else return static_cast<T>(3 * i - 7);
}

template <class T>
double interop_double(T v) {
    if constexpr (std::is_same_v<T, lt::half> || std::is_same_v<T, lt::bfloat16>) return static_cast<double>(static_cast<float>(v));
    else return static_cast<double>(v);
}

template <class T>
std::vector<double> interop_doubles(const std::vector<T>& values) {
    std::vector<double> out;
    for (std::size_t i = 0; i < values.size(); ++i) out.push_back(interop_double<T>(values[i]));
    return out;
}

/// `n` values interop_value<T>(0..n-1) in memory of their own (std::vector<bool> has no data()).
template <class T>
std::unique_ptr<T[]> interop_memory(int n) {
    std::unique_ptr<T[]> mem(new T[static_cast<std::size_t>(n)]);
    for (int i = 0; i < n; ++i) mem[static_cast<std::size_t>(i)] = interop_value<T>(i);
    return mem;
}

}  // namespace

// ------------------------------------------------------------------------------ from_blob

TEST_CASE_TEMPLATE("from_blob: the tensor's memory is the user's: kernels read it, assign writes it", T, bool,
                   std::uint8_t, std::int32_t, std::int64_t, lt::half, float, double) {
    std::unique_ptr<T[]> mem = interop_memory<T>(6);
    lt::Tensor<T> t = lt::from_blob(mem.get(), {2, 3});
    static_assert(std::is_same_v<decltype(t.data()), T*>);
    CHECK(t.is_realized());
    CHECK(t.device() == lt::Device::host());
    CHECK(t.shape() == lt::Shape{2, 3});
    CHECK(t.data() == mem.get());
    CHECK(t.strides() == lt::Strides{3, 1});
    std::vector<double> expected;
    for (int i = 0; i < 6; ++i) expected.push_back(interop_double(interop_value<T>(i)));
    CHECK(interop_doubles(t.to_vector()) == expected);
    CHECK(lt::cast<double>(t).to_vector() == expected);  // a kernel reads the memory
    // assign writes into the user's memory: column 0 of both rows, elements 0 and 3.
    t.slice(1, 0, 1).assign(lt::full<T>({2, 1}, interop_value<T>(9)));
    CHECK(interop_double(mem[0]) == interop_double(interop_value<T>(9)));
    CHECK(interop_double(mem[3]) == interop_double(interop_value<T>(9)));
    CHECK(interop_double(mem[1]) == expected[1]);
    // What the user writes is read by kernels that run afterwards.
    mem[5] = interop_value<T>(10);
    CHECK(lt::cast<double>(t).to_vector()[5] == interop_double(interop_value<T>(10)));
    CHECK(t.data() == mem.get());  // still the same memory, never replaced
}

TEST_CASE("from_blob: strides in elements: transposed, broadcast (0), with gaps; a 0-d and an empty tensor") {
    std::vector<float> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    // v as a 4 x 3 row-major matrix, read transposed: [3, 4] with strides [1, 3].
    lt::Tensor<float> xt = lt::from_blob(v.data(), {3, 4}, {1, 3});
    CHECK(xt.to_vector() == std::vector<float>{1, 4, 7, 10, 2, 5, 8, 11, 3, 6, 9, 12});
    CHECK((xt * 2.0f).to_vector() == std::vector<float>{2, 8, 14, 20, 4, 10, 16, 22, 6, 12, 18, 24});
    // every other element, the row repeated (stride 0)
    lt::Tensor<float> gaps = lt::from_blob(v.data(), {2, 3}, {0, 2});
    CHECK(gaps.to_vector() == std::vector<float>{1, 3, 5, 1, 3, 5});
    CHECK(lt::sum(gaps, 0).to_vector() == std::vector<float>{2, 6, 10});
    // rows of 2 elements, 4 apart, from v[1]: the last element read is v[10]
    lt::Tensor<float> sparse = lt::from_blob(v.data() + 1, {3, 2}, {4, 1});
    CHECK(sparse.to_vector() == std::vector<float>{2, 3, 6, 7, 10, 11});
    // a 0-d tensor is one element
    lt::Tensor<float> scalar = lt::from_blob(v.data() + 4, {});
    CHECK(scalar.item() == 5.0f);
    // empty tensors need no memory at all
    lt::Tensor<float> empty = lt::from_blob(static_cast<float*>(nullptr), {0, 3});
    CHECK(empty.numel() == 0);
    CHECK(empty.to_vector().empty());
    CHECK(lt::sum(empty).item() == 0.0f);
}

TEST_CASE("from_blob: a pointer one element past an aligned one is read and written correctly (SIMD, threads, GEMM)") {
    // Buffers lazytensor allocates are 64-byte aligned; a user's may be aligned to its element
    // only. Large enough for full SIMD blocks and the thread pool.
    const int n = 40000;
    std::vector<float> fv(n + 1);
    std::vector<double> dv(n + 1);
    std::vector<std::int64_t> iv(n + 1);
    std::vector<lt::half> hv(n + 1);
    for (int i = 0; i <= n; ++i) {
        fv[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.25f;
        dv[static_cast<std::size_t>(i)] = static_cast<double>(i % 89) * 0.5;
        iv[static_cast<std::size_t>(i)] = i * 3 - 5;
        hv[static_cast<std::size_t>(i)] = lt::half(static_cast<float>(i % 31));
    }
    lt::Tensor<float> f = lt::from_blob(fv.data() + 1, {n});
    lt::Tensor<double> d = lt::from_blob(dv.data() + 1, {n});
    lt::Tensor<std::int64_t> k = lt::from_blob(iv.data() + 1, {n});
    lt::Tensor<lt::half> h = lt::from_blob(hv.data() + 1, {n});
    REQUIRE(reinterpret_cast<std::uintptr_t>(f.data()) % 64 != 0);
    const std::vector<float> fr = (f * 2.0f + 1.0f).to_vector();
    const std::vector<double> dr = (d * d).to_vector();
    const std::vector<std::int64_t> kr = (k + std::int64_t(7)).to_vector();
    const std::vector<float> hr = lt::cast<float>(h * lt::half(2.0f)).to_vector();
    double fsum = 0;
    for (int i = 1; i <= n; ++i) {
        const auto u = static_cast<std::size_t>(i), at = u - 1;
        CHECK(fr[at] == fv[u] * 2.0f + 1.0f);
        CHECK(dr[at] == dv[u] * dv[u]);
        CHECK(kr[at] == iv[u] + 7);
        CHECK(hr[at] == static_cast<float>(hv[u]) * 2.0f);
        fsum += fv[u];
    }
    CHECK(lt::sum(lt::cast<double>(f)).item() == doctest::Approx(fsum).epsilon(1e-12));
    // In place, into the misaligned memory.
    f.assign(f * 4.0f);
    for (int i = 1; i <= n; ++i) CHECK(fv[static_cast<std::size_t>(i)] == static_cast<float>(i % 97));
    CHECK(fv[0] == 0.0f);  // the element before the tensor is left alone
    // A GEMM reading misaligned operands and a large in-place write (non-temporal stores).
    std::vector<double> av(1 + 37 * 29), bv(1 + 29 * 41);
    for (std::size_t i = 0; i < av.size(); ++i) av[i] = static_cast<double>(i % 13) - 6;
    for (std::size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<double>(i % 7) - 3;
    lt::Tensor<double> a = lt::from_blob(av.data() + 1, {37, 29}), b = lt::from_blob(bv.data() + 1, {29, 41});
    const std::vector<double> c = lt::matmul(a, b).to_vector();
    for (int i = 0; i < 37; ++i)
        for (int j = 0; j < 41; ++j) {
            double want = 0;
            for (int q = 0; q < 29; ++q) want += av[static_cast<std::size_t>(1 + i * 29 + q)] * bv[static_cast<std::size_t>(1 + q * 41 + j)];
            CHECK(c[static_cast<std::size_t>(i * 41 + j)] == want);
        }
    const std::int64_t big = (std::int64_t(16) << 20) / 4 + 1000;  // past LAZYTENSOR_HOST_STREAM_MIN
    std::vector<float> large(static_cast<std::size_t>(big) + 1, 1.0f);
    lt::Tensor<float> l = lt::from_blob(large.data() + 1, {big});
    l.assign(lt::arange<float>(big, lt::Device::host()) * 0.5f);
    bool all_right = large[0] == 1.0f;
    for (std::int64_t i = 0; i < big; ++i) all_right = all_right && large[static_cast<std::size_t>(i + 1)] == 0.5f * static_cast<float>(i);
    CHECK(all_right);
}

TEST_CASE("from_blob: the deleter runs once, when the last tensor, view or lazy expression lets go") {
    int deleted = 0;
    float* p = new float[6]{1, 2, 3, 4, 5, 6};
    lt::Tensor<float> view, lazy;
    {
        lt::Tensor<float> t = lt::from_blob(p, {2, 3}, [&](float* q) {
            CHECK(q == p);
            ++deleted;
            delete[] q;
        });
        view = t.t();
        lazy = t * 2.0f;
    }
    CHECK(deleted == 0);
    CHECK(view.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
    view = lt::Tensor<float>();
    CHECK(deleted == 0);  // the lazy expression still reads the memory
    CHECK(lazy.to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12});
    CHECK(deleted == 1);  // realized: the expression's graph, and with it the memory, is released
    lazy = lt::Tensor<float>();
    CHECK(deleted == 1);

    // With strides, and read-only memory with a deleter of const pointers.
    double* q = new double[4]{1, 2, 3, 4};
    lt::from_blob(q, {2, 2}, {1, 2}, [&](double* r) {
        ++deleted;
        delete[] r;
    });
    CHECK(deleted == 2);
    const std::int32_t* c = new std::int32_t[2]{5, 6};
    {
        lt::Tensor<std::int32_t> ro = lt::from_blob(c, {2}, [&](const std::int32_t* r) {
            ++deleted;
            delete[] r;
        });
        CHECK(ro.to_vector() == std::vector<std::int32_t>{5, 6});
    }
    CHECK(deleted == 3);

    // A from_blob that throws leaves the memory to the caller: its deleter is not called.
    float x[2] = {1, 2};
    auto never = [&](float*) { ++deleted; };
    CHECK_THROWS_AS(lt::from_blob(x, {2}, {-1}, never), lt::ValueError);
    CHECK_THROWS_AS(lt::from_blob(x, {2, 1}, {1}, never), lt::ShapeError);
    CHECK(deleted == 3);
}

TEST_CASE("from_blob: bad memory or layouts are errors that name them") {
    float v[8] = {};
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::from_blob(static_cast<float*>(nullptr), {2, 3}); }),
                           "lt::from_blob: null pointer for a tensor of shape [2, 3]");
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::from_blob(v + 3, {2, 2}, {-1, 1}); }),
                           "negative stride -1 on axis 0 (shape [2, 2], strides [-1, 1]); wrap the memory from its lowest "
                           "address with positive strides and flip() the tensor");
    INTEROP_CHECK_CONTAINS(interop_error<lt::ShapeError>([&] { lt::from_blob(v, {2, 2}, {1, 2, 4}); }),
                           "3 strides [1, 2, 4] for a shape of 2 dimensions [2, 2]");
    INTEROP_CHECK_CONTAINS(interop_error<lt::ShapeError>([&] { lt::from_blob(v, {2, -2}); }),
                           "negative extent in shape [2, -2]");
    INTEROP_CHECK_CONTAINS(interop_error<lt::ShapeError>([&] { lt::from_blob(v, {3, 3}, {std::int64_t(1) << 62, 1 << 30}); }),
                           "reaches past a 64-bit element offset");
    auto* misaligned = reinterpret_cast<float*>(reinterpret_cast<char*>(v) + 1);
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::from_blob(misaligned, {2}); }),
                           "is not aligned for float32 (to 4 bytes)");
    // from_blob gives host tensors; with an OpenCL default device they are still on the host.
    for_each_device([&](lt::Device d) {
        lt::Tensor<float> t = lt::from_blob(v, {8});
        CHECK(t.device() == lt::Device::host());
        if (d != lt::Device::host())
            INTEROP_CHECK_CONTAINS(interop_error<lt::DeviceError>([&] { (t + lt::zeros<float>({8}, d)).realize(); }),
                                   "operands are on different devices (host and " + d.str() + ")");
    });
}

TEST_CASE("from_blob: an assign into a layout whose elements may share memory is rejected; reading it works") {
    std::vector<float> v{1, 2, 3, 4, 5};
    // Sliding windows of 3 (strides [1, 1]): element [i, j] is v[i + j].
    lt::Tensor<float> windows = lt::from_blob(v.data(), {3, 3}, {1, 1});
    CHECK(windows.to_vector() == std::vector<float>{1, 2, 3, 2, 3, 4, 3, 4, 5});
    CHECK(lt::sum(windows, 1).to_vector() == std::vector<float>{6, 9, 12});
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { windows.assign(0.0f); }),
                           "assign: the target's strides [1, 1] (shape [3, 3]) may make several of its elements one "
                           "memory location");
    lt::Tensor<float> repeated = lt::from_blob(v.data(), {2, 2}, {0, 1});
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { repeated.assign(0.0f); }), "is a broadcast view");
    CHECK(v == std::vector<float>{1, 2, 3, 4, 5});
    // A layout with gaps whose elements are distinct is written.
    lt::Tensor<float> gaps = lt::from_blob(v.data(), {2, 2}, {3, 1});
    gaps.assign(lt::tensor<float>({10, 20, 30, 40}, {2, 2}, lt::Device::host()));
    CHECK(v == std::vector<float>{10, 20, 3, 30, 40});
    // Views of lazytensor's own memory are never reported: a strided, flipped, transposed slice.
    lt::Tensor<float> own = lt::arange<float>(24, lt::Device::host()).reshape({4, 6}).realize();
    own.slice(1, 5, 0, -2).t().assign(-1.0f);
    const std::vector<float> o = own.to_vector();
    for (int i = 0; i < 24; ++i) CHECK(o[static_cast<std::size_t>(i)] == (i % 6 % 2 == 1 ? -1.0f : static_cast<float>(i)));
}

TEST_CASE("from_blob of a const pointer: a read-only tensor") {
    const std::vector<double> c{1.5, 2.5, 3.5};
    lt::Tensor<double> ro = lt::from_blob(c.data(), {3});
    CHECK((ro * 2.0).to_vector() == std::vector<double>{3, 5, 7});
    CHECK(ro.const_data() == c.data());
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { ro.assign(0.0); }),
                           "assign: the target (shape [3]) is read-only memory (lt::from_blob of a const pointer");
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { ro.slice(0, 0, 1).assign(0.0); }), "read-only memory");
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { ro.data(); }),
                           "data(): the tensor (shape [3]) is read-only memory (lt::from_blob of a const pointer); "
                           "read it through const_data()");
    CHECK(c == std::vector<double>{1.5, 2.5, 3.5});
    // Its values copied elsewhere are writable.
    lt::Tensor<double> copy = lt::clone(ro).realize();
    copy.assign(0.0);
    CHECK(copy.to_vector() == std::vector<double>{0, 0, 0});
}

TEST_CASE("from_blob: realize never writes into wrapped memory, and it is not counted as lazytensor's") {
    std::vector<float> v(3000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 17);
    const std::vector<float> before = v;
    const lt::MemoryStats stats = lt::memory_stats(lt::Device::host());
    lt::Tensor<float> t = lt::from_blob(v.data(), {3000});
    CHECK(lt::memory_stats(lt::Device::host()).live_bytes == stats.live_bytes);
    CHECK(lt::memory_stats(lt::Device::host()).live_buffers == stats.live_buffers);
    for (int round = 0; round < 3; ++round) {
        std::vector<lt::Tensor<float>> results{t + 1.0f, lt::exp(t), lt::cumsum(t, 0), t.reshape({30, 100}).sum(1),
                                               lt::softmax(t.reshape({30, 100}), 1), t * t};
        for (auto& r : results) {
            r.realize();
            const float* p = r.const_data();
            CHECK((p + r.numel() <= v.data() || p >= v.data() + v.size()));  // memory of its own
        }
    }
    CHECK(v == before);
    t = lt::Tensor<float>();
    lt::empty_cache(lt::Device::host());  // wrapped memory never reaches the allocator's cache
    CHECK(v == before);
}

TEST_CASE("from_blob: tensors wrapping the same memory see each other's writes in order") {
    // Several blocks of the host interpreter (1024 elements), so that a kernel reading memory it
    // has already overwritten would be seen.
    const int n = 5000;
    std::vector<float> v(n), original(n);
    for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = original[static_cast<std::size_t>(i)] = static_cast<float>(i);
    // First the same assign between separate memories: its plan must not be the one reused below.
    std::vector<float> source = original, target(n);
    lt::from_blob(target.data(), {n}).assign(lt::from_blob(source.data(), {n}).flip(0));
    CHECK(target[0] == static_cast<float>(n - 1));
    lt::Tensor<float> a = lt::from_blob(v.data(), {n});
    lt::Tensor<float> b = lt::from_blob(v.data(), {n});
    lt::Tensor<float> earlier = b * 1.0f;  // lazy: reads b's memory as it is now
    a.assign(b.flip(0));                   // reads the memory it writes, through another tensor
    for (int i = 0; i < n; ++i) CHECK(v[static_cast<std::size_t>(i)] == static_cast<float>(n - 1 - i));
    CHECK(earlier.to_vector() == original);
    // Overlapping by all but one element: `shifted` is a's memory one element on.
    lt::Tensor<float> shifted = lt::from_blob(v.data() + 1, {n - 1});
    shifted.assign(a.slice(0, 0, n - 1) + 0.0f);
    CHECK(v[0] == static_cast<float>(n - 1));
    for (int i = 1; i < n; ++i) CHECK(v[static_cast<std::size_t>(i)] == static_cast<float>(n - i));
    // Memory lazytensor allocated, wrapped again through data().
    lt::Tensor<float> own = lt::arange<float>(n, lt::Device::host()).realize();
    lt::Tensor<float> again = lt::from_blob(own.data(), {n});
    lt::Tensor<float> before = own + 0.0f;
    again.assign(own.flip(0));
    const std::vector<float> flipped = own.to_vector();
    for (int i = 0; i < n; ++i) CHECK(flipped[static_cast<std::size_t>(i)] == static_cast<float>(n - 1 - i));
    CHECK(before.to_vector() == original);
}

// ---------------------------------------------------------------- data(), strides(), copy_to

TEST_CASE("data() and strides(): element [0, ...] of the tensor's host memory and its layout") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::arange<float>(12, d).reshape({3, 4});
        if (d.kind != lt::Device::Kind::Host) {
            INTEROP_CHECK_CONTAINS(interop_error<lt::DeviceError>([&] { x.data(); }),
                                   "data(): the tensor is on " + d.str() + ", and data() gives host memory only");
            INTEROP_CHECK_CONTAINS(interop_error<lt::DeviceError>([&] { x.const_data(); }), "const_data()");
            CHECK(x.strides() == lt::Strides{4, 1});  // strides are known on every device
            return;
        }
        lt::Tensor<float> lazy = x * 2.0f;
        CHECK_FALSE(lazy.is_realized());
        float* p = lazy.data();  // realizes it
        CHECK(lazy.is_realized());
        CHECK(lazy.strides() == lt::Strides{4, 1});
        for (int i = 0; i < 12; ++i) CHECK(p[i] == 2.0f * static_cast<float>(i));
        p[5] = -1.0f;  // writes in place
        CHECK(lazy.to_vector()[5] == -1.0f);
        // Views point into the memory of the tensor they view.
        lt::Tensor<float> t = lazy.t();
        CHECK(t.data() == p);
        CHECK(t.strides() == lt::Strides{1, 4});
        CHECK(t.data()[1 * 1 + 2 * 4] == p[2 * 4 + 1]);
        lt::Tensor<float> s = lazy.slice(0, 1, 3).slice(1, 1, 4, 2);
        CHECK(s.data() == p + 5);
        CHECK(s.strides() == lt::Strides{4, 2});
        lt::Tensor<float> f = lazy.flip(1);
        CHECK(f.data() == p + 3);
        CHECK(f.strides() == lt::Strides{4, -1});
        lt::Tensor<float> e = lazy.reshape({3, 1, 4}).expand({3, 2, 4});
        CHECK(e.strides()[1] == 0);
        // half and bool: their own storage (lt::half, one byte per bool).
        lt::Tensor<lt::half> h = lt::cast<lt::half>(x).realize();
        static_assert(std::is_same_v<decltype(h.data()), lt::half*>);
        CHECK(static_cast<float>(h.data()[7]) == 7.0f);
        lt::Tensor<bool> b = (x > 4.0f).realize();
        CHECK(b.data()[4] == false);
        CHECK(b.data()[5] == true);
    });
}

TEST_CASE("copy_to: the elements, row-major, into the user's buffer, from every device") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::arange<float>(12, d).reshape({3, 4});
        std::vector<float> out(12, -1.0f);
        x.copy_to(out.data(), out.size());
        CHECK(out == std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
        x.t().copy_to(out.data(), out.size());
        CHECK(out == std::vector<float>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
        std::vector<float> part(4);
        x.slice(0, 1, 3).slice(1, 1, 3).copy_to(part.data(), part.size());  // a view at an offset
        CHECK(part == std::vector<float>{5, 6, 9, 10});
        x.slice(0, 2, 3).copy_to(part.data(), part.size());  // row-major at an offset: copied straight
        CHECK(part == std::vector<float>{8, 9, 10, 11});
        x.flip(0).copy_to(out.data(), out.size());
        CHECK(out == std::vector<float>{8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3});
        (x * 2.0f + 1.0f).copy_to(out.data(), out.size());  // an expression: realized first
        CHECK(out[11] == 23.0f);
        std::unique_ptr<bool[]> flags(new bool[12]);
        (x.t() > 5.0f).copy_to(flags.get(), 12);
        for (int i = 0; i < 12; ++i) CHECK(flags[static_cast<std::size_t>(i)] == (i % 3 * 4 + i / 3 > 5));
        std::vector<lt::half> halves(12);
        lt::cast<lt::half>(x).t().copy_to(halves.data(), halves.size());
        CHECK(static_cast<float>(halves[1]) == 4.0f);
        lt::zeros<float>({0, 3}, d).copy_to(nullptr, 0);
        INTEROP_CHECK_CONTAINS(interop_error<lt::ShapeError>([&] { x.copy_to(out.data(), 11); }),
                               "copy_to: the tensor has shape [3, 4] (12 elements) but the destination holds 11 elements");
        INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { x.copy_to(nullptr, 12); }), "null pointer");
        // A wrapped tensor moved to the device, computed there, copied back into user memory.
        std::vector<double> v{1, 2, 3, 4};
        std::vector<double> back(4);
        (lt::from_blob(v.data(), {2, 2}).to(d).t() * 10.0).copy_to(back.data(), back.size());
        CHECK(back == std::vector<double>{10, 30, 20, 40});
    });
}

// ---------------------------------------------------------------------------------- README

TEST_CASE("README: wrapping user memory") {
    std::vector<float> v = {1, 2, 3, 4, 5, 6};
    lt::Tensor<float> x = lt::from_blob(v.data(), {2, 3});           // no copy: x's memory is v's
    x.assign(x * 10.0f);                                             // writes into v: v[5] is 60
    lt::Tensor<float> xt = lt::from_blob(v.data(), {3, 2}, {1, 3});  // strides in elements: x transposed
    float* p = new float[4]{1, 2, 3, 4};
    lt::Tensor<float> owned = lt::from_blob(p, {4}, [](float* q) { delete[] q; });  // freed with its last tensor
    const std::vector<double> c = {0.5, 1.5};
    lt::Tensor<double> ro = lt::from_blob(c.data(), {2});  // read-only: assign() is a ValueError

    lt::Tensor<float> y = lt::exp(x / 60.0f);
    float* yp = y.data();           // realizes y; element [0, 0] of its host memory
    lt::Strides ys = y.strides();   // {3, 1}: element [i, j] is yp[i * ys[0] + j * ys[1]]
    std::vector<float> out(6);
    y.copy_to(out.data(), out.size());  // from any device, without an intermediate vector

    CHECK(v[5] == 60.0f);
    CHECK(xt.to_vector() == std::vector<float>{10, 40, 20, 50, 30, 60});
    CHECK(lt::sum(owned).item() == 10.0f);
    CHECK_THROWS_AS(ro.assign(0.0), lt::ValueError);
    CHECK(ys == lt::Strides{3, 1});
    CHECK(yp[1 * ys[0] + 2 * ys[1]] == doctest::Approx(std::exp(1.0f)));
    CHECK(out[5] == yp[5]);
}

// ----------------------------------------------------------------------------------- Eigen

#if LAZYTENSOR_TEST_EIGEN
TEST_CASE("Eigen: from_eigen views matrices, vectors, maps, refs and blocks without a copy") {
    Eigen::MatrixXf m(2, 3);  // column-major
    m << 1, 2, 3, 4, 5, 6;
    lt::Tensor<float> t = lt::from_eigen(m);
    CHECK(t.shape() == lt::Shape{2, 3});
    CHECK(t.strides() == lt::Strides{1, 2});
    CHECK(t.const_data() == m.data());
    CHECK(t.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
    t.slice(0, 1, 2).assign(0.0f);  // row 1 of m
    CHECK(m(1, 0) == 0.0f);
    CHECK(m(1, 2) == 0.0f);
    CHECK(m(0, 2) == 3.0f);

    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> r(2, 3);
    r << 1, 2, 3, 4, 5, 6;
    lt::Tensor<double> tr = lt::from_eigen(r);
    CHECK(tr.strides() == lt::Strides{3, 1});
    CHECK(lt::sum(tr, 0).to_vector() == std::vector<double>{5, 7, 9});

    Eigen::VectorXi v(4);
    v << 3, 1, 4, 1;
    lt::Tensor<std::int32_t> tv = lt::from_eigen(v);  // a vector: 1-D
    CHECK(tv.shape() == lt::Shape{4});
    CHECK(lt::sum(tv).item() == 9);
    lt::Tensor<float> row = lt::from_eigen(m.row(0));  // a row of a column-major matrix: stride 2
    CHECK(row.strides() == lt::Strides{2});
    CHECK(row.to_vector() == std::vector<float>{1, 2, 3});
    CHECK(lt::from_eigen(m.col(2)).to_vector() == std::vector<float>{3, 0});
    CHECK(lt::from_eigen(m.block(0, 1, 2, 2)).to_vector() == std::vector<float>{2, 3, 0, 0});
    CHECK(lt::from_eigen(m.transpose()).to_vector() == std::vector<float>{1, 0, 2, 0, 3, 0});
    Eigen::Array<bool, 2, 2> flags;
    flags << true, false, false, true;
    CHECK(lt::from_eigen(flags).to_vector() == std::vector<bool>{true, false, false, true});

    // A Map of a buffer with an outer stride (a 3 x 2 matrix in rows of 4), and a Ref of it.
    float buffer[12] = {1, 2, -1, -1, 3, 4, -1, -1, 5, 6, -1, -1};
    Eigen::Map<Eigen::Matrix<float, 3, 2, Eigen::RowMajor>, 0, Eigen::OuterStride<>> map(buffer, Eigen::OuterStride<>(4));
    lt::Tensor<float> tm = lt::from_eigen(map);
    CHECK(tm.strides() == lt::Strides{4, 1});
    CHECK(tm.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
    Eigen::Ref<Eigen::MatrixXf, 0, Eigen::OuterStride<>> ref = m;
    CHECK(lt::from_eigen(ref).const_data() == m.data());

    // Const matrices give read-only tensors.
    const Eigen::MatrixXd c = Eigen::MatrixXd::Identity(2, 2);
    lt::Tensor<double> tc = lt::from_eigen(c);
    CHECK(tc.to_vector() == std::vector<double>{1, 0, 0, 1});
    CHECK_THROWS_AS(tc.assign(2.0), lt::ValueError);
    Eigen::Ref<const Eigen::MatrixXd> cref = c;
    CHECK(lt::from_eigen(cref).const_data() == c.data());
}

TEST_CASE("Eigen: as_eigen maps a tensor's memory, with its strides") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::arange<float>(6, d).reshape({2, 3});
        if (d.kind != lt::Device::Kind::Host) {
            INTEROP_CHECK_CONTAINS(interop_error<lt::DeviceError>([&] { lt::as_eigen(x); }),
                                   "the tensor is on " + d.str());
            lt::Tensor<float> h = (x * 2.0f).to(lt::Device::host());  // the map of a copy on the host
            CHECK(lt::as_eigen(h)(1, 2) == 10.0f);
            return;
        }
        lt::EigenMap<float> e = lt::as_eigen(x);
        CHECK(e.rows() == 2);
        CHECK(e.cols() == 3);
        CHECK(e(1, 0) == 3.0f);
        CHECK(e.data() == x.data());
        e(0, 1) = 100.0f;  // writes into the tensor
        CHECK(x.to_vector()[1] == 100.0f);
        lt::EigenMap<float> et = lt::as_eigen(x.t());  // a view: 3 x 2, transposed strides
        CHECK(et.rows() == 3);
        CHECK(et(1, 0) == 100.0f);
        CHECK(et(2, 1) == 5.0f);
        Eigen::MatrixXf product = lt::as_eigen(x) * lt::as_eigen(x.t());
        const std::vector<float> want = lt::matmul(x, x.t()).to_vector();
        for (int i = 0; i < 2; ++i)
            for (int j = 0; j < 2; ++j) CHECK(product(i, j) == want[static_cast<std::size_t>(i * 2 + j)]);
        lt::EigenMap<float> column = lt::as_eigen(x.slice(1, 2, 3).reshape({2}));  // 1-D: a column
        CHECK(column.rows() == 2);
        CHECK(column.cols() == 1);
        CHECK(column(1, 0) == 5.0f);
        lt::Tensor<float> plus = x + 1.0f;
        lt::EigenMap<float> lazy = lt::as_eigen(plus);  // realized first
        CHECK(lazy(1, 2) == 6.0f);
        // A temporary that alone holds its memory would leave the map dangling.
        INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::as_eigen(lt::Tensor<float>(x * 2.0f)); }),
                               "as_eigen: the tensor (shape [2, 3]) is a temporary that alone holds its memory");
        INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::as_const_eigen(lt::softmax(x, 1)); }),
                               "as_const_eigen: the tensor (shape [2, 3]) is a temporary");
        float user[4] = {1, 2, 3, 4};  // a temporary wrapping memory it does not free is mapped
        CHECK(lt::as_eigen(lt::from_blob(user, {2, 2}))(1, 0) == 3.0f);
        int freed = 0;
        auto* owned = new float[4]{1, 2, 3, 4};
        CHECK_THROWS_AS(lt::as_eigen(lt::from_blob(owned, {2, 2}, [&](float* q) {
                            ++freed;
                            delete[] q;
                        })),
                        lt::ValueError);
        CHECK(freed == 1);
        INTEROP_CHECK_CONTAINS(interop_error<lt::ShapeError>([&] { lt::as_eigen(x.reshape({1, 2, 3})); }),
                               "as_eigen: needs a 1-D or 2-D tensor, got shape [1, 2, 3]");
        INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::as_eigen(x.flip(1)); }),
                               "has negative stride -1 on axis 1 (a flipped view)");
        const std::vector<float> values{1, 2, 3, 4};
        lt::Tensor<float> ro = lt::from_blob(values.data(), {2, 2});
        CHECK_THROWS_AS(lt::as_eigen(ro), lt::ValueError);
        lt::ConstEigenMap<float> cm = lt::as_const_eigen(ro);
        CHECK(cm(1, 0) == 3.0f);
    });
}

TEST_CASE("README: Eigen") {
    Eigen::MatrixXf m = Eigen::MatrixXf::Random(3, 4);  // column-major
    lt::Tensor<float> t = lt::from_eigen(m);              // shape [3, 4], strides [1, 3]: m's memory
    lt::Tensor<float> s = lt::softmax(t * 2.0f, 1);
    lt::EigenMap<float> sm = lt::as_eigen(s);             // s (realized) as a 3 x 4 Eigen matrix, no copy
    Eigen::MatrixXf product = sm * m.transpose();         // Eigen reads it in place

    CHECK(t.strides() == lt::Strides{1, 3});
    CHECK(sm.rowwise().sum()(2) == doctest::Approx(1.0f));
    const std::vector<float> want = lt::matmul(s, t.t()).to_vector();
    CHECK(product(2, 1) == doctest::Approx(want[2 * 3 + 1]));
}
#endif

// ---------------------------------------------------------------------------------- DLPack

#if LAZYTENSOR_TEST_DLPACK
namespace {

/// Counts the calls of a DLManagedTensor's deleter: wraps `inner` (whose deleter it calls).
struct InteropCountedTensor {
    DLManagedTensor managed{};
    DLManagedTensor* inner = nullptr;
    int* deleted = nullptr;
};

inline DLManagedTensor* interop_counted(DLManagedTensor* inner, int* deleted) {
    auto* c = new InteropCountedTensor;
    c->managed.dl_tensor = inner->dl_tensor;
    c->inner = inner;
    c->deleted = deleted;
    c->managed.manager_ctx = c;
    c->managed.deleter = [](DLManagedTensor* self) {
        auto* c = static_cast<InteropCountedTensor*>(self->manager_ctx);
        ++*c->deleted;
        if (c->inner->deleter) c->inner->deleter(c->inner);
        delete c;
    };
    return &c->managed;
}

/// A DLManagedTensor of host memory the test owns (a producer other than lazytensor).
struct InteropForeignTensor {
    DLManagedTensor managed{};
    std::vector<std::int64_t> shape, strides;
    int* deleted = nullptr;
};

inline DLManagedTensor* interop_foreign(void* data, DLDevice device, DLDataType dtype, std::vector<std::int64_t> shape,
                                        std::vector<std::int64_t> strides, std::uint64_t byte_offset, int* deleted) {
    auto* f = new InteropForeignTensor;
    f->shape = std::move(shape);
    f->strides = std::move(strides);
    f->deleted = deleted;
    DLTensor& t = f->managed.dl_tensor;
    t.data = data;
    t.device = device;
    t.ndim = static_cast<int>(f->shape.size());
    t.dtype = dtype;
    t.shape = f->shape.data();
    t.strides = f->strides.empty() ? nullptr : f->strides.data();
    t.byte_offset = byte_offset;
    f->managed.manager_ctx = f;
    f->managed.deleter = [](DLManagedTensor* self) {
        auto* f = static_cast<InteropForeignTensor*>(self->manager_ctx);
        ++*f->deleted;
        delete f;
    };
    return &f->managed;
}

}  // namespace

TEST_CASE_TEMPLATE("DLPack: a round trip shares the memory and calls the deleter once", T, std::uint8_t, std::int32_t,
                   std::int64_t, lt::half, float, double, std::int8_t, std::int16_t, std::uint16_t, std::uint32_t,
                   std::uint64_t, lt::bfloat16) {
    for_each_device([](lt::Device d) {
        std::vector<T> values;
        for (int i = 0; i < 12; ++i) values.push_back(interop_value<T>(i));
        lt::Tensor<T> x = lt::tensor<T>(values, {3, 4}, d);
        int deleted = 0;
        DLManagedTensor* dl = lt::to_dlpack(x);
        const DLTensor& dt = dl->dl_tensor;
        CHECK(dt.ndim == 2);
        CHECK(dt.shape[0] == 3);
        CHECK(dt.shape[1] == 4);
        CHECK(dt.strides[0] == 4);
        CHECK(dt.strides[1] == 1);
        CHECK(int(dt.dtype.bits) == int(8 * sizeof(T)));
        CHECK(int(dt.dtype.lanes) == 1);
        CHECK(int(dt.dtype.code) == int(std::is_same_v<T, lt::bfloat16>                             ? kDLBfloat  // 4, PyTorch's
                                        : std::is_same_v<T, lt::half> || std::is_floating_point_v<T> ? kDLFloat
                                        : std::is_signed_v<T>                                        ? kDLInt
                                                                                                     : kDLUInt));
        CHECK(dt.byte_offset == 0);
        if (d.kind == lt::Device::Kind::Host) {
            CHECK(dt.device.device_type == kDLCPU);
            CHECK(dt.data == static_cast<void*>(x.data()));
        } else {
            CHECK(dt.device.device_type == kDLOpenCL);
            CHECK(dt.device.device_id == d.index);
            CHECK(dt.data == x.node_ptr()->buffer->handle());  // the cl_mem
        }
        {
            lt::Tensor<T> y = lt::from_dlpack<T>(interop_counted(dl, &deleted));
            CHECK(y.device() == d);
            CHECK(y.shape() == lt::Shape{3, 4});
            CHECK(interop_doubles(y.to_vector()) == interop_doubles(values));
            if (d.kind == lt::Device::Kind::Host) CHECK(y.const_data() == x.const_data());
            // Writes through either side are seen on the other.
            y.slice(0, 0, 1).assign(lt::full<T>({1, 4}, interop_value<T>(20), d));
            CHECK(interop_double(x.to_vector()[2]) == interop_double(interop_value<T>(20)));
            x.slice(0, 2, 3).assign(lt::full<T>({1, 4}, interop_value<T>(21), d));
            CHECK(interop_double(y.to_vector()[11]) == interop_double(interop_value<T>(21)));
            lt::Tensor<T> view = y.t();
            y = lt::Tensor<T>();
            CHECK(deleted == 0);  // the view still holds the memory
            CHECK(interop_double(view.to_vector()[1]) == interop_double(values[4]));  // y[1, 0]
        }
        lt::synchronize(d);
        CHECK(deleted == 1);
        CHECK(interop_double(x.to_vector()[0]) == interop_double(interop_value<T>(20)));  // x is intact
    });
}

TEST_CASE("DLPack: an assign through one side that reads the other is computed from a copy, on every device") {
    for_each_device([](lt::Device d) {
        const int n = 5000;  // several host blocks and OpenCL work-groups
        lt::Tensor<float> x = lt::arange<float>(n, d).realize();
        lt::Tensor<float> y = lt::from_dlpack<float>(lt::to_dlpack(x));
        lt::Tensor<float> earlier = x * 1.0f;  // lazy: reads the memory as it is now
        y.assign(x.flip(0) + 0.0f);
        const std::vector<float> got = x.to_vector();
        bool reversed = true;
        for (int i = 0; i < n; ++i) reversed = reversed && got[static_cast<std::size_t>(i)] == static_cast<float>(n - 1 - i);
        CHECK(reversed);
        const std::vector<float> before = earlier.to_vector();
        bool kept = true;
        for (int i = 0; i < n; ++i) kept = kept && before[static_cast<std::size_t>(i)] == static_cast<float>(i);
        CHECK(kept);
    });
}

TEST_CASE("DLPack: views, bool, read-only memory, and what to_dlpack refuses") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::arange<float>(12, d).reshape({3, 4});
        // A view at an offset: host data points at its first element; OpenCL gives byte_offset.
        lt::Tensor<float> s = x.slice(0, 1, 3).slice(1, 1, 4, 2);
        DLManagedTensor* dl = lt::to_dlpack(s);
        CHECK(dl->dl_tensor.strides[0] == 4);
        CHECK(dl->dl_tensor.strides[1] == 2);
        if (d.kind == lt::Device::Kind::Host) {
            CHECK(dl->dl_tensor.data == static_cast<void*>(x.data() + 5));
            CHECK(dl->dl_tensor.byte_offset == 0);
        } else {
            CHECK(dl->dl_tensor.byte_offset == 5 * sizeof(float));
        }
        lt::Tensor<float> back = lt::from_dlpack<float>(dl);
        CHECK(back.to_vector() == std::vector<float>{5, 7, 9, 11});
        CHECK(lt::from_dlpack<float>(lt::to_dlpack(x.t())).to_vector() == x.t().to_vector());
        // An expression is realized first.
        CHECK(lt::from_dlpack<float>(lt::to_dlpack(x * 2.0f)).to_vector()[11] == 22.0f);
        // 0-d and empty tensors.
        DLManagedTensor* scalar = lt::to_dlpack(lt::full<float>({}, 2.5f, d));
        CHECK(scalar->dl_tensor.ndim == 0);
        CHECK(lt::from_dlpack<float>(scalar).item() == 2.5f);
        lt::Tensor<float> empty = lt::from_dlpack<float>(lt::to_dlpack(lt::zeros<float>({0, 3}, d)));
        CHECK(empty.shape() == lt::Shape{0, 3});
        CHECK(empty.device() == d);
        CHECK(empty.to_vector().empty());
        INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::to_dlpack(x.flip(0)); }),
                               "lt::to_dlpack: the tensor (shape [3, 4]) has negative stride -4 on axis 0");
        // bool: DLPack 0.6 has no bool type; it goes out as uint8.
        DLManagedTensor* flags = lt::to_dlpack(x > 5.0f);
#if LAZYTENSOR_DLPACK_HAS_BOOL
        CHECK(flags->dl_tensor.dtype.code == kDLBool);
        CHECK(lt::from_dlpack<bool>(flags).to_vector()[6] == true);
#else
        CHECK(flags->dl_tensor.dtype.code == kDLUInt);
        INTEROP_CHECK_CONTAINS(interop_error<lt::DTypeError>([&] { lt::from_dlpack<bool>(flags); }),
                               "DLPack 0.6 has no bool type");
        lt::Tensor<bool> b = lt::cast<bool>(lt::from_dlpack<std::uint8_t>(flags));
        CHECK(b.to_vector() == (x > 5.0f).to_vector());
#endif
        if (d.kind == lt::Device::Kind::Host) {
            const std::vector<float> c{1, 2};
            INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::to_dlpack(lt::from_blob(c.data(), {2})); }),
                                   "is read-only memory, and DLPack 0.6 cannot mark a tensor read-only");
        }
    });
}

TEST_CASE("DLPack 1.x: the versioned form, its read-only flag, bool, and versions it refuses") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::arange<float>(12, d).reshape({3, 4}).realize();
        lt::dlpack::ManagedTensorVersioned* v = lt::to_dlpack_versioned(x.t());
        CHECK(v->version.major == 1u);
        CHECK(v->flags == 0u);
        CHECK(v->dl_tensor.strides[0] == 1);
        CHECK(v->dl_tensor.strides[1] == 4);
        lt::Tensor<float> back = lt::from_dlpack<float>(v);  // shares x's memory
        back.assign(back + 1.0f);
        CHECK(x.to_vector()[5] == 6.0f);
        // bool travels as kDLBool (code 6) in the versioned form, whatever the header.
        lt::dlpack::ManagedTensorVersioned* flags = lt::to_dlpack_versioned(x > 5.5f);
        CHECK(int(flags->dl_tensor.dtype.code) == int(lt::dlpack::kBoolCode));
        CHECK(lt::from_dlpack<bool>(flags).to_vector() == (x > 5.5f).to_vector());
        if (d.kind == lt::Device::Kind::Host) {
            // Read-only memory is exported with the flag, and imported read-only.
            const std::vector<float> c{1, 2};
            lt::dlpack::ManagedTensorVersioned* ro = lt::to_dlpack_versioned(lt::from_blob(c.data(), {2}));
            CHECK(ro->flags == lt::dlpack::kFlagReadOnly);
            lt::Tensor<float> r = lt::from_dlpack<float>(ro);
            CHECK(r.to_vector() == c);
            CHECK_THROWS_AS(r.assign(0.0f), lt::ValueError);
            CHECK(c[0] == 1.0f);
        }
    });
    // Another producer's versioned tensor: its deleter is called once; version 2 is refused.
    struct Foreign {
        lt::dlpack::ManagedTensorVersioned managed{};
        std::int64_t shape[1] = {3};
        int* deleted = nullptr;
    };
    static std::int32_t memory[3] = {7, 8, 9};
    int deleted = 0;
    auto make = [&](std::uint32_t major) {
        auto* f = new Foreign;
        f->deleted = &deleted;
        f->managed.version = {major, 0};
        f->managed.flags = lt::dlpack::kFlagReadOnly;
        DLTensor& t = f->managed.dl_tensor;
        t.data = memory;
        t.device = DLDevice{kDLCPU, 0};
        t.ndim = 1;
        t.dtype = DLDataType{static_cast<std::uint8_t>(kDLInt), 32, 1};
        t.shape = f->shape;
        f->managed.manager_ctx = f;
        f->managed.deleter = [](lt::dlpack::ManagedTensorVersioned* self) {
            auto* f = static_cast<Foreign*>(self->manager_ctx);
            ++*f->deleted;
            delete f;
        };
        return &f->managed;
    };
    {
        lt::Tensor<std::int32_t> t = lt::from_dlpack<std::int32_t>(make(1));
        CHECK((t * 2).to_vector() == std::vector<std::int32_t>{14, 16, 18});
        CHECK_THROWS_AS(t.assign(0), lt::ValueError);
        CHECK(deleted == 0);
    }
    CHECK(deleted == 1);
    lt::dlpack::ManagedTensorVersioned* two = make(2);
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::from_dlpack<std::int32_t>(two); }),
                           "lt::from_dlpack: the DLPack tensor has version 2.0; lazytensor reads DLPack 1.x");
    CHECK(deleted == 1);  // still the caller's
    two->deleter(two);
    CHECK(deleted == 2);
}

TEST_CASE("DLPack: host memory from another producer: null strides, byte_offset, ownership") {
    int deleted = 0;
    std::vector<double> memory{-1, 1, 2, 3, 4, 5, 6};
    const DLDataType f64{kDLFloat, 64, 1};
    {
        // Row-major (null strides), starting one element in.
        lt::Tensor<double> t = lt::from_dlpack<double>(
            interop_foreign(memory.data(), DLDevice{kDLCPU, 0}, f64, {2, 3}, {}, sizeof(double), &deleted));
        CHECK(t.strides() == lt::Strides{3, 1});
        CHECK(t.const_data() == memory.data() + 1);
        CHECK((t * 2.0).to_vector() == std::vector<double>{2, 4, 6, 8, 10, 12});
        t.assign(t.t().reshape({2, 3}));  // writes the producer's memory (read through a copy)
        CHECK(memory == std::vector<double>{-1, 1, 4, 2, 5, 3, 6});
        CHECK(deleted == 0);
    }
    CHECK(deleted == 1);
    // A 0-d tensor (no shape array needed) and an empty one (no memory).
    const lt::Tensor<double> scalar =
        lt::from_dlpack<double>(interop_foreign(memory.data() + 6, DLDevice{kDLCPU, 0}, f64, {}, {}, 0, &deleted));
    CHECK(scalar.item() == 6.0);
    CHECK(lt::from_dlpack<double>(interop_foreign(nullptr, DLDevice{kDLCPU, 0}, f64, {0, 4}, {}, 0, &deleted)).numel() == 0);
    CHECK(deleted == 2);
}

TEST_CASE("DLPack: errors name the mistake, and leave the tensor to the caller") {
    int deleted = 0;
    float memory[8] = {};
    const DLDataType f32{kDLFloat, 32, 1};
    auto check_refused = [&](DLManagedTensor* dl, auto&& take, const std::string& part, auto error) {
        using E = decltype(error);
        INTEROP_CHECK_CONTAINS(interop_error<E>([&] { take(dl); }), part);
        CHECK(deleted == 0);  // not taken: still the caller's
        dl->deleter(dl);
        deleted = 0;
    };
    auto as_float = [](DLManagedTensor* dl) { lt::from_dlpack<float>(dl); };
    auto as_int = [](DLManagedTensor* dl) { lt::from_dlpack<std::int32_t>(dl); };
    check_refused(interop_foreign(memory, DLDevice{kDLCPU, 0}, f32, {8}, {}, 0, &deleted), as_int,
                  "lt::from_dlpack: the DLPack tensor holds float32 elements, not int32", lt::DTypeError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLCPU, 0}, DLDataType{kDLFloat, 32, 4}, {2}, {}, 0, &deleted), as_float,
                  "holds float32x4 elements, not float32", lt::DTypeError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLCPU, 0}, DLDataType{kDLComplex, 64, 1}, {2}, {}, 0, &deleted),
                  as_float, "holds complex64 elements", lt::DTypeError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLCUDA, 1}, f32, {8}, {}, 0, &deleted), as_float,
                  "the DLPack tensor is on kDLCUDA device 1; lazytensor takes kDLCPU (host) and kDLOpenCL memory",
                  lt::DeviceError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLCPU, 0}, f32, {2, 2}, {-1, 2}, 4, &deleted), as_float,
                  "lt::from_dlpack: negative stride -1 on axis 0", lt::ValueError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLCPU, 0}, f32, {2, -2}, {}, 0, &deleted), as_float,
                  "negative extent in shape [2, -2]", lt::ShapeError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLCPU, 0}, f32, {2}, {}, 2, &deleted), as_float,
                  "is not aligned for float32", lt::ValueError(""));
    check_refused(interop_foreign(nullptr, DLDevice{kDLCPU, 0}, f32, {2}, {}, 0, &deleted), as_float,
                  "null data for a tensor of shape [2]", lt::ValueError(""));
    check_refused(interop_foreign(memory, DLDevice{kDLOpenCL, 99}, f32, {2}, {}, 0, &deleted), as_float,
                  "opencl:99", lt::DeviceError(""));
    INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::from_dlpack<float>(static_cast<DLManagedTensor*>(nullptr)); }), "null pointer");
}

#if LAZYTENSOR_OPENCL
TEST_CASE("DLPack: a cl_mem from another producer on lazytensor's context, and one of another context" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        auto& backend = lt::detail::opencl::opencl_backend(d.index);
        int deleted = 0;
        const DLDataType i32{kDLInt, 32, 1};
        cl_int err = CL_SUCCESS;
        // A buffer of lazytensor's context, made and filled by "another library" on its own.
        std::vector<std::int32_t> values{-1, -1, 10, 20, 30, 40, 50, 60};
        cl_mem mem = clCreateBuffer(backend.context(), CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                                    values.size() * sizeof(std::int32_t), values.data(), &err);
        REQUIRE(err == CL_SUCCESS);
        {
            lt::Tensor<std::int32_t> t = lt::from_dlpack<std::int32_t>(
                interop_foreign(mem, DLDevice{kDLOpenCL, d.index}, i32, {2, 3}, {}, 2 * sizeof(std::int32_t), &deleted));
            CHECK(t.device() == d);
            CHECK(t.to_vector() == std::vector<std::int32_t>{10, 20, 30, 40, 50, 60});
            CHECK(lt::sum(t, 0).to_vector() == std::vector<std::int64_t>{50, 70, 90});
            t.assign(t * 2);
            std::vector<std::int32_t> read(8);
            REQUIRE(clEnqueueReadBuffer(backend.queue(), mem, CL_TRUE, 0, 32, read.data(), 0, nullptr, nullptr) == CL_SUCCESS);
            CHECK(read == std::vector<std::int32_t>{-1, -1, 20, 40, 60, 80, 100, 120});
            int refused = 0;
            DLManagedTensor* past = interop_foreign(mem, DLDevice{kDLOpenCL, d.index}, i32, {4}, {}, 6 * 4, &refused);
            INTEROP_CHECK_CONTAINS(interop_error<lt::ValueError>([&] { lt::from_dlpack<std::int32_t>(past); }),
                                   "the tensor reaches 40 bytes into its cl_mem, which holds 32 bytes");
            CHECK(refused == 0);  // still the caller's
            past->deleter(past);
            CHECK(deleted == 0);
        }
        CHECK(deleted == 1);
        // lazytensor's own reference is gone too. (A driver may drop the references its
        // commands hold a little after they complete: wait for it, a while at most.)
        cl_uint references = 0;
        for (int tries = 0; tries < 200; ++tries) {
            REQUIRE(clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof references, &references, nullptr) == CL_SUCCESS);
            if (references == 1) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        CHECK(references == 1);
        clReleaseMemObject(mem);
        deleted = 0;

        // A read-only cl_mem gives a read-only tensor.
        cl_mem ro = clCreateBuffer(backend.context(), CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, 8 * sizeof(std::int32_t),
                                   values.data(), &err);
        REQUIRE(err == CL_SUCCESS);
        {
            lt::Tensor<std::int32_t> t =
                lt::from_dlpack<std::int32_t>(interop_foreign(ro, DLDevice{kDLOpenCL, d.index}, i32, {8}, {}, 0, &deleted));
            CHECK(lt::sum(t).item() == 208);
            CHECK_THROWS_AS(t.assign(0), lt::ValueError);
        }
        clReleaseMemObject(ro);

        // A cl_mem of another context (the same device) cannot be used.
        cl_device_id device = backend.device_id();
        cl_context other = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
        REQUIRE(err == CL_SUCCESS);
        cl_mem foreign = clCreateBuffer(other, CL_MEM_READ_WRITE, 64, nullptr, &err);
        REQUIRE(err == CL_SUCCESS);
        deleted = 0;
        DLManagedTensor* dl = interop_foreign(foreign, DLDevice{kDLOpenCL, d.index}, i32, {4}, {}, 0, &deleted);
        INTEROP_CHECK_CONTAINS(interop_error<lt::DeviceError>([&] { lt::from_dlpack<std::int32_t>(dl); }),
                               "the cl_mem belongs to another OpenCL context than the one lazytensor uses for " + d.str());
        CHECK(deleted == 0);
        dl->deleter(dl);
        clReleaseMemObject(foreign);
        clReleaseContext(other);
    }
}
#endif

TEST_CASE("README: DLPack") {
    std::vector<float> v = {1, 2, 3, 4, 5, 6};
    lt::Tensor<float> x = lt::from_blob(v.data(), {2, 3});
    DLManagedTensor* dl = lt::to_dlpack(x);               // a consumer calls dl->deleter(dl) when done
    lt::Tensor<float> back = lt::from_dlpack<float>(dl);  // takes ownership: the deleter runs with back's last tensor
    CHECK(back.const_data() == v.data());
    back.assign(back * 2.0f);
    CHECK(v[5] == 12.0f);
}
#endif
