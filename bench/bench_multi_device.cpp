// SPDX-License-Identifier: MIT
// Several devices at once (issue 20's targets): the host and an OpenCL device realizing from two
// threads, sharded tensors (lt::shard, lt::replicate) over several OpenCL devices against one
// device, and copies between devices (x.to(device)).
//
// Every time is wall clock: realize + synchronize of a fresh expression, the median of --reps
// runs after a warm-up (row 1: the median of --rounds rounds). A ratio above 1 means the
// multi-device run is faster. Each row's result is checked against the one-device result; the
// exit status is 0 whatever the met/MISS marks say, 1 when a result is numerically wrong, 2 on
// an error (the other rows still run).
//
//   bench_multi_device [--devices LIST] [--rows 1,2,3,4] [--small] [--reps N] [--rounds N]
//                      [--host-elems N] [--device-elems N] [--loop-ms MS] [--elems N]
//                      [--batch N] [--copy-mib N] [--equal-weights]
//
// LIST: the devices to shard over, comma-separated ("0,1" or "opencl:0,opencl:1"; "host" may be
// one of them); default the environment's LAZYTENSOR_BENCH_DEVICES, else every OpenCL device.
// "GPU" sizes below apply when every device a row uses is an OpenCL GPU, "CPU" sizes otherwise
// (PoCL: POCL_DEVICES="pthread pthread" gives two CPU devices on one machine).
//
//  1  Two threads, one looping `exp(a)*b + c*0.5f - tanh(a)` on the host (2^24 floats GPU /
//     2^22 CPU) and one on the first OpenCL device of LIST (2^26 / 2^22), each loop as many
//     iterations as take about --loop-ms alone (so that both sides weigh the same), against the
//     same two loops one after the other on one thread. Throughput ratio = serial / concurrent;
//     target >= 1.6 with a GPU.
//  2  The chain and sum(exp(a)*b) over --elems floats (GPU: 2^29 where the first device's memory
//     allows, else less; CPU: 2^24), sharded over LIST against plain tensors on its first device.
//     Speedup target >= 1.8 on two GPUs.
//  3  MLP inference 784-512-256-10, softmax(relu(relu(x@w1+b1)@w2+b2)@w3+b3), --batch rows
//     (GPU 16384 = 2 x 8192; CPU 2048) split over LIST, weights and biases replicated, against
//     the same on the first device. Speedup target >= 1.7 on two GPUs.
//  4  x.to(opencl:1) from opencl:0 (and back) of --copy-mib MiB (GPU 1024, CPU 256), then a
//     synchronize, in GB/s, naming the path: direct (clEnqueueCopyBuffer, one shared context) or
//     staged through pinned host memory (separate contexts; run the program again with
//     LAZYTENSOR_OPENCL_SHARED_CONTEXT=off to measure that one). Also host -> opencl:0 and
//     opencl:0 -> host through .to() for comparison.
//
// Rows 2-4 need two OpenCL devices in LIST; with one they say so, and rows 2 and 3 then time
// the sharded path over that one device against plain tensors (its overhead only).
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#endif

#if !LAZYTENSOR_OPENCL
#error "bench_multi_device needs the OpenCL backend: build with LAZYTENSOR_OPENCL=ON"
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace lt = lazytensor;
namespace ocl = lazytensor::detail::opencl;
using Clock = std::chrono::steady_clock;

