// SPDX-License-Identifier: MIT
// Eigen interop, without copies: an Eigen matrix or vector as a tensor (lt::from_eigen) and a
// host tensor as an Eigen::Map (lt::as_eigen). Optional: lazytensor.hpp does not include it;
// include this where you use Eigen (it includes <Eigen/Core> and <lazytensor.hpp>).
#pragma once

#include <Eigen/Core>
#include <lazytensor.hpp>

#include <type_traits>
#include <utility>

namespace lazytensor {

/// The Eigen view of a tensor that lt::as_eigen returns: a row-major matrix map with the
/// tensor's strides (rows apart by the outer stride, columns by the inner one).
template <class T>
using EigenMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, Eigen::Unaligned,
                            Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
/// lt::as_const_eigen's: the same map, read-only.
template <class T>
using ConstEigenMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>,
                                 Eigen::Unaligned, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

namespace detail {

template <class T>
inline constexpr bool eigen_scalar_ok_v = dtype_traits<std::remove_const_t<T>>::supported &&
                                          !is_reduced_float_v<std::remove_const_t<T>>;

/// The map of `t`'s memory through `pointer` (Tensor::data or const_data): a 2-D tensor as it
/// is, a 1-D one as a column (n x 1).
template <class Map, class T, class P>
Map eigen_map(const Tensor<T>& t, P* (Tensor<T>::*pointer)() const, const char* op) {
    if (t.ndim() != 1 && t.ndim() != 2)
        fail<ShapeError>(op, ": needs a 1-D or 2-D tensor, got shape ", t.shape(), "; reshape it first");
    P* data = (t.*pointer)();
    const Strides s = t.strides();
    for (std::size_t k = 0; k < s.size(); ++k)
        if (s[k] < 0)
            fail<ValueError>(op, ": the tensor (shape ", t.shape(), ") has negative stride ", s[k], " on axis ", k,
                             " (a flipped view); Eigen maps take strides of 0 or more: map lt::contiguous(x) instead");
    const bool matrix = t.ndim() == 2;
    const Eigen::Index rows = t.shape()[0], cols = matrix ? t.shape()[1] : 1;
    return Map(data, rows, cols, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(s[0], matrix ? s[1] : 1));
}

/// A temporary tensor that alone holds its memory frees it at the end of the statement, and a
/// map of it would point at freed memory: a ValueError instead. (A temporary view, x.t(), shares
/// its memory with x and is mapped, as is user memory wrapped without a deleter.)
template <class T>
const Tensor<T>& outlives_map(const Tensor<T>& t, const char* op) {
    t.realize();
    const BufferPtr& buffer = t.node_ptr()->buffer;
    if (t.node_ptr().use_count() == 1 && buffer.use_count() == 1 && buffer->frees_memory())
        fail<ValueError>(op, ": the tensor (shape ", t.shape(), ") is a temporary that alone holds its memory, which "
                         "is freed at the end of the statement; keep the tensor in a variable and map that");
    return t;
}

}  // namespace detail

/// A tensor whose memory is the dense matrix or vector `m` (an Eigen::Matrix or Array, a Map, a
/// Ref, a Block with direct access), without a copy: a vector (one row or one column at compile
/// time, such as Eigen::VectorXf or m.col(0)) gives shape [size], anything else [rows, cols],
/// either storage order, with m's strides. Writes through the tensor (assign) change m, and
/// changes to m are seen by kernels that read it later. `m`'s memory must outlive every tensor
/// that uses it (do not resize m meanwhile); a const m gives a read-only tensor (see
/// lt::from_blob). A temporary matrix (it would be gone at once) and expressions without
/// memory of their own (a + b) do not compile.
template <class M>
auto from_eigen(M&& m) {
    using Plain = std::remove_cv_t<std::remove_reference_t<M>>;
    using Scalar = typename Plain::Scalar;
    static_assert(!(std::is_rvalue_reference_v<M&&> && std::is_base_of_v<Eigen::PlainObjectBase<Plain>, Plain>),
                  "lazytensor: from_eigen of a temporary Eigen matrix would point at memory freed at once; keep the "
                  "matrix in a variable");
    static_assert(int(Plain::Flags) & Eigen::DirectAccessBit,
                  "lazytensor: from_eigen needs an Eigen object with memory of its own (a Matrix, Array, Map, Ref or "
                  "Block of one), not an expression; evaluate it into a matrix first");
    static_assert(detail::eigen_scalar_ok_v<Scalar>,
                  "lazytensor: from_eigen needs a scalar lazytensor has: bool, int8_t to int64_t, uint8_t to uint64_t, "
                  "float or double (Eigen::half is not lt::half, Eigen::bfloat16 not lt::bfloat16)");
    const Eigen::Index inner = m.innerStride(), outer = m.outerStride();
    auto* data = m.data();
    if constexpr (Plain::IsVectorAtCompileTime) {
        return from_blob(data, Shape{static_cast<std::int64_t>(m.size())}, Strides{inner});
    } else {
        const Shape shape{static_cast<std::int64_t>(m.rows()), static_cast<std::int64_t>(m.cols())};
        const Strides strides = Plain::IsRowMajor ? Strides{outer, inner} : Strides{inner, outer};
        return from_blob(data, shape, strides);
    }
}

/// The realized host tensor `t` (realized first if it is lazy) as an Eigen map of its memory,
/// without a copy: a 2-D tensor as a rows x cols matrix, a 1-D one as a column (n x 1), with
/// the tensor's strides (0 on broadcast axes). Writes through the map change the tensor. Valid
/// while a tensor holding that memory lives, as data() is. ShapeError for other dimensions,
/// DeviceError off the host, ValueError for negative strides (a flipped view) or read-only
/// memory (use as_const_eigen).
template <class T>
EigenMap<T> as_eigen(const Tensor<T>& t) {
    static_assert(detail::eigen_scalar_ok_v<T>, "lazytensor: Eigen has no lazytensor::half or lazytensor::bfloat16 scalar; cast to float first");
    return detail::eigen_map<EigenMap<T>>(t, &Tensor<T>::data, "as_eigen");
}

/// as_eigen of a temporary tensor: a view of memory that other tensors hold; ValueError for a
/// temporary that alone holds its memory (lt::as_eigen(lt::softmax(x, 1))), as the map would
/// outlive it.
template <class T>
EigenMap<T> as_eigen(Tensor<T>&& t) {
    return as_eigen(detail::outlives_map(t, "as_eigen"));
}

/// as_eigen for reading only: read-only memory too.
template <class T>
ConstEigenMap<T> as_const_eigen(const Tensor<T>& t) {
    static_assert(detail::eigen_scalar_ok_v<T>, "lazytensor: Eigen has no lazytensor::half or lazytensor::bfloat16 scalar; cast to float first");
    return detail::eigen_map<ConstEigenMap<T>>(t, &Tensor<T>::const_data, "as_const_eigen");
}

/// as_const_eigen of a temporary tensor (see as_eigen's).
template <class T>
ConstEigenMap<T> as_const_eigen(Tensor<T>&& t) {
    return as_const_eigen(detail::outlives_map(t, "as_const_eigen"));
}

}  // namespace lazytensor
