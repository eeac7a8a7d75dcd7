// SPDX-License-Identifier: MIT
// The kernel IR: what one schedule item computes, in a form every backend can run.
//
// A kernel iterates over a domain (extents D) whose axes are either kept ("outer") or reduced.
// Its body is a list of phases, run in order for each outer index:
//   - a reduce phase evaluates straight-line code at every domain point and folds one value
//     over the reduced axes into a slot (one value per outer index);
//   - a store phase evaluates code at every domain point ("full") or at every outer index
//     ("outer") and writes values to output buffers.
// Later phases read earlier slots, which is how `x - max(x)` or softmax fit in one kernel.
// Loads and stores are strided accesses over the domain; broadcasting is a zero stride.
// Scalars that come from the user's program (x * alpha, a full() value, a clamp bound, a random
// seed, a pad value) are scalar parameters, not literals: the kernel names their dtype and
// position and each launch passes the values, so a loop whose values change reuses one compiled
// kernel. Const is kept for the constants lowering makes itself (pad bounds).
//
// Kernels of the same structure produce the same IR (buffers are numbered in order of first
// use, extent-1 axes are dropped and mergeable axes merged), so key() is the cache key.
#pragma once

#include <cstdint>
#include <cstring>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "index_map.hpp"
#include "ops.hpp"

namespace lazytensor::detail {
class StaticKernel;
}

namespace lazytensor::detail::ir {

#define LAZYTENSOR_IR_OPS(X) \
    X(Load, "load")          \
    X(Index, "index")        \
    X(Const, "const")        \
    X(Param, "param")        \
    X(Slot, "slot")          \
    X(Unary, "unary")        \
    X(Binary, "binary")      \
    X(Where, "where")        \
    X(Cast, "cast")

enum class Op : std::uint8_t {
#define LAZYTENSOR_X(name, text) name,
    LAZYTENSOR_IR_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

/// One SSA instruction; operands are indices of earlier instructions of the same phase.
///   - Load reads parameter `arg` at `access`. With b >= 0 it is a gather: the element index
///     gains clamp(value of b, 0, dyn_extent - 1) * dyn_stride (b is int64). With c >= 0 it is
///     gated: where the bool value of c is false it reads nothing and gives 0 (padding).
///   - Index is the int64 value offset + sum_j strides[j] * d_j of `access` (no memory read).
///   - Param is scalar parameter `arg` of the launch (Kernel::scalars), in `dtype`.
struct Instr {
    Op op = Op::Const;
    DType dtype = DType::Float32;
    std::int32_t a = -1, b = -1, c = -1;
    UnaryOp unary = UnaryOp::Neg;
    BinaryOp binary = BinaryOp::Add;
    std::int32_t arg = -1;  // Load: parameter index; Param: scalar index; Slot: index of the reduce phase
    Access access;          // Load, Index
    std::int64_t dyn_stride = 0, dyn_extent = 0;  // Load with b >= 0
    Scalar value;           // Const

    bool plain_load() const { return op == Op::Load && b < 0 && c < 0; }
    /// A value that is the same at every point of the domain, known before the kernel runs.
    bool is_scalar() const { return op == Op::Const || op == Op::Param; }
};

struct Store {
    std::int32_t param = -1;
    std::int32_t value = -1;
    Access access;
};

struct Phase {
    enum class Kind : std::uint8_t { Reduce, Store };
    Kind kind = Kind::Store;
    bool outer = false;  // runs once per outer index instead of over the whole domain
    std::vector<Instr> instrs;
    ReduceOp reduce_op = ReduceOp::Sum;  // Reduce
    std::int32_t reduce_value = -1;      // Reduce: the instruction folded into the slot
    std::vector<Store> stores;           // Store
};

struct Param {
    DType dtype = DType::Float32;
    bool output = false;
};

struct Kernel {
    Shape domain;
    std::vector<bool> reduced;  // per domain axis
    std::vector<Param> params;
    std::vector<DType> scalars;  // scalar parameters (Op::Param), passed by value at launch
    std::vector<Phase> phases;
    // The output is also read (an assign): no value may be written to it before the reads of
    // its block are done, and its buffer may be passed as an input too (no restrict).
    bool in_place = false;
    // A compiled loop that may compute this kernel (ir/static_kernel.hpp); kernels with one
    // are cached apart from kernels without, which stay interpreted.
    const StaticKernel* candidate = nullptr;

