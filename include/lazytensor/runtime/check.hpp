// SPDX-License-Identifier: MIT
// Check mode (LAZYTENSOR_CHECK=1, or lt::set_check_enabled): every schedule item that has a
// second implementation also runs on the host interpreter, the reference semantics, and the
// two results must agree within a tolerance suited to the dtype:
//   - a kernel on an OpenCL device: the same kernel IR interpreted on the host;
//   - a compiled loop on the host (ir/static_kernel.hpp): the same IR interpreted;
//   - a matrix product on an OpenCL device (CLBlast): the host's packed GEMM.
// A difference throws a BackendError naming the kernel, the first differing element, and the
// kernel's IR and generated source; realize has not committed anything then, so every tensor
// stays usable. Slow (every kernel runs three times, with copies through host memory): for
// debugging.
//
// The bound is per element: |device - host| <= rtol * |host| + atol * magnitude, where the
// magnitude of an element is the size of what its computation added up (the same kernel over
// absolute values, subtraction as addition: |x| + |mean| for x - mean, sum |x| for a sum), so
// rounding that cancels is allowed for where it happens, and nowhere else. A cumprod's rtol is
// at least twice its length in epsilons (each factor rounds the product once).
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

/// The relative and absolute (times the element's magnitude) tolerances of check mode: the host
/// and a device may round transcendentals differently and sum in another order. Plus a few units
/// of the smallest subnormal: where a result is subnormal, a device may round it or flush it
/// differently by a unit (NVIDIA's double exp gives 0 where the host gives 4.9e-324).
struct CheckTolerance {
    double rtol, atol, subnormal_slack;  // subnormal_slack: an absolute bound, kCheckSubnormalUnits smallest subnormals
};
constexpr double kCheckSubnormalUnits = 4;
inline CheckTolerance check_tolerance(DType t) {
    switch (t) {
        case DType::Float16: return {1e-2, 1e-3, kCheckSubnormalUnits * 0x1p-24};
        case DType::Float32: return {1e-4, 1e-5, kCheckSubnormalUnits * 0x1p-149};
        case DType::Float64: return {1e-10, 1e-12, kCheckSubnormalUnits * 0x1p-1074};
        default: return {0, 0, 0};  // integers and bool: exact
    }
}

