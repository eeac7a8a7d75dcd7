// SPDX-License-Identifier: MIT
// How tensors print (frontend/print.hpp declares it): compiled in header-only units and in the
// LAZYTENSOR_IMPLEMENTATION unit, as the engine is.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "print.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: frontend/print_definitions.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

namespace lazytensor {

namespace detail {

/// The positions printed along each axis: all of them, or, when the tensor is summarized, the
/// first and last edgeitems of an axis longer than 2 * edgeitems (cut[k]: "..." goes between).
struct ShownIndices {
    std::vector<std::vector<std::int64_t>> index;
    std::vector<bool> cut;
};

inline ShownIndices shown_indices(const Shape& shape, const PrintOptions& options) {
    const bool summarize = lazytensor::numel(shape) > options.threshold;
    ShownIndices shown;
    for (std::int64_t n : shape) {
        const std::int64_t e = options.edgeitems;
        const bool cut = summarize && n - e > e;
        std::vector<std::int64_t> index;
        for (std::int64_t i = 0; i < n; ++i) {
            if (cut && i == e) i = n - e;
            index.push_back(i);
        }
        shown.index.push_back(std::move(index));
        shown.cut.push_back(cut);
    }
    return shown;
}

/// The buffer position of each shown element (row-major over the shown grid) of a tensor whose
/// element (i0, i1, ...) is at offset + i0 * strides[0] + ...
inline std::vector<std::int64_t> shown_positions(const Strides& strides, std::int64_t offset, const ShownIndices& shown) {
    std::vector<std::int64_t> positions{offset};
    for (std::size_t k = 0; k < shown.index.size(); ++k) {
        std::vector<std::int64_t> next;
        next.reserve(positions.size() * shown.index[k].size());
        for (std::int64_t p : positions)
            for (std::int64_t i : shown.index[k]) next.push_back(p + i * strides[k]);
        positions = std::move(next);
    }
    return positions;
}

/// The runs that cover `positions`: sorted, with gaps of up to 64 elements read through, so
/// that a summarized print makes few reads of a few elements each.
inline std::vector<ReadRun> read_runs(std::vector<std::int64_t> positions) {
    std::sort(positions.begin(), positions.end());
    std::vector<ReadRun> runs;
    for (std::int64_t p : positions) {
        if (!runs.empty() && p - (runs.back().first + runs.back().count) <= 64)
            runs.back().count = std::max(runs.back().count, p - runs.back().first + 1);
        else
            runs.push_back(ReadRun{p, 1});
    }
    return runs;
}

LAZYTENSOR_ENGINE_API std::vector<ReadRun> print_reads(const Shape& shape, const Strides& strides, std::int64_t offset,
                                                       const PrintOptions& options) {
    if (lazytensor::numel(shape) == 0) return {};
    return read_runs(shown_positions(strides, offset, shown_indices(shape, options)));
}

/// The shown elements of a realized node, row-major over the shown grid, read run by run.
template <class T>
std::vector<T> read_shown(const Node& n, const ShownIndices& shown) {
    using Stored = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
    const std::vector<std::int64_t> positions = shown_positions(n.strides, n.offset, shown);
    const std::vector<ReadRun> runs = read_runs(positions);
    std::vector<std::int64_t> start(runs.size());  // of each run in `staged`
    std::int64_t total = 0;
    for (std::size_t r = 0; r < runs.size(); ++r) start[r] = total, total += runs[r].count;
    std::vector<Stored> staged(static_cast<std::size_t>(total));
    for (std::size_t r = 0; r < runs.size(); ++r)
        download(*n.buffer, static_cast<std::size_t>(runs[r].first) * sizeof(Stored), &staged[static_cast<std::size_t>(start[r])],
                 static_cast<std::size_t>(runs[r].count) * sizeof(Stored));
    std::vector<T> out;
    out.reserve(positions.size());
    for (std::int64_t p : positions) {
        const auto run = std::upper_bound(runs.begin(), runs.end(), p, [](std::int64_t v, const ReadRun& r) { return v < r.first; }) - 1;
        const std::size_t r = static_cast<std::size_t>(run - runs.begin());
        out.push_back(static_cast<T>(staged[static_cast<std::size_t>(start[r] + p - run->first)]));
    }
    return out;
}

inline std::string format_double(const char* format, int precision, double v) {
    const int n = std::snprintf(nullptr, 0, format, precision, v);
    std::string s(static_cast<std::size_t>(n) + 1, '\0');
    std::snprintf(&s[0], s.size(), format, precision, v);
    s.pop_back();
    return s;
}

/// Floating values as PyTorch writes them: all whole numbers as "3."; otherwise `precision`
/// digits after the point; scientific notation when the magnitudes of the finite non-zero
/// values span more than a factor 1000, or pass 1e8, or (not whole) fall below 1e-4. NaN and
/// infinities as nan, inf, -inf.
inline std::vector<std::string> format_floating(const std::vector<double>& values, int precision) {
    bool whole = true, any = false;
    double lo = 0, hi = 0;
    for (double v : values) {
        if (!std::isfinite(v) || v == 0) continue;
        const double a = std::fabs(v);
        lo = any ? std::min(lo, a) : a;
        hi = any ? std::max(hi, a) : a;
        any = true;
        whole = whole && v == std::ceil(v);
    }
    const bool scientific = any && (hi / lo > 1000 || hi > 1e8 || (!whole && lo < 1e-4));
    std::vector<std::string> out;
    out.reserve(values.size());
    for (double v : values) {
        if (std::isnan(v)) out.push_back("nan");
        else if (std::isinf(v)) out.push_back(v > 0 ? "inf" : "-inf");
        else if (scientific) out.push_back(format_double("%.*e", precision, v));
        else if (whole) out.push_back(format_double("%.*f", 0, v) + ".");
        else out.push_back(format_double("%.*f", precision, v));
    }
    return out;
}

template <class T>
std::vector<std::string> format_values(const std::vector<T>& values, int precision) {
    std::vector<std::string> out;
    if constexpr (is_floating_v<T>) {
        std::vector<double> v(values.size());
        for (std::size_t i = 0; i < values.size(); ++i) v[i] = static_cast<double>(static_cast<value_type_t<T>>(values[i]));
        return format_floating(v, precision);
    } else {
        for (T v : values) {
            if constexpr (std::is_same_v<T, bool>) out.push_back(v ? "true" : "false");
            else out.push_back(std::to_string(+v));  // + : int8 and uint8 as numbers; uint64 as unsigned
        }
    }
    return out;
}

/// Writes the nested rows of axis `dim` onward, whose "[" is at column `indent`; `next` walks
/// the cells (each padded to `width`) in row-major order.
inline void layout_rows(std::string& out, const std::vector<std::string>& cells, std::size_t width, const ShownIndices& shown,
                        std::size_t dim, std::size_t& next, std::int64_t indent, const PrintOptions& options) {
    const std::size_t ndim = shown.index.size();
    const auto pad = [&](const std::string& s) { return std::string(width - std::min(width, s.size()), ' ') + s; };
    if (dim == ndim) {
        out += pad(cells[next++]);
        return;
    }
    const std::vector<std::int64_t>& index = shown.index[dim];
    const std::size_t gap = shown.cut[dim] ? static_cast<std::size_t>(options.edgeitems) : index.size() + 1;
    out += '[';
    if (dim + 1 == ndim) {
        // One row, wrapped to the line width; continuation lines start under the first value.
        std::vector<std::string> items;
        for (std::size_t i = 0; i < index.size(); ++i) {
            if (i == gap) items.push_back("...");
            items.push_back(pad(cells[next++]));
        }
        const std::size_t per_line = static_cast<std::size_t>(
            std::max<std::int64_t>(1, (options.linewidth - indent) / static_cast<std::int64_t>(width + 2)));
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out += i % per_line == 0 ? ",\n" + std::string(static_cast<std::size_t>(indent + 1), ' ') : ", ";
            out += items[i];
        }
    } else {
        const std::string separator = "," + std::string(ndim - dim - 1, '\n') + std::string(static_cast<std::size_t>(indent + 1), ' ');
        for (std::size_t i = 0; i < index.size(); ++i) {
            if (i > 0) out += separator;
            if (i == gap) out += "..." + separator;
            layout_rows(out, cells, width, shown, dim + 1, next, indent + 1, options);
        }
    }
    out += ']';
}

template <class T>
std::string format_tensor_of(const Node& n, const PrintOptions& options) {
    std::string out = "tensor(";
    if (lazytensor::numel(n.shape) == 0) {
        out += "[]";
    } else {
        const ShownIndices shown = shown_indices(n.shape, options);
        const std::vector<std::string> cells = format_values(read_shown<T>(n, shown), options.precision);
        std::size_t width = 0;
        for (const std::string& c : cells) width = std::max(width, c.size());
        std::size_t next = 0;
        layout_rows(out, cells, width, shown, 0, next, 7, options);
    }
    return concat(out, ", shape=", n.shape, ", dtype=", n.dtype, ", device=", n.device, ")");
}

LAZYTENSOR_ENGINE_API std::string format_complex_tensor(const Node& re, const Node& im, DType dtype,
                                                        const PrintOptions& options) {
    std::string out = "tensor(";
    if (lazytensor::numel(re.shape) == 0) {
        out += "[]";
    } else {
        const ShownIndices shown = shown_indices(re.shape, options);
        const auto read = [&](const Node& n) {
            return visit_dtype(n.dtype, [&](auto tag) {
                using T = typename decltype(tag)::type;
                std::vector<double> v;
                for (T x : read_shown<T>(n, shown)) v.push_back(static_cast<double>(x));
                return v;
            });
        };
        const std::vector<double> re_values = read(re), im_values = read(im);
        // One notation for both parts (as PyTorch): the real parts and the imaginary parts'
        // magnitudes formatted together.
        std::vector<double> together = re_values;
        for (double v : im_values) together.push_back(std::fabs(v));
        const std::vector<std::string> formatted = format_floating(together, options.precision);
        const std::vector<std::string> re_cells(formatted.begin(), formatted.begin() + static_cast<std::ptrdiff_t>(re_values.size())),
            im_cells(formatted.begin() + static_cast<std::ptrdiff_t>(re_values.size()), formatted.end());
        std::size_t re_width = 0, im_width = 0;
        for (const std::string& c : re_cells) re_width = std::max(re_width, c.size());
        for (const std::string& c : im_cells) im_width = std::max(im_width, c.size());
        std::vector<std::string> cells(re_cells.size());
        for (std::size_t i = 0; i < cells.size(); ++i)  // "1.5000+2.0000j", the imaginary column left-aligned
            cells[i] = std::string(re_width - re_cells[i].size(), ' ') + re_cells[i] + (std::signbit(im_values[i]) ? "-" : "+") +
                       im_cells[i] + "j" + std::string(im_width - im_cells[i].size(), ' ');
        std::size_t next = 0;
        layout_rows(out, cells, re_width + im_width + 2, shown, 0, next, 7, options);
    }
    return concat(out, ", shape=", re.shape, ", dtype=", dtype, ", device=", re.device, ")");
}

LAZYTENSOR_ENGINE_API std::string format_tensor(const Node& n, const PrintOptions& options) {
    return visit_dtype(n.dtype, [&](auto tag) { return format_tensor_of<typename decltype(tag)::type>(n, options); });
}

}  // namespace detail

}  // namespace lazytensor