    bool has_reduction() const {
        for (bool r : reduced)
            if (r) return true;
        return false;
    }
};

// ------------------------------------------------------------------------------- normalization

/// Calls f(access) for every load and store of the kernel.
template <class F>
void for_each_access(Kernel& k, F&& f) {
    for (auto& phase : k.phases) {
        for (auto& in : phase.instrs)
            if (in.op == Op::Load || in.op == Op::Index) f(in.access);
        for (auto& st : phase.stores) f(st.access);
    }
}

/// Drops extent-1 axes and merges neighbouring axes that every access walks as one.
inline void normalize(Kernel& k) {
    // Drop extent-1 axes (unless that empties a domain of extent 0).
    for (std::size_t j = k.domain.size(); j-- > 0;) {
        if (k.domain[j] != 1) continue;
        k.domain.erase(j);
        k.reduced.erase(k.reduced.begin() + static_cast<std::ptrdiff_t>(j));
        for_each_access(k, [&](Access& a) { a.strides.erase(j); });
    }
    // Merge axis j into j+1 where, for every access, stride[j] == stride[j+1] * extent[j+1].
    for (std::size_t j = k.domain.size(); j-- > 1;) {
        const std::size_t i = j - 1;
        if (k.reduced[i] != k.reduced[j]) continue;
        bool mergeable = true;
        for_each_access(k, [&](Access& a) { mergeable = mergeable && a.strides[i] == a.strides[j] * k.domain[j]; });
        if (!mergeable) continue;
        k.domain[i] *= k.domain[j];
        k.domain.erase(j);
        k.reduced.erase(k.reduced.begin() + static_cast<std::ptrdiff_t>(j));
        for_each_access(k, [&](Access& a) {
            a.strides[i] = a.strides[j];
            a.strides.erase(j);
        });
    }
}

// -------------------------------------------------------------------------------- key & printing

/// Appends the bytes of values to a key. (Every realize writes its graph's signature: a put
/// is a bounds check and a memcpy, not a call into std::string.)
class KeyWriter {
public:
    KeyWriter() { out_.resize(1024); }  // one allocation for most graphs (a 3-op graph needs about 300 bytes)
    template <class T>
    void put(const T& v) {
        static_assert(std::is_trivially_copyable_v<T>);
        if (size_ + sizeof(T) > out_.size()) out_.resize(2 * out_.size() + sizeof(T));
        std::memcpy(&out_[size_], &v, sizeof(T));
        size_ += sizeof(T);
    }
    template <std::size_t N>
    void put_list(const SmallVector<std::int64_t, N>& list) {
        put(static_cast<std::uint32_t>(list.size()));
        for (auto v : list) put(v);
    }
    std::string take() {
        out_.resize(size_);
        size_ = 0;
        return std::move(out_);
    }

private:
    std::string out_;
    std::size_t size_ = 0;
};

/// A kernel copying a tensor of `shape`, read at `in`, into a contiguous buffer (parameter 1):
/// how an item that needs a plain layout (a GEMM through BLAS, a scan) reads any other.
inline Kernel contiguous_copy(DType dtype, const Shape& shape, const Access& in) {
    Kernel k;
    k.domain = shape;
    k.reduced.assign(k.domain.size(), false);
    k.params = {Param{dtype, false}, Param{dtype, true}};
    Instr load;
    load.op = Op::Load;
    load.dtype = dtype;
    load.arg = 0;
    load.access = in;
    Phase store;
    store.instrs.push_back(load);
    store.stores.push_back(Store{1, 0, Access{0, contiguous_strides(shape)}});
    k.phases.push_back(std::move(store));
    normalize(k);
    return k;
}

/// A byte string equal for kernels of equal structure: the compilation cache key.
inline std::string key(const Kernel& k) {
    KeyWriter w;
    w.put(k.candidate != nullptr);
    w.put(k.in_place);
    w.put_list(k.domain);
    for (bool r : k.reduced) w.put(r);
    w.put(static_cast<std::uint32_t>(k.params.size()));
    for (auto& p : k.params) {
        w.put(p.dtype);
        w.put(p.output);
    }
    w.put(static_cast<std::uint32_t>(k.scalars.size()));
    for (DType t : k.scalars) w.put(t);
    for (auto& phase : k.phases) {
        w.put(phase.kind);
        w.put(phase.outer);
        w.put(phase.reduce_op);
        w.put(phase.reduce_value);
        w.put(static_cast<std::uint32_t>(phase.instrs.size()));
        for (auto& in : phase.instrs) {
            w.put(in.op);
            w.put(in.dtype);
            w.put(in.a);
            w.put(in.b);
            w.put(in.c);
            w.put(in.arg);
            if (in.op == Op::Unary) w.put(in.unary);
            if (in.op == Op::Binary) w.put(in.binary);
            if (in.op == Op::Load || in.op == Op::Index) {
                w.put(in.access.offset);
                w.put_list(in.access.strides);
                w.put(in.dyn_stride);
                w.put(in.dyn_extent);
            }
            if (in.op == Op::Const) {
                w.put(in.value.dtype);
                w.put(in.value.f);
                w.put(in.value.i);
            }
        }
        w.put(static_cast<std::uint32_t>(phase.stores.size()));
        for (auto& st : phase.stores) {
            w.put(st.param);
            w.put(st.value);
            w.put(st.access.offset);
            w.put_list(st.access.strides);
        }
    }
    return w.take();
}

inline const char* op_text(Op op) {
    switch (op) {
#define LAZYTENSOR_X(name, text) \
    case Op::name: return text;
        LAZYTENSOR_IR_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return "?";
}

inline std::ostream& print_access(std::ostream& out, const Access& a) {
    out << "[" << a.offset;
    for (std::size_t j = 0; j < a.strides.size(); ++j) out << (j ? ", " : " + ") << a.strides[j] << "*d" << j;
    return out << "]";
}

/// A readable listing of the kernel (LAZYTENSOR_DEBUG=2).
inline std::string to_string(const Kernel& k) {
    std::ostringstream out;
    out << "    domain " << k.domain << ", reduced axes {";
    bool first = true;
    for (std::size_t j = 0; j < k.reduced.size(); ++j)
        if (k.reduced[j]) {
            out << (first ? "" : ", ") << "d" << j;
            first = false;
        }
    out << "}\n";
    for (std::size_t p = 0; p < k.params.size(); ++p)
        out << "    p" << p << ": " << (k.params[p].output ? "out " : "in  ") << k.params[p].dtype << "\n";
    for (std::size_t s = 0; s < k.scalars.size(); ++s) out << "    s" << s << ": scalar " << k.scalars[s] << "\n";
    for (std::size_t p = 0; p < k.phases.size(); ++p) {
        const Phase& ph = k.phases[p];
        out << "    phase " << p << ": "
            << (ph.kind == Phase::Kind::Reduce ? std::string("reduce ") + op_name(ph.reduce_op) + " -> slot" + std::to_string(p)
                                               : std::string("store"))
            << (ph.outer ? " (per outer index)" : "") << "\n";
        for (std::size_t i = 0; i < ph.instrs.size(); ++i) {
            const Instr& in = ph.instrs[i];
            out << "      %" << i << " = ";
            switch (in.op) {
                case Op::Load:
                    out << "load p" << in.arg << " ";
                    print_access(out, in.access);
                    if (in.b >= 0) out << " + clamp(%" << in.b << ", 0, " << in.dyn_extent - 1 << ")*" << in.dyn_stride;
                    if (in.c >= 0) out << " if %" << in.c;
                    break;
                case Op::Index: out << "index "; print_access(out, in.access); break;
                case Op::Const: out << "const " << in.value; break;
                case Op::Param: out << "param s" << in.arg; break;
                case Op::Slot: out << "slot" << in.arg; break;
                case Op::Unary: out << op_name(in.unary) << " %" << in.a; break;
                case Op::Binary: out << op_name(in.binary) << " %" << in.a << ", %" << in.b; break;
                case Op::Where: out << "where %" << in.a << ", %" << in.b << ", %" << in.c; break;
                case Op::Cast: out << "cast %" << in.a; break;
            }
            out << " : " << in.dtype << "\n";
        }
        if (ph.kind == Phase::Kind::Reduce) out << "      fold %" << ph.reduce_value << "\n";
        for (auto& st : ph.stores) {
            out << "      store p" << st.param << " ";
            print_access(out, st.access);
            out << " = %" << st.value << "\n";
        }
    }
    return out.str();
}

}  // namespace lazytensor::detail::ir
