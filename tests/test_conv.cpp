// SPDX-License-Identifier: MIT
// Convolutions, transposed convolutions, pooling and Tensor::unfold against plain double loops
// (no unfold, no product: the definitions written out), on every device; gradients against
// central differences of those loops; bad input by its messages.
#include <array>
#include <limits>

#include "common.hpp"

namespace {

using Pairs = std::vector<std::pair<std::int64_t, std::int64_t>>;

/// Whether `d` computes float64 (an OpenCL device without cl_khr_fp64 does not).
bool computes_double(lt::Device d) {
    for (const lt::DeviceInfo& info : lt::devices())
        if (info.device == d) return info.float64;
    return true;
}

/// A convolution's options, written out per spatial axis.
struct Options {
    lt::Shape stride, before, after, dilation, output_padding;
    std::int64_t groups = 1;
};

Options options(std::size_t dims, std::int64_t stride = 1, std::int64_t pad = 0, std::int64_t dilation = 1,
                std::int64_t groups = 1) {
    return {lt::Shape(dims, stride), lt::Shape(dims, pad), lt::Shape(dims, pad), lt::Shape(dims, dilation),
            lt::Shape(dims, 0), groups};
}

Pairs sides(const Options& o) {
    Pairs p;
    for (std::size_t i = 0; i < o.before.size(); ++i) p.push_back({o.before[i], o.after[i]});
    return p;
}

std::vector<std::int64_t> list(const lt::Shape& s) { return std::vector<std::int64_t>(s.begin(), s.end()); }

lt::Shape spatial(const lt::Shape& s) { return lt::Shape(s.begin() + 2, s.end()); }

std::int64_t flat_index(const lt::Shape& shape, const std::vector<std::int64_t>& index) {
    std::int64_t at = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) at = at * shape[k] + index[k];
    return at;
}

/// conv: out[n, oc, o] = bias[oc] + sum over ic, k of x[n, g C/G + ic, o s + k d - before] w[oc, ic, k].
Ref ref_conv(const Ref& x, const Ref& w, const Ref* bias, const Options& o) {
    const std::size_t dims = x.shape.size() - 2;
    const std::int64_t batch = x.shape[0], out_channels = w.shape[0], per_group = w.shape[1];
    const std::int64_t out_per_group = out_channels / o.groups;
    const lt::Shape kernel = spatial(w.shape);
    lt::Shape shape{batch, out_channels};
    for (std::size_t i = 0; i < dims; ++i)
        shape.push_back((x.shape[2 + i] + o.before[i] + o.after[i] - o.dilation[i] * (kernel[i] - 1) - 1) / o.stride[i] + 1);
    return ref_of(shape, [&](const std::vector<std::int64_t>& at) {
        const std::int64_t n = at[0], oc = at[1], g = oc / out_per_group;
        double acc = bias ? bias->v[static_cast<std::size_t>(oc)] : 0.0;
        for (std::int64_t ic = 0; ic < per_group; ++ic)
            for (std::int64_t kl = 0; kl < lt::numel(kernel); ++kl) {
                const std::vector<std::int64_t> k = unravel(kl, kernel);
                std::vector<std::int64_t> xi{n, g * per_group + ic};
                bool inside = true;
                for (std::size_t i = 0; i < dims; ++i) {
                    const std::int64_t p = at[2 + i] * o.stride[i] + k[i] * o.dilation[i] - o.before[i];
                    inside = inside && p >= 0 && p < x.shape[2 + i];
                    xi.push_back(p);
                }
                if (!inside) continue;
                std::vector<std::int64_t> wi{oc, ic};
                wi.insert(wi.end(), k.begin(), k.end());
                acc += x.at(xi) * w.at(wi);
            }
        return acc;
    });
}

/// conv_transpose: every x[n, ic, p] w[ic, oc, k] added at out[n, g C_out/G + oc, p s + k d - before].
Ref ref_conv_transpose(const Ref& x, const Ref& w, const Ref* bias, const Options& o) {
    const std::size_t dims = x.shape.size() - 2;
    const std::int64_t batch = x.shape[0], channels = x.shape[1], out_per_group = w.shape[1];
    const std::int64_t per_group = channels / o.groups;
    const lt::Shape kernel = spatial(w.shape), in = spatial(x.shape);
    lt::Shape shape{batch, out_per_group * o.groups};
    for (std::size_t i = 0; i < dims; ++i)
        shape.push_back((in[i] - 1) * o.stride[i] - o.before[i] - o.after[i] + o.dilation[i] * (kernel[i] - 1) +
                        o.output_padding[i] + 1);
    Ref out{shape, std::vector<double>(static_cast<std::size_t>(lt::numel(shape)), 0.0)};
    for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t ic = 0; ic < channels; ++ic)
            for (std::int64_t oc = 0; oc < out_per_group; ++oc)
                for (std::int64_t pl = 0; pl < lt::numel(in); ++pl)
                    for (std::int64_t kl = 0; kl < lt::numel(kernel); ++kl) {
                        const std::vector<std::int64_t> p = unravel(pl, in), k = unravel(kl, kernel);
                        std::vector<std::int64_t> oi{n, ic / per_group * out_per_group + oc};
                        bool inside = true;
                        for (std::size_t i = 0; i < dims; ++i) {
                            const std::int64_t q = p[i] * o.stride[i] + k[i] * o.dilation[i] - o.before[i];
                            inside = inside && q >= 0 && q < shape[2 + i];
                            oi.push_back(q);
                        }
                        if (!inside) continue;
                        std::vector<std::int64_t> xi{n, ic}, wi{ic, oc};
                        xi.insert(xi.end(), p.begin(), p.end());
                        wi.insert(wi.end(), k.begin(), k.end());
                        out.v[static_cast<std::size_t>(flat_index(shape, oi))] += x.at(xi) * w.at(wi);
                    }
    if (bias)
        for (std::int64_t i = 0; i < out.size(); ++i)
            out.v[static_cast<std::size_t>(i)] += bias->v[static_cast<std::size_t>(unravel(i, shape)[1])];
    return out;
}

template <class T>
lt::Tensor<T> conv(std::size_t dims, const lt::Tensor<T>& x, const lt::Tensor<T>& w, const std::optional<lt::Tensor<T>>& b,
                   const Options& o) {
    const lt::ConvPadding padding(sides(o));
    if (dims == 1) return lt::conv1d(x, w, b, list(o.stride), padding, list(o.dilation), o.groups);
    if (dims == 2) return lt::conv2d(x, w, b, list(o.stride), padding, list(o.dilation), o.groups);
    return lt::conv3d(x, w, b, list(o.stride), padding, list(o.dilation), o.groups);
}

template <class T>
lt::Tensor<T> conv_transpose(std::size_t dims, const lt::Tensor<T>& x, const lt::Tensor<T>& w,
                             const std::optional<lt::Tensor<T>>& b, const Options& o) {
    const lt::ConvPadding padding(sides(o));
    if (dims == 1)
        return lt::conv_transpose1d(x, w, b, list(o.stride), padding, list(o.output_padding), o.groups, list(o.dilation));
    if (dims == 2)
        return lt::conv_transpose2d(x, w, b, list(o.stride), padding, list(o.output_padding), o.groups, list(o.dilation));
    return lt::conv_transpose3d(x, w, b, list(o.stride), padding, list(o.output_padding), o.groups, list(o.dilation));
}

struct ConvCase {
    const char* name;
    lt::Shape x, w;
    Options o;
    bool bias;
};

std::vector<ConvCase> conv_cases() {
    Options asymmetric = options(2, 1, 0);
    asymmetric.before = {0, 2};
    asymmetric.after = {1, 0};
    Options mixed = options(2, 1, 1);
    mixed.stride = {2, 1};
    mixed.dilation = {1, 2};
    Options strided_3d = options(3, 2, 1);
    strided_3d.dilation = {1, 1, 2};
    return {
        {"3x3, padding 1", {2, 3, 7, 6}, {4, 3, 3, 3}, options(2, 1, 1), true},
        {"3x3, stride 2, odd sizes", {1, 3, 9, 7}, {5, 3, 3, 3}, options(2, 2, 1), true},
        {"1x1", {2, 8, 5, 5}, {6, 8, 1, 1}, options(2), false},
        {"1x1, stride 2", {2, 4, 5, 6}, {3, 4, 1, 1}, options(2, 2), true},
        {"dilation 2", {1, 2, 9, 9}, {3, 2, 3, 3}, options(2, 1, 2, 2), false},
        {"asymmetric padding", {2, 2, 5, 4}, {3, 2, 2, 3}, asymmetric, true},
        {"stride (2, 1), dilation (1, 2)", {2, 3, 8, 9}, {2, 3, 3, 2}, mixed, true},
        {"groups 2", {2, 4, 6, 6}, {6, 2, 3, 3}, options(2, 1, 1, 1, 2), true},
        {"depthwise", {2, 4, 6, 5}, {4, 1, 3, 3}, options(2, 1, 1, 1, 4), true},
        {"depthwise, multiplier 2", {1, 3, 5, 5}, {6, 1, 3, 3}, options(2, 2, 1, 1, 3), false},
        {"kernel larger than the input, padded", {1, 2, 2, 3}, {2, 2, 4, 5}, options(2, 1, 2), true},
        {"batch 0", {0, 3, 5, 5}, {2, 3, 3, 3}, options(2, 1, 1), true},
        {"wide output: one product per sample", {2, 2, 48, 50}, {3, 2, 3, 3}, options(2, 1, 1), true},
        {"depthwise 9x9: more taps than one kernel reads", {1, 2, 10, 10}, {2, 1, 9, 9}, options(2, 1, 4, 1, 2), true},
        {"conv1d", {3, 4, 11}, {5, 4, 3}, options(1, 2, 1), true},
        {"conv1d, dilation 3, groups 2", {2, 4, 13}, {4, 2, 3}, options(1, 1, 2, 3, 2), false},
        {"conv3d", {1, 2, 5, 4, 6}, {3, 2, 3, 2, 3}, options(3, 1, 1), true},
        {"conv3d, stride 2, dilation (1, 1, 2)", {2, 2, 6, 5, 7}, {2, 2, 2, 3, 2}, strided_3d, false},
    };
}

