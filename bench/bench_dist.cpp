// SPDX-License-Identifier: MIT
// lt::dist's benchmarks (issue 49), run under mpiexec:
//
//   mpiexec -n 2 bench_dist allreduce [MiB...]
//       lt::dist::all_sum of a realized float32 tensor against MPI_Allreduce on the same buffers
//       (and against MPI_Iallreduce + MPI_Wait, the call lt::dist makes), in the same run, interleaved: median of 15 after a warm-up, each call between barriers;
//       bandwidth as the tensor's bytes over the time (target: ours >= 0.9x MPI's at 64 MiB).
//   mpiexec -n N bench_dist mlp [global batch] [steps]
//       the 784-512-256-10 MLP's training step (forward, lt::grad, average_gradients, SGD) on
//       global batch / N rows per rank, with and without the averaging (the overlap target: with
//       <= 1.15x without), and the throughput in rows per second; run it with -n 1 for the
//       one-rank baseline. LAZYTENSOR_DEVICE picks the device; --gpu-per-rank gives rank r the
//       OpenCL device local_rank % count.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lazytensor.hpp>
#include <string>
#include <vector>

namespace lt = lazytensor;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

void allreduce(const lt::dist::Group& world, const std::vector<double>& sizes_mib) {
    if (world.rank() == 0)
        std::printf("# all_sum of float32 over %d ranks (%s), against MPI_Allreduce on the same buffers: median of 15 ms\n",
                    world.size(), world.describe().c_str());
    for (double mib : sizes_mib) {
        const std::int64_t n = static_cast<std::int64_t>(mib * (1 << 20) / 4);
        lt::Tensor<float> x = lt::rand<float>({n}, 1 + world.rank(), lt::Device::host());
        x.realize();
        std::vector<float> out(static_cast<std::size_t>(n));
        const float* in = x.data();
        std::vector<double> ours, theirs, nonblocking;
        float check = 0;
        for (int run = 0; run < 16; ++run) {
            MPI_Barrier(MPI_COMM_WORLD);
            auto t0 = Clock::now();
            lt::Tensor<float> s = lt::dist::all_sum(x);
            s.realize();
            const double a = ms_since(t0);
            check = s.data()[n / 2];
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = Clock::now();
            MPI_Allreduce(in, out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            const double b = ms_since(t0);
            // The non-blocking call lt::dist makes, waited on at once.
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = Clock::now();
            MPI_Request request;
            MPI_Iallreduce(in, out.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &request);
            MPI_Wait(&request, MPI_STATUS_IGNORE);
            const double c = ms_since(t0);
            if (run > 0) {  // the first is the warm-up
                ours.push_back(a);
                theirs.push_back(b);
                nonblocking.push_back(c);
            }
        }
        if (check != out[static_cast<std::size_t>(n / 2)]) {
            std::fprintf(stderr, "rank %d: all_sum and MPI_Allreduce disagree (%g against %g)\n", world.rank(), check,
                         out[static_cast<std::size_t>(n / 2)]);
            std::exit(1);
        }
        const double a = median(ours), b = median(theirs), c = median(nonblocking), bytes = static_cast<double>(n) * 4;
        if (world.rank() == 0)
            std::printf("all_sum %8.3f MiB: lazytensor %8.3f ms (%6.2f GB/s), MPI_Allreduce %8.3f ms (%6.2f GB/s): "
                        "%.2fx its bandwidth; MPI_Iallreduce + MPI_Wait %8.3f ms: %.2fx\n",
                        mib, a, bytes / a / 1e6, b, bytes / b / 1e6, b / a, c, c / a);
    }
}

void mlp(const lt::dist::Group& world, std::int64_t global_batch, int steps) {
    const lt::Device device = lt::default_device();
    const std::int64_t rows = global_batch / world.size();
    const lt::Tensor<float> x = lt::rand<float>({rows, 784}, 10 + world.rank(), device);
    const lt::Tensor<std::int64_t> y = lt::randint<std::int64_t>(0, 10, {rows}, 20 + world.rank(), device);
    lt::realize({x, y});
    const std::int64_t sizes[] = {784, 512, 256, 10};
    auto run = [&](bool averaged) {
        std::vector<lt::Tensor<float>> p;
        for (int l = 0; l < 3; ++l) {
            p.push_back(lt::randn<float>({sizes[l], sizes[l + 1]}, 100 + l, device) * 0.05f);
            p.push_back(lt::zeros<float>({sizes[l + 1]}, device));
        }
        std::vector<double> times;
        for (int step = 0; step < steps + 3; ++step) {
            MPI_Barrier(MPI_COMM_WORLD);
            const auto t0 = Clock::now();
            auto [loss, grads] = lt::value_and_grad(
                [&](const std::vector<lt::Tensor<float>>& q) {
                    lt::Tensor<float> h = lt::relu(x.matmul(q[0]) + q[1]);
                    h = lt::relu(h.matmul(q[2]) + q[3]);
                    return lt::cross_entropy(h.matmul(q[4]) + q[5], y);
                },
                p);
            if (averaged) grads = lt::dist::average_gradients(grads, world);
            std::vector<lt::TensorRef> outputs{loss};
            for (std::size_t i = 0; i < p.size(); ++i) {
                p[i] = p[i] - 0.01f * grads[i];
                outputs.emplace_back(p[i]);
            }
            lt::realize(outputs);
            lt::synchronize(device);
            if (step >= 3) times.push_back(ms_since(t0));  // after the steps that compile
        }
        return median(times);
    };
    const double with = run(true), without = run(false);
    if (world.rank() == 0)
        std::printf("mlp 784-512-256-10, global batch %lld on %d rank%s (%lld rows each, %s): step %.3f ms with averaging, "
                    "%.3f ms without (%.3fx); %.0f rows/s\n",
                    static_cast<long long>(global_batch), world.size(), world.size() == 1 ? "" : "s",
                    static_cast<long long>(rows), device.str().c_str(), with, without, with / without,
                    static_cast<double>(global_batch) / (with * 1e-3));
}

}  // namespace

int main(int argc, char** argv) {
    const lt::dist::Group world = lt::dist::init();
    std::vector<std::string> args(argv + 1, argv + argc);
    const bool gpu_per_rank = std::find(args.begin(), args.end(), "--gpu-per-rank") != args.end();
    args.erase(std::remove(args.begin(), args.end(), "--gpu-per-rank"), args.end());
    if (gpu_per_rank) {
        int gpus = 0;
        for (const auto& info : lt::devices()) gpus += info.device.kind == lt::Device::Kind::OpenCL;
        if (gpus > 0) lt::set_default_device(lt::Device::opencl(lt::dist::local_rank() % gpus));
    }
    const std::string mode = args.empty() ? "allreduce" : args[0];
    if (mode == "allreduce") {
        std::vector<double> sizes;
        for (std::size_t i = 1; i < args.size(); ++i) sizes.push_back(std::atof(args[i].c_str()));
        if (sizes.empty()) sizes = {0.0625, 1, 16, 64};
        allreduce(world, sizes);
    } else if (mode == "mlp") {
        mlp(world, args.size() > 1 ? std::atoll(args[1].c_str()) : 16384, args.size() > 2 ? std::atoi(args[2].c_str()) : 10);
    } else {
        std::fprintf(stderr, "usage: bench_dist allreduce [MiB...] | mlp [global batch] [steps] [--gpu-per-rank]\n");
        return 2;
    }
    lt::dist::finalize();
    return 0;
}
