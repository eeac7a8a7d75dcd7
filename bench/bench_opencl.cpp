// SPDX-License-Identifier: MIT
// The OpenCL backend vs hand-written OpenCL kernels, same device, same data, same process.
//
// The peer kernels are OpenCL C strings in this file, built with raw OpenCL calls on
// lazytensor's own context and queue (with lazytensor's build options, so both sides get the
// same floating-point rules) and reading lazytensor's own input buffers. Both sides are timed
// on the device's clock (profiling events): lazytensor through Backend::set_record_times,
// which sums the stages of each launch. Each time is the median of --reps runs after a
// warm-up. "peer/lt" is the peer's time divided by lazytensor's (above 1: lazytensor faster);
// bandwidth counts every input read once and every output written once.
//
//   bench_opencl [--device N] [--small | --scale full|small] [--reps N] [--elems N]
//                [--matrix N] [--softmax N] [--iters N] [--host-compare] [--no-first-realize]
//
// The targets are for the full sizes on an NVIDIA H100; with --small they are printed but mean
// little (launch latency dominates). The exit status is 0 whatever the PASS/MISS marks say, 1
// when a result is numerically wrong (lazytensor against the peer, and both against sampled
// host references), 2 on an error. `--first-realize` is the child mode of benchmark 6.
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#endif

#if !LAZYTENSOR_OPENCL
#error "bench_opencl needs the OpenCL backend: build with LAZYTENSOR_OPENCL=ON"
#endif

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace lt = lazytensor;
namespace ocl = lazytensor::detail::opencl;
using Clock = std::chrono::steady_clock;

namespace {

// ------------------------------------------------------------------------------------ options

struct Options {
    int device = 0;
    std::int64_t elems = std::int64_t(1) << 28;  // chain, fused reduction
    std::int64_t matrix = 16384;                 // row / column sums: matrix x matrix
    std::int64_t softmax = 8192;                 // softmax: softmax x softmax
    int reps = 20;
    int iters = 2000;  // host overhead: realizes per round
    bool small = false;
    bool host_compare = false;
    bool first_realize = true;
    bool child = false;  // --first-realize: the child process of benchmark 6
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "bench_opencl: %s\n"
                 "usage: bench_opencl [--device N] [--small | --scale full|small] [--reps N] [--elems N]\n"
                 "                    [--matrix N] [--softmax N] [--iters N] [--host-compare] [--no-first-realize]\n"
                 "  --small (= --scale small): 2^20 elements, 1024x1024 matrices (default: 2^28, 16384, 8192)\n",
                 why);
    std::exit(2);
}

std::int64_t parse_int(const char* s, const char* what) {
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 0);
    if (!*s || *end || v <= 0) usage((std::string(what) + " needs a positive whole number").c_str());
    return v;
}

Options parse(int argc, char** argv) {
    Options o;
    auto small = [&] {
        o.small = true;
        o.elems = std::int64_t(1) << 20;
        o.matrix = 1024;
        o.softmax = 1024;
    };
    // Presets first, so that explicit sizes override them whatever the order.
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--small") small();
        if (a == "--scale") {
            if (i + 1 >= argc) usage("--scale needs full or small");
            const std::string v = argv[i + 1];
            if (v == "small") small();
            else if (v != "full") usage("--scale takes full or small");
        }
    }
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&](const char* what) {
            if (i + 1 >= argc) usage((std::string(what) + " needs a value").c_str());
            return parse_int(argv[++i], what);
        };
        if (a == "--small") continue;
        if (a == "--scale") { ++i; continue; }
        if (a == "--device") {
            const char* v = i + 1 < argc ? argv[i + 1] : "";
            char* end = nullptr;
            const long d = std::strtol(v, &end, 10);
            if (!*v || *end || d < 0) usage("--device needs an OpenCL device index (0, 1, ...)");
            o.device = static_cast<int>(d);
            ++i;
        } else if (a == "--reps") o.reps = static_cast<int>(value("--reps"));
        else if (a == "--elems") o.elems = value("--elems");
        else if (a == "--matrix") o.matrix = value("--matrix");
        else if (a == "--softmax") o.softmax = value("--softmax");
        else if (a == "--iters") o.iters = static_cast<int>(value("--iters"));
        else if (a == "--host-compare") o.host_compare = true;
        else if (a == "--no-first-realize") o.first_realize = false;
        else if (a == "--first-realize") o.child = true;
        else if (a == "--help" || a == "-h") usage("help");
        else usage(("unknown option " + a).c_str());
    }
    // The peer kernels index with 32-bit ints and load rows as float4.
    if (o.elems >= (std::int64_t(1) << 31)) usage("--elems must be below 2^31");
    if (o.matrix * o.matrix >= (std::int64_t(1) << 31) || o.softmax * o.softmax >= (std::int64_t(1) << 31))
        usage("--matrix and --softmax must be below 46341");
    if (o.matrix % 4 || o.softmax % 4) usage("--matrix and --softmax must be multiples of 4");
    return o;
}

// ------------------------------------------------------------------------------------ helpers

