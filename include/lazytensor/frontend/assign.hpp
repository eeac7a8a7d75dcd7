// SPDX-License-Identifier: MIT
// In-place writes: Tensor::assign. The write is an Assign node, scheduled and lowered like any
// other (its kernel stores into the target's memory at the target's layout) and realized at
// once, after every lazy reader of that memory that is not part of the value (the seam's
// assign_into, runtime/engine.hpp).
#pragma once

#include "tensor.hpp"

namespace lazytensor {

/// Writes `value` into the tensor's memory now (declared, and described, in tensor.hpp).
template <class T>
template <class V>
Tensor<T>& Tensor<T>::assign(const V& value) {
    const detail::NodePtr target = build();  // ValueError for an empty handle
    if constexpr (detail::is_scalar_v<V>) detail::assign_into(target, detail::graph::Operand(detail::make_scalar(value)));
    else detail::assign_into(target, detail::graph::Operand(value.build()));
    return *this;
}

}  // namespace lazytensor
