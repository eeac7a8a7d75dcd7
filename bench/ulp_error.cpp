// SPDX-License-Identifier: MIT
// The accuracy of every floating element-wise function, in ulps, on each path that computes it:
// the host's compiled loops, the host interpreter (compiled loops off) and OpenCL devices. The
// reference is long double (tests/ulp_reference.hpp, shared with the tests' bounds), never the
// library's own output. Prints the worst error per function, type and path, the argument where
// it occurred, and a summary table for docs/numerics.md.
//
//   ulp_error [--points-log2 N] [--paths host,interp,opencl:0] [--functions exp,pow,...] [--profile]
//
// --profile also prints where the errors come from: the worst error in each 16th of a unary
// function's linear range (gelu's tail, say), or of a binary function's result binades.
//
// The sample per function and type: 2^N arguments (default 2^22; see make_sample: log-uniform
// over every finite value, subnormals included; evenly spaced over the function's active range;
// log-uniform in [2^-8, 2^8]), then special values and the thresholds with their neighbours.
// Fixed seeds: reruns see the same arguments. bench/README.md has the command that regenerated
// docs/numerics.md's table.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <lazytensor.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "../tests/ulp_reference.hpp"

namespace lt = lazytensor;
using ulp_ref::LD;

namespace {

std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::stringstream in(s);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty()) out.push_back(item);
    return out;
}

std::string fmt_ulps(LD u) {
    char buf[32];
    if (std::isinf(u)) return "inf";
    std::snprintf(buf, sizeof buf, u < 100 ? "%.2Lf" : u < 1e6 ? "%.0Lf" : "%.2Le", u);
    return buf;
}

struct Row {
    std::string fn, type, path, ulps;
};

