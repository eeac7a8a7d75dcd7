// SPDX-License-Identifier: MIT
// Row softmax over a batch of logits, and what the scheduler makes of it: the row max, the
// subtraction, exp, the row sum and the division all fuse into one kernel that makes one pass
// per row. LAZYTENSOR_DEBUG=1 prints the same schedule for every realize.
//
//   ./softmax        (LAZYTENSOR_DEVICE=opencl:0 runs it on an OpenCL device)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <lazytensor.hpp>
#include <numeric>
#include <vector>

namespace lt = lazytensor;

int main() {
    const std::int64_t batch = 512, classes = 1000;
    const lt::Device device = lt::default_device();

    // "Logits" for 512 samples over 1000 classes: normal noise plus a bias towards class 7*i.
    lt::Tensor<float> noise = lt::randn<float>({batch, classes}, /*seed=*/42, device) * 2.0f;
    lt::Tensor<std::int64_t> column = lt::arange<std::int64_t>(classes, device).reshape({1, classes});
    lt::Tensor<std::int64_t> favourite = (lt::arange<std::int64_t>(batch, device) * 7 % classes).reshape({batch, 1});
    lt::Tensor<float> logits = noise + lt::where(column == favourite, 10.0f, 0.0f);
    logits.realize();  // the input batch, as if it had come from a model

    // Written out by hand: subtract the row max (for range), exponentiate, normalize.
    lt::Tensor<float> z = lt::exp(logits - logits.max(1, /*keepdim=*/true));
    lt::Tensor<float> probs = z / z.sum(1, /*keepdim=*/true);

    // What realize will run, without running it.
    std::vector<lt::ScheduleItem> items = lt::schedule(probs);
    std::printf("softmax of a %lldx%lld batch on %s: %zu kernel(s)\n", static_cast<long long>(batch),
                static_cast<long long>(classes), device.str().c_str(), lt::kernel_count(items));
    for (const lt::ScheduleItem& item : items) {
        std::printf("  %s: ", lt::to_string(item.kind));
        for (std::size_t i = 0; i < item.ops.size(); ++i) std::printf("%s%s", i ? ", " : "", item.ops[i].c_str());
        std::printf(" -> %s, %d phases (ends: %s)\n", item.output.c_str(), item.phases, item.reason.c_str());
    }

    // The same schedule, printed by realize itself to stderr (what LAZYTENSOR_DEBUG=1 shows).
    std::fflush(stdout);
    lt::set_debug_level(1);
    probs.realize();
    lt::set_debug_level(0);

    // lt::softmax builds the same expression; its schedule is the same single kernel.
    lt::Tensor<float> probs2 = lt::softmax(logits, /*axis=*/1);
    std::printf("lt::softmax: %zu kernel(s)\n", lt::kernel_count(lt::schedule(probs2)));

    // Check the results: every row sums to 1, and both ways agree.
    const std::vector<float> p = probs.to_vector(), p2 = probs2.to_vector();
    double worst_sum = 0, worst_diff = 0;
    std::int64_t hits = 0;
    for (std::int64_t r = 0; r < batch; ++r) {
        const float* row = p.data() + r * classes;
        worst_sum = std::max(worst_sum, std::fabs(std::accumulate(row, row + classes, 0.0) - 1.0));
        hits += (std::max_element(row, row + classes) - row) == (r * 7) % classes;
    }
    for (std::size_t i = 0; i < p.size(); ++i) worst_diff = std::max(worst_diff, double(std::fabs(p[i] - p2[i])));
    std::printf("largest |row sum - 1|: %.2e; rows sum to 1: %s\n", worst_sum, worst_sum < 1e-5 ? "yes" : "no");
    std::printf("largest difference to lt::softmax: %.2e\n", worst_diff);
    std::printf("rows whose most likely class is the favourite: %lld of %lld\n", static_cast<long long>(hits),
                static_cast<long long>(batch));
    std::printf("row 0, classes 0-3: %.4f %.4f %.4f %.4f\n", p[0], p[1], p[2], p[3]);
    return worst_sum < 1e-5 && worst_diff < 1e-6 ? 0 : 1;
}