std::string format(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* f, ...) {
    char buf[512];
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

/// Uniform floats in [lo, hi) from a fixed seed (splitmix64: fast enough for 2^28 values).
std::vector<float> random_vector(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::vector<float> v(n);
    std::uint64_t s = seed * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    for (auto& x : v) {
        std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        x = lo + (hi - lo) * static_cast<float>(static_cast<double>(z >> 40) * 0x1.0p-24);
    }
    return v;
}

/// Largest difference, relative to the largest magnitude of the reference.
/// The largest error of `sums` (one per line of a row-major R x C matrix, along `axis` 1 =
/// rows or 0 = columns) against a double-precision sum, relative to the largest sum; about 64
/// sampled lines.
double sampled_line_sum_error(const std::vector<float>& m, std::int64_t R, std::int64_t C, int axis,
                              const std::vector<float>& sums) {
    const std::int64_t lines = axis == 1 ? R : C, length = axis == 1 ? C : R;
    double worst = 0, scale = 0;
    for (std::int64_t i = 0; i < lines; i += std::max<std::int64_t>(1, lines / 64)) {
        double ref = 0;
        for (std::int64_t j = 0; j < length; ++j) ref += m[static_cast<std::size_t>(axis == 1 ? i * C + j : j * C + i)];
        worst = std::max(worst, std::fabs(sums[static_cast<std::size_t>(i)] - ref));
        scale = std::max(scale, std::fabs(ref));
    }
    return worst / std::max(scale, 1e-30);
}

double max_rel_diff(const std::vector<float>& ours, const std::vector<float>& ref) {
    if (ours.size() != ref.size()) return INFINITY;
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        const double d = std::fabs(double(ours[i]) - double(ref[i]));
        if (!(d <= worst)) worst = d;  // NaN sticks
        scale = std::max(scale, std::fabs(double(ref[i])));
    }
    return worst / std::max(scale, 1e-30);
}

bool g_wrong = false;

/// Records a numerical check; a failure makes the exit status 1.
void verify(const std::string& what, double diff, double tol) {
    if (diff <= tol) return;
    g_wrong = true;
    std::printf("  WRONG: %s: relative difference %.3g exceeds %.1g\n", what.c_str(), diff, tol);
}

// ------------------------------------------------------------------------------ peer kernels

void cl_check(cl_int status, const char* call) {
    if (status != CL_SUCCESS)
        throw std::runtime_error(format("%s failed: %s (%d)", call, ocl::status_name(status), status));
}

const char* kPeerSource = R"CLC(
// WG (work-group size, a power of two) comes from the build options.

__kernel void chain(__global const float* a, __global const float* b, __global const float* c,
                    __global float* y, int n) {
    const int i = get_global_id(0);
    if (i < n) {
        const float x = a[i];
        y[i] = exp(x) * b[i] + c[i] * 0.5f - tanh(x);
    }
}

__kernel void ref_axpexp(__global const float* x, __global const float* z, __global float* y, int n) {
    const int i = get_global_id(0);
    if (i < n) y[i] = 2.0f * x[i] + exp(z[i]);
}

// Launched over exactly n work-items: four arguments, as many as lazytensor's kernel sets.
__kernel void small3(__global const float* a, __global const float* b, __global const float* c,
                     __global float* y) {
    const int i = get_global_id(0);
    y[i] = (a[i] * 2.0f + b[i]) * c[i];
}

// Stage 1: every work-item folds a grid-strided share (float4 at a time), then a local tree.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void expmul_sum_partial(__global const float* a, __global const float* b, __global float* partial, int n) {
    __local float s[WG];
    const int lid = get_local_id(0), gid = get_global_id(0), gsize = get_global_size(0);
    float acc = 0.0f;
    const int n4 = n / 4;
    for (int i = gid; i < n4; i += gsize) {
        const float4 e = exp(vload4(i, a)) * vload4(i, b);
        acc += (e.s0 + e.s1) + (e.s2 + e.s3);
    }
    for (int i = n4 * 4 + gid; i < n; i += gsize) acc += exp(a[i]) * b[i];
    s[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[get_group_id(0)] = s[0];
}

// Stage 2: one work-group folds the partials.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sum_partials(__global const float* partial, __global float* out, int m) {
    __local float s[WG];
    const int lid = get_local_id(0);
    float acc = 0.0f;
    for (int i = lid; i < m; i += WG) acc += partial[i];
    s[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[0] = s[0];
}

// One work-group per row; cols % 4 == 0.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void row_sum(__global const float* x, __global float* y, int cols) {
    __local float s[WG];
    const int lid = get_local_id(0), row = get_group_id(0);
    __global const float* p = x + row * cols;
    float acc = 0.0f;
    for (int i = lid; i < cols / 4; i += WG) {
        const float4 v = vload4(i, p);
        acc += (v.s0 + v.s1) + (v.s2 + v.s3);
    }
    s[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) y[row] = s[0];
}

// One work-item per column, walking down the rows (neighbouring work-items read neighbouring
// addresses).
__kernel void col_sum(__global const float* x, __global float* y, int rows, int cols) {
    const int col = get_global_id(0);
    if (col >= cols) return;
    float acc = 0.0f;
    for (int r = 0; r < rows; ++r) acc += x[r * cols + col];
    y[col] = acc;
}