namespace {

// ------------------------------------------------------------------------------------ options

struct Options {
    std::vector<lt::Device> devices;  // to shard over
    std::string devices_from = "every OpenCL device";
    bool row[5] = {false, true, true, true, true};
    int reps = 10;
    int rounds = 5;
    std::int64_t host_elems = 0, device_elems = 0;  // row 1 (0: by the devices)
    double loop_ms = 0;                             // row 1 (0: by the measured step times)
    std::int64_t elems = 0;                         // row 2
    std::int64_t batch = 0;                         // row 3
    std::int64_t copy_mib = 0;                      // row 4
    bool equal_weights = false;
    bool small = false;
};

[[noreturn]] void usage(const std::string& why) {
    std::fprintf(stderr,
                 "bench_multi_device: %s\n"
                 "usage: bench_multi_device [--devices LIST] [--rows 1,2,3,4] [--small] [--reps N] [--rounds N]\n"
                 "                          [--host-elems N] [--device-elems N] [--loop-ms MS] [--elems N]\n"
                 "                          [--batch N] [--copy-mib N] [--equal-weights]\n"
                 "  LIST: devices to shard over, e.g. 0,1 or opencl:0,opencl:1 (default: LAZYTENSOR_BENCH_DEVICES,\n"
                 "        else every OpenCL device)\n"
                 "  --small: 2^20 elements (rows 1, 2), batch 512, 16 MiB copies, 5 reps, 3 rounds of 40 ms\n",
                 why.c_str());
    std::exit(2);
}

std::int64_t parse_int(const char* s, const std::string& what) {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 0);
    if (!*s || *end || v <= 0) usage(what + " needs a positive whole number");
    return v;
}

std::vector<lt::Device> parse_devices(const std::string& list, const std::string& what) {
    std::vector<lt::Device> out;
    std::size_t at = 0;
    while (at <= list.size()) {
        const std::size_t comma = std::min(list.find(',', at), list.size());
        const std::string item = list.substr(at, comma - at);
        at = comma + 1;
        if (item.empty()) continue;
        lt::Device d;
        try {
            d = item.find_first_not_of("0123456789") == std::string::npos ? lt::Device::opencl(std::atoi(item.c_str()))
                                                                           : lt::detail::parse_device(item);
        } catch (const std::exception& e) {
            usage(what + ": " + e.what());
        }
        if (std::find(out.begin(), out.end(), d) != out.end()) usage(what + " names " + d.str() + " twice");
        out.push_back(d);
    }
    if (out.empty()) usage(what + " names no device");
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i)  // the preset first, so that explicit values override it
        if (!std::strcmp(argv[i], "--small")) {
            o.small = true;
            o.host_elems = o.device_elems = o.elems = std::int64_t(1) << 20;
            o.batch = 512;
            o.copy_mib = 16;
            o.reps = 5;
            o.rounds = 3;
            o.loop_ms = 40;
        }
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto next = [&]() -> const char* {
            if (i + 1 >= argc) usage(a + " needs a value");
            return argv[++i];
        };
        if (a == "--small") continue;
        if (a == "--devices") {
            o.devices = parse_devices(next(), "--devices");
            o.devices_from = "--devices";
        } else if (a == "--rows") {
            const std::string v = next();
            for (bool& r : o.row) r = false;
            for (char c : v) {
                if (c >= '1' && c <= '4') o.row[c - '0'] = true;
                else if (c != ',') usage("--rows takes row numbers 1 to 4, comma-separated");
            }
        } else if (a == "--reps") o.reps = static_cast<int>(parse_int(next(), a));
        else if (a == "--rounds") o.rounds = static_cast<int>(parse_int(next(), a));
        else if (a == "--host-elems") o.host_elems = parse_int(next(), a);
        else if (a == "--device-elems") o.device_elems = parse_int(next(), a);
        else if (a == "--loop-ms") o.loop_ms = static_cast<double>(parse_int(next(), a));
        else if (a == "--elems") o.elems = parse_int(next(), a);
        else if (a == "--batch") o.batch = parse_int(next(), a);
        else if (a == "--copy-mib") o.copy_mib = parse_int(next(), a);
        else if (a == "--equal-weights") o.equal_weights = true;
        else if (a == "--help" || a == "-h") usage("help");
        else usage("unknown option " + a);
    }
    if (o.devices_from != "--devices") {
        if (const char* env = std::getenv("LAZYTENSOR_BENCH_DEVICES"); env && *env) {
            o.devices = parse_devices(env, "LAZYTENSOR_BENCH_DEVICES");
            o.devices_from = "LAZYTENSOR_BENCH_DEVICES";
        }
    }
    return o;
}

