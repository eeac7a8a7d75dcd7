// SPDX-License-Identifier: MIT
// Training a small convolutional network on handwritten digits: the 1,797 images of 8 x 8
// pixels that scikit-learn ships (examples/data, written by make_digits.py), the first 1,437 to
// train on and the last 360 to test. The network, in PyTorch's layouts and functional spelling:
//
//   [B, 1, 8, 8] -> conv 3x3, 16 channels, relu -> conv 3x3, 32 channels, relu -> [B, 32, 8, 8]
//                -> max pool 2 -> [B, 32, 4, 4] -> flatten -> linear 512 -> 10 -> cross-entropy
//
// trained for 10 epochs of minibatches of 64 by SGD with momentum written in lazytensor ops, on
// images shifted at random by up to a pixel. Each step (forward, lt::grad's backward through
// the pooling and the convolutions, the update) is one lazy graph realized in one call, and
// after the first epoch nothing is compiled again. It exits with 1 if the test accuracy is
// below 95%.
//
//   ./train_cnn [data directory]      (LAZYTENSOR_DEVICE=opencl:0 trains on an OpenCL device)
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <lazytensor.hpp>
#include <string>
#include <vector>

namespace lt = lazytensor;

#ifndef LAZYTENSOR_EXAMPLE_DATA
#define LAZYTENSOR_EXAMPLE_DATA "examples/data"  // CMake passes the source tree's examples/data
#endif

struct Digits {
    lt::Tensor<float> images;          // [n, 1, 8, 8]: pixels in [0, 1], one input channel
    lt::Tensor<std::int64_t> labels;   // [n]: the digit, 0..9
    std::int64_t size() const { return labels.shape()[0]; }
};

// The files hold the pixels as uint8 counts 0..16 and the labels as int64, the dtype
// lt::cross_entropy takes. load_npy reads a file in its own dtype, so the pixels are loaded as
// uint8 and cast.
Digits load_digits(const std::string& dir, lt::Device device) {
    const lt::Tensor<std::uint8_t> pixels = lt::load_npy<std::uint8_t>(dir + "/digits_images.npy", device);
    const lt::Tensor<float> scaled = lt::cast<float>(pixels) / 16.0f;
    Digits d{scaled.reshape({pixels.shape()[0], 1, 8, 8}), lt::load_npy<std::int64_t>(dir + "/digits_labels.npy", device)};
    lt::realize({d.images, d.labels});
    return d;
}

// The parameters: each convolution's weight [out channels, in channels, 3, 3] and bias, and the
// linear layer's [512, 10] (x @ w) and bias. He initialization (normal, variance 2 / fan-in)
// from fixed seeds: every run on every device starts from the same numbers. Realized now, so
// that the first step reads them like every later one (and compiles the same kernels).
std::vector<lt::Tensor<float>> init_params(lt::Device device) {
    auto he = [&](lt::Shape shape, std::int64_t fan_in, std::uint64_t seed) {
        return lt::Tensor<float>(lt::randn<float>(shape, seed, device) * std::sqrt(2.0f / float(fan_in)));
    };
    std::vector<lt::Tensor<float>> p{he({16, 1, 3, 3}, 1 * 9, 1),   lt::zeros<float>({16}, device),   // conv1
                                     he({32, 16, 3, 3}, 16 * 9, 2), lt::zeros<float>({32}, device),   // conv2
                                     he({512, 10}, 512, 3),         lt::zeros<float>({10}, device)};  // linear
    lt::realize(std::vector<lt::TensorRef>(p.begin(), p.end()));
    return p;
}

// The network: logits [B, 10] for images [B, 1, 8, 8]. Padding 1 keeps a 3x3 convolution's
// output the size of its input; the pool halves it. Only lazy ops: lt::grad differentiates it.
lt::Tensor<float> forward(const std::vector<lt::Tensor<float>>& p, const lt::Tensor<float>& x) {
    lt::Tensor<float> h = lt::relu(lt::conv2d(x, p[0], p[1], /*stride=*/1, /*padding=*/1));  // [B, 16, 8, 8]
    h = lt::relu(lt::conv2d(h, p[2], p[3], 1, 1));                                         // [B, 32, 8, 8]
    h = lt::max_pool2d(h, 2);                                                               // [B, 32, 4, 4]
    return lt::matmul(h.flatten(1), p[4]) + p[5];                                           // [B, 10]
}

// Data augmentation: each image moved by -1, 0 or 1 pixel along each axis (zeros come in at the
// edge), a new choice per image and epoch. The 9 possible crops of the zero-padded image are
// views (unfold, PyTorch's sliding windows); a one-hot weight per image picks one of them. One
// kernel, and the seed is a kernel argument: nothing is compiled after the first epoch.
lt::Tensor<float> random_shifts(const lt::Tensor<float>& images, std::uint64_t seed) {
    const std::int64_t n = images.shape()[0];
    const lt::Tensor<float> padded = images.pad({{0, 0}, {0, 0}, {1, 1}, {1, 1}});  // [n, 1, 10, 10]
    const lt::Tensor<float> crops = padded.unfold(2, 8, 1).unfold(3, 8, 1);         // [n, 1, 3, 3, 8, 8]
    const lt::Tensor<std::int64_t> shift = lt::randint<std::int64_t>(0, 9, {n}, seed, images.device());
    const lt::Tensor<float> pick = lt::cast<float>(lt::one_hot(shift, 9)).reshape({n, 1, 3, 3, 1, 1});
    return (crops * pick).sum({2, 3});                                                // [n, 1, 8, 8]
}