// One work-group per row: max, sum of exp, then the scaled store; cols % 4 == 0.
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void softmax_rows(__global const float* x, __global float* y, int cols) {
    __local float s[WG];
    const int lid = get_local_id(0), row = get_group_id(0);
    __global const float* p = x + row * cols;
    __global float* q = y + row * cols;
    float4 m4 = (float4)(-INFINITY);
    for (int i = lid; i < cols / 4; i += WG) m4 = fmax(m4, vload4(i, p));
    s[lid] = fmax(fmax(m4.s0, m4.s1), fmax(m4.s2, m4.s3));
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] = fmax(s[lid], s[lid + k]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float m = s[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float acc = 0.0f;
    for (int i = lid; i < cols / 4; i += WG) {
        const float4 e = exp(vload4(i, p) - m);
        acc += (e.s0 + e.s1) + (e.s2 + e.s3);
    }
    s[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = WG / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const float inv = 1.0f / s[0];
    for (int i = lid; i < cols / 4; i += WG) vstore4(exp(vload4(i, p) - m) * inv, i, q);
}
)CLC";

/// A device buffer the peer owns.
class Mem {
public:
    Mem() = default;
    Mem(cl_context ctx, std::size_t bytes) {
        cl_int err = CL_SUCCESS;
        m_ = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, nullptr, &err);
        cl_check(err, "clCreateBuffer");
        bytes_ = bytes;
    }
    Mem(Mem&& o) noexcept : m_(std::exchange(o.m_, nullptr)), bytes_(o.bytes_) {}
    Mem& operator=(Mem&& o) noexcept {
        std::swap(m_, o.m_);
        std::swap(bytes_, o.bytes_);
        return *this;
    }
    Mem(const Mem&) = delete;
    ~Mem() {
        if (m_) clReleaseMemObject(m_);
    }
    cl_mem get() const { return m_; }

private:
    cl_mem m_ = nullptr;
    std::size_t bytes_ = 0;
};

/// The hand-written kernels, built on lazytensor's context, launched on its queue.
class Peer {
public:
    explicit Peer(ocl::OpenCLBackend& be) : be_(be) {
        std::size_t wg = 1;
        while (wg * 2 <= std::min<std::size_t>(256, be.traits().max_work_group)) wg *= 2;
        wg_ = wg;
        const char* text = kPeerSource;
        const std::size_t len = std::strlen(kPeerSource);
        cl_int err = CL_SUCCESS;
        program_ = clCreateProgramWithSource(be.context(), 1, &text, &len, &err);
        cl_check(err, "clCreateProgramWithSource");
        options_ = be.build_options() + " -DWG=" + std::to_string(wg_);
        cl_device_id dev = be.device_id();
        err = clBuildProgram(program_, 1, &dev, options_.c_str(), nullptr, nullptr);
        if (err != CL_SUCCESS) {
            std::size_t n = 0;
            clGetProgramBuildInfo(program_, dev, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
            std::string log(n, '\0');
            clGetProgramBuildInfo(program_, dev, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
            std::fprintf(stderr, "peer kernels failed to build:\n%s\n", log.c_str());
            cl_check(err, "clBuildProgram (peer kernels)");
        }
    }
    ~Peer() {
        for (auto& [name, k] : kernels_) clReleaseKernel(k);
        if (program_) clReleaseProgram(program_);
    }
    Peer(const Peer&) = delete;
    Peer& operator=(const Peer&) = delete;

    std::size_t wg() const { return wg_; }
    const std::string& options() const { return options_; }
    Mem buffer(std::size_t bytes) const { return Mem(be_.context(), bytes); }

    cl_kernel kernel(const std::string& name) {
        for (auto& [n, k] : kernels_)
            if (n == name) return k;
        cl_int err = CL_SUCCESS;
        cl_kernel k = clCreateKernel(program_, name.c_str(), &err);
        cl_check(err, "clCreateKernel");
        kernels_.emplace_back(name, k);
        return k;
    }

    template <class... Args>
    static void set_args(cl_kernel k, const Args&... args) {
        cl_uint i = 0;
        (cl_check(clSetKernelArg(k, i++, sizeof(Args), &args), "clSetKernelArg"), ...);
    }

    /// Enqueues `name` over `global` work-items (rounded up to `local`), waits, and returns its
    /// device time in ms.
    template <class... Args>
    double run(const std::string& name, std::size_t global, std::size_t local, const Args&... args) {
        cl_kernel k = kernel(name);
        set_args(k, args...);
        global = (global + local - 1) / local * local;
        cl_event ev = nullptr;
        cl_check(clEnqueueNDRangeKernel(be_.queue(), k, 1, nullptr, &global, &local, 0, nullptr, &ev),
                 "clEnqueueNDRangeKernel");
        cl_ulong start = 0, end = 0;
        cl_int err = clWaitForEvents(1, &ev);
        if (err == CL_SUCCESS) err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
        if (err == CL_SUCCESS) err = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
        clReleaseEvent(ev);
        cl_check(err, "clGetEventProfilingInfo");
        return static_cast<double>(end - start) * 1e-6;
    }

    std::vector<float> read(const Mem& m, std::size_t count) const {
        std::vector<float> v(count);
        cl_check(clEnqueueReadBuffer(be_.queue(), m.get(), CL_TRUE, 0, count * sizeof(float), v.data(), 0, nullptr, nullptr),
                 "clEnqueueReadBuffer");
        return v;
    }

private:
    ocl::OpenCLBackend& be_;
    cl_program program_ = nullptr;
    std::vector<std::pair<std::string, cl_kernel>> kernels_;
    std::size_t wg_ = 256;
    std::string options_;
};

/// A realized lazytensor's buffer.
cl_mem mem_of(const lt::Tensor<float>& t) { return static_cast<cl_mem>(t.node_ptr()->buffer->handle()); }

// ---------------------------------------------------------------------------------- timing

struct LtTiming {
    double ms = 0;        // median device time of one realize (all its launches)
    std::size_t launches = 0;  // kernel launches per realize
};

/// Device time of `realize` (which realizes one lazytensor expression): median of `reps`.
LtTiming time_lt(ocl::OpenCLBackend& be, int reps, const std::function<void()>& realize) {
    be.set_record_times(true);
    be.take_device_times_ms();
    realize();  // warm-up: compiles
    realize();
    be.take_device_times_ms();
    std::vector<double> ms;
    LtTiming t;
    for (int r = 0; r < reps; ++r) {
        realize();
        const std::vector<double> k = be.take_device_times_ms();
        double sum = 0;
        for (double x : k) sum += x;
        ms.push_back(sum);
        t.launches = k.size();
    }
    be.set_record_times(false);
    t.ms = median(ms);
    return t;
}

/// Device time of a peer run (`run` returns its device ms): median of `reps`.
double time_peer(int reps, const std::function<double()>& run) {
    run();
    run();
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) ms.push_back(run());
    return median(ms);
}

/// Wall time of `f` (which waits for its own results): median of `reps`.
double time_wall(int reps, const std::function<void()>& f) {
    f();
    std::vector<double> ms;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        f();
        ms.push_back(ms_since(t0));
    }
    return median(ms);
}