/// The distance from 1 to the next value of a floating dtype (0 for others).
inline double dtype_epsilon(DType t) {
    switch (t) {
        case DType::Float16: return 0x1p-10;
        case DType::Float32: return 0x1p-23;
        case DType::Float64: return 0x1p-52;
        default: return 0;
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

/// The kernel that computes, for every element `k` outputs, its magnitude: a bound on the size of
/// the values its computation added or subtracted (rounding errors are eps times it). Every
/// floating value v gets a companion m(v):
///   loads, scalars: |v|;  a + b, a - b: m(a) + m(b);  a * b: m(a) * m(b);  a / b: m(a) / |b|;
///   max, min: max(m(a), m(b));  where(c, a, b): where(c, m(a), m(b));  fmod-like: max(|v|, m(a));
///   -a, |a|, relu(a): m(a);  other functions: |f(a)| + |f'(a)| m(a) (pow: in both operands);
/// and every floating reduction gets a twin phase that folds the magnitudes (sum, product, max).
/// Conditions, integers and indices are computed as in `k`, so masks and gathers agree.
inline ir::Kernel magnitude_kernel(const ir::Kernel& k) {
    using ir::Instr;
    using ir::Op;
    ir::Kernel out = k;
    out.candidate = nullptr;
    out.phases.clear();
    // Original phase index -> index in `out`, and of its magnitude twin (-1: none).
    std::vector<int> phase_at(k.phases.size(), -1), twin_at(k.phases.size(), -1);
    for (std::size_t p = 0; p < k.phases.size(); ++p) {
        const ir::Phase& ph = k.phases[p];
        ir::Phase np = ph;
        np.instrs.clear();
        std::vector<int> val(ph.instrs.size(), -1), mag(ph.instrs.size(), -1);
        auto push = [&](Instr in) {
            np.instrs.push_back(std::move(in));
            return static_cast<int>(np.instrs.size()) - 1;
        };
        auto unary = [&](UnaryOp op, DType t, int a) {
            Instr in;
            in.op = Op::Unary;
            in.unary = op;
            in.dtype = t;
            in.a = a;
            return push(in);
        };
        auto constant = [&](DType t, double value) {
            Instr in;
            in.op = Op::Const;
            in.dtype = t;
            in.value = t == DType::Float64 ? Scalar::of(value) : Scalar::of(static_cast<float>(value));
            return push(in);
        };
        auto binary = [&](BinaryOp op, DType t, int a, int b) {
            Instr in;
            in.op = Op::Binary;
            in.binary = op;
            in.dtype = t;
            in.a = a;
            in.b = b;
            return push(in);
        };
        for (std::size_t i = 0; i < ph.instrs.size(); ++i) {
            Instr in = ph.instrs[i];
            auto remap = [&](std::int32_t& operand) {
                if (operand >= 0) operand = val[static_cast<std::size_t>(operand)];
            };
            const int a = in.a, b = in.b, c = in.c;
            if (in.op != Op::Slot) {
                remap(in.a);
                remap(in.b);
                remap(in.c);
            } else {
                in.arg = phase_at[static_cast<std::size_t>(in.arg)];
            }
            const DType t = in.dtype;
            const int v = push(in);
            val[i] = v;
            if (!is_floating(t)) continue;
            auto m = [&](int operand) { return mag[static_cast<std::size_t>(operand)]; };
            auto operand_dtype = [&](int operand) { return ph.instrs[static_cast<std::size_t>(operand)].dtype; };
            int mv = -1;
            switch (in.op) {
                case Op::Slot: {
                    const int twin = twin_at[static_cast<std::size_t>(ph.instrs[i].arg)];
                    if (twin < 0) break;
                    Instr s = in;
                    s.arg = twin;
                    mv = push(s);
                    break;
                }
                case Op::Unary: {
                    // |f(a)| + |f'(a)| m(a): what an error of m(a) in a becomes (an argument
                    // reduction's error counts as one in a), with |f'| bounded where it is small.
                    const int x = val[static_cast<std::size_t>(a)];
                    auto grow = [&](int slope) { return binary(BinaryOp::Add, t, unary(UnaryOp::Abs, t, v), binary(BinaryOp::Mul, t, slope, m(a))); };
                    const int abs_v = unary(UnaryOp::Abs, t, v);
                    switch (in.unary) {
                        case UnaryOp::Neg:
                        case UnaryOp::Abs:
                        case UnaryOp::Relu: mv = m(a); break;
                        case UnaryOp::Exp: mv = grow(abs_v); break;
                        case UnaryOp::Exp2: mv = grow(binary(BinaryOp::Mul, t, abs_v, constant(t, 0.6931471805599453))); break;
                        case UnaryOp::Log: mv = grow(unary(UnaryOp::Reciprocal, t, unary(UnaryOp::Abs, t, x))); break;
                        case UnaryOp::Log2:
                            mv = grow(binary(BinaryOp::Div, t, constant(t, 1.4426950408889634), unary(UnaryOp::Abs, t, x)));
                            break;
                        case UnaryOp::Sqrt: mv = grow(binary(BinaryOp::Div, t, constant(t, 0.5), abs_v)); break;
                        case UnaryOp::Reciprocal: mv = grow(binary(BinaryOp::Mul, t, abs_v, abs_v)); break;
                        case UnaryOp::Tan: mv = grow(binary(BinaryOp::Add, t, constant(t, 1), binary(BinaryOp::Mul, t, abs_v, abs_v))); break;
                        case UnaryOp::Sin:
                        case UnaryOp::Cos:
                        case UnaryOp::Tanh: mv = grow(constant(t, 1)); break;
                        default: break;  // floor, ceil, ...: |v|
                    }
                    break;
                }
                case Op::Binary:
                    switch (in.binary) {
                        case BinaryOp::Add:
                        case BinaryOp::Sub: mv = binary(BinaryOp::Add, t, m(a), m(b)); break;
                        case BinaryOp::Mul: mv = binary(BinaryOp::Mul, t, m(a), m(b)); break;
                        case BinaryOp::Div: mv = binary(BinaryOp::Div, t, m(a), unary(UnaryOp::Abs, t, val[static_cast<std::size_t>(b)])); break;
                        case BinaryOp::Maximum:
                        case BinaryOp::Minimum: mv = binary(BinaryOp::Maximum, t, m(a), m(b)); break;
                        case BinaryOp::Fmod: mv = binary(BinaryOp::Maximum, t, unary(UnaryOp::Abs, t, v), m(a)); break;
                        case BinaryOp::Pow: {
                            // |a^b| (1 + |b| m(a) / |a| + |log |a|| m(b))
                            const int base = unary(UnaryOp::Abs, t, val[static_cast<std::size_t>(a)]);
                            const int exponent = unary(UnaryOp::Abs, t, val[static_cast<std::size_t>(b)]);
                            const int from_a = binary(BinaryOp::Div, t, binary(BinaryOp::Mul, t, exponent, m(a)), base);
                            const int from_b = binary(BinaryOp::Mul, t, unary(UnaryOp::Abs, t, unary(UnaryOp::Log, t, base)), m(b));
                            mv = binary(BinaryOp::Mul, t, unary(UnaryOp::Abs, t, v),
                                        binary(BinaryOp::Add, t, constant(t, 1), binary(BinaryOp::Add, t, from_a, from_b)));
                            break;
                        }
                        default: break;
                    }
                    break;
                case Op::Where: {
                    Instr w = in;
                    w.b = m(b);
                    w.c = m(c);
                    mv = push(w);
                    break;
                }
                case Op::Cast:
                    if (is_floating(operand_dtype(a))) {
                        Instr cast = in;
                        cast.a = m(a);
                        mv = push(cast);
                    }
                    break;
                default: break;
            }
            mag[i] = mv >= 0 ? mv : unary(UnaryOp::Abs, t, v);
        }
        if (ph.kind == ir::Phase::Kind::Reduce) {
            phase_at[p] = static_cast<int>(out.phases.size());
            const int folded = ph.reduce_value;
            np.reduce_value = val[static_cast<std::size_t>(folded)];
            out.phases.push_back(np);
            if (is_floating(ph.instrs[static_cast<std::size_t>(folded)].dtype)) {
                ir::Phase twin = np;
                twin.reduce_value = mag[static_cast<std::size_t>(folded)];
                if (twin.reduce_op == ReduceOp::Min) twin.reduce_op = ReduceOp::Max;
                twin_at[p] = static_cast<int>(out.phases.size());
                out.phases.push_back(std::move(twin));
            }
        } else {
            for (ir::Store& st : np.stores) {
                const auto value = static_cast<std::size_t>(st.value);
                st.value = is_floating(ph.instrs[value].dtype) ? mag[value] : val[value];
            }
            phase_at[p] = static_cast<int>(out.phases.size());
            out.phases.push_back(std::move(np));
        }
    }
    return out;
}

/// One item run twice: snapshots of its buffers in host memory, taken before it runs on its
/// backend (an assign overwrites its target), then the host's run and the comparison.
class KernelCheck {
public:
    /// Whether `p` on `backend` has a second implementation to compare with.
    static bool applies(const PlannedItem& p, const Backend& backend) {
        if (p.view_only) return false;
        if (backend.device().kind != Device::Kind::Host) return true;
        return p.kind == ScheduleItem::Kind::Kernel && p.kernel.candidate;  // a compiled loop: compare with the interpreter
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
        // A fused product or scan rounds in its own dtype whatever it is cast to: the looser bound.
        CheckTolerance tol = check_tolerance(t);
        if (item_.fused() && is_floating(t) && check_tolerance(item_.core_dtype()).rtol > tol.rtol) {
            const CheckTolerance product = check_tolerance(item_.core_dtype());
            tol.rtol = product.rtol, tol.atol = product.atol;
        }
        // Each factor of a product rounds it once, relatively: a cumprod of n factors may differ
        // by about n epsilons between two orders (70000 float factors did by 1.1e-4 on the H100).
        if (item_.is_scan() && item_.scan.op == ReduceOp::Prod && is_floating(t))
            tol.rtol = std::max(tol.rtol, 2.0 * static_cast<double>(item_.scan.length) * dtype_epsilon(item_.core_dtype()));
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
        msg << "LAZYTENSOR_CHECK: " << item_.kind << " " << index << " of " << count
            << " on " << backend.device() << " (" << backend.name() << ") disagrees with " << reference << ": "
            << differing << " of " << n << " elements of its " << t << " output differ; the first is element "
            << first << ": " << element_as_double(got.data(), t, first) << " on " << backend.device() << ", "
            << element_as_double(want, t, first) << " from the reference";
        if (is_floating(t))
            msg << " (tolerance " << bound(first) << ": " << tol.rtol << " relative + " << tol.atol
                << " times the element's magnitude " << element_as_double(magnitudes.data(), t, first) << " + "
                << kCheckSubnormalUnits << " units of the smallest subnormal)";
        msg << "\n--- " << (item_.is_attention() ? "attention" : item_.is_gemm() ? "matmul" : item_.is_scan() ? "scan" : "kernel IR") << " ---\n"
            << (item_.is_attention() ? ir::to_string(item_.attention) : item_.is_gemm() ? ir::to_string(item_.gemm)
                : item_.is_scan() ? ir::to_string(item_.scan) : ir::to_string(item_.kernel));
        for (int o = 0; o < 2; ++o)
            if (item_.has_prologue(o))
                msg << "--- prologue" << (item_.is_gemm() ? (o ? " of B" : " of A") : "") << " ---\n" << ir::to_string(item_.prologue[o]);
        if (item_.has_epilogue())
            msg << "--- epilogue (reads the " << (item_.is_gemm() ? "product" : "scan") << " as p" << item_.product_param
                << ") ---\n" << ir::to_string(item_.kernel);
        const std::string source = item_source(backend, item_);
        if (!source.empty()) msg << "--- generated source ---\n" << source;
        if (!original_.empty()) backend.write(out, 0, original_.data(), original_.size());
        fail<BackendError>(msg.str());
    }

private:
    /// Runs the item on the host; says what ran it.
    const char* run_on_host(const std::vector<Buffer*>& params) const {
        Backend& host = host_backend();
        if (item_.is_attention()) {
            run_attention_on_host(params);
            return "the host's packed GEMM and interpreter, as three items";
        }
        if (item_.fused()) {
            run_fused_on_host(params);
            return item_.is_gemm() ? "the host's packed GEMM and interpreter" : "the host's scan and interpreter";
        }
        if (item_.is_gemm()) {
            host.gemm(item_.gemm, *params[0], *params[1], *params[2]);
            return "the host's packed GEMM";
        }
        if (item_.is_scan()) {
            run_scan(host, item_.scan, host_copy_kernel().get(), *params[0], *params[1]);
            return "the host's scan";
        }
        ir::Kernel interpreted = item_.kernel;
        interpreted.candidate = nullptr;  // the interpreter, not a compiled loop
        host.launch(*host.get_kernel(interpreted), params, scalars_);
        return "the host interpreter";
    }

    /// Runs the item's magnitude computation on the host (magnitude_kernel; |A| @ |B| for a
    /// product) and returns the output's bytes. The output gets a buffer of its own, holding what
    /// the target held before for an assign.
    std::vector<unsigned char> run_magnitudes_on_host() const {
        Backend& host = host_backend();
        const BufferPtr& reference = host_params_.back();
        BufferPtr output = host.allocate(reference->dtype(), reference->numel());
        if (!original_.empty()) std::memcpy(output->handle(), original_.data(), original_.size());
        std::vector<Buffer*> params;
        for (const BufferPtr& b : host_params_) params.push_back(b == reference ? output.get() : b.get());
        if (item_.is_attention()) {
            run_attention_on_host(params, true);
        } else if (item_.is_scan() && item_.fused()) {  // the magnitudes of the prologue, scanned, then the epilogue's
            run_fused_on_host(params, true);
        } else if (item_.is_scan()) {  // the scan of |x|
            BufferPtr absolute = host.allocate(params[0]->dtype(), params[0]->numel());
            std::memcpy(absolute->handle(), params[0]->handle(), params[0]->bytes());
            clear_sign_bits(*absolute);
            run_scan(host, item_.scan, host_copy_kernel().get(), *absolute, *params[1]);
        } else if (item_.is_gemm()) {
            std::vector<BufferPtr> absolute;
            for (int k = 0; k < 2; ++k) {
                const Buffer& in = *params[static_cast<std::size_t>(k)];
                absolute.push_back(host.allocate(in.dtype(), in.numel()));
                std::memcpy(absolute.back()->handle(), in.handle(), in.bytes());
                clear_sign_bits(*absolute.back());
                params[static_cast<std::size_t>(k)] = absolute.back().get();
            }
            if (item_.fused()) run_fused_on_host(params, true);
            else host.gemm(item_.gemm, *params[0], *params[1], *params[2]);
        } else {
            host.launch(*host.get_kernel(magnitude_kernel(item_.kernel)), params, scalars_);
        }
        std::vector<unsigned char> bytes(output->bytes());
        std::memcpy(bytes.data(), output->handle(), bytes.size());
        return bytes;
    }

    /// A product or scan with kernels fused into it, on the host as separate items: each
    /// prologue into a buffer of its own, the product or scan (into a buffer of its own where an
    /// epilogue follows), then the epilogue; with `magnitudes`, their magnitude kernels (and a
    /// scan of the prologue's magnitudes, or of |x|). params: the operands' buffers (or their
    /// prologues' inputs), then the epilogue's buffers or the result's.
    void run_fused_on_host(const std::vector<Buffer*>& params, bool magnitudes = false) const {
        Backend& host = host_backend();
        auto run = [&](const ir::Kernel& k, const std::vector<Buffer*>& buffers, std::size_t first_scalar) {
            ir::Kernel kernel = magnitudes ? magnitude_kernel(k) : k;
            kernel.candidate = nullptr;
            const std::vector<Scalar> own(scalars_.begin() + static_cast<std::ptrdiff_t>(first_scalar),
                                          scalars_.begin() + static_cast<std::ptrdiff_t>(first_scalar + k.scalars.size()));
            host.launch(*host.get_kernel(kernel), buffers, own);
        };
        const int operands = item_.is_gemm() ? 2 : 1;
        BufferPtr operand[2];
        std::size_t first_scalar = 0;
        for (int o = 0; o < operands; ++o) {
            if (!item_.has_prologue(o)) continue;
            const ir::Kernel& k = item_.prologue[o];
            operand[o] = host.allocate(item_.core_dtype(), numel(k.domain));
            run(k, {params[static_cast<std::size_t>(o)], operand[o].get()}, first_scalar);
            first_scalar += k.scalars.size();
        }
        auto core = [&](Buffer& out) {
            if (item_.is_gemm())
                return host.gemm(item_.gemm, operand[0] ? *operand[0] : *params[0], operand[1] ? *operand[1] : *params[1], out);
            BufferPtr absolute;  // magnitudes without a prologue: the scan of |x| (integers scan exactly)
            if (magnitudes && !operand[0] && is_floating(params[0]->dtype())) {
                absolute = host.allocate(params[0]->dtype(), params[0]->numel());
                std::memcpy(absolute->handle(), params[0]->handle(), params[0]->bytes());
                clear_sign_bits(*absolute);
            }
            run_scan(host, item_.scan, nullptr, operand[0] ? *operand[0] : absolute ? *absolute : *params[0], out);
        };
        if (!item_.has_epilogue()) return core(*params[static_cast<std::size_t>(operands)]);
        std::vector<Buffer*> epilogue(params.begin() + operands, params.end());
        const std::int64_t count = item_.is_gemm() ? item_.gemm.batch_count() * item_.gemm.m * item_.gemm.n : item_.scan.numel();
        BufferPtr result = host.allocate(item_.core_dtype(), count);
        core(*result);
        epilogue[static_cast<std::size_t>(item_.product_param)] = result.get();
        run(item_.kernel, epilogue, first_scalar);
    }

    /// An attention item on the host as its three items. With `magnitudes`: the weights times
    /// |v|, each row scaled by 1 + its largest |f(score)| (an error in a score moves the
    /// output by about that error times the weighted values).
    void run_attention_on_host(const std::vector<Buffer*>& params, bool magnitudes = false) const {
        Backend& host = host_backend();
        const ir::Attention& a = item_.attention;
        const std::int64_t rows = a.scores.batch_count() * a.scores.m, keys = a.scores.n, depth = a.values.n;
        BufferPtr s = host.allocate(DType::Float32, rows * keys), w = host.allocate(DType::Float32, rows * keys);
        host.gemm(a.scores, *params[0], *params[1], *s);
        ir::Kernel softmax = a.softmax;
        softmax.candidate = nullptr;  // the interpreter
        host.launch(*host.get_kernel(softmax), {s.get(), w.get()}, scalars_);
        if (!magnitudes) return host.gemm(a.values, *w, *params[2], *params[3]);
        BufferPtr absolute = host.allocate(params[2]->dtype(), params[2]->numel());
        std::memcpy(absolute->handle(), params[2]->handle(), params[2]->bytes());
        clear_sign_bits(*absolute);
        host.gemm(a.values, *w, *absolute, *params[3]);
        ir::Kernel f = a.score_function;  // f(s), to find each row's largest
        host.launch(*host.get_kernel(f), {s.get(), w.get()}, scalars_);
        const auto* fs = static_cast<const float*>(w->handle());
        auto* out = static_cast<float*>(params[3]->handle());
        for (std::int64_t r = 0; r < rows; ++r) {
            float largest = 0;
            for (std::int64_t j = 0; j < keys; ++j) largest = std::max(largest, std::fabs(fs[r * keys + j]));
            for (std::int64_t c = 0; c < depth; ++c) out[r * depth + c] *= 1 + largest;
        }
    }

    /// A scan item's copy of its operand, compiled for the host (null: the item reads in place).
    std::shared_ptr<CompiledKernel> host_copy_kernel() const {
        return item_.runs_kernel() ? host_backend().get_kernel(item_.kernel) : nullptr;
    }

    /// |x| for every element of a floating host buffer (IEEE: the top bit of each element).
    static void clear_sign_bits(Buffer& b) {
        const std::size_t size = dtype_size(b.dtype());
        auto* bytes = static_cast<unsigned char*>(b.handle());
        for (std::int64_t i = 0; i < b.numel(); ++i) bytes[static_cast<std::size_t>(i) * size + size - 1] &= 0x7f;
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