// ------------------------------------------------------------------------------------ helpers

std::string format(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* f, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, f);
    std::vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return buf;
}

double median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

/// Median wall time of `reps` calls of f (which realizes and synchronizes), after one warm-up call.
double median_ms(int reps, const std::function<void()>& f) {
    f();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        f();
        t.push_back(ms_since(t0));
    }
    return median(t);
}

std::string size_name(std::int64_t n) {
    if (n > 0 && (n & (n - 1)) == 0) {
        int k = 0;
        while ((std::int64_t(1) << k) != n) ++k;
        return format("2^%d", k);
    }
    return std::to_string(n);
}

std::string bytes_name(double bytes) {
    if (bytes >= double(1 << 30)) return format("%.3g GiB", bytes / double(1 << 30));
    return format("%.4g MiB", bytes / double(1 << 20));
}

std::string list_name(const std::vector<lt::Device>& ds) {
    std::string out = "{";
    for (std::size_t i = 0; i < ds.size(); ++i) out += (i ? ", " : "") + ds[i].str();
    return out + "}";
}

std::string extents_name(const std::vector<std::int64_t>& e) {
    std::string out;
    for (std::size_t i = 0; i < e.size(); ++i) out += (i ? " + " : "") + std::to_string(e[i]);
    return out;
}

/// What lt::devices() says about d (kind "host", "gpu", "cpu", ...).
lt::DeviceInfo info_of(lt::Device d) {
    for (const lt::DeviceInfo& info : lt::devices())
        if (info.device == d) return info;
    throw std::runtime_error("device " + d.str() + " is not available");
}

bool is_gpu(lt::Device d) { return d.kind == lt::Device::Kind::OpenCL && info_of(d).kind == "gpu"; }
bool all_gpus(const std::vector<lt::Device>& ds) {
    return std::all_of(ds.begin(), ds.end(), [](lt::Device d) { return is_gpu(d); });
}
std::vector<lt::Device> opencl_only(const std::vector<lt::Device>& ds) {
    std::vector<lt::Device> out;
    for (lt::Device d : ds)
        if (d.kind == lt::Device::Kind::OpenCL) out.push_back(d);
    return out;
}

std::size_t global_memory(lt::Device d) {
    if (d.kind != lt::Device::Kind::OpenCL) return std::size_t(1) << 62;
    return static_cast<std::size_t>(ocl::device_value<cl_ulong>(ocl::opencl_backend(d.index).device_id(), CL_DEVICE_GLOBAL_MEM_SIZE));
}

bool g_wrong = false, g_error = false;

void verify(const std::string& what, double diff, double tol) {
    if (diff <= tol) return;  // (NaN fails)
    g_wrong = true;
    std::printf("     WRONG: %s: relative difference %.3g exceeds %.1g\n", what.c_str(), diff, tol);
}

/// max |x - y| / max |y|, computed on y's device.
double rel_diff(const lt::Tensor<float>& x, const lt::Tensor<float>& y) {
    const double d = lt::max(lt::abs(x.to(y.device()) - y)).item();
    const double s = lt::max(lt::abs(y)).item();
    return d / std::max(s, 1e-30);
}

// ------------------------------------------------------------------------------------- table

void header_row() {
    std::printf("%-3s %-56s %12s %14s %11s  %-26s %s\n", "row", "benchmark", "baseline", "multi-device", "ratio", "target",
                "note");
}

void print_row(int row, const std::string& name, const std::string& base, const std::string& multi, const std::string& ratio,
               const std::string& target, const std::string& note = "") {
    std::printf("%-3d %-56s %12s %14s %11s  %-26s %s\n", row, name.c_str(), base.c_str(), multi.c_str(), ratio.c_str(),
                target.c_str(), note.c_str());
    std::fflush(stdout);
}