double tbps(double bytes, double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e12 : 0; }

// ---------------------------------------------------------------------------------- output

void header_row() {
    std::printf("%-44s %12s %12s %8s %8s %9s   %-16s %s\n", "benchmark", "lazytensor", "peer", "peer/lt", "lt TB/s",
                "peer TB/s", "target", "");
}

/// One result line. `unit` is "ms" or "us"; bandwidths <= 0 print as "-".
void result(const std::string& name, double ours, double peer, const char* unit, double our_bw, double peer_bw,
            const std::string& target, bool pass, const std::string& note = "") {
    const std::string o = format("%.3f %s", ours, unit);
    const std::string p = peer > 0 ? format("%.3f %s", peer, unit) : "-";
    const std::string r = peer > 0 ? format("%.2fx", peer / ours) : "-";
    const std::string ob = our_bw > 0 ? format("%.3g", our_bw) : "-";
    const std::string pb = peer_bw > 0 ? format("%.3g", peer_bw) : "-";
    std::printf("%-44s %12s %12s %8s %8s %9s   %-16s %s%s%s\n", name.c_str(), o.c_str(), p.c_str(), r.c_str(),
                ob.c_str(), pb.c_str(), target.c_str(), target.empty() ? "" : (pass ? "PASS" : "MISS"),
                note.empty() ? "" : "   ", note.c_str());
    std::fflush(stdout);
}

std::string size_name(std::int64_t n) {
    if (n > 0 && (n & (n - 1)) == 0) {
        int k = 0;
        while ((std::int64_t(1) << k) < n) ++k;
        return format("2^%d", k);
    }
    return std::to_string(n);
}

std::string launches_note(std::size_t n) { return format("%zu launch%s", n, n == 1 ? "" : "es"); }

// ---------------------------------------------------------------------- 6: first realize (child)

/// The child of benchmark 6: times the first realize of a fixed expression in a new process
/// (LAZYTENSOR_CACHE_DIR chosen by the parent), prints one parseable line.
int first_realize_child(const Options& o) {
    const lt::Device dev = lt::Device::opencl(o.device);
    const std::int64_t n = 1024;
    const std::vector<float> va = random_vector(n, 61), vb = random_vector(n, 62), vc = random_vector(n, 63);
    const auto t_init = Clock::now();
    lt::Tensor<float> a = lt::tensor<float>(va, {n}, dev), b = lt::tensor<float>(vb, {n}, dev),
                      c = lt::tensor<float>(vc, {n}, dev);
    lt::synchronize(dev);
    const double init_ms = ms_since(t_init);
    const auto t0 = Clock::now();
    lt::Tensor<float> y = (lt::sin(a) * lt::cos(b) + lt::sqrt(lt::abs(c))).realize();
    lt::synchronize(dev);
    const double ms = ms_since(t0);
    const std::vector<float> got = y.to_vector();
    std::vector<float> want(static_cast<std::size_t>(n));
    for (std::size_t i = 0; i < want.size(); ++i)
        want[i] = static_cast<float>(std::sin(double(va[i])) * std::cos(double(vb[i])) + std::sqrt(std::fabs(double(vc[i]))));
    const double diff = max_rel_diff(got, want);
    const auto st = ocl::opencl_backend(o.device).disk_cache().stats();
    std::printf("first-realize ms=%.3f init_ms=%.3f hits=%zu misses=%zu writes=%zu diff=%.3g\n", ms, init_ms, st.hits,
                st.misses, st.writes, diff);
    return diff <= 1e-5 ? 0 : 1;
}