template <class T>
void check_conv_case(const ConvCase& c, unsigned seed) {
    INFO(c.name);
    const std::size_t dims = c.x.size() - 2;
    const Ref xr = random_ref<T>(c.x, seed), wr = random_ref<T>(c.w, seed + 1), br = random_ref<T>({c.w[0]}, seed + 2);
    const lt::Tensor<T> x = make_tensor<T>(xr), w = make_tensor<T>(wr), b = make_tensor<T>(br);
    const std::optional<lt::Tensor<T>> bias = c.bias ? std::optional<lt::Tensor<T>>(b) : std::nullopt;
    const double t = std::is_same_v<T, float> ? 2e-5 : 1e-12;
    check_close(conv<T>(dims, x, w, bias, c.o), ref_conv(xr, wr, c.bias ? &br : nullptr, c.o), t, 50 * t);
}

}  // namespace

TEST_CASE("conv1d, conv2d, conv3d: every option against the double loop") {
    for_each_device([](lt::Device d) {
        unsigned seed = 10;
        for (const ConvCase& c : conv_cases()) check_conv_case<float>(c, seed += 3);
        if (computes_double(d))
            for (const ConvCase& c : conv_cases()) check_conv_case<double>(c, seed += 3);
    });
}

TEST_CASE("conv2d: Same padding, a missing batch axis, padding given per axis") {
    for_each_device([](lt::Device) {
        const Ref xr = random_ref<float>({3, 7, 6}, 1), wr = random_ref<float>({2, 3, 4, 3}, 2);
        const lt::Tensor<float> x = make_tensor<float>(xr), w = make_tensor<float>(wr);
        // Same with an even kernel: the odd total goes after (PyTorch's rule).
        Options same = options(2, 1, 0, 2);
        same.before = {3, 2};
        same.after = {3, 2};
        Options even = options(2);
        even.before = {1, 1};
        even.after = {2, 1};
        Ref batched = xr;
        batched.shape = {1, 3, 7, 6};
        Ref expected = ref_conv(batched, wr, nullptr, even);
        expected.shape = {2, 7, 6};
        check_close(lt::conv2d(x, w, std::nullopt, 1, lt::Padding::Same), expected, 2e-5, 1e-4);
        expected = ref_conv(batched, wr, nullptr, same);
        expected.shape = {2, 7, 6};
        check_close(lt::conv2d(x, w, std::nullopt, 1, lt::Padding::Same, 2), expected, 2e-5, 1e-4);
        Options per_axis = options(2);
        per_axis.before = per_axis.after = {2, 0};
        expected = ref_conv(batched, wr, nullptr, per_axis);
        expected.shape = lt::Shape(expected.shape.begin() + 1, expected.shape.end());
        check_close(lt::conv2d(x, w, std::nullopt, {1, 1}, {2, 0}), expected, 2e-5, 1e-4);
        CHECK(lt::conv2d(x, w, std::nullopt, 1, lt::Padding::Valid).shape() == lt::Shape{2, 4, 4});
    });
}

TEST_CASE("conv2d: bias, activation and a residual add fuse into the product") {
    for_each_device([](lt::Device) {
        // (48 x 48 outputs: one product per sample, whose result is the convolution's layout)
        const Ref xr = random_ref<float>({2, 3, 48, 48}, 4), wr = random_ref<float>({3, 3, 3, 3}, 5),
                  br = random_ref<float>({3}, 6);
        const lt::Tensor<float> x = make_tensor<float>(xr), w = make_tensor<float>(wr), b = make_tensor<float>(br);
        const lt::Tensor<float> y = lt::relu(lt::conv2d(x, w, b, 1, 1)) + x;
        const auto items = lt::schedule(y);
        int products = 0, kernels = 0;
        for (const auto& item : items) {
            products += item.kind == lt::ScheduleItem::Kind::Matmul;
            kernels += item.kind == lt::ScheduleItem::Kind::Kernel;
        }
        // The same product written out (the weight [1, 3, 27] times windows [2, 1, 27, 2304]
        // already in a buffer) with the same bias, relu and add: the convolution schedules as
        // it does, plus the windows' copy where the product is a GEMM (a product this device
        // runs as a reduction reads the windows in place). So where the GEMM takes the
        // epilogue, the convolution's goes there too.
        const lt::Tensor<float> a = lt::ones<float>({1, 3, 27}).realize(), m = lt::ones<float>({2, 1, 27, 2304}).realize();
        const auto written = lt::schedule(
            lt::relu(lt::reshape(lt::matmul(a, m), {2, 3, 48, 48}) + lt::reshape(b, {1, 3, 1, 1})) + x);
        int written_products = 0, written_kernels = 0;
        for (const auto& item : written) {
            written_products += item.kind == lt::ScheduleItem::Kind::Matmul;
            written_kernels += item.kind == lt::ScheduleItem::Kind::Kernel;
        }
        // (A device that reads windows from a padded buffer makes that buffer first.)
        const bool padded_buffer = lt::detail::device_policy(lt::default_device()).windows_through_buffers();
        CHECK(products == written_products);
        CHECK(kernels == written_kernels + products + (padded_buffer ? 1 : 0));
        Ref expected = ref_conv(xr, wr, &br, options(2, 1, 1));
        expected = zip(map(expected, [](double v) { return v > 0 ? v : 0.0; }), xr, ref_add);
        check_close(y, expected, 2e-5, 1e-4);
    });
}

TEST_CASE("convolution gradients: the input's of a depthwise or stride-1 convolution is one kernel after its products") {
    for_each_device([](lt::Device) {
        auto count = [](const std::vector<lt::ScheduleItem>& items, lt::ScheduleItem::Kind kind) {
            int n = 0;
            for (const auto& item : items) n += item.kind == kind;
            return n;
        };
        const lt::Tensor<float> x = lt::randn<float>({2, 4, 9, 8}, 1).realize(), gy = lt::randn<float>({2, 4, 9, 8}, 2).realize();
        // Depthwise: every tap's placed window summed in one kernel (no stored term per tap).
        const lt::Tensor<float> wd = lt::randn<float>({4, 1, 3, 3}, 3).realize();
        const auto depthwise = lt::schedule(lt::vjp({lt::conv2d(x, wd, std::nullopt, 1, 1, 1, 4)}, {x}, {gy})[0]);
        CHECK(count(depthwise, lt::ScheduleItem::Kind::Kernel) == 1);
        CHECK(count(depthwise, lt::ScheduleItem::Kind::Matmul) == 0);
        // 3x3, stride 1: the product (the weight's transpose times the output's gradient) and one fold.
        const lt::Tensor<float> w = lt::randn<float>({4, 4, 3, 3}, 4).realize();
        const auto dense = lt::schedule(lt::vjp({lt::conv2d(x, w, std::nullopt, 1, 1)}, {x}, {gy})[0]);
        CHECK(count(dense, lt::ScheduleItem::Kind::Matmul) == 1);
        CHECK(count(dense, lt::ScheduleItem::Kind::Kernel) <= 2);  // (and the gradient's copy into the product's layout)
        // Max pooling: as many kernels for windows of 4 as of 9 (none per tap), overlapping or not.
        auto pool_kernels = [&](std::int64_t k, std::int64_t stride) {
            return count(lt::schedule(lt::grad(lt::sum(lt::max_pool2d(x, k, stride) * 3.0f), {x})[0]), lt::ScheduleItem::Kind::Kernel);
        };
        CHECK(pool_kernels(2, 2) == pool_kernels(3, 3));
        CHECK(pool_kernels(2, 1) == pool_kernels(3, 1));
    });
}

TEST_CASE("conv_transpose1d, 2d, 3d: stride, padding, output padding, groups, dilation against the double loop") {
    for_each_device([](lt::Device d) {
        Options strided = options(2, 2, 1);
        strided.output_padding = {1, 0};
        Options dilated = options(2, 1, 0, 2, 2);
        Options asymmetric = options(2, 3, 0);
        asymmetric.before = {1, 0};
        asymmetric.after = {0, 2};
        asymmetric.output_padding = {2, 1};
        Options dilated_padding = options(1, 2, 0, 3);
        dilated_padding.output_padding = {2};  // below the dilation, not the stride
        const std::vector<ConvCase> cases = {
            {"stride 2, padding 1, output padding (1, 0)", {2, 3, 4, 5}, {3, 2, 3, 3}, strided, true},
            {"dilation 2, groups 2", {1, 4, 5, 4}, {4, 3, 3, 2}, dilated, false},
            {"stride 3, asymmetric padding", {2, 2, 3, 3}, {2, 2, 4, 3}, asymmetric, true},
            {"1x1", {2, 5, 3, 4}, {5, 3, 1, 1}, options(2), true},
            {"1-D, output padding from the dilation", {2, 2, 6}, {2, 3, 3}, dilated_padding, true},
            {"3-D", {1, 2, 3, 2, 3}, {2, 2, 2, 3, 2}, options(3, 2, 1), true},
            {"batch 0", {0, 2, 3, 3}, {2, 2, 3, 3}, options(2, 2), true},
        };
        const bool fp64 = computes_double(d);
        unsigned seed = 40;
        for (const ConvCase& c : cases) {
            INFO(c.name);
            const std::size_t dims = c.x.size() - 2;
            const Ref xr = random_ref<float>(c.x, seed), wr = random_ref<float>(c.w, seed + 1),
                      br = random_ref<float>({c.w[1] * c.o.groups}, seed + 2);
            seed += 3;
            const std::optional<lt::Tensor<float>> bias =
                c.bias ? std::optional<lt::Tensor<float>>(make_tensor<float>(br)) : std::nullopt;
            const Ref expected = ref_conv_transpose(xr, wr, c.bias ? &br : nullptr, c.o);
            check_close(conv_transpose<float>(dims, make_tensor<float>(xr), make_tensor<float>(wr), bias, c.o), expected,
                        2e-5, 1e-4);
            if (fp64) {
                const std::optional<lt::Tensor<double>> b64 =
                    c.bias ? std::optional<lt::Tensor<double>>(make_tensor<double>(br)) : std::nullopt;
                check_close(conv_transpose<double>(dims, make_tensor<double>(xr), make_tensor<double>(wr), b64, c.o),
                            expected, 1e-12, 1e-12);
            }
        }
    });
}