/// "RATIO: met" / "RATIO: MISS" where the target applies to these devices, else says where it does.
std::string target_mark(double ratio, double target, bool applies, const char* where) {
    if (!applies) return format(">= %.1f %s: n/a", target, where);
    return format(">= %.1f: %s", target, ratio >= target ? "met" : "MISS");
}

void cannot_run(int row, const std::string& what, const std::string& why) {
    std::printf("%-3d %-56s cannot run: %s\n", row, what.c_str(), why.c_str());
    std::fflush(stdout);
}

lt::Tensor<float> chain(const lt::Tensor<float>& a, const lt::Tensor<float>& b, const lt::Tensor<float>& c) {
    return lt::Tensor<float>(lt::exp(a) * b + c * 0.5f - lt::tanh(a));
}

// ------------------------------------------------------------------ 1. the host and a device at once

void row1(const Options& o) {
    const lt::Device host = lt::Device::host();
    std::vector<lt::Device> cl = opencl_only(o.devices);
    if (cl.empty()) {
        cannot_run(1, "host + OpenCL device from two threads", "no OpenCL device in " + list_name(o.devices));
        return;
    }
    const lt::Device dev = cl[0];
    const bool gpu = is_gpu(dev);
    const std::int64_t nh = o.host_elems ? o.host_elems : std::int64_t(1) << (gpu ? 24 : 22);
    const std::int64_t nd = o.device_elems ? o.device_elems : std::int64_t(1) << (gpu ? 26 : 22);

    const lt::Tensor<float> ha = lt::rand<float>({nh}, 1, host).realize(), hb = lt::rand<float>({nh}, 2, host).realize(),
                            hc = lt::rand<float>({nh}, 3, host).realize();
    const lt::Tensor<float> da = lt::rand<float>({nd}, 1, dev).realize(), db = lt::rand<float>({nd}, 2, dev).realize(),
                            dc = lt::rand<float>({nd}, 3, dev).realize();
    lt::synchronize(dev);
    lt::Tensor<float> hy, dy;
    auto host_step = [&] {
        hy = chain(ha, hb, hc).realize();
        lt::synchronize(host);
    };
    auto dev_step = [&] {
        dy = chain(da, db, dc).realize();
        lt::synchronize(dev);
    };
    const double th = median_ms(o.reps, host_step), td = median_ms(o.reps, dev_step);
    const double loop_ms = o.loop_ms > 0 ? o.loop_ms : std::max(200.0, 10 * std::max(th, td));
    const int kh = static_cast<int>(std::max(1.0, std::round(loop_ms / th)));
    const int kd = static_cast<int>(std::max(1.0, std::round(loop_ms / td)));

    auto host_loop = [&] {
        for (int i = 0; i < kh; ++i) host_step();
    };
    auto dev_loop = [&] {
        for (int i = 0; i < kd; ++i) dev_step();
    };
    /// Both loops on two threads started together: {wall ms, host thread ms, device thread ms}.
    auto concurrent = [&](const std::function<void()>& h, const std::function<void()>& d) {
        std::atomic<int> ready{0};
        std::atomic<bool> go{false};
        double h_ms = 0, d_ms = 0;
        auto body = [&](const std::function<void()>& f, double& ms) {
            ready.fetch_add(1);
            while (!go.load()) std::this_thread::yield();
            const auto t0 = Clock::now();
            f();
            ms = ms_since(t0);
        };
        std::thread th1(body, std::cref(h), std::ref(h_ms)), th2(body, std::cref(d), std::ref(d_ms));
        while (ready.load() < 2) std::this_thread::yield();
        const auto t0 = Clock::now();
        go.store(true);
        th1.join();
        th2.join();
        return std::vector<double>{ms_since(t0), h_ms, d_ms};
    };
    concurrent(host_step, dev_step);  // warm-up: both sides once from their threads

    std::vector<double> serial, both, h_over, d_over;
    for (int r = 0; r < o.rounds; ++r) {
        const auto t0 = Clock::now();
        host_loop();
        dev_loop();
        serial.push_back(ms_since(t0));
        const std::vector<double> c = concurrent(host_loop, dev_loop);
        both.push_back(c[0]);
        h_over.push_back(c[1] / kh);
        d_over.push_back(c[2] / kd);
    }
    const double s = median(serial), b = median(both), ho = median(h_over), dov = median(d_over);
    print_row(1, format("chain on host, %s: alone / beside %s", size_name(nh).c_str(), dev.str().c_str()),
              format("%.3f ms", th), format("%.3f ms", ho), format("%.2fx", th / ho), "",
              "per iteration; below 1: slowed by the other thread");
    print_row(1, format("chain on %s, %s: alone / beside host", dev.str().c_str(), size_name(nd).c_str()),
              format("%.3f ms", td), format("%.3f ms", dov), format("%.2fx", td / dov), "", "per iteration");
    print_row(1, format("host x%d + %s x%d: one thread / two threads", kh, dev.str().c_str(), kd), format("%.1f ms", s),
              format("%.1f ms", b), format("%.2fx", s / b), target_mark(s / b, 1.6, gpu, "with a GPU"),
              format("throughput; a round is %d + %d iterations, median of %d", kh, kd, o.rounds));
    verify("row 1: host chain vs the same on " + dev.str(),
           nh == nd ? rel_diff(hy, dy) : 0.0, 1e-5);  // (the same seeds give the same inputs on every device)
}