struct ChildResult {
    bool ok = false;
    double ms = 0, init_ms = 0, diff = 0;
    std::size_t hits = 0, misses = 0, writes = 0;
    std::string output;
};

std::string self_path(const char* argv0) {
    std::error_code ec;
    auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(argv0) : p.string();
}

std::string shell_quote(const std::string& s) {
    std::string q = "'";
    for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return q + "'";
}

ChildResult run_child(const std::string& exe, int device, const std::string& env) {
    ChildResult r;
    const std::string cmd = env + " " + shell_quote(exe) + " --first-realize --device " + std::to_string(device) + " 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) {
        r.output = "popen failed";
        return r;
    }
    char buf[4096];
    while (std::fgets(buf, sizeof buf, p)) r.output += buf;
    const int status = pclose(p);
    const std::size_t at = r.output.find("first-realize ");
    if (at != std::string::npos &&
        std::sscanf(r.output.c_str() + at, "first-realize ms=%lf init_ms=%lf hits=%zu misses=%zu writes=%zu diff=%lf", &r.ms,
                    &r.init_ms, &r.hits, &r.misses, &r.writes, &r.diff) == 6)
        r.ok = status == 0;
    return r;
}

// ------------------------------------------------------------------------------------- main

int run(const Options& o, const char* argv0) {
    const lt::Device dev = lt::Device::opencl(o.device);
    auto& be = ocl::opencl_backend(o.device);
    lt::set_default_device(dev);
    Peer peer(be);
    const int reps = o.reps;
    const bool host_compare = o.host_compare || be.kind() == "cpu";

    char date[64];
    const std::time_t now = std::time(nullptr);
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S %Z", std::localtime(&now));
    std::printf("lazytensor OpenCL backend vs hand-written OpenCL kernels\n");
    std::printf("device:  opencl:%d = %s\n", o.device, be.name().c_str());
    std::printf("driver:  %s, %s; %lld compute units, max work-group %zu; peer work-group %zu\n",
                ocl::device_string(be.device_id(), CL_DRIVER_VERSION).c_str(),
                ocl::device_string(be.device_id(), CL_DEVICE_VERSION).c_str(),
                static_cast<long long>(be.traits().compute_units), be.traits().max_work_group, peer.wg());
    std::printf("options: %s (both sides)\n", peer.options().c_str());
    std::printf("date:    %s\n", date);
    std::printf("sizes:   %s elements (chain, reduction), %lldx%lld (row/column sums), %lldx%lld (softmax), 1024 "
                "(host overhead, %d realizes a round); %s scale\n",
                size_name(o.elems).c_str(), static_cast<long long>(o.matrix), static_cast<long long>(o.matrix),
                static_cast<long long>(o.softmax), static_cast<long long>(o.softmax), o.iters,
                o.small ? "small" : (o.elems == (std::int64_t(1) << 28) && o.matrix == 16384 && o.softmax == 8192) ? "full" : "custom");
    std::printf("timing:  device clock (profiling events), median of %d runs after a warm-up; host overhead: wall "
                "clock, median of 5 rounds\n",
                reps);
    if (o.small) std::printf("note:    the targets are for the full sizes on an H100; at small sizes they mean little\n");
    std::printf("\n");
    header_row();

    const std::int64_t n = o.elems;
    const std::size_t un = static_cast<std::size_t>(n);
    const int ni = static_cast<int>(n);
    // b in [0, 1): sum(exp(a) * b) is then far from 0 and a relative check on it means something.
    const std::vector<float> va = random_vector(un, 1), vb = random_vector(un, 2, 0.0f, 1.0f), vc = random_vector(un, 3);
    lt::Tensor<float> a = lt::tensor<float>(va, {n}, dev), b = lt::tensor<float>(vb, {n}, dev),
                      c = lt::tensor<float>(vc, {n}, dev);
    const std::size_t local = peer.wg();

    // ------------------------------------------------------------------ 1. chain
    {
        lt::Tensor<float> y;
        const LtTiming ours = time_lt(be, reps, [&] { y = (lt::exp(a) * b + c * 0.5f - lt::tanh(a)).realize(); });
        Mem py = peer.buffer(un * sizeof(float));
        cl_mem ma = mem_of(a), mb = mem_of(b), mc = mem_of(c), my = py.get();
        const double theirs = time_peer(reps, [&] { return peer.run("chain", un, local, ma, mb, mc, my, ni); });
        const double bytes = 16.0 * double(n);
        const double ratio = theirs / ours.ms;
        result("chain exp(a)*b+c*0.5-tanh(a), " + size_name(n), ours.ms, theirs, "ms", tbps(bytes, ours.ms),
               tbps(bytes, theirs), ">= 0.95x peer", ratio >= 0.95, launches_note(ours.launches));
        const std::vector<float> got = y.to_vector(), want = peer.read(py, un);
        verify("chain: lazytensor vs peer", max_rel_diff(got, want), 1e-5);
        double worst = 0;  // the peer itself, on a sample, against double precision on the host
        for (std::size_t i = 0; i < un; i += std::max<std::size_t>(1, un / 4096)) {
            const double x = va[i];
            const double ref = std::exp(x) * vb[i] + vc[i] * 0.5 - std::tanh(x);
            worst = std::max(worst, std::fabs(want[i] - ref) / std::max(1.0, std::fabs(ref)));
        }
        verify("chain: peer vs host (sampled)", worst, 1e-5);

        // The reference kernel y = 2x + exp(z): what one simple kernel reaches on this device.
        const double ref_ms = time_peer(reps, [&] { return peer.run("ref_axpexp", un, local, ma, mc, my, ni); });
        // Only the peer column: there is no lazytensor side and no target.
        std::printf("%-44s %12s %12s %8s %8s %9s   %s\n", ("reference y=2x+exp(z) (peer), " + size_name(n)).c_str(), "-",
                    format("%.3f ms", ref_ms).c_str(), "-", "-", format("%.3g", tbps(12.0 * double(n), ref_ms)).c_str(),
                    "(context: a simple hand-written kernel's bandwidth)");
        std::fflush(stdout);
    }

    // ------------------------------------------------------------------ 2. fused reduction
    {
        lt::Tensor<float> s;
        const LtTiming ours = time_lt(be, reps, [&] { s = (lt::exp(a) * b).sum().realize(); });
        std::size_t groups = static_cast<std::size_t>(be.traits().compute_units) * 8;
        groups = std::max<std::size_t>(1, std::min(groups, (un / 4 + local - 1) / local));
        Mem partial = peer.buffer(groups * sizeof(float)), out = peer.buffer(sizeof(float));
        cl_mem ma = mem_of(a), mb = mem_of(b), mp = partial.get(), mo = out.get();
        const int gi = static_cast<int>(groups);
        const double theirs = time_peer(reps, [&] {
            return peer.run("expmul_sum_partial", groups * local, local, ma, mb, mp, ni) +
                   peer.run("sum_partials", local, local, mp, mo, gi);
        });
        const double bytes = 8.0 * double(n) + 4.0;
        result("fused sum(exp(a)*b), " + size_name(n), ours.ms, theirs, "ms", tbps(bytes, ours.ms), tbps(bytes, theirs),
               "<= 0.80 ms", ours.ms <= 0.80, launches_note(ours.launches) + " (stages summed)");
        const float got = s.item(), want = peer.read(out, 1)[0];
        double exact = 0;
        for (std::size_t i = 0; i < un; ++i) exact += std::exp(double(va[i])) * double(vb[i]);
        verify("reduction: lazytensor vs peer", std::fabs(double(got) - want) / std::fabs(double(want)), 1e-3);
        verify("reduction: peer vs host (double)", std::fabs(double(want) - exact) / std::fabs(exact), 1e-3);
    }

    // ------------------------------------------------------------------ 3. row and column sums
    const std::int64_t R = o.matrix, C = o.matrix;
    const std::vector<float> vm = random_vector(static_cast<std::size_t>(R * C), 4);
    lt::Tensor<float> x = lt::tensor<float>(vm, {R, C}, dev);
    const double mat_bytes = 4.0 * double(R) * double(C);
    {
        lt::Tensor<float> s;
        const LtTiming ours = time_lt(be, reps, [&] { s = x.sum(1).realize(); });
        Mem py = peer.buffer(static_cast<std::size_t>(R) * sizeof(float));
        cl_mem mx = mem_of(x), my = py.get();
        const int ci = static_cast<int>(C);
        const double theirs =
            time_peer(reps, [&] { return peer.run("row_sum", static_cast<std::size_t>(R) * local, local, mx, my, ci); });
        const double bytes = mat_bytes + 4.0 * double(R);
        result(format("row sum x.sum(1), %lldx%lld", (long long)R, (long long)C), ours.ms, theirs, "ms",
               tbps(bytes, ours.ms), tbps(bytes, theirs), ">= 2.5 TB/s", tbps(bytes, ours.ms) >= 2.5,
               launches_note(ours.launches));
        const std::vector<float> got = s.to_vector(), want = peer.read(py, static_cast<std::size_t>(R));
        verify("row sum: lazytensor vs peer", max_rel_diff(got, want), 1e-3);
        verify("row sum: peer vs host (sampled rows)", sampled_line_sum_error(vm, R, C, 1, want), 1e-3);
    }
    {
        lt::Tensor<float> s;
        const LtTiming ours = time_lt(be, reps, [&] { s = x.sum(0).realize(); });
        Mem py = peer.buffer(static_cast<std::size_t>(C) * sizeof(float));
        cl_mem mx = mem_of(x), my = py.get();
        const int ri = static_cast<int>(R), ci = static_cast<int>(C);
        const std::size_t col_local = std::min<std::size_t>(64, local);
        const double theirs =
            time_peer(reps, [&] { return peer.run("col_sum", static_cast<std::size_t>(C), col_local, mx, my, ri, ci); });
        const double bytes = mat_bytes + 4.0 * double(C);
        result(format("column sum x.sum(0), %lldx%lld", (long long)R, (long long)C), ours.ms, theirs, "ms",
               tbps(bytes, ours.ms), tbps(bytes, theirs), ">= 2.5 TB/s", tbps(bytes, ours.ms) >= 2.5,
               launches_note(ours.launches));
        const std::vector<float> got = s.to_vector(), want = peer.read(py, static_cast<std::size_t>(C));
        verify("column sum: lazytensor vs peer", max_rel_diff(got, want), 1e-3);
        verify("column sum: peer vs host (sampled columns)", sampled_line_sum_error(vm, R, C, 0, want), 1e-3);
    }

    // ------------------------------------------------------------------ 4. softmax
    {
        const std::int64_t S = o.softmax;
        const std::size_t us = static_cast<std::size_t>(S * S);
        const std::vector<float> vs = random_vector(us, 5);
        lt::Tensor<float> xs = lt::tensor<float>(vs, {S, S}, dev);
        lt::Tensor<float> y;
        const LtTiming ours = time_lt(be, reps, [&] {
            auto m = xs.max(1, true);
            auto e = lt::exp(xs - m);
            y = (e / e.sum(1, true)).realize();
        });
        Mem py = peer.buffer(us * sizeof(float));
        cl_mem mx = mem_of(xs), my = py.get();
        const int si = static_cast<int>(S);
        const double theirs =
            time_peer(reps, [&] { return peer.run("softmax_rows", static_cast<std::size_t>(S) * local, local, mx, my, si); });
        const double bytes = 8.0 * double(us);
        result(format("row softmax (primitives), %lldx%lld", (long long)S, (long long)S), ours.ms, theirs, "ms",
               tbps(bytes, ours.ms), tbps(bytes, theirs), "<= 0.40 ms", ours.ms <= 0.40,
               launches_note(ours.launches) + (ours.launches == 1 ? "" : " (1 expected)"));
        const std::vector<float> got = y.to_vector(), want = peer.read(py, us);
        verify("softmax: lazytensor vs peer", max_rel_diff(got, want), 1e-3);
        double worst = 0, scale = 0;
        for (std::int64_t r = 0; r < S; r += std::max<std::int64_t>(1, S / 16)) {
            const float* row = vs.data() + r * S;
            double m = -INFINITY, sum = 0;
            for (std::int64_t j = 0; j < S; ++j) m = std::max(m, double(row[j]));
            for (std::int64_t j = 0; j < S; ++j) sum += std::exp(row[j] - m);
            for (std::int64_t j = 0; j < S; ++j) {
                const double ref = std::exp(row[j] - m) / sum;
                worst = std::max(worst, std::fabs(want[static_cast<std::size_t>(r * S + j)] - ref));
                scale = std::max(scale, ref);
            }
        }
        verify("softmax: peer vs host (sampled rows)", worst / std::max(scale, 1e-30), 1e-3);
    }

    // ------------------------------------------------------------------ 5. host overhead
    {
        const std::int64_t m = 1024;
        const std::vector<float> v1 = random_vector(m, 11), v2 = random_vector(m, 12), v3 = random_vector(m, 13);
        lt::Tensor<float> a1 = lt::tensor<float>(v1, {m}, dev), b1 = lt::tensor<float>(v2, {m}, dev),
                          c1 = lt::tensor<float>(v3, {m}, dev);
        be.set_record_times(false);
        lt::Tensor<float> y;
        const int iters = o.iters;
        auto round_ours = [&] {
            const auto t0 = Clock::now();
            for (int i = 0; i < iters; ++i) y = ((a1 * 2.0f + b1) * c1).realize();
            const double us_per = ms_since(t0) * 1000.0 / iters;
            lt::synchronize(dev);
            return us_per;
        };
        Mem py = peer.buffer(static_cast<std::size_t>(m) * sizeof(float));
        cl_kernel k = peer.kernel("small3");
        cl_mem ma = mem_of(a1), mb = mem_of(b1), mc = mem_of(c1), my = py.get();
        std::size_t global = static_cast<std::size_t>(m), lsz = std::min<std::size_t>(local, global);  // divides m
        auto round_peer = [&] {
            const auto t0 = Clock::now();
            for (int i = 0; i < iters; ++i) {
                Peer::set_args(k, ma, mb, mc, my);
                cl_check(clEnqueueNDRangeKernel(be.queue(), k, 1, nullptr, &global, &lsz, 0, nullptr, nullptr),
                         "clEnqueueNDRangeKernel");
            }
            const double us_per = ms_since(t0) * 1000.0 / iters;
            cl_check(clFinish(be.queue()), "clFinish");
            return us_per;
        };
        round_ours();  // warm-up (compiles)
        round_peer();
        std::vector<double> ours, theirs;
        for (int r = 0; r < 5; ++r) {
            ours.push_back(round_ours());
            theirs.push_back(round_peer());
        }
        const double o_us = median(ours), p_us = median(theirs);
        result("host overhead: cached 3-op realize, 1024", o_us, p_us, "us", 0, 0, "<= 15 us", o_us <= 15.0,
               format("per realize / per launch, host wall, %d a round", iters));
        verify("host overhead: lazytensor vs peer", max_rel_diff(y.to_vector(), peer.read(py, static_cast<std::size_t>(m))),
               1e-6);
    }

    // ------------------------------------------------------------------ 6. first realize, disk cache
    // Each run is a new process (this program with --first-realize) timing the first realize of
    // a fixed expression. The drivers' own kernel caches (PoCL's, NVIDIA's JIT cache) get private
    // directories too, so that "empty" is cold all the way down and "warm" is what a second run
    // of a program finds after a first one.
    if (o.first_realize) {
        char tmpl[] = "/tmp/lazytensor-bench-cache-XXXXXX";
        if (!mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        const std::string dir = tmpl;
        const std::string exe = self_path(argv0);
        auto env = [&](const std::string& driver_dir) {
            return "LAZYTENSOR_CACHE_DIR=" + shell_quote(dir + "/lazytensor") + " POCL_CACHE_DIR=" +
                   shell_quote(dir + "/" + driver_dir + "/pocl") + " CUDA_CACHE_PATH=" + shell_quote(dir + "/" + driver_dir + "/nv");
        };
        const ChildResult cold = run_child(exe, o.device, env("driver"));
        std::vector<ChildResult> warm;
        for (int r = 0; r < 3; ++r) warm.push_back(run_child(exe, o.device, env("driver")));
        // lazytensor's disk cache alone: the drivers' caches empty again.
        const ChildResult lt_only = run_child(exe, o.device, env("driver-empty"));
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
        bool warm_ok = true;
        std::vector<double> warm_ms;
        for (const ChildResult& r : warm) {
            warm_ok = warm_ok && r.ok;
            warm_ms.push_back(r.ms);
        }
        for (const ChildResult* r : std::vector<const ChildResult*>{&cold, &warm[0], &warm[1], &warm[2], &lt_only})
            if (!r->ok) {
                g_wrong = true;
                std::printf("  WRONG: a --first-realize child failed:\n%s\n", r->output.c_str());
            }
        auto cache_note = [](const ChildResult& r) {
            return format("disk cache %zu hit%s, %zu miss%s, %zu write%s; context+upload %.1f ms", r.hits,
                          r.hits == 1 ? "" : "s", r.misses, r.misses == 1 ? "" : "es", r.writes, r.writes == 1 ? "" : "s",
                          r.init_ms);
        };
        const double warm_median = median(warm_ms);
        result("first realize, empty caches (build)", cold.ms, 0, "ms", 0, 0, "", false, cache_note(cold));
        result("first realize, warm disk cache", warm_median, 0, "ms", 0, 0, "<= 5 ms", warm_ok && warm_median <= 5.0,
               format("median of 3 processes (%.2f, %.2f, %.2f ms); ", warm_ms[0], warm_ms[1], warm_ms[2]) +
                   cache_note(warm[0]));
        result("first realize, lazytensor disk cache only", lt_only.ms, 0, "ms", 0, 0, "", false,
               "driver caches empty; " + cache_note(lt_only));
        if (warm_ok && warm[0].hits == 0) std::printf("  note: the warm runs did not hit the disk cache\n");
    }

    // ------------------------------------------------------------------ 7. host interpreter vs OpenCL
    if (host_compare) {
        std::printf("\nhost backend vs opencl:%d (wall time, realize + synchronize, median of %d)\n", o.device,
                    std::min(reps, 5));
        std::printf("%-44s %12s %12s %12s\n", "benchmark", "host", "opencl", "host/opencl");
        const int hreps = std::min(reps, 5);
        const lt::Device host = lt::Device::host();
        be.set_record_times(false);
        {
            lt::Tensor<float> ha = lt::tensor<float>(va, {n}, host), hb = lt::tensor<float>(vb, {n}, host),
                              hc = lt::tensor<float>(vc, {n}, host);
            lt::Tensor<float> hy, dy;
            const double h = time_wall(hreps, [&] { hy = (lt::exp(ha) * hb + hc * 0.5f - lt::tanh(ha)).realize(); });
            const double d = time_wall(hreps, [&] {
                dy = (lt::exp(a) * b + c * 0.5f - lt::tanh(a)).realize();
                lt::synchronize(dev);
            });
            std::printf("%-44s %12s %12s %11.2fx\n", ("chain, " + size_name(n)).c_str(), format("%.3f ms", h).c_str(),
                        format("%.3f ms", d).c_str(), h / d);
            verify("chain: host vs opencl", max_rel_diff(hy.to_vector(), dy.to_vector()), 1e-4);
        }
        {
            lt::Tensor<float> hx = lt::tensor<float>(vm, {R, C}, host);
            lt::Tensor<float> hs, ds;
            const double h = time_wall(hreps, [&] { hs = hx.sum(1).realize(); });
            const double d = time_wall(hreps, [&] {
                ds = x.sum(1).realize();
                lt::synchronize(dev);
            });
            std::printf("%-44s %12s %12s %11.2fx\n", format("row sum, %lldx%lld", (long long)R, (long long)C).c_str(),
                        format("%.3f ms", h).c_str(), format("%.3f ms", d).c_str(), h / d);
            verify("row sum: host vs opencl", max_rel_diff(hs.to_vector(), ds.to_vector()), 1e-3);
        }
    }

    std::printf("\n%s\n", g_wrong ? "RESULT: numerically WRONG results (see WRONG lines above)"
                                  : "RESULT: all results verified");
    return g_wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        if (o.child) return first_realize_child(o);
        return run(o, argv[0]);
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "bench_opencl: error: %s\n", e.what());
        return 2;
    }
}
