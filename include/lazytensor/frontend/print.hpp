// operator<< for tensors and expressions: the values (NumPy-style, summarized when large),
// then shape, dtype and device. Printing realizes.
#pragma once

#include <cstdint>
#include <ostream>
#include <sstream>
#include <type_traits>
#include <vector>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

template <class T>
void print_value(std::ostream& out, T v) {
    if constexpr (std::is_same_v<T, bool>) out << (v ? "true" : "false");
    else if constexpr (std::is_integral_v<T>) out << static_cast<long long>(v);
    else if constexpr (std::is_same_v<T, half>) out << static_cast<float>(v);
    else out << v;
}

template <class T>
void print_dims(std::ostream& out, const std::vector<T>& values, const Shape& shape, std::size_t dim,
                std::int64_t base, bool summarize, int indent) {
    if (dim == shape.size()) {
        print_value(out, values[static_cast<std::size_t>(base)]);
        return;
    }
    const std::int64_t n = shape[dim];
    std::int64_t inner = 1;
    for (std::size_t k = dim + 1; k < shape.size(); ++k) inner *= shape[k];
    out << '[';
    for (std::int64_t i = 0; i < n; ++i) {
        if (summarize && n > 6 && i == 3) {
            out << "...";
            i = n - 4;
            if (dim + 1 < shape.size()) out << ",\n" << std::string(static_cast<std::size_t>(indent + 1), ' ');
            else out << ", ";
            continue;
        }
        print_dims(out, values, shape, dim + 1, base + i * inner, summarize, indent + 1);
        if (i + 1 < n) {
            if (dim + 1 < shape.size()) out << ",\n" << std::string(static_cast<std::size_t>(indent + 1), ' ');
            else out << ", ";
        }
    }
    out << ']';
}

}  // namespace detail

/// Writes `tensor([...], shape=[...], dtype=..., device=...)` with NumPy-style nested rows (over
/// 1000 elements: only the first and last 3 along each axis longer than 6). Realizes x first.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
std::ostream& operator<<(std::ostream& out, const E& x) {
    using T = typename E::value_type;
    Tensor<T> t = x.realize();
    const std::vector<T> values = t.to_vector();
    std::ostringstream s;
    s << "tensor(";
    detail::print_dims(s, values, t.shape(), 0, 0, values.size() > 1000, 7);
    s << ", shape=" << t.shape() << ", dtype=" << dtype_of<T>() << ", device=" << t.device() << ")";
    return out << s.str();
}

}  // namespace lazytensor