// ------------------------------------------------------------------------- 2. sharded element-wise and sum

std::vector<double> weights_for(const Options& o, const std::vector<lt::Device>& ds) {
    return o.equal_weights ? std::vector<double>(ds.size(), 1.0) : std::vector<double>{};
}

void row2(const Options& o) {
    const std::vector<lt::Device>& ds = o.devices;
    const lt::Device d0 = ds[0];
    const bool gpus = all_gpus(ds);
    const std::size_t cl_count = opencl_only(ds).size();
    std::int64_t n = o.elems;
    if (!n) {
        n = std::int64_t(1) << (gpus ? 29 : 24);
        // The first device holds a, b, c, their first shards (copies), the one-device result,
        // the first shard of the sharded result and a gathered copy for the check: 7 x n floats.
        const lt::DeviceInfo i0 = info_of(d0);
        while (n > (std::int64_t(1) << 20) &&
               (static_cast<std::size_t>(n) * 4 > i0.largest_buffer || static_cast<double>(n) * 4 * 8 > 0.8 * double(global_memory(d0))))
            n /= 2;
    }
    const bool two = ds.size() >= 2;
    const std::string over = list_name(ds);
    if (!two)
        cannot_run(2, format("sharded chain and sum over 2+ devices, %s", size_name(n).c_str()),
                   format("one device only (%s; %zu OpenCL device%s): below, the sharded path over that one device vs "
                          "plain tensors (its overhead only)",
                          over.c_str(), cl_count, cl_count == 1 ? "" : "s"));
    const bool applies = two && gpus;

    const lt::Tensor<float> a = lt::rand<float>({n}, 11, d0).realize(), b = lt::rand<float>({n}, 12, d0).realize(),
                            c = lt::rand<float>({n}, 13, d0).realize();
    lt::synchronize(d0);
    const std::vector<double> w = weights_for(o, ds);
    lt::ShardedTensor<float> as = lt::shard(a, ds, 0, w), bs = lt::shard(b, ds, 0, w), cs = lt::shard(c, ds, 0, w);
    as.realize(), bs.realize(), cs.realize();  // (a shard on a's own device is a lazy copy until then)
    as.synchronize();
    const std::string parts = "shards " + extents_name(as.extents());

    // The chain.
    lt::Tensor<float> y1;
    lt::ShardedTensor<float> ys;
    const double one = median_ms(o.reps, [&] {
        y1 = chain(a, b, c).realize();
        lt::synchronize(d0);
    });
    const double many = median_ms(o.reps, [&] {
        ys = lt::exp(as) * bs + cs * 0.5f - lt::tanh(as);
        ys.realize();
        ys.synchronize();
    });
    print_row(2, format("chain, %s: %s / sharded over %zu", size_name(n).c_str(), d0.str().c_str(), ds.size()),
              format("%.3f ms", one), format("%.3f ms", many), format("%.2fx", one / many),
              target_mark(one / many, 1.8, applies, "on 2 GPUs"), parts);
    verify("row 2: sharded chain vs one device", rel_diff(ys.gather(d0), y1), 1e-6);

    // sum(exp(a) * b): per-device partials, combined on the first device, then replicated.
    lt::Tensor<float> s1;
    lt::ShardedTensor<float> ss;
    const double one_s = median_ms(o.reps, [&] {
        s1 = lt::sum(lt::exp(a) * b).realize();
        lt::synchronize(d0);
    });
    const double many_s = median_ms(o.reps, [&] {
        ss = lt::sum(lt::exp(as) * bs);
        ss.realize();
        ss.synchronize();
    });
    print_row(2, format("sum(exp(a)*b), %s: %s / sharded over %zu", size_name(n).c_str(), d0.str().c_str(), ds.size()),
              format("%.3f ms", one_s), format("%.3f ms", many_s), format("%.2fx", one_s / many_s),
              target_mark(one_s / many_s, 1.8, applies, "on 2 GPUs"), parts + "; result replicated");
    const double want = s1.item(), got = ss.item();
    verify("row 2: sharded sum vs one device", std::fabs(got - want) / std::max(std::fabs(want), 1e-30), 1e-4);
}