namespace {

/// Central differences of sum(f(x) * r) along every element of `at` (f: double loops).
Ref central_differences(const Ref& at, const std::function<Ref(const Ref&)>& f, const Ref& r) {
    Ref grad{at.shape, std::vector<double>(at.v.size())};
    const double h = 1e-3;
    for (std::size_t i = 0; i < at.v.size(); ++i) {
        Ref up = at, down = at;
        up.v[i] += h;
        down.v[i] -= h;
        const Ref fu = f(up), fd = f(down);
        double s = 0;
        for (std::size_t j = 0; j < r.v.size(); ++j) s += (fu.v[j] - fd.v[j]) * r.v[j];
        grad.v[i] = s / (2 * h);
    }
    return grad;
}

}  // namespace

TEST_CASE("conv2d and conv_transpose2d gradients against central differences") {
    for_each_device([](lt::Device d) {
        if (!computes_double(d)) return;  // (the OpenCL device without float64 has the float cases above)
        Options o = options(2, 2, 1, 1, 2);
        o.after = {0, 1};
        o.output_padding = {1, 0};
        const Ref xr = random_ref<double>({2, 4, 5, 4}, 70), wr = random_ref<double>({4, 2, 3, 2}, 71),
                  br = random_ref<double>({4}, 72);
        const lt::Tensor<double> x = make_tensor<double>(xr), w = make_tensor<double>(wr), b = make_tensor<double>(br);
        {
            INFO("conv2d");
            const Ref y = ref_conv(xr, wr, &br, o), r = random_ref<double>(y.shape, 73);
            const lt::Tensor<double> rt = make_tensor<double>(r);
            auto grads = lt::grad(lt::sum(conv<double>(2, x, w, b, o) * rt), {x, w, b});
            check_close(grads[0], central_differences(xr, [&](const Ref& v) { return ref_conv(v, wr, &br, o); }, r), 1e-7, 1e-7);
            check_close(grads[1], central_differences(wr, [&](const Ref& v) { return ref_conv(xr, v, &br, o); }, r), 1e-7, 1e-7);
            check_close(grads[2], central_differences(br, [&](const Ref& v) { return ref_conv(xr, wr, &v, o); }, r), 1e-7, 1e-7);
        }
        {
            INFO("depthwise conv2d");
            const Options dw = options(2, 1, 1, 1, 4);
            const Ref wd = random_ref<double>({4, 1, 3, 3}, 75);
            const lt::Tensor<double> wt = make_tensor<double>(wd);
            const Ref y = ref_conv(xr, wd, nullptr, dw), r = random_ref<double>(y.shape, 76);
            const lt::Tensor<double> rt = make_tensor<double>(r);
            auto grads = lt::grad(lt::sum(conv<double>(2, x, wt, std::nullopt, dw) * rt), {x, wt});
            check_close(grads[0], central_differences(xr, [&](const Ref& v) { return ref_conv(v, wd, nullptr, dw); }, r), 1e-7, 1e-7);
            check_close(grads[1], central_differences(wd, [&](const Ref& v) { return ref_conv(xr, v, nullptr, dw); }, r), 1e-7, 1e-7);
        }
        {
            // Windows over three axes at once (27 taps: one fold), and a 9x9 kernel (81 taps:
            // folded axis by axis).
            INFO("conv3d, and conv2d and conv_transpose2d with a 9x9 kernel");
            const Options o3 = options(3, 1, 1), o9 = options(2, 2, 4);
            const Ref x3 = random_ref<double>({1, 2, 4, 3, 5}, 77), w3 = random_ref<double>({2, 2, 3, 3, 2}, 78);
            const Ref x9 = random_ref<double>({1, 1, 6, 7}, 79), w9 = random_ref<double>({2, 1, 9, 9}, 80);
            const lt::Tensor<double> x3t = make_tensor<double>(x3), w3t = make_tensor<double>(w3), x9t = make_tensor<double>(x9),
                                     w9t = make_tensor<double>(w9);
            const Ref r3 = random_ref<double>(ref_conv(x3, w3, nullptr, o3).shape, 81),
                      r9 = random_ref<double>(ref_conv(x9, w9, nullptr, o9).shape, 82);
            auto g3 = lt::grad(lt::sum(conv<double>(3, x3t, w3t, std::nullopt, o3) * make_tensor<double>(r3)), {x3t, w3t});
            check_close(g3[0], central_differences(x3, [&](const Ref& v) { return ref_conv(v, w3, nullptr, o3); }, r3), 1e-7, 1e-7);
            check_close(g3[1], central_differences(w3, [&](const Ref& v) { return ref_conv(x3, v, nullptr, o3); }, r3), 1e-7, 1e-7);
            auto g9 = lt::grad(lt::sum(conv<double>(2, x9t, w9t, std::nullopt, o9) * make_tensor<double>(r9)), {x9t, w9t});
            check_close(g9[0], central_differences(x9, [&](const Ref& v) { return ref_conv(v, w9, nullptr, o9); }, r9), 1e-7, 1e-7);
            check_close(g9[1], central_differences(w9, [&](const Ref& v) { return ref_conv(x9, v, nullptr, o9); }, r9), 1e-7, 1e-7);
            // Strides with dilations: taps of one residue class, or none (dilation 2, stride 2).
            for (const Options& od : {options(1, 2, 1, 2), options(1, 3, 1, 2), options(1, 3, 0, 1)}) {
                const Ref x1 = random_ref<double>({2, 2, 11}, 85), w1 = random_ref<double>({3, 2, 3}, 86);
                const lt::Tensor<double> x1t = make_tensor<double>(x1), w1t = make_tensor<double>(w1);
                const Ref r1 = random_ref<double>(ref_conv(x1, w1, nullptr, od).shape, 87);
                auto g1 = lt::grad(lt::sum(conv<double>(1, x1t, w1t, std::nullopt, od) * make_tensor<double>(r1)), {x1t, w1t});
                check_close(g1[0], central_differences(x1, [&](const Ref& v) { return ref_conv(v, w1, nullptr, od); }, r1), 1e-7, 1e-7);
                check_close(g1[1], central_differences(w1, [&](const Ref& v) { return ref_conv(x1, v, nullptr, od); }, r1), 1e-7, 1e-7);
            }
            const Options t9 = options(2, 2, 1);
            const Ref wt9 = random_ref<double>({1, 2, 9, 9}, 83);
            const lt::Tensor<double> wt9t = make_tensor<double>(wt9);
            check_close(conv_transpose<double>(2, x9t, wt9t, std::nullopt, t9), ref_conv_transpose(x9, wt9, nullptr, t9), 1e-9, 1e-9);
            const Ref rt9 = random_ref<double>(ref_conv_transpose(x9, wt9, nullptr, t9).shape, 84);
            auto gt9 = lt::grad(lt::sum(conv_transpose<double>(2, x9t, wt9t, std::nullopt, t9) * make_tensor<double>(rt9)), {x9t});
            check_close(gt9[0], central_differences(x9, [&](const Ref& v) { return ref_conv_transpose(v, wt9, nullptr, t9); }, rt9),
                        1e-7, 1e-7);
        }
        {
            INFO("conv_transpose2d");
            const Ref y = ref_conv_transpose(xr, wr, nullptr, o), r = random_ref<double>(y.shape, 74);
            const lt::Tensor<double> rt = make_tensor<double>(r);
            auto grads = lt::grad(lt::sum(conv_transpose<double>(2, x, w, std::nullopt, o) * rt), {x, w});
            check_close(grads[0],
                        central_differences(xr, [&](const Ref& v) { return ref_conv_transpose(v, wr, nullptr, o); }, r),
                        1e-7, 1e-7);
            check_close(grads[1],
                        central_differences(wr, [&](const Ref& v) { return ref_conv_transpose(xr, v, nullptr, o); }, r),
                        1e-7, 1e-7);
        }
    });
}

