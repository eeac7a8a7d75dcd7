// SPDX-License-Identifier: MIT
// Check mode's reference computations on the host, shared by the kinds of items: the tolerance
// per dtype, the magnitude of an element (a bound on the values its computation added up, so
// that rounding that cancels is allowed for where it happens and nowhere else), and running a
// kernel on the host interpreter (the reference semantics) for its values or its magnitudes.
#pragma once

#include <cstring>
#include <vector>

#include "../backend/backend.hpp"
#include "../ir/kernel.hpp"

namespace lazytensor::detail {

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
        case DType::BFloat16: return {8e-2, 1e-2, kCheckSubnormalUnits * 0x1p-133};
        case DType::Float32: return {1e-4, 1e-5, kCheckSubnormalUnits * 0x1p-149};
        case DType::Float64: return {1e-10, 1e-12, kCheckSubnormalUnits * 0x1p-1074};
        default: return {0, 0, 0};  // integers and bool: exact
    }
}

/// The distance from 1 to the next value of a floating dtype (0 for others).
inline double dtype_epsilon(DType t) {
    switch (t) {
        case DType::Float16: return 0x1p-10;
        case DType::BFloat16: return 0x1p-7;
        case DType::Float32: return 0x1p-23;
        case DType::Float64: return 0x1p-52;
        default: return 0;
    }
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
                        case UnaryOp::Rsqrt:
                            mv = grow(binary(BinaryOp::Mul, t, constant(t, 0.5), binary(BinaryOp::Mul, t, abs_v, binary(BinaryOp::Mul, t, abs_v, abs_v))));
                            break;
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

/// |x| for every element of a floating host buffer (IEEE: the top bit of each element).
inline void clear_sign_bits(Buffer& b) {
    const std::size_t size = dtype_size(b.dtype());
    auto* bytes = static_cast<unsigned char*>(b.handle());
    for (std::int64_t i = 0; i < b.numel(); ++i) bytes[static_cast<std::size_t>(i) * size + size - 1] &= 0x7f;
}

/// A host copy of `in` holding |x| (a floating buffer; an integer one is copied as it is).
inline BufferPtr absolute_copy(Backend& host, const Buffer& in) {
    BufferPtr out = host.allocate(in.dtype(), in.numel());
    std::memcpy(out->handle(), in.handle(), in.bytes());
    if (is_floating(in.dtype())) clear_sign_bits(*out);
    return out;
}

/// Runs `k` on the host interpreter (not a compiled loop: the reference), or with `magnitudes`
/// its magnitude kernel, on host buffers.
inline void interpret_on_host(Backend& host, const ir::Kernel& k, const std::vector<Buffer*>& params,
                              const std::vector<Scalar>& scalars, bool magnitudes) {
    ir::Kernel kernel = magnitudes ? magnitude_kernel(k) : k;
    kernel.candidate = nullptr;
    host.launch(*host.get_kernel(kernel), params, scalars);
}

}  // namespace lazytensor::detail