// ------------------------------------------------------------------------------------ 3. MLP

void row3(const Options& o) {
    const std::vector<lt::Device>& ds = o.devices;
    const lt::Device d0 = ds[0];
    const bool gpus = all_gpus(ds);
    const std::int64_t batch = o.batch ? o.batch : gpus ? 16384 : 2048;
    const bool two = ds.size() >= 2;
    const std::string over = list_name(ds);
    if (!two)
        cannot_run(3, format("MLP 784-512-256-10, batch %lld, over 2+ devices", static_cast<long long>(batch)),
                   format("one device only (%s): below, the sharded path over that one device vs plain tensors", over.c_str()));

    // Inputs in [0, 1), weights and biases uniform in +-1/sqrt(fan-in): activations of order 1.
    auto uniform = [&](const lt::Shape& shape, std::uint64_t seed, double scale) {
        return lt::Tensor<float>((lt::rand<float>(shape, seed, d0) * 2.0f - 1.0f) * static_cast<float>(scale)).realize();
    };
    const lt::Tensor<float> x = lt::rand<float>({batch, 784}, 21, d0).realize();
    const lt::Tensor<float> w1 = uniform({784, 512}, 22, 1 / std::sqrt(784.0)), b1 = uniform({512}, 23, 1 / std::sqrt(784.0));
    const lt::Tensor<float> w2 = uniform({512, 256}, 24, 1 / std::sqrt(512.0)), b2 = uniform({256}, 25, 1 / std::sqrt(512.0));
    const lt::Tensor<float> w3 = uniform({256, 10}, 26, 1 / std::sqrt(256.0)), b3 = uniform({10}, 27, 1 / std::sqrt(256.0));
    lt::synchronize(d0);
    lt::ShardedTensor<float> xs = lt::shard(x, ds, 0, weights_for(o, ds));
    lt::ShardedTensor<float> w1s = lt::replicate(w1, ds), b1s = lt::replicate(b1, ds), w2s = lt::replicate(w2, ds),
                             b2s = lt::replicate(b2, ds), w3s = lt::replicate(w3, ds), b3s = lt::replicate(b3, ds);
    for (lt::ShardedTensor<float>* s : {&xs, &w1s, &b1s, &w2s, &b2s, &w3s, &b3s}) s->realize();
    xs.synchronize();

    lt::Tensor<float> y1;
    lt::ShardedTensor<float> ys;
    const double one = median_ms(o.reps, [&] {
        y1 = lt::softmax(lt::matmul(lt::relu(lt::matmul(lt::relu(lt::matmul(x, w1) + b1), w2) + b2), w3) + b3, -1).realize();
        lt::synchronize(d0);
    });
    const double many = median_ms(o.reps, [&] {
        ys = lt::softmax(lt::matmul(lt::relu(lt::matmul(lt::relu(lt::matmul(xs, w1s) + b1s), w2s) + b2s), w3s) + b3s, -1);
        ys.realize();
        ys.synchronize();
    });
    const double flop = 2.0 * double(batch) * (784.0 * 512 + 512.0 * 256 + 256.0 * 10);
    print_row(3, format("MLP 784-512-256-10, batch %lld: %s / sharded over %zu", static_cast<long long>(batch),
                        d0.str().c_str(), ds.size()),
              format("%.3f ms", one), format("%.3f ms", many), format("%.2fx", one / many),
              target_mark(one / many, 1.7, two && gpus, "on 2 GPUs"),
              format("rows %s; %.0f / %.0f GFLOP/s", extents_name(xs.extents()).c_str(), flop / one / 1e6, flop / many / 1e6));
    verify("row 3: sharded MLP vs one device", rel_diff(ys.gather(d0), y1), 1e-4);
}