namespace {

/// Max and average pooling written out: windows over the input, padding outside it.
struct PoolRef {
    Ref max, argmax, avg, avg_without_pad, sum;
};

/// ceil_mode as PyTorch's pooling shape functions write it: round the count of windows up,
/// then drop a last window that would start past the input and the padding before it; an
/// average over a window counts the padded input's positions in it (count_include_pad), its
/// part past the padding not.
PoolRef ref_pool(const Ref& x, const lt::Shape& kernel, const Options& o, bool ceil_mode = false) {
    const std::size_t dims = kernel.size();
    lt::Shape shape{x.shape[0], x.shape[1]};
    for (std::size_t i = 0; i < dims; ++i) {
        const std::int64_t reach = x.shape[2 + i] + o.before[i] + o.after[i] - o.dilation[i] * (kernel[i] - 1) - 1;
        std::int64_t n = (ceil_mode ? reach + o.stride[i] - 1 : reach) / o.stride[i] + 1;
        if (ceil_mode && (n - 1) * o.stride[i] >= x.shape[2 + i] + o.before[i]) --n;
        shape.push_back(n);
    }
    PoolRef out{{shape, {}}, {shape, {}}, {shape, {}}, {shape, {}}, {shape, {}}};
    const lt::Shape in = spatial(x.shape);
    for (std::int64_t l = 0; l < lt::numel(shape); ++l) {
        const std::vector<std::int64_t> at = unravel(l, shape);
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        std::int64_t best_at = -1, inside = 0;
        for (std::int64_t kl = 0; kl < lt::numel(kernel); ++kl) {
            const std::vector<std::int64_t> k = unravel(kl, kernel);
            std::vector<std::int64_t> xi{at[0], at[1]}, p;
            bool ok = true;
            for (std::size_t i = 0; i < dims; ++i) {
                p.push_back(at[2 + i] * o.stride[i] + k[i] * o.dilation[i] - o.before[i]);
                ok = ok && p[i] >= 0 && p[i] < in[i];
            }
            if (!ok) continue;
            xi.insert(xi.end(), p.begin(), p.end());
            const double v = x.at(xi);
            ++inside;
            sum += v;
            if (best_at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                best = v;
                best_at = flat_index(in, p);
            }
        }
        out.max.v.push_back(best);
        out.argmax.v.push_back(static_cast<double>(best_at));
        double counted = 1;  // positions of the window inside the padded input
        for (std::size_t i = 0; i < dims; ++i) {
            const std::int64_t start = at[2 + i] * o.stride[i] - o.before[i];
            counted *= static_cast<double>(std::min(start + kernel[i], x.shape[2 + i] + o.after[i]) - start);
        }
        out.avg.v.push_back(sum / counted);
        out.sum.v.push_back(sum);
        out.avg_without_pad.v.push_back(sum / static_cast<double>(inside));
    }
    return out;
}

}  // namespace

namespace {

/// Whether the schedule of `y` holds Winograd's product: a GEMM item of 36 products.
template <class T>
bool winograd_scheduled(const lt::Tensor<T>& y) {
    for (const auto& item : lt::schedule(y))
        if (item.kind == lt::ScheduleItem::Kind::Matmul && item.output.find("[36, ") != std::string::npos) return true;
    return false;
}

/// sqrt(sum (got - ref)^2 / sum ref^2): Winograd's error bound is on the whole output, as its
/// transforms spread each element's rounding over a tile.
template <class T>
double winograd_relative_l2(const lt::Tensor<T>& y, const Ref& expected) {
    const std::vector<T> got = y.to_vector();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        num += (static_cast<double>(got[i]) - expected.v[i]) * (static_cast<double>(got[i]) - expected.v[i]);
        den += expected.v[i] * expected.v[i];
    }
    return std::sqrt(num / den);
}

struct WinogradCase {
    const char* name;
    lt::Shape x, w;
    Options o;
    bool bias_relu;
};

template <class T>
void check_winograd_case(const WinogradCase& c, unsigned seed) {
    INFO(c.name);
    const Ref xr = random_ref<T>(c.x, seed), wr = random_ref<T>(c.w, seed + 1), br = random_ref<T>({c.w[0]}, seed + 2);
    const lt::Tensor<T> x = make_tensor<T>(xr), w = make_tensor<T>(wr), b = make_tensor<T>(br);
    Ref expected = ref_conv(xr, wr, c.bias_relu ? &br : nullptr, c.o);
    lt::Tensor<T> y = conv<T>(2, x, w, c.bias_relu ? std::optional<lt::Tensor<T>>(b) : std::nullopt, c.o);
    if (c.bias_relu) {
        y = lt::relu(y);
        expected = map(expected, [](double v) { return v > 0 ? v : 0.0; });
    }
    CHECK(winograd_scheduled(y));
    REQUIRE(y.shape() == expected.shape);
    // F(4x4, 3x3) in float32 is about 7x less exact than the direct sum (NumPy, 128 channels:
    // relative L2 error 2.3e-6 against 3.6e-7); double keeps 1e-13.
    const bool single = std::is_same_v<T, float>;
    CHECK(winograd_relative_l2(y, expected) <= (single ? 1e-5 : 1e-13));
    double largest = 0;
    for (double v : expected.v) largest = std::max(largest, std::fabs(v));
    check_close(y, expected, single ? 1e-4 : 1e-11, (single ? 1e-5 : 1e-12) * largest);
}

}  // namespace

TEST_CASE("conv2d as Winograd F(4x4, 3x3) (LAZYTENSOR_CONV_WINOGRAD=on) against the double loop") {
    for_each_device([](lt::Device d) {
        const ScopedEnvVar on("LAZYTENSOR_CONV_WINOGRAD", "on");
        Options asymmetric = options(2, 1, 0);
        asymmetric.before = {0, 2};
        asymmetric.after = {1, 0};
        const std::vector<WinogradCase> cases = {
            {"one channel, 5x7, padding 1, bias and relu", {1, 1, 5, 7}, {1, 1, 3, 3}, options(2, 1, 1), true},
            {"batch 3, 9x11, no padding", {3, 4, 9, 11}, {5, 4, 3, 3}, options(2, 1, 0), false},
            {"9 channels in, 7 out, 6x5, padding 2", {1, 9, 6, 5}, {7, 9, 3, 3}, options(2, 1, 2), true},
            {"asymmetric padding, 7x10", {2, 3, 7, 10}, {3, 3, 3, 3}, asymmetric, true},
            {"8x8, padding 1: whole tiles", {3, 2, 8, 8}, {6, 2, 3, 3}, options(2, 1, 1), true},
            {"3x3 input, no padding: one output", {2, 3, 3, 3}, {2, 3, 3, 3}, options(2, 1, 0), false},
        };
        unsigned seed = 300;
        for (const WinogradCase& c : cases) check_winograd_case<float>(c, seed += 3);
        if (computes_double(d))
            for (const WinogradCase& c : cases) check_winograd_case<double>(c, seed += 3);
        // Same padding, a missing batch axis.
        const Ref xr = random_ref<float>({3, 7, 6}, 320), wr = random_ref<float>({2, 3, 3, 3}, 321);
        Ref batched = xr;
        batched.shape = {1, 3, 7, 6};
        Ref expected = ref_conv(batched, wr, nullptr, options(2, 1, 1));
        expected.shape = {2, 7, 6};
        const lt::Tensor<float> same = lt::conv2d(make_tensor<float>(xr), make_tensor<float>(wr), std::nullopt, 1, lt::Padding::Same);
        CHECK(winograd_scheduled(same));
        CHECK(winograd_relative_l2(same, expected) <= 1e-5);
        // Not Winograd's: stride 2, dilation 2, groups, 1-D and integer convolutions keep their path.
        const lt::Tensor<float> x = lt::ones<float>({1, 4, 9, 9}), w = lt::ones<float>({4, 4, 3, 3});
        CHECK_FALSE(winograd_scheduled(lt::conv2d(x, w, std::nullopt, 2, 1)));
        CHECK_FALSE(winograd_scheduled(lt::conv2d(x, w, std::nullopt, 1, 2, 2)));
        CHECK_FALSE(winograd_scheduled(lt::conv2d(x, lt::ones<float>({4, 2, 3, 3}), std::nullopt, 1, 1, 1, 2)));
        CHECK_FALSE(winograd_scheduled(lt::conv2d(x.cast<std::int32_t>(), w.cast<std::int32_t>(), std::nullopt, 1, 1)));
    });
}

TEST_CASE("LAZYTENSOR_CONV_WINOGRAD: off and auto keep im2col where the device says so; a bad value is a ValueError") {
    const lt::Tensor<float> x = lt::ones<float>({1, 4, 9, 9}), w = lt::ones<float>({4, 4, 3, 3});
    {
        const ScopedEnvVar off("LAZYTENSOR_CONV_WINOGRAD", "off");
        CHECK_FALSE(winograd_scheduled(lt::conv2d(x, w, std::nullopt, 1, 1)));
    }
    {
        const ScopedEnvVar automatic("LAZYTENSOR_CONV_WINOGRAD", "AUTO");
        const bool chosen = lt::detail::device_policy(lt::default_device()).winograd_min_channels() > 0 &&
                            lt::detail::device_policy(lt::default_device()).winograd_min_channels() <= 4;
        CHECK(winograd_scheduled(lt::conv2d(x, w, std::nullopt, 1, 1)) == chosen);
    }
    const ScopedEnvVar bad("LAZYTENSOR_CONV_WINOGRAD", "sometimes");
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, 1, 1),
                         doctest::Contains("LAZYTENSOR_CONV_WINOGRAD=sometimes is not a choice: use auto"), lt::ValueError);
}

