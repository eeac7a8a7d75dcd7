// Views: reshape, permute, transpose, expand; zero-copy where the layout allows, a copy (or a
// fused read) where it does not; views of lazy values and of other views.
#include "common.hpp"

namespace {

bool shares_buffer(const lt::Tensor<float>& a, const lt::Tensor<float>& b) {
    return a.is_realized() && b.is_realized() && a.node_ptr()->buffer == b.node_ptr()->buffer;
}

Ref reshape_ref(Ref r, const lt::Shape& shape) {
    r.shape = shape;
    return r;
}

}  // namespace

TEST_CASE("reshape, permute, transpose and expand give the reference values") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({2, 3, 4}, 1);
        lt::Tensor<float> t = make_tensor<float>(x);
        check_close(t.reshape({6, 4}), reshape_ref(x, {6, 4}), 0, 0);
        check_close(t.reshape({4, -1}), reshape_ref(x, {4, 6}), 0, 0);
        check_close(lt::reshape(t, {24}), reshape_ref(x, {24}), 0, 0);
        check_close(t.reshape({1, 2, 1, 12}), reshape_ref(x, {1, 2, 1, 12}), 0, 0);
        check_close(t.permute({2, 0, 1}), permute(x, {2, 0, 1}), 0, 0);
        check_close(lt::permute(t, {-1, -3, -2}), permute(x, {2, 0, 1}), 0, 0);
        check_close(t.transpose(0, 2), permute(x, {2, 1, 0}), 0, 0);
        check_close(lt::transpose(t, -1, -2), permute(x, {0, 2, 1}), 0, 0);
        Ref row = random_ref<float>({4}, 2);
        check_close(make_tensor<float>(row).expand({3, 4}), broadcast(row, {3, 4}), 0, 0);
        Ref col = random_ref<float>({3, 1}, 3);
        check_close(lt::expand(make_tensor<float>(col), {2, 3, 5}), broadcast(col, {2, 3, 5}), 0, 0);
        check_close(make_tensor<float>(col).expand({-1, 4}), broadcast(col, {3, 4}), 0, 0);
        lt::Tensor<float> s = lt::tensor<float>({7.0f}, {});
        CHECK(s.reshape({1, 1}).expand({2, 3}).to_vector() == std::vector<float>(6, 7.0f));
        CHECK(s.expand({4}).sum().item() == 28.0f);
        CHECK(lt::zeros<float>({0, 4}).reshape({4, 0, 3}).numel() == 0);
    });
}

TEST_CASE("views of realized tensors are zero-copy when the layout allows") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({4, 6}, 10);
        lt::Tensor<float> t = make_tensor<float>(x);

        lt::Tensor<float> r = t.reshape({2, 12});
        CHECK(lt::kernel_count(lt::schedule(r)) == 0);
        r.realize();
        CHECK(shares_buffer(r, t));
        check_close(r, reshape_ref(x, {2, 12}), 0, 0);

        lt::Tensor<float> p = t.transpose(0, 1);
        CHECK(lt::kernel_count(lt::schedule(p)) == 0);
        p.realize();
        CHECK(shares_buffer(p, t));
        CHECK(p.node_ptr()->strides == lt::Strides{1, 6});
        check_close(p, permute(x, {1, 0}), 0, 0);

        lt::Tensor<float> e = t.reshape({4, 1, 6}).expand({4, 3, 6});
        e.realize();
        CHECK(shares_buffer(e, t));
        CHECK(e.node_ptr()->strides == lt::Strides{6, 0, 1});
        check_close(e, broadcast(reshape_ref(x, {4, 1, 6}), {4, 3, 6}), 0, 0);

        // A permuted tensor whose merged axes are contiguous reshapes without a copy (as in PyTorch).
        Ref y = random_ref<float>({2, 3, 4}, 11);
        lt::Tensor<float> ty = make_tensor<float>(y);
        lt::Tensor<float> merged = ty.permute({2, 0, 1}).reshape({4, 6});
        CHECK(lt::kernel_count(lt::schedule(merged)) == 0);
        merged.realize();
        CHECK(shares_buffer(merged, ty));
        check_close(merged, reshape_ref(permute(y, {2, 0, 1}), {4, 6}), 0, 0);

        // Views of views.
        lt::Tensor<float> vv = p.reshape({3, 2, 4}).transpose(0, 2);
        check_close(vv, permute(reshape_ref(permute(x, {1, 0}), {3, 2, 4}), {2, 1, 0}), 0, 0);
    });
}

