// SPDX-License-Identifier: MIT
// Check mode (LAZYTENSOR_CHECK=1, or lt::set_check_enabled): every schedule item that has a
// second implementation also runs on the host, and the two results must agree within a
// tolerance suited to the dtype. Each kind of item says what its reference is (items/*.hpp:
// checked_on, reference): a kernel on an OpenCL device or a compiled loop on the host, the same
// IR on the host interpreter; a routine of the OpenCL backend's, the host's. A difference
// throws a BackendError naming the item, the first differing element, and the item's IR and
// generated source; realize has not committed anything then, so every tensor stays usable. Slow (every kernel runs three times, with copies through host memory): for
// debugging.
//
// The bound is per element: |device - host| <= rtol * |host| + atol * magnitude, where the
// magnitude of an element is the size of what its computation added up (the same kernel over
// absolute values, subtraction as addition: |x| + |mean| for x - mean, sum |x| for a sum), so
// rounding that cancels is allowed for where it happens, and nowhere else (items/reference.hpp).
#pragma once

#include <algorithm>
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
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return 0;
}

/// One item run twice: snapshots of its buffers in host memory, taken before it runs on its
/// backend (an assign overwrites its target), then the host's run and the comparison.
class KernelCheck {
public:
    /// Whether `p` on `backend` has a second implementation to compare with.
    static bool applies(const PlannedItem& p, const Backend& backend) {
        return p.visit([&](const auto& k) { return k.checked_on(backend); });
    }

    KernelCheck(const PlannedItem& p, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars,
                bool output_is_read)
        : item_(p), scalars_(scalars) {
        std::unordered_map<const Buffer*, BufferPtr> copies;  // one copy per buffer: in-place kernels alias
        for (std::size_t k = 0; k < params.size(); ++k) {
            const Buffer* b = params[k];
            if (!b) {  // a fused product that is not kept: the host run makes its own
                host_params_.push_back(nullptr);
                continue;
            }
            const bool output = k + 1 == params.size();
            auto it = copies.find(b);
            if (it == copies.end()) {
                BufferPtr copy = host_backend().allocate(b->dtype(), b->numel());
                if (!output || output_is_read) device_backend(b->device()).read(*b, 0, copy->handle(), b->bytes());
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
        const char* reference = item_.visit([&](const auto& k) { return k.reference(HostRun{host_backend(), params, scalars_}); });
        Buffer& expected = *params.back();
        std::vector<unsigned char> got(out.bytes());
        backend.read(out, 0, got.data(), got.size());
        const auto* want = static_cast<const unsigned char*>(expected.handle());
        const DType t = out.dtype();
        const std::int64_t n = out.numel();
        CheckTolerance tol = check_tolerance(t);
        item_.visit([&](const auto& k) { k.widen_tolerance(tol, t); });
        std::vector<unsigned char> magnitudes;
        if (is_floating(t)) magnitudes = run_magnitudes_on_host();
        auto bound = [&](std::int64_t i) {
            const double magnitude = element_as_double(magnitudes.data(), t, i);  // NaN (0 / 0 above): unknown
            return tol.rtol * std::fabs(element_as_double(want, t, i)) + tol.atol * (std::isnan(magnitude) ? INFINITY : magnitude) +
                   tol.subnormal_slack;
        };
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
                else same = std::isfinite(a) && (a == b || std::fabs(a - b) <= bound(i));
            }
            if (!same && differing++ == 0) first = i;
        }
        if (!differing) return;
        std::ostringstream msg;
        msg << "LAZYTENSOR_CHECK: " << item_.kind() << " " << index << " of " << count
            << " on " << backend.device() << " (" << backend.name() << ") disagrees with " << reference << ": "
            << differing << " of " << n << " elements of its " << t << " output differ; the first is element "
            << first << ": " << element_as_double(got.data(), t, first) << " on " << backend.device() << ", "
            << element_as_double(want, t, first) << " from the reference";
        if (is_floating(t))
            msg << " (tolerance " << bound(first) << ": " << tol.rtol << " relative + " << tol.atol
                << " times the element's magnitude " << element_as_double(magnitudes.data(), t, first) << " + "
                << kCheckSubnormalUnits << " units of the smallest subnormal)";
        msg << "\n" << item_.visit([](const auto& k) { return k.listing(); });
        const std::string source = item_.source(backend);
        if (!source.empty()) msg << "--- generated source ---\n" << source;
        if (!original_.empty()) backend.write(out, 0, original_.data(), original_.size());
        fail<BackendError>(msg.str());
    }

private:
    /// Runs the item's magnitude computation on the host and returns the output's bytes. The
    /// output gets a buffer of its own, holding what the target held before for an assign.
    std::vector<unsigned char> run_magnitudes_on_host() const {
        Backend& host = host_backend();
        const BufferPtr& reference = host_params_.back();
        BufferPtr output = host.allocate(reference->dtype(), reference->numel());
        if (!original_.empty()) std::memcpy(output->handle(), original_.data(), original_.size());
        std::vector<Buffer*> params;
        for (const BufferPtr& b : host_params_) params.push_back(b == reference ? output.get() : b.get());
        item_.visit([&](const auto& k) { k.reference(HostRun{host, params, scalars_, true}); });
        std::vector<unsigned char> bytes(output->bytes());
        std::memcpy(bytes.data(), output->handle(), bytes.size());
        return bytes;
    }

    const PlannedItem& item_;
    std::vector<Scalar> scalars_;
    std::vector<BufferPtr> host_params_;
    std::vector<unsigned char> original_;  // an assign's target before it ran
};

}  // namespace detail
}  // namespace lazytensor