TEST_CASE("conv2d as Winograd: gradients of the input and the weight against central differences") {
    for_each_device([](lt::Device d) {
        if (!computes_double(d)) return;
        const ScopedEnvVar on("LAZYTENSOR_CONV_WINOGRAD", "on");
        Options o = options(2, 1, 1);
        o.after = {2, 0};
        const Ref xr = random_ref<double>({2, 3, 5, 6}, 330), wr = random_ref<double>({4, 3, 3, 3}, 331),
                  br = random_ref<double>({4}, 332);
        const lt::Tensor<double> x = make_tensor<double>(xr), w = make_tensor<double>(wr), b = make_tensor<double>(br);
        const Ref r = random_ref<double>(ref_conv(xr, wr, &br, o).shape, 333);
        const lt::Tensor<double> y = conv<double>(2, x, w, b, o);
        CHECK(winograd_scheduled(y));
        auto grads = lt::grad(lt::sum(y * make_tensor<double>(r)), {x, w, b});
        check_close(grads[0], central_differences(xr, [&](const Ref& v) { return ref_conv(v, wr, &br, o); }, r), 1e-7, 1e-7);
        check_close(grads[1], central_differences(wr, [&](const Ref& v) { return ref_conv(xr, v, &br, o); }, r), 1e-7, 1e-7);
        check_close(grads[2], central_differences(br, [&](const Ref& v) { return ref_conv(xr, wr, &v, o); }, r), 1e-7, 1e-7);
    });
}

TEST_CASE("max_pool and avg_pool: windows, padding, ties, NaN, indices") {
    for_each_device([](lt::Device) {
        struct PoolCase {
            const char* name;
            lt::Shape x, kernel;
            Options o;
        };
        Options overlapping = options(2, 1, 1);
        Options dilated = options(2, 2, 1, 2);
        Options asymmetric = options(2, 2, 0);
        asymmetric.before = {1, 0};
        asymmetric.after = {0, 1};
        const std::vector<PoolCase> cases = {
            {"2x2, stride 2", {2, 3, 6, 8}, {2, 2}, options(2, 2)},
            {"3x3, stride 1, padding 1", {1, 2, 5, 5}, {3, 3}, overlapping},
            {"odd sizes, stride 2", {1, 1, 7, 5}, {3, 2}, options(2, 2)},
            {"dilation 2, padding 1", {1, 2, 9, 8}, {3, 3}, dilated},
            {"1-D", {2, 3, 9}, {3}, options(1, 2, 1)},
            {"3-D", {1, 2, 4, 5, 4}, {2, 3, 2}, options(3, 2, 1)},
        };
        unsigned seed = 90;
        for (const PoolCase& c : cases) {
            INFO(c.name);
            const std::size_t dims = c.kernel.size();
            Ref xr = random_ref<float>(c.x, seed++);
            for (double& v : xr.v) v = std::round(v) - 3;  // negative values, many ties
            const PoolRef want = ref_pool(xr, c.kernel, c.o);
            const lt::Tensor<float> x = make_tensor<float>(xr);
            const std::vector<std::int64_t> k = list(c.kernel), s = list(c.o.stride), p = list(c.o.before),
                                            dl = list(c.o.dilation);
            auto pools = [&](auto max_pool, auto avg_pool) {
                auto [values, at] = max_pool(x, k, s, p, dl);
                check_close(values, want.max, 0, 0);
                REQUIRE(at.shape() == want.argmax.shape);
                const std::vector<std::int64_t> got = at.to_vector();
                for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<std::int64_t>(want.argmax.v[i]));
                if (dl == std::vector<std::int64_t>(dims, 1)) {
                    check_close(avg_pool(x, k, s, p, true), want.avg, 1e-6, 1e-6);
                    check_close(avg_pool(x, k, s, p, false), want.avg_without_pad, 1e-6, 1e-6);
                }
            };
            auto avg_for = [](auto f) {
                return [f](const lt::Tensor<float>& a, const std::vector<std::int64_t>& kk, const std::vector<std::int64_t>& ss,
                           const std::vector<std::int64_t>& pp, bool include) { return f(a, kk, ss, pp, include); };
            };
            if (dims == 1)
                pools([](auto&&... a) { return lt::max_pool1d_with_indices(a...); },
                      avg_for([](auto&&... a) { return lt::avg_pool1d(a...); }));
            if (dims == 2)
                pools([](auto&&... a) { return lt::max_pool2d_with_indices(a...); },
                      avg_for([](auto&&... a) { return lt::avg_pool2d(a...); }));
            if (dims == 3)
                pools([](auto&&... a) { return lt::max_pool3d_with_indices(a...); },
                      avg_for([](auto&&... a) { return lt::avg_pool3d(a...); }));
        }
        // A NaN wins its window; -inf inputs still beat the padding.
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        const lt::Tensor<float> x = lt::tensor<float>({1, 3, nan, -inf, -inf, 2}, {1, 1, 1, 6});
        auto [v, at] = lt::max_pool2d_with_indices(x, {1, 3}, {1, 2}, {0, 1});
        const std::vector<float> values = v.to_vector();
        REQUIRE(values.size() == 3);
        CHECK(values[0] == 3.0f);  // {padding, 1, 3}
        CHECK(std::isnan(values[1]));  // {3, NaN, -inf}
        CHECK(values[2] == 2.0f);  // {-inf, -inf, 2}
        CHECK(at.to_vector() == std::vector<std::int64_t>{1, 2, 5});
        const lt::Tensor<float> lows = lt::tensor<float>({-inf, -inf, -inf}, {1, 1, 3});
        auto [lv, la] = lt::max_pool1d_with_indices(lows, 3, 1, 1);
        CHECK(la.to_vector() == std::vector<std::int64_t>{0, 0, 1});
        CHECK(lv.to_vector() == std::vector<float>{-inf, -inf, -inf});
        // A dilated window over padding alone: -inf at position -1 (PyTorch's value).
        auto [ev, ea] = lt::max_pool1d_with_indices(lt::tensor<float>({5}, {1, 1, 1}), 2, 1, 2, 3);
        CHECK(ev.to_vector() == std::vector<float>{-inf, -inf});
        CHECK(ea.to_vector() == std::vector<std::int64_t>{-1, -1});
        // The maximum's own value: -0 stays -0; integers keep their type.
        const std::vector<float> zeros = lt::max_pool1d(lt::tensor<float>({-0.0f, -1, -2, 0.0f, -0.0f, -5}, {1, 1, 6}), 3).to_vector();
        REQUIRE(zeros.size() == 2);
        CHECK((zeros[0] == 0.0f && std::signbit(zeros[0])));
        CHECK((zeros[1] == 0.0f && !std::signbit(zeros[1])));
        const lt::Tensor<std::int32_t> ints =
            lt::max_pool1d(lt::tensor<std::int32_t>({std::numeric_limits<std::int32_t>::min(), -7, 3, 2147483647}, {1, 1, 4}), 2);
        CHECK(ints.to_vector() == std::vector<std::int32_t>{-7, 2147483647});
    });
}

TEST_CASE("max_pool2d's gradient reaches the first maximum of each window; avg_pool's every element") {
    for_each_device([](lt::Device) {
        // Overlapping windows with ties: the gradient of each output goes to one position.
        const lt::Tensor<float> x = lt::tensor<float>({1, 5, 5, 2,  //
                                                       5, 0, 1, 5,  //
                                                       3, 3, 3, 3},
                                                      {1, 1, 3, 4});
        auto g = lt::grad(lt::sum(lt::max_pool2d(x, 2, 1)), {x});
        // windows (row, col) -> first max: (0,0): 5 at 1; (0,1): 5 at 1; (0,2): 5 at 2;
        // (1,0): 5 at 4; (1,1): 3 at 9; (1,2): 5 at 7.
        CHECK(g[0].to_vector() == std::vector<float>{0, 2, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0});
        // A window of -inf, and windows whose maximum is -0 or NaN: the whole gradient reaches the first.
        const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
        const lt::Tensor<float> lows = lt::tensor<float>({-inf, -inf, -0.0f, 0.0f, -1, nan, 2, nan}, {1, 1, 8});
        auto gl = lt::grad(lt::sum(lt::max_pool1d(lows, 2) * 3.0f), {lows});
        CHECK(gl[0].to_vector() == std::vector<float>{3, 0, 3, 0, 0, 3, 0, 3});
        // Windows side by side (stride = kernel) over odd extents: the last row and column are
        // in no window and get nothing; each window's weight reaches its first maximum.
        for (const std::vector<std::int64_t>& k : {std::vector<std::int64_t>{2, 2}, std::vector<std::int64_t>{2, 3}}) {
            Ref xo = random_ref<float>({2, 3, 5, 7}, 12);
            for (double& v : xo.v) v = std::round(v * 2);  // ties
            const Options o = options(2, 1, 0);
            Options side = o;
            side.stride = lt::Shape(k.begin(), k.end());
            const PoolRef want = ref_pool(xo, lt::Shape(k.begin(), k.end()), side);
            const Ref r = random_ref<float>(want.max.shape, 13);
            Ref expected{xo.shape, std::vector<double>(xo.v.size(), 0.0)};
            for (std::size_t i = 0; i < want.argmax.v.size(); ++i) {
                const std::size_t plane = i / static_cast<std::size_t>(want.max.shape[2] * want.max.shape[3]);
                expected.v[plane * 35 + static_cast<std::size_t>(want.argmax.v[i])] += r.v[i];
            }
            const lt::Tensor<float> xt = make_tensor<float>(xo);
            auto gk = lt::grad(lt::sum(lt::max_pool2d(xt, k) * make_tensor<float>(r)), {xt});
            check_close(gk[0], expected, 1e-6, 1e-6);
        }
        const Ref xr = random_ref<float>({2, 2, 5, 5}, 11);
        const lt::Tensor<float> xt = make_tensor<float>(xr);
        auto ga = lt::grad(lt::sum(lt::avg_pool2d(xt, 3, 2, 1, false) * 3.0f), {xt});
        Options o = options(2, 2, 1);
        const Ref ones = ref_of(ref_pool(xr, {3, 3}, o).avg.shape, [](const auto&) { return 3.0; });
        const Ref want = central_differences(
            xr, [&](const Ref& v) { return ref_pool(v, {3, 3}, o).avg_without_pad; }, ones);
        check_close(ga[0], want, 1e-3, 1e-3);
    });
}