// ---------------------------------------------------------------------------------- 4. copies

void row4(const Options& o) {
    const std::vector<lt::Device> cl = opencl_only(o.devices);
    if (cl.empty()) {
        cannot_run(4, "copies between devices", "no OpenCL device in " + list_name(o.devices));
        return;
    }
    const bool gpus = all_gpus(cl);
    const std::int64_t mib = o.copy_mib ? o.copy_mib : gpus ? 1024 : 256;
    const std::int64_t n = mib * (std::int64_t(1) << 20) / 4;
    const double bytes = static_cast<double>(n) * 4;
    const lt::Device host = lt::Device::host(), d0 = cl[0];
    auto gbps = [&](double ms) { return format("%.2f GB/s", bytes / (ms * 1e-3) / 1e9); };

    const lt::Tensor<float> x0 = lt::rand<float>({n}, 31, d0).realize();
    lt::synchronize(d0);
    if (cl.size() < 2) {
        cannot_run(4, format("copy %s -> opencl:N, %s", d0.str().c_str(), bytes_name(bytes).c_str()),
                   format("one OpenCL device only (%s); the host copies below still run", list_name(o.devices).c_str()));
    } else {
        const lt::Device d1 = cl[1];
        const bool direct = ocl::copies_directly(ocl::opencl_backend(d0.index), ocl::opencl_backend(d1.index));
        const char* path = direct ? "direct: one shared context, clEnqueueCopyBuffer"
                                  : "staged: separate contexts, pinned host memory";
        std::printf("    copy path %s <-> %s: %s%s\n", d0.str().c_str(), d1.str().c_str(), path,
                    std::getenv("LAZYTENSOR_OPENCL_SHARED_CONTEXT") ? " (LAZYTENSOR_OPENCL_SHARED_CONTEXT is set)" : "");
        lt::Tensor<float> x1, back;
        const double to1 = median_ms(o.reps, [&] {
            x1 = x0.to(d1);
            lt::synchronize(d1);
        });
        print_row(4, format("x.to(%s) from %s, %s, + synchronize", d1.str().c_str(), d0.str().c_str(), bytes_name(bytes).c_str()),
                  "", format("%.3f ms", to1), gbps(to1), "", direct ? "direct" : "staged");
        const double to0 = median_ms(o.reps, [&] {
            back = x1.to(d0);
            lt::synchronize(d0);
        });
        print_row(4, format("x.to(%s) from %s, %s, + synchronize", d0.str().c_str(), d1.str().c_str(), bytes_name(bytes).c_str()),
                  "", format("%.3f ms", to0), gbps(to0), "", direct ? "direct" : "staged");
        verify("row 4: " + d0.str() + " -> " + d1.str() + " -> " + d0.str() + " round trip", rel_diff(back, x0), 0.0);
    }

    const lt::Tensor<float> xh = lt::rand<float>({n}, 32, host).realize();
    lt::Tensor<float> up, down;
    const double h2d = median_ms(o.reps, [&] {
        up = xh.to(d0);
        lt::synchronize(d0);
    });
    print_row(4, format("x.to(%s) from host, %s, + synchronize", d0.str().c_str(), bytes_name(bytes).c_str()), "",
              format("%.3f ms", h2d), gbps(h2d), "", "for comparison");
    const double d2h = median_ms(o.reps, [&] {
        down = x0.to(host);
        lt::synchronize(host);
    });
    print_row(4, format("x.to(host) from %s, %s", d0.str().c_str(), bytes_name(bytes).c_str()), "", format("%.3f ms", d2h),
              gbps(d2h), "", "for comparison");
    verify("row 4: host -> " + d0.str(), rel_diff(up, xh), 0.0);
    verify("row 4: " + d0.str() + " -> host", rel_diff(down, x0.to(host)), 0.0);
}