TEST_CASE("reshape of a layout that needs a copy runs one kernel") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({4, 6}, 20);
        lt::Tensor<float> t = make_tensor<float>(x);
        lt::Tensor<float> flat = t.transpose(0, 1).reshape({24});
        auto items = lt::schedule(flat);
        CHECK(lt::kernel_count(items) == 1);
        flat.realize();
        CHECK_FALSE(shares_buffer(flat, t));
        check_close(flat, reshape_ref(permute(x, {1, 0}), {24}), 0, 0);
        // Misaligned reshapes of transposed data: [4, 6]^T = [6, 4] -> [8, 3] -> transposed.
        check_close(t.transpose(0, 1).reshape({8, 3}).transpose(0, 1),
                    permute(reshape_ref(permute(x, {1, 0}), {8, 3}), {1, 0}), 0, 0);
        check_close(t.transpose(0, 1).reshape({3, 8}) * 2.0f,
                    map(reshape_ref(permute(x, {1, 0}), {3, 8}), [](double v) { return 2 * v; }), 0, 0);
    });
}

TEST_CASE("views of lazy values fuse into the consumer's kernel") {
    for_each_device([](lt::Device) {
        Ref a = random_ref<float>({5, 8}, 30), b = random_ref<float>({8, 5}, 31);
        lt::Tensor<float> ta = make_tensor<float>(a), tb = make_tensor<float>(b);
        auto expr = lt::exp(ta).transpose(0, 1) + tb;
        CHECK(lt::kernel_count(lt::schedule(expr)) == 1);
        check_close(expr, zip(permute(map(a, [](double v) { return std::exp(v); }), {1, 0}), b,
                              [](double x, double y) { return x + y; }),
                    2e-6, 1e-6);
        // Reshape of a lazy value, then a reduction over the new axes.
        auto rs = (ta * 2.0f).reshape({4, 10}).sum(1);
        CHECK(lt::kernel_count(lt::schedule(rs)) == 1);
        check_close(rs, reduce(map(reshape_ref(a, {4, 10}), [](double v) { return 2 * v; }), {1}, false, 0.0,
                               [](double x, double y) { return x + y; }),
                    1e-5, 1e-5);
        // Broadcast then merge (a tile): still one kernel.
        Ref row = random_ref<float>({3, 1}, 32);
        auto tiled = (make_tensor<float>(row) + 1.0f).expand({3, 4}).reshape({12});
        CHECK(lt::kernel_count(lt::schedule(tiled)) == 1);
        check_close(tiled, reshape_ref(broadcast(map(row, [](double v) { return v + 1; }), {3, 4}), {12}), 1e-6, 1e-6);
    });
}

TEST_CASE("to_vector of strided realized views walks them in logical order") {
    for_each_device([](lt::Device) {
        lt::Tensor<int32_t> t = lt::arange<int32_t>(12).reshape({3, 4}).realize();
        CHECK(t.transpose(0, 1).realize().to_vector() == std::vector<int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
        CHECK(t.reshape({3, 1, 4}).expand({3, 2, 4}).transpose(0, 1).to_vector() ==
              std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    });
}

TEST_CASE("regressions: reshapes moved below element-wise ops that still need a copy") {
    for_each_device([](lt::Device) {
        Ref m = random_ref<float>({3, 4}, 40);
        lt::Tensor<float> tm = make_tensor<float>(m);
        lt::Tensor<float> z = lt::exp(tm.transpose(0, 1)).reshape({3, 4}) * tm;
        check_close(z, zip(reshape_ref(map(permute(m, {1, 0}), [](double v) { return std::exp(v); }), {3, 4}), m,
                           [](double x, double y) { return x * y; }),
                    1e-6, 1e-6);
        lt::Tensor<float> a = lt::tensor<float>({1, 2, 3});
        CHECK((a.expand({4, 3}) + 0.0f).reshape({3, 4}).sum(1).to_vector() == std::vector<float>{7, 8, 9});
    });
}