TEST_CASE("pools with ceil_mode and divisor_override, as PyTorch's") {
    for_each_device([](lt::Device) {
        struct Rounded {
            lt::Shape x, kernel;
            std::int64_t stride, pad;
        };
        // 6 -> 3 windows (the last runs one past the input), 8 padded -> 4, 5 -> 3 with one past;
        // 5 with stride 3 and padding 1: the rounded-up window would start in the padding after
        // the input, so it is dropped.
        const std::vector<Rounded> cases = {
            {{1, 2, 6}, {3}, 2, 0}, {{2, 1, 6, 5}, {3, 2}, 2, 1}, {{1, 2, 5, 7}, {2, 3}, 2, 0}, {{1, 1, 5}, {2}, 3, 1}};
        unsigned seed = 120;
        for (const Rounded& c : cases) {
            const std::size_t dims = c.kernel.size();
            CAPTURE(c.x);
            Ref xr = random_ref<float>(c.x, seed++);
            for (double& v : xr.v) v = std::round(v * 4) - 2;  // ties, negatives
            const Options o = options(dims, c.stride, c.pad);
            const PoolRef want = ref_pool(xr, c.kernel, o, true);
            const lt::Tensor<float> x = make_tensor<float>(xr);
            const std::vector<std::int64_t> k = list(c.kernel);
            auto check = [&](auto values, auto at, auto avg, auto avg_out, auto avg_by_3) {
                check_close(values, want.max, 0, 0);
                REQUIRE(at.shape() == want.argmax.shape);
                const std::vector<std::int64_t> got = at.to_vector();
                for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == static_cast<std::int64_t>(want.argmax.v[i]));
                check_close(avg, want.avg, 1e-6, 1e-6);
                check_close(avg_out, want.avg_without_pad, 1e-6, 1e-6);
                check_close(avg_by_3, map(want.sum, [](double v) { return v / 3; }), 1e-6, 1e-6);
            };
            if (dims == 1) {
                auto [v, at] = lt::max_pool1d_with_indices(x, k, c.stride, c.pad, 1, true);
                check(v, at, lt::avg_pool1d(x, k, c.stride, c.pad, true, true), lt::avg_pool1d(x, k, c.stride, c.pad, false, true),
                      lt::avg_pool1d(x, k, c.stride, c.pad, true, true, 3));
            } else {
                auto [v, at] = lt::max_pool2d_with_indices(x, k, c.stride, c.pad, 1, true);
                check(v, at, lt::avg_pool2d(x, k, c.stride, c.pad, true, true), lt::avg_pool2d(x, k, c.stride, c.pad, false, true),
                      lt::avg_pool2d(x, k, c.stride, c.pad, true, true, 3));
                // Gradients: the average's against central differences, the maximum's at its index.
                const Ref r = random_ref<float>(want.max.shape, seed++);
                auto ga = lt::grad(lt::sum(lt::avg_pool2d(x, k, c.stride, c.pad, false, true) * make_tensor<float>(r)), {x});
                check_close(ga[0], central_differences(xr, [&](const Ref& in) { return ref_pool(in, c.kernel, o, true).avg_without_pad; }, r),
                            1e-3, 1e-3);
                auto gm = lt::grad(lt::sum(lt::max_pool2d(x, k, c.stride, c.pad, 1, true) * make_tensor<float>(r)), {x});
                Ref expected{xr.shape, std::vector<double>(xr.v.size(), 0.0)};
                const std::int64_t plane = c.x[2] * c.x[3], cells = want.max.shape[2] * want.max.shape[3];
                for (std::size_t i = 0; i < want.argmax.v.size(); ++i)
                    expected.v[static_cast<std::size_t>(static_cast<std::int64_t>(i) / cells * plane +
                                                        static_cast<std::int64_t>(want.argmax.v[i]))] += r.v[i];
                check_close(gm[0], expected, 1e-6, 1e-6);
            }
        }
        CHECK_THROWS_AS(lt::avg_pool1d(lt::ones<float>({1, 1, 4}), 2, 2, 0, true, false, 0), lt::ValueError);
    });
}

TEST_CASE("adaptive_avg_pool1d/2d/3d: even and uneven splits, as PyTorch's cells") {
    for_each_device([](lt::Device) {
        const Ref xr = random_ref<float>({2, 3, 7, 6}, 12);
        const lt::Tensor<float> x = make_tensor<float>(xr);
        for (const std::array<std::int64_t, 2> out : {std::array<std::int64_t, 2>{3, 2}, {3, 4}, {1, 1}, {7, 6}, {9, 5}}) {
            INFO("output " << out[0] << "x" << out[1]);
            const Ref want = ref_of({2, 3, out[0], out[1]}, [&](const std::vector<std::int64_t>& at) {
                const std::int64_t h0 = at[2] * 7 / out[0], h1 = ((at[2] + 1) * 7 + out[0] - 1) / out[0];
                const std::int64_t w0 = at[3] * 6 / out[1], w1 = ((at[3] + 1) * 6 + out[1] - 1) / out[1];
                double s = 0;
                for (std::int64_t h = h0; h < h1; ++h)
                    for (std::int64_t w = w0; w < w1; ++w) s += xr.at({at[0], at[1], h, w});
                return s / static_cast<double>((h1 - h0) * (w1 - w0));
            });
            check_close(lt::adaptive_avg_pool2d(x, {out[0], out[1]}), want, 1e-5, 1e-6);
        }
        CHECK(lt::adaptive_avg_pool1d(lt::ones<float>({2, 3, 5}), 2).shape() == lt::Shape{2, 3, 2});
        check_close(lt::adaptive_avg_pool3d(lt::ones<float>({1, 2, 3, 4, 5}), {2, 3, 2}), ref_of({1, 2, 2, 3, 2}, [](const auto&) {
                        return 1.0;
                    }));
    });
}

TEST_CASE("adaptive_max_pool1d/2d/3d: PyTorch's cells, the first maximum and its index, NaN, ties, gradient") {
    for_each_device([](lt::Device) {
        // The first maximum of each cell in row-major order (a NaN wins), written out.
        auto reference = [](const Ref& x, const lt::Shape& out, Ref& index) {
            const std::size_t dims = out.size();
            lt::Shape shape{x.shape[0], x.shape[1]};
            for (std::int64_t o : out) shape.push_back(o);
            index = Ref{shape, {}};
            const lt::Shape in = spatial(x.shape);
            return ref_of(shape, [&](const std::vector<std::int64_t>& at) {
                lt::Shape begin, extent;
                for (std::size_t i = 0; i < dims; ++i) {
                    begin.push_back(at[2 + i] * in[i] / out[i]);
                    extent.push_back(((at[2 + i] + 1) * in[i] + out[i] - 1) / out[i] - begin.back());
                }
                double best = 0;
                std::int64_t best_at = -1;
                for (std::int64_t l = 0; l < lt::numel(extent); ++l) {
                    std::vector<std::int64_t> p = unravel(l, extent), xi{at[0], at[1]};
                    for (std::size_t i = 0; i < dims; ++i) p[i] += begin[i];
                    xi.insert(xi.end(), p.begin(), p.end());
                    const double v = x.at(xi);
                    if (best_at < 0 || v > best || (std::isnan(v) && !std::isnan(best))) {
                        best = v;
                        best_at = flat_index(in, p);
                    }
                }
                index.v.push_back(static_cast<double>(best_at));
                return best;
            });
        };
        Ref xr = random_ref<float>({2, 3, 7, 6}, 14);
        for (double& v : xr.v) v = std::round(v * 3);  // ties
        xr.v[5] = std::numeric_limits<double>::quiet_NaN();
        xr.v[50] = -std::numeric_limits<double>::infinity();
        const lt::Tensor<float> x = make_tensor<float>(xr);
        for (const std::array<std::int64_t, 2> out : {std::array<std::int64_t, 2>{3, 2}, {3, 4}, {1, 1}, {7, 6}, {9, 5}, {5, 1}}) {
            INFO("output " << out[0] << "x" << out[1]);
            Ref index;
            const Ref want = reference(xr, {out[0], out[1]}, index);
            auto [values, at] = lt::adaptive_max_pool2d_with_indices(x, {out[0], out[1]});
            check_close(values, want, 0, 0);
            check_close(at, index, 0, 0);
            // The gradient reaches each cell's first maximum.
            const Ref r = random_ref<float>(want.shape, 15);
            auto g = lt::grad(lt::sum(lt::adaptive_max_pool2d(x, {out[0], out[1]}) * make_tensor<float>(r)), {x});
            Ref expected{xr.shape, std::vector<double>(xr.v.size(), 0.0)};
            for (std::size_t i = 0; i < index.v.size(); ++i)
                expected.v[i / static_cast<std::size_t>(out[0] * out[1]) * 42 + static_cast<std::size_t>(index.v[i])] += r.v[i];
            check_close(g[0], expected, 1e-6, 1e-6);
        }
        // 1-D and 3-D, integers, a cell of -inf alone.
        Ref ir = random_ref<float>({1, 2, 7}, 16);
        for (double& v : ir.v) v = std::round(v * 10);
        Ref index1;
        const Ref want1 = reference(ir, {3}, index1);
        auto [v1, i1] = lt::adaptive_max_pool1d_with_indices(make_tensor<std::int32_t>(ir), 3);
        check_close(v1, want1, 0, 0);
        check_close(i1, index1, 0, 0);
        const float inf = std::numeric_limits<float>::infinity();
        auto [lv, li] = lt::adaptive_max_pool1d_with_indices(lt::tensor<float>({-inf, -inf, 1, -inf, -inf}, {1, 1, 5}), 3);
        CHECK(lv.to_vector() == std::vector<float>{-inf, 1, -inf});
        CHECK(li.to_vector() == std::vector<std::int64_t>{0, 2, 3});
        const Ref x3 = random_ref<float>({1, 2, 5, 4, 3}, 17);
        Ref index3;
        const Ref want3 = reference(x3, {2, 3, 2}, index3);
        auto [v3, i3] = lt::adaptive_max_pool3d_with_indices(make_tensor<float>(x3), {2, 3, 2});
        check_close(v3, want3, 0, 0);
        check_close(i3, index3, 0, 0);
        CHECK_THROWS_AS(lt::adaptive_max_pool2d(x, {0, 2}), lt::ValueError);
        CHECK_THROWS_AS(lt::adaptive_max_pool2d(lt::ones<float>({5}), {2, 2}), lt::ShapeError);
    });
}