template <class T>
void run_type(const std::vector<std::string>& fns, const std::vector<std::string>& paths, std::size_t n, bool profile,
              std::vector<Row>& rows) {
    const char* tname = std::is_same_v<T, float> ? "float" : "double";
    for (const ulp_ref::Function& fn : ulp_ref::functions()) {
        if (!fns.empty() && std::find(fns.begin(), fns.end(), fn.name) == fns.end()) continue;
        const auto sample = ulp_ref::make_sample<T>(fn, n, 2026);
        const std::vector<LD> ref = ulp_ref::references(fn.name, sample);
        const auto count = static_cast<std::int64_t>(sample.size());
        for (const std::string& path : paths) {
            const bool interp = path == "interp";
            const lt::Device dev = interp ? lt::Device::host() : lt::detail::parse_device(path);
            lt::set_static_kernels_enabled(!interp);
            std::vector<T> got;
            bool compiled = false;
            try {
                lt::Tensor<T> a = lt::tensor<T>(sample.a, {count}, dev), b = lt::tensor<T>(sample.b, {count}, dev);
                lt::Tensor<T> r = ulp_ref::evaluate<T>(fn.name, a, b);
                const auto items = lt::schedule(r);
                compiled = dev == lt::Device::host() && items.size() == 1 && items[0].compiled_loop;
                got = r.to_vector();
            } catch (const std::exception& e) {
                std::printf("%-10s %-6s %-9s skipped: %s\n", fn.name, tname, path.c_str(), e.what());
                continue;
            }
            lt::set_static_kernels_enabled(true);
            const auto m = ulp_ref::measure(sample, got, ref);
            auto print = [&](const char* what, const ulp_ref::Worst<T>& w) {
                std::printf("%-10s %-6s %-9s%s %-6s max %9s ulp at a=%-15.9g", fn.name, tname, path.c_str(),
                            compiled ? "*" : " ", what, fmt_ulps(w.ulps).c_str(), double(w.a));
                if (fn.binary) std::printf(" b=%-15.9g", double(w.b));
                std::printf(" got %.17g want %.20Lg (%zu points)\n", double(w.got), w.ref, w.points);
            };
            print("all", m.all);
            print("normal", m.normal);
            if (m.zero_sign)
                std::printf("%-10s %-6s %-9s  %zu zeros of the wrong sign, e.g. at a=%g\n", fn.name, tname, path.c_str(),
                            m.zero_sign, double(m.zero_sign_a));
            if (profile) {
                // Unary functions by argument over the linear range; binary ones by log2 of the
                // result over T's whole range (subnormal results first), normal operands only.
                const bool f32 = std::is_same_v<T, float>;
                using L = std::numeric_limits<T>;
                double lo = f32 ? fn.lin_lo_f : fn.lin_lo_d, hi = f32 ? fn.lin_hi_f : fn.lin_hi_d;
                if (fn.binary) lo = L::min_exponent - L::digits, hi = L::max_exponent;
                LD bin[16] = {};
                for (std::size_t i = 0; i < sample.size(); ++i) {
                    if (fn.binary && !(std::isnormal(sample.a[i]) && std::isnormal(sample.b[i]))) continue;
                    const double x = fn.binary ? double(std::log2(std::fabs(ref[i]))) : double(sample.a[i]);
                    if (!(x >= lo && x < hi)) continue;
                    LD& w = bin[std::size_t((x - lo) / (hi - lo) * 16)];
                    w = std::max(w, ulp_ref::ulp_error(got[i], ref[i]));
                }
                std::printf("    profile over [%g, %g):", lo, hi);
                for (int k = 0; k < 16; ++k) std::printf(" [%.4g: %s]", lo + (hi - lo) * k / 16, fmt_ulps(bin[k]).c_str());
                std::printf("\n");
            }
            std::fflush(stdout);
            rows.push_back({fn.name, tname, path,
                            fmt_ulps(m.normal.ulps) + (fmt_ulps(m.all.ulps) != fmt_ulps(m.normal.ulps) ? " / " + fmt_ulps(m.all.ulps) : "") +
                                (m.zero_sign ? " (±0)" : "")});
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    int points_log2 = 22;
    std::vector<std::string> paths = {"host", "interp"}, fns;
    bool profile = false;
    for (const auto& info : lt::devices())
        if (info.device.kind == lt::Device::Kind::OpenCL) paths.push_back(info.device.str());
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const char* next = i + 1 < argc ? argv[i + 1] : "";
        if (arg == "--points-log2") points_log2 = std::atoi(next), ++i;
        else if (arg == "--paths") paths = split(next), ++i;
        else if (arg == "--functions") fns = split(next), ++i;
        else if (arg == "--profile") profile = true;
        else {
            std::fprintf(stderr, "usage: ulp_error [--points-log2 N] [--paths host,interp,opencl:0] [--functions exp,pow,...] [--profile]\n");
            return 2;
        }
    }
    for (const auto& info : lt::devices()) std::printf("device %s: %s\n", info.device.str().c_str(), info.name.c_str());
    std::printf("2^%d points per function and type, plus special values and edges; * = ran as a compiled loop\n\n", points_log2);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<Row> rows;
    const std::size_t n = std::size_t(1) << points_log2;
    run_type<float>(fns, paths, n, profile, rows);
    run_type<double>(fns, paths, n, profile, rows);

    // Summary: one line per function, one column per type and path: the worst error where the
    // result is normal, then (when larger) the worst over all arguments.
    std::printf("\n| function |");
    for (const char* t : {"float", "double"})
        for (const auto& p : paths) std::printf(" %s %s |", t, p.c_str());
    std::printf("\n|---|");
    for (std::size_t i = 0; i < 2 * paths.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const ulp_ref::Function& fn : ulp_ref::functions()) {
        if (!fns.empty() && std::find(fns.begin(), fns.end(), fn.name) == fns.end()) continue;
        std::printf("| `%s` |", fn.name);
        for (const char* t : {"float", "double"})
            for (const auto& p : paths) {
                std::string cell = "-";
                for (const Row& r : rows)
                    if (r.fn == fn.name && r.type == t && r.path == p) cell = r.ulps;
                std::printf(" %s |", cell.c_str());
            }
        std::printf("\n");
    }
    std::printf("\n%.0f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return 0;
}
