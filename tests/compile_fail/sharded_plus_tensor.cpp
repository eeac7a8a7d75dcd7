// SPDX-License-Identifier: MIT
// Must not compile: a sharded tensor and a plain tensor in one expression (the plain one must
// be replicated or sharded first: the message says how).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> t = lt::ones<float>({4, 2});
    lt::ShardedTensor<float> s = lt::shard(t, {lt::Device::host()}, 0, {1.0});
    auto e = s + t;
    (void)e;
}