TEST_CASE("Tensor::unfold: windows as a view, its gradient sums overlapping windows, no writes into overlaps") {
    for_each_device([](lt::Device) {
        const Ref xr = random_ref<float>({3, 10}, 13);
        const lt::Tensor<float> x = make_tensor<float>(xr);
        const lt::Tensor<float> u = x.unfold(1, 4, 3);
        check_close(u, ref_of({3, 3, 4}, [&](const std::vector<std::int64_t>& at) { return xr.at({at[0], at[1] * 3 + at[2]}); }), 0, 0);
        check_close(lt::unfold(x, 0, 2, 1), ref_of({2, 10, 2}, [&](const std::vector<std::int64_t>& at) {
                        return xr.at({at[0] + at[2], at[1]});
                    }), 0, 0);
        // Each element's gradient counts the windows that read it (times 2).
        auto g = lt::grad(lt::sum(x.unfold(1, 4, 2) * 2.0f), {x});
        check_close(g[0], ref_of({3, 10}, [](const std::vector<std::int64_t>& at) {
                        int windows = 0;
                        for (std::int64_t o = 0; o < 4; ++o) windows += at[1] >= 2 * o && at[1] < 2 * o + 4;
                        return 2.0 * windows;
                    }), 0, 0);
        lt::Tensor<float> base = lt::zeros<float>({8});
        base.realize();
        lt::Tensor<float> windows = base.unfold(0, 3, 1);
        windows.realize();  // a view of base's memory, windows overlapping
        CHECK_THROWS_WITH_AS(windows.assign(1.0f), doctest::Contains("may make several of its elements one memory location"),
                             lt::ValueError);
        CHECK_THROWS_WITH_AS(x.unfold(1, 11, 1), doctest::Contains("longer than axis 1 of shape [3, 10]"), lt::ShapeError);
        CHECK_THROWS_WITH_AS(x.unfold(1, 2, 0), doctest::Contains("step must be at least 1"), lt::ValueError);
    });
}

TEST_CASE("convolutions and pools: bad input names the mistake where it is written") {
    const lt::Tensor<float> x = lt::ones<float>({2, 3, 5, 5}), w = lt::ones<float>({4, 3, 3, 3});
    CHECK_THROWS_WITH_AS(lt::conv2d(x, lt::ones<float>({4, 2, 3, 3})),
                         doctest::Contains("the input has 3 channels (shape [2, 3, 5, 5]) but the weight [4, 2, 3, 3] takes 2 per group x 1 group(s) = 2"),
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::conv2d(lt::ones<float>({2, 4, 5, 5}), lt::ones<float>({4, 2, 3, 3}), std::nullopt, 1, 0, 1, 3),
                         doctest::Contains("groups = 3 does not divide the input's 4 channels"), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, lt::ones<float>({4, 3, 7, 3})),
                         doctest::Contains("the kernel [7, 3] spans [7, 3] positions"), lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, 0), doctest::Contains("stride must be at least 1"), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, {1, -1}), doctest::Contains("stride must be at least 1"),
                         lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, 1, 0, 0), doctest::Contains("dilation must be at least 1"),
                         lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, 1, -1), doctest::Contains("padding must not be negative"),
                         lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv2d(lt::ones<float>({5, 5}), w),
                         doctest::Contains("must have 4 axes ([batch, channels, 2 spatial]) or 3 without the batch, got shape [5, 5]"),
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::conv1d(lt::ones<float>({2, 3, 5}), w), doctest::Contains("the weight must have 3 axes"),
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, lt::ones<float>({3})), doctest::Contains("the bias must have shape [4]"),
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, 2, lt::Padding::Same),
                         doctest::Contains("padding Same needs stride 1"), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv2d(x, w, std::nullopt, {1, 1, 1}), doctest::Contains("stride needs 1 or 2 values"),
                         lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv_transpose2d(x, lt::ones<float>({3, 2, 3, 3}), std::nullopt, 2, 0, 2),
                         doctest::Contains("output padding [2, 2] must be at least 0 and smaller than the stride [2, 2]"),
                         lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::conv_transpose2d(x, w), doctest::Contains("the input has 3 channels (shape [2, 3, 5, 5]) but the weight [4, 3, 3, 3] takes 4"),
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::max_pool2d(x, 2, 2, 2), doctest::Contains("must be at most half the kernel's span"),
                         lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::max_pool2d(x, 0), doctest::Contains("kernel size must be at least 1"), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::avg_pool2d(x, 6), doctest::Contains("spans [6, 6] positions"), lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::adaptive_avg_pool2d(x, {0, 2}), doctest::Contains("output size must be at least 1"),
                         lt::ValueError);
    // Nothing was built: the inputs are still usable.
    CHECK(lt::sum(lt::conv2d(x, w)).item() == doctest::Approx(2 * 4 * 9 * 27.0));
}

namespace {

/// Per-channel statistics of x [N, C, ...]: mean and biased variance over every other axis.
std::pair<std::vector<double>, std::vector<double>> channel_stats(const Ref& x) {
    const std::int64_t channels = x.shape[1];
    std::vector<double> mean(static_cast<std::size_t>(channels), 0.0), var(static_cast<std::size_t>(channels), 0.0);
    const double count = static_cast<double>(x.size() / channels);
    for (std::int64_t i = 0; i < x.size(); ++i) mean[static_cast<std::size_t>(unravel(i, x.shape)[1])] += x.v[static_cast<std::size_t>(i)] / count;
    for (std::int64_t i = 0; i < x.size(); ++i) {
        const auto c = static_cast<std::size_t>(unravel(i, x.shape)[1]);
        var[c] += (x.v[static_cast<std::size_t>(i)] - mean[c]) * (x.v[static_cast<std::size_t>(i)] - mean[c]) / count;
    }
    return {mean, var};
}

Ref ref_batch_norm(const Ref& x, const std::vector<double>& mean, const std::vector<double>& var, const Ref& w, const Ref& b,
                   double eps) {
    return ref_of(x.shape, [&](const std::vector<std::int64_t>& at) {
        const auto c = static_cast<std::size_t>(at[1]);
        return (x.at(at) - mean[c]) / std::sqrt(var[c] + eps) * w.v[c] + b.v[c];
    });
}

}  // namespace

TEST_CASE("batch_norm: batch statistics, lazy running updates, evaluation, gradients") {
    for_each_device([](lt::Device d) {
        const Ref xr = random_ref<float>({4, 3, 5, 2}, 20), wr = random_ref<float>({3}, 21), br = random_ref<float>({3}, 22);
        const lt::Tensor<float> x = make_tensor<float>(xr), w = make_tensor<float>(wr), b = make_tensor<float>(br);
        lt::Tensor<float> running_mean = lt::zeros<float>({3}).realize(), running_var = lt::ones<float>({3}).realize();
        const lt::Tensor<float> y = lt::batch_norm(x, running_mean, running_var, w, b, /*training=*/true, 0.1, 1e-5);
        const auto [mean, var] = channel_stats(xr);
        check_close(y, ref_batch_norm(xr, mean, var, wr, br, 1e-5), 1e-4, 1e-5);
        std::vector<double> want_mean, want_var;
        for (std::size_t c = 0; c < 3; ++c) {
            want_mean.push_back(0.1 * mean[c]);
            want_var.push_back(0.9 + 0.1 * var[c] * 40.0 / 39.0);  // unbiased, as PyTorch's
        }
        check_close(running_mean, Ref{{3}, want_mean}, 1e-5, 1e-6);
        check_close(running_var, Ref{{3}, want_var}, 1e-5, 1e-6);
        // Evaluation reads the running statistics.
        check_close(lt::batch_norm(x, running_mean, running_var, w, b), ref_batch_norm(xr, want_mean, want_var, wr, br, 1e-5),
                    1e-4, 1e-5);
        // No running statistics: the batch's.
        check_close(lt::batch_norm(x, std::nullopt, std::nullopt), ref_batch_norm(xr, mean, var, Ref{{3}, {1, 1, 1}}, Ref{{3}, {0, 0, 0}}, 1e-5),
                    1e-4, 1e-5);
        CHECK_THROWS_WITH_AS(lt::batch_norm(x, std::nullopt, std::nullopt, std::nullopt, std::nullopt, false),
                             doctest::Contains("needs the running mean and variance"), lt::ValueError);
        CHECK_THROWS_WITH_AS(lt::batch_norm(x, running_mean, running_var, lt::ones<float>({4})),
                             doctest::Contains("the weight must have shape [3] (one per channel of x, shape [4, 3, 5, 2]), got [4]"),
                             lt::ShapeError);
        CHECK_THROWS_WITH_AS(lt::batch_norm(lt::ones<float>({1, 3}), std::nullopt, std::nullopt),
                             doctest::Contains("more than one value per channel"), lt::ValueError);
        if (!computes_double(d)) return;
        const Ref xd = random_ref<double>({3, 2, 4}, 23), r = random_ref<double>({3, 2, 4}, 24);
        const lt::Tensor<double> xt = make_tensor<double>(xd), wt = make_tensor<double>(Ref{{2}, {1.5, -0.5}}),
                                 bt = make_tensor<double>(Ref{{2}, {0.25, 2}});
        lt::Tensor<double> rm = lt::zeros<double>({2}), rv = lt::ones<double>({2});
        auto grads = lt::grad(lt::sum(lt::batch_norm(xt, rm, rv, wt, bt, true) * make_tensor<double>(r)), {xt, wt, bt});
        auto f = [&](const Ref& v) {
            const auto [m, s] = channel_stats(v);
            return ref_batch_norm(v, m, s, Ref{{2}, {1.5, -0.5}}, Ref{{2}, {0.25, 2}}, 1e-5);
        };
        check_close(grads[0], central_differences(xd, f, r), 1e-5, 1e-6);
        const Ref normalized = ref_batch_norm(xd, channel_stats(xd).first, channel_stats(xd).second, Ref{{2}, {1, 1}},
                                              Ref{{2}, {0, 0}}, 1e-5);
        check_close(grads[1], reduce(zip(normalized, r, [](double a, double c) { return a * c; }), {0, 2}, false, 0.0, ref_add),
                    1e-9, 1e-9);
        check_close(grads[2], reduce(r, {0, 2}, false, 0.0, ref_add), 1e-9, 1e-9);
    });
}