// ------------------------------------------------------------------------------------- main

int run(Options& o) {
    const std::vector<lt::DeviceInfo> all = lt::devices();
    if (o.devices.empty())
        for (const lt::DeviceInfo& info : all)
            if (info.device.kind == lt::Device::Kind::OpenCL) o.devices.push_back(info.device);
    for (lt::Device d : o.devices) (void)info_of(d);  // fails now, naming the device, if it is unavailable

    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
    std::printf("lazytensor on several devices at once: threads, sharded tensors, copies (issue 20)\n");
    std::printf("date:      %s\n", date);
    for (const lt::DeviceInfo& info : all) {
        if (info.device.kind == lt::Device::Kind::OpenCL)
            std::printf("%-10s %s; %s, largest buffer %s\n", (info.device.str() + ":").c_str(), info.name.c_str(),
                        bytes_name(double(global_memory(info.device))).c_str(),
                        bytes_name(double(info.largest_buffer)).c_str());
        else
            std::printf("%-10s %s\n", (info.device.str() + ":").c_str(), info.name.c_str());
    }
    if (o.devices.empty()) {
        std::printf("no OpenCL device: every row needs one (on a CPU, install PoCL; POCL_DEVICES=\"pthread pthread\" gives two)\n");
        return 0;
    }
    std::printf("sharding:  %s (from %s)%s\n", list_name(o.devices).c_str(), o.devices_from.c_str(),
                o.equal_weights ? ", equal weights" : ", default weights (measured bandwidth)");
    std::printf("timing:    wall clock of realize + synchronize of a fresh expression, median of %d after a warm-up; "
                "ratio = baseline / multi-device (above 1: faster on several devices)\n",
                o.reps);
    std::printf("chain:     exp(a)*b + c*0.5f - tanh(a), float (rows 1 and 2)\n");
    if (o.small) std::printf("note:      --small: the targets are for full sizes on GPUs; at these sizes they mean little\n");
    std::printf("\n");
    header_row();
    const std::function<void(const Options&)> rows[5] = {nullptr, row1, row2, row3, row4};
    for (int r = 1; r <= 4; ++r) {
        if (!o.row[r]) continue;
        try {
            rows[r](o);
        } catch (const std::exception& e) {
            g_error = true;
            std::printf("%-3d ERROR: %s\n", r, e.what());
        }
    }
    std::printf("\n%s\n", g_error   ? "RESULT: a row failed with an error (see ERROR lines above)"
                          : g_wrong ? "RESULT: numerically WRONG results (see WRONG lines above)"
                                    : "RESULT: every result matches the one-device result");
    return g_error ? 2 : g_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    Options o = parse(argc, argv);
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "bench_multi_device: error: %s\n", e.what());
        return 2;
    }
}
