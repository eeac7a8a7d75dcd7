// Check mode (LAZYTENSOR_CHECK=1, or lt::set_check_enabled): every schedule item that has a
// second implementation also runs on the host interpreter, the reference semantics, and the
// two results must agree within a tolerance suited to the dtype:
//   - a kernel on an OpenCL device: the same kernel IR interpreted on the host;
//   - a compiled loop on the host (ir/static_kernel.hpp): the same IR interpreted;
//   - a matrix product on an OpenCL device (CLBlast): the host's packed GEMM.
// A difference throws a BackendError naming the kernel, the first differing element, and the
// kernel's IR and generated source; realize has not committed anything then, so every tensor
// stays usable. Slow (every kernel runs twice, with copies through host memory): for debugging.
#pragma once

#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "device.hpp"
#include "plan.hpp"

namespace lazytensor {

namespace detail {
/// Check mode's switch (lt::check_enabled, lt::set_check_enabled): LAZYTENSOR_CHECK at start.
inline std::atomic<bool>& check_flag() {
    static std::atomic<bool> on{env_flag("LAZYTENSOR_CHECK", false)};
    return on;
}

/// Tests only: called with an item's output buffer after it ran, before check mode compares
/// it (a hook that corrupts the result stands in for a miscompiled kernel).
inline std::function<void(Buffer&)>& after_launch_hook() {
    static std::function<void(Buffer&)> hook;
    return hook;
}
}  // namespace detail

namespace detail {

/// The relative and absolute (times the output's largest magnitude) tolerances of check mode:
/// the host and a device may round transcendentals differently and sum in another order.
struct CheckTolerance {
    double rtol, atol;
};
inline CheckTolerance check_tolerance(DType t) {
    switch (t) {
        case DType::Float16: return {1e-2, 1e-3};
        case DType::Float32: return {1e-4, 1e-5};
        case DType::Float64: return {1e-10, 1e-12};
        default: return {0, 0};  // integers and bool: exact
    }
}

inline double element_as_double(const unsigned char* data, DType t, std::int64_t i) {
    const std::size_t size = dtype_size(t);
    const unsigned char* p = data + static_cast<std::size_t>(i) * size;
    switch (t) {
#define LAZYTENSOR_X(name, type, text)                                           \
    case DType::name: {                                                          \
        using Stored = std::conditional_t<std::is_same_v<type, bool>, std::uint8_t, type>; \
        Stored v;                                                                \
        std::memcpy(&v, p, sizeof v);                                            \
        return static_cast<double>(v);                                           \
    }
        LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return 0;
}

/// One item run twice: snapshots of its buffers in host memory, taken before it runs on its
/// backend (an assign overwrites its target), then the host's run and the comparison.
class KernelCheck {
public:
    /// Whether `p` on `backend` has a second implementation to compare with.
    static bool applies(const PlannedItem& p, const Backend& backend) {
        if (p.view_only) return false;
        if (backend.device().kind != Device::Kind::Host) return true;
        return !p.gemm_item && p.kernel.candidate;  // a compiled loop: compare with the interpreter
    }

    KernelCheck(const PlannedItem& p, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars,
                bool output_is_read)
        : item_(p), scalars_(scalars) {
        std::unordered_map<const Buffer*, BufferPtr> copies;  // one copy per buffer: in-place kernels alias
        for (std::size_t k = 0; k < params.size(); ++k) {
            const Buffer* b = params[k];
            const bool output = k + 1 == params.size();
            auto it = copies.find(b);
            if (it == copies.end()) {
                BufferPtr copy = host_backend().allocate(b->dtype(), b->numel());
                if (!output || output_is_read) backend_for(b->device()).read(*b, 0, copy->handle(), b->bytes());
                it = copies.emplace(b, std::move(copy)).first;
            }
            if (output && output_is_read) {  // an assign: what its target held, to put back on a failure
                original_.resize(b->bytes());
                std::memcpy(original_.data(), it->second->handle(), b->bytes());
            }
            host_params_.push_back(it->second);
        }
    }

    /// Runs the item on the host and compares with `out`, the backend's result. On a difference,
    /// an assign's target gets its old contents back before the error: nothing is committed.
    void verify(std::size_t index, std::size_t count, Backend& backend, Buffer& out) const {
        std::vector<Buffer*> params;
        for (const BufferPtr& b : host_params_) params.push_back(b.get());
        const char* reference = run_on_host(params);
        Buffer& expected = *params.back();
        std::vector<unsigned char> got(out.bytes());
        backend.read(out, 0, got.data(), got.size());
        const auto* want = static_cast<const unsigned char*>(expected.handle());
        const DType t = out.dtype();
        const std::int64_t n = out.numel();
        const CheckTolerance tol = check_tolerance(t);
        double scale = 0;
        if (is_floating(t))
            for (std::int64_t i = 0; i < n; ++i)
                if (std::isfinite(element_as_double(want, t, i))) scale = std::max(scale, std::fabs(element_as_double(want, t, i)));
        std::int64_t first = -1, differing = 0;
        for (std::int64_t i = 0; i < n; ++i) {
            bool same;
            if (!is_floating(t)) {
                const std::size_t size = dtype_size(t);
                same = std::memcmp(got.data() + i * size, want + i * size, size) == 0;
            } else {
                // NaN and infinities must match exactly (a tolerance relative to inf passes anything).
                const double a = element_as_double(got.data(), t, i), b = element_as_double(want, t, i);
                if (std::isnan(b)) same = std::isnan(a);
                else if (std::isinf(b)) same = a == b;
                else same = std::isfinite(a) && (a == b || std::fabs(a - b) <= tol.rtol * std::fabs(b) + tol.atol * scale);
            }
            if (!same && differing++ == 0) first = i;
        }
        if (!differing) return;
        std::ostringstream msg;
        msg << "LAZYTENSOR_CHECK: " << (item_.gemm_item ? "matmul " : "kernel ") << index << " of " << count
            << " on " << backend.device() << " (" << backend.name() << ") disagrees with " << reference << ": "
            << differing << " of " << n << " elements of its " << t << " output differ; the first is element "
            << first << ": " << element_as_double(got.data(), t, first) << " on " << backend.device() << ", "
            << element_as_double(want, t, first) << " from the reference";
        if (is_floating(t)) msg << " (tolerance " << tol.rtol << " relative + " << tol.atol * scale << " absolute)";
        msg << "\n--- " << (item_.gemm_item ? "matmul" : "kernel IR") << " ---\n"
            << (item_.gemm_item ? ir::to_string(item_.gemm) : ir::to_string(item_.kernel));
        if (!item_.gemm_item && item_.compiled) {
            const std::string source = backend.kernel_source(*item_.compiled);
            if (!source.empty()) msg << "--- generated source ---\n" << source;
        }
        if (!original_.empty()) backend.write(out, 0, original_.data(), original_.size());
        fail<BackendError>(msg.str());
    }

private:
    /// Runs the item on the host; says what ran it.
    const char* run_on_host(const std::vector<Buffer*>& params) const {
        Backend& host = host_backend();
        if (item_.gemm_item) {
            host.gemm(item_.gemm, *params[0], *params[1], *params[2]);
            return "the host's packed GEMM";
        }
        ir::Kernel interpreted = item_.kernel;
        interpreted.candidate = nullptr;  // the interpreter, not a compiled loop
        host.launch(*host.get_kernel(interpreted), params, scalars_);
        return "the host interpreter";
    }

    const PlannedItem& item_;
    std::vector<Scalar> scalars_;
    std::vector<BufferPtr> host_params_;
    std::vector<unsigned char> original_;  // an assign's target before it ran
};

}  // namespace detail
}  // namespace lazytensor

// realize(), which runs these checks, and (header-only) through it the definitions of the seam
// functions used above: included last, so that check.hpp comes complete however it is reached.
#include "realize.hpp"