TEST_CASE("group_norm: per sample and group of channels, weight and bias, gradient") {
    for_each_device([](lt::Device d) {
        const Ref xr = random_ref<float>({2, 6, 3, 3}, 30), wr = random_ref<float>({6}, 31), br = random_ref<float>({6}, 32);
        auto ref = [&](const Ref& x, const Ref& w, const Ref& b) {
            return ref_of(x.shape, [&](const std::vector<std::int64_t>& at) {
                const std::int64_t group = at[1] / 2;
                double mean = 0, var = 0;
                for (std::int64_t c = group * 2; c < group * 2 + 2; ++c)
                    for (std::int64_t h = 0; h < 3; ++h)
                        for (std::int64_t v = 0; v < 3; ++v) mean += x.at({at[0], c, h, v}) / 18.0;
                for (std::int64_t c = group * 2; c < group * 2 + 2; ++c)
                    for (std::int64_t h = 0; h < 3; ++h)
                        for (std::int64_t v = 0; v < 3; ++v) var += std::pow(x.at({at[0], c, h, v}) - mean, 2) / 18.0;
                const auto c = static_cast<std::size_t>(at[1]);
                return (x.at(at) - mean) / std::sqrt(var + 1e-5) * w.v[c] + b.v[c];
            });
        };
        check_close(lt::group_norm(make_tensor<float>(xr), 3, make_tensor<float>(wr), make_tensor<float>(br)), ref(xr, wr, br),
                    1e-4, 1e-5);
        CHECK_THROWS_WITH_AS(lt::group_norm(make_tensor<float>(xr), 4),
                             doctest::Contains("num_groups = 4 must be at least 1 and divide the 6 channels"), lt::ValueError);
        if (!computes_double(d)) return;
        const lt::Tensor<double> x = make_tensor<double>(xr);
        const Ref r = random_ref<double>(xr.shape, 33);
        auto g = lt::grad(lt::sum(lt::group_norm(x, 3, make_tensor<double>(wr), make_tensor<double>(br)) * make_tensor<double>(r)), x);
        check_close(g, central_differences(xr, [&](const Ref& v) { return ref(v, wr, br); }, r), 1e-5, 1e-6);
    });
}

TEST_CASE("dropout: the kept fraction, the scale, one mask on every device, its gradient") {
    const lt::Tensor<float> on_host = lt::dropout(lt::ones<float>({10000}, lt::Device::host()), 0.3, 7);
    const std::vector<float> host_values = on_host.to_vector();
    for_each_device([&](lt::Device) {
        const lt::Tensor<float> x = lt::ones<float>({10000});
        const std::vector<float> v = lt::dropout(x, 0.3, 7).to_vector();
        int kept = 0;
        for (float e : v) {
            CHECK((e == 0.0f || e == doctest::Approx(1.0 / 0.7)));
            kept += e != 0.0f;
        }
        CHECK(std::abs(kept / 10000.0 - 0.7) < 0.02);
        CHECK(v == host_values);
        CHECK(lt::dropout(x, 0.3, 8).to_vector() != v);  // another seed, another mask
        CHECK(lt::dropout(x, 0.3, 7, /*training=*/false).to_vector() == std::vector<float>(10000, 1.0f));
        CHECK(lt::sum(lt::dropout(x, 1.0, 7)).item() == 0.0f);
        CHECK(lt::dropout(x * 2.0f, 0.0, 7).to_vector() == std::vector<float>(10000, 2.0f));
        CHECK(lt::grad(lt::sum(lt::dropout(x, 0.3, 7)), x).to_vector() == v);
        CHECK_THROWS_WITH_AS(lt::dropout(x, 1.5, 7), doctest::Contains("p must be in [0, 1], got 1.5"), lt::ValueError);
    });
}

TEST_CASE("interpolate: nearest and linear as PyTorch's, sizes and scales, 1 to 3 spatial axes, gradient") {
    for_each_device([](lt::Device d) {
        // PyTorch's outputs for 0, 1, 2, 3.
        const lt::Tensor<float> ramp = lt::arange<float>(4).reshape({1, 1, 4});
        CHECK(lt::interpolate(ramp, 8).to_vector() == std::vector<float>{0, 0, 1, 1, 2, 2, 3, 3});
        CHECK(lt::interpolate(ramp, 3).to_vector() == std::vector<float>{0, 1, 2});
        check_close(lt::interpolate(ramp, 8, lt::Interpolation::Linear), Ref{{1, 1, 8}, {0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3}});
        check_close(lt::interpolate(ramp, 7, lt::Interpolation::Linear, true), Ref{{1, 1, 7}, {0, 0.5, 1, 1.5, 2, 2.5, 3}});
        check_close(lt::interpolate(ramp, lt::Scale(1.5), lt::Interpolation::Linear),
                    Ref{{1, 1, 6}, {0, 0.5, 7.0 / 6.0, 11.0 / 6.0, 2.5, 3}}, 1e-6, 1e-6);
        // Bilinear and trilinear: one axis after the other (the same weights as PyTorch's).
        const Ref xr = random_ref<float>({2, 3, 4, 5}, 40);
        auto along = [](const Ref& x, std::size_t axis, std::int64_t out, bool corners) {
            lt::Shape shape = x.shape;
            const std::int64_t in = shape[axis];
            shape[axis] = out;
            return ref_of(shape, [&](const std::vector<std::int64_t>& at) {
                const double scale = static_cast<double>(in) / static_cast<double>(out);
                const double src = corners ? (out > 1 ? at[axis] * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0)
                                           : std::max((at[axis] + 0.5) * scale - 0.5, 0.0);
                std::vector<std::int64_t> lo = at, hi = at;
                lo[axis] = std::min<std::int64_t>(static_cast<std::int64_t>(src), in - 1);
                hi[axis] = std::min<std::int64_t>(lo[axis] + 1, in - 1);
                const double lambda = src - static_cast<double>(lo[axis]);
                return x.at(lo) * (1 - lambda) + x.at(hi) * lambda;
            });
        };
        for (bool corners : {false, true}) {
            INFO("align_corners " << corners);
            check_close(lt::interpolate(make_tensor<float>(xr), {7, 3}, lt::Interpolation::Linear, corners),
                        along(along(xr, 2, 7, corners), 3, 3, corners), 1e-5, 1e-5);
        }
        const Ref cube = random_ref<float>({1, 2, 2, 3, 2}, 41);
        check_close(lt::interpolate(make_tensor<float>(cube), {3, 5, 4}, lt::Interpolation::Linear),
                    along(along(along(cube, 2, 3, false), 3, 5, false), 4, 4, false), 1e-5, 1e-5);
        // Nearest by a scale: floor(o / 2).
        const lt::Tensor<float> up = lt::interpolate(make_tensor<float>(xr), lt::Scale({2.0, 1.0}));
        check_close(up, ref_of({2, 3, 8, 5}, [&](const std::vector<std::int64_t>& at) { return xr.at({at[0], at[1], at[2] / 2, at[3]}); }), 0, 0);
        // Integers resample in float32.
        CHECK(lt::interpolate(lt::arange<std::int32_t>(3).reshape({1, 1, 3}), 6).to_vector() == std::vector<float>{0, 0, 1, 1, 2, 2});
        CHECK_THROWS_WITH_AS(lt::interpolate(ramp, 8, lt::Interpolation::Nearest, true),
                             doctest::Contains("align_corners applies to Linear"), lt::ValueError);
        CHECK_THROWS_WITH_AS(lt::interpolate(lt::ones<float>({4, 4}), 8), doctest::Contains("must have 3 to 5 axes"), lt::ShapeError);
        CHECK_THROWS_WITH_AS(lt::interpolate(ramp, 0), doctest::Contains("would be 0"), lt::ValueError);
        if (!computes_double(d)) return;
        const Ref r = random_ref<double>({2, 3, 7, 3}, 42);
        const lt::Tensor<double> x = make_tensor<double>(xr);
        auto g = lt::grad(lt::sum(lt::interpolate(x, {7, 3}, lt::Interpolation::Linear) * make_tensor<double>(r)), x);
        check_close(g, central_differences(xr, [&](const Ref& v) { return along(along(v, 2, 7, false), 3, 3, false); }, r), 1e-7, 1e-7);
    });
}
