// SPDX-License-Identifier: MIT
// operator<< for tensors and expressions, as PyTorch prints them: the values in aligned
// columns (summarized when large), then shape, dtype and device; and the print options.
// Printing realizes the tensor, then reads only the elements it shows.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "tensor.hpp"

namespace lazytensor {

/// How operator<< prints tensors; lt::set_print_options sets them for every thread. The
/// defaults are PyTorch's.
struct PrintOptions {
    /// Digits after the decimal point of floating values (in fixed and scientific notation).
    int precision = 4;
    /// A tensor of more elements than this is summarized: along each axis longer than
    /// 2 * edgeitems only the first and last `edgeitems` are shown (and read from the device).
    std::int64_t threshold = 1000;
    /// Elements shown at each end of a summarized axis.
    std::int64_t edgeitems = 3;
    /// Characters per line (counted from the line's start) before a row of values wraps.
    std::int64_t linewidth = 80;
};

namespace detail {

struct PrintOptionsState {
    std::mutex mutex;
    PrintOptions options;
};
inline PrintOptionsState& print_options_state() {
    static PrintOptionsState state;
    return state;
}

}  // namespace detail

/// The options operator<< prints with now (a copy: change it and pass it to set_print_options).
inline PrintOptions print_options() {
    auto& s = detail::print_options_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    return s.options;
}

/// Makes operator<< print with `options` from now on, in every thread. ValueError (and no
/// change) for a precision outside 0..30, a negative threshold, or an edgeitems or linewidth
/// below 1.
inline void set_print_options(const PrintOptions& options) {
    if (options.precision < 0 || options.precision > 30)
        detail::fail<ValueError>("lt::set_print_options: precision must be from 0 to 30 digits, got ", options.precision);
    if (options.threshold < 0)
        detail::fail<ValueError>("lt::set_print_options: threshold must be >= 0, got ", options.threshold);
    if (options.edgeitems < 1)
        detail::fail<ValueError>("lt::set_print_options: edgeitems must be >= 1, got ", options.edgeitems);
    if (options.linewidth < 1)
        detail::fail<ValueError>("lt::set_print_options: linewidth must be >= 1, got ", options.linewidth);
    auto& s = detail::print_options_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.options = options;
}

/// NumPy's and PyTorch's spelling: set_print_options(precision, threshold, edgeitems,
/// linewidth), where an option left out keeps its current value.
inline void set_print_options(int precision, std::optional<std::int64_t> threshold = std::nullopt,
                              std::optional<std::int64_t> edgeitems = std::nullopt,
                              std::optional<std::int64_t> linewidth = std::nullopt) {
    PrintOptions options = print_options();
    options.precision = precision;
    if (threshold) options.threshold = *threshold;
    if (edgeitems) options.edgeitems = *edgeitems;
    if (linewidth) options.linewidth = *linewidth;
    set_print_options(options);
}

namespace detail {

/// A run of consecutive buffer elements that printing reads.
struct ReadRun {
    std::int64_t first = 0;
    std::int64_t count = 0;
};

/// What printing a realized tensor of this layout reads from its buffer, with `options`.
LAZYTENSOR_ENGINE_API std::vector<ReadRun> print_reads(const Shape& shape, const Strides& strides, std::int64_t offset,
                                                       const PrintOptions& options);

/// `tensor([...], shape=[...], dtype=..., device=...)` for a realized node.
LAZYTENSOR_ENGINE_API std::string format_tensor(const Node& n, const PrintOptions& options);

}  // namespace detail

/// Writes `tensor([...], shape=[...], dtype=..., device=...)`: nested rows with values in
/// aligned columns, wrapped at print_options().linewidth; floating values with
/// print_options().precision digits (see lt::PrintOptions), integers as numbers, bools as
/// true/false. A tensor of more than print_options().threshold elements is summarized ("...")
/// and only the elements shown are read from its device. Realizes x first.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
std::ostream& operator<<(std::ostream& out, const E& x) {
    using T = typename E::value_type;
    Tensor<T> t = x.realize();
    return out << detail::format_tensor(*t.node_ptr(), print_options());
}

}  // namespace lazytensor

// The printing code: compiled in header-only units and in the implementation unit, never in a
// separate-runtime unit.
#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "print_definitions.hpp"
#endif
