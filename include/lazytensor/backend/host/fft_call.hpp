// SPDX-License-Identifier: MIT
// An fft item (ir/fft.hpp) on host memory through the host FFT engine (fft.hpp): the host
// backend's FFT, and every other backend's fallback through host copies.
#pragma once

#include <complex>
#include <cstdint>
#include <vector>

#include "../../ir/fft.hpp"
#include "fft.hpp"

namespace lazytensor::detail::host {

namespace fft_call_detail {

/// A row-major layout of `shape` (strides in elements).
inline fft::Layout row_major(const Shape& shape) {
    fft::Layout l;
    l.shape.assign(shape.begin(), shape.end());
    l.strides.assign(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;) l.strides[d - 1] = l.strides[d] * shape[d];
    return l;
}

template <class T>
void run(const ir::Fft& call, const void* in, void* out, ThreadPool* pool) {
    using C = std::complex<T>;
    const fft::Layout real = row_major(call.shape), complex = row_major(call.complex_shape());
    if (numel(call.shape) == 0) return;
    const T scale = static_cast<T>(call.scale);
    switch (call.kind) {
        case FftKind::C2C:
            fft::c2c_axes<T>(static_cast<const C*>(in), complex, static_cast<C*>(out), complex, call.axes,
                             call.inverse ? fft::Direction::inverse : fft::Direction::forward, scale, pool);
            break;
        case FftKind::R2C:
            fft::r2c_axes<T>(static_cast<const T*>(in), real, static_cast<C*>(out), complex, call.axes, scale, pool);
            break;
        case FftKind::C2R:
            fft::c2r_axes<T>(static_cast<const C*>(in), complex, static_cast<T*>(out), real, call.axes, scale, pool);
            break;
    }
}

}  // namespace fft_call_detail

/// Runs `call` from `in` into `out` (contiguous host memory; they may not overlap).
inline void run_fft(const ir::Fft& call, const void* in, void* out, ThreadPool* pool) {
    if (call.dtype == DType::Float64)
        fft_call_detail::run<double>(call, in, out, pool);
    else
        fft_call_detail::run<float>(call, in, out, pool);
}

}  // namespace lazytensor::detail::host