// SGD with momentum (PyTorch's form): v = momentum v + g, p = p - lr v. The velocities start as
// zeros in memory (realized, so that the first step has the form of every later one) and are
// then lazy tensors like the parameters, realized with them. The learning rate is a kernel
// argument: changing it every step compiles nothing.
struct Sgd {
    float momentum = 0.9f;
    std::vector<lt::Tensor<float>> velocity;

    explicit Sgd(const std::vector<lt::Tensor<float>>& params) {
        for (const auto& p : params) velocity.push_back(lt::zeros_like(p));
        lt::realize(std::vector<lt::TensorRef>(velocity.begin(), velocity.end()));
    }

    std::vector<lt::Tensor<float>> update(const std::vector<lt::Tensor<float>>& params,
                                          const std::vector<lt::Tensor<float>>& grads, float lr) {
        std::vector<lt::Tensor<float>> out;
        for (std::size_t i = 0; i < params.size(); ++i) {
            velocity[i] = velocity[i] * momentum + grads[i];
            out.push_back(params[i] - velocity[i] * lr);
        }
        return out;
    }
};

// How many images of d the network classifies right: the class of the largest logit.
std::int64_t correct(const std::vector<lt::Tensor<float>>& params, const Digits& d) {
    const lt::Tensor<std::int64_t> predicted = lt::argmax(forward(params, d.images), 1);
    return lt::sum(predicted == d.labels).item();  // a bool sum counts in int64
}

int main(int argc, char** argv) {
    const std::string dir = argc > 1 ? argv[1] : LAZYTENSOR_EXAMPLE_DATA;
    const lt::Device device = lt::default_device();
    const Digits all = load_digits(dir, device);
    // A fixed split: the last 360 images are never trained on. Slices are views, no copies.
    const std::int64_t n_train = 1437;
    const Digits train{all.images.slice(0, 0, n_train), all.labels.slice(0, 0, n_train)};
    const Digits test{all.images.slice(0, n_train, {}), all.labels.slice(0, n_train, {})};

    const int epochs = 10;
    const std::int64_t batch = 64, steps_per_epoch = n_train / batch;  // the last partial batch is left out
    const float lr = 0.05f;
    std::printf("training a CNN (conv 16, conv 32, max pool, linear) on %lld digits, testing on %lld, on %s\n",
                (long long)train.size(), (long long)test.size(), device.str().c_str());

    std::vector<lt::Tensor<float>> params = init_params(device);
    Sgd sgd(params);
    for (int epoch = 0; epoch < epochs; ++epoch) {
        if (epoch == 1) lt::reset_compile_stats(device);
        // A new order each epoch: the positions that sort random numbers are a random
        // permutation. It is read back, and each batch is gathered with an index tensor made
        // from its part of it. (Slicing batches out of a shuffled copy would compile new kernels
        // for each batch: a view's offset is part of the structure of the kernels that read
        // it. An index tensor is data: every step runs the same kernels.)
        const std::vector<std::int64_t> order = lt::argsort(lt::rand<float>({n_train}, 1000 + epoch, device)).to_vector();
        const lt::Tensor<float> shifted = random_shifts(train.images, 2000 + epoch);
        shifted.realize();

        std::vector<lt::Tensor<float>> losses;
        for (std::int64_t s = 0; s < steps_per_epoch; ++s) {
            const std::vector<std::int64_t> part(order.begin() + s * batch, order.begin() + (s + 1) * batch);
            const lt::Tensor<std::int64_t> index = lt::tensor<std::int64_t>(part, {batch}, device);
            const lt::Tensor<float> x = lt::index_select(shifted, 0, index);
            const lt::Tensor<std::int64_t> y = lt::index_select(train.labels, 0, index);
            // The loss and its gradients (lazy), the update (lazy, with a cosine learning-rate
            // decay from lr to 0), then one realize of all the next step needs.
            auto [loss, grads] = lt::value_and_grad(
                [&](const std::vector<lt::Tensor<float>>& p) { return lt::cross_entropy(forward(p, x), y); }, params);
            const double progress = double(epoch * steps_per_epoch + s) / double(epochs * steps_per_epoch);
            params = sgd.update(params, grads, lr * float(0.5 * (1.0 + std::cos(3.14159265358979 * progress))));
            std::vector<lt::TensorRef> outputs{loss};
            outputs.insert(outputs.end(), params.begin(), params.end());
            outputs.insert(outputs.end(), sgd.velocity.begin(), sgd.velocity.end());
            lt::realize(outputs);
            losses.push_back(loss);
        }
        const float mean_loss = lt::stack(losses).mean().item();
        std::printf("  epoch %2d: training loss %.4f, test accuracy %.1f%%\n", epoch + 1, mean_loss,
                    100.0 * double(correct(params, test)) / double(test.size()));
    }
    const std::size_t compiled_later = lt::compile_stats(device).kernels_compiled;
    const std::int64_t right = correct(params, test);
    std::printf("test accuracy %.1f%% (%lld of %lld); kernels compiled after the first epoch: %zu\n",
                100.0 * double(right) / double(test.size()), (long long)right, (long long)test.size(), compiled_later);
    const bool ok = 100 * right >= 95 * test.size() && compiled_later == 0;
    std::printf("check: %s\n", ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
}
