// SPDX-License-Identifier: MIT
// Error types. Every message names the operation and the user's values (shapes, axes, dtypes,
// devices) so that the mistake can be found without a debugger.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace lazytensor {

/// Base of every error lazytensor throws. Catch this to catch them all.
class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Shapes that do not fit together: broadcasting, reshape, creation from data.
class ShapeError : public Error {
public:
    using Error::Error;
};

/// An axis outside the tensor's dimensions, or given twice.
class AxisError : public Error {
public:
    using Error::Error;
};

/// A value that is not valid for the operation: item() of a tensor that is not one element,
/// a slice step of 0, max/min over an empty axis, a negative width or count, an empty Tensor.
class ValueError : public Error {
public:
    using Error::Error;
};

/// An index outside the extent it indexes (select, gather, index_select, scatter_add, one_hot,
/// cross_entropy labels).
class IndexError : public Error {
public:
    using Error::Error;
};

/// An element type that is not the one asked for, or not one lazytensor has: a .npy file or a
/// DLPack tensor of another dtype than the Tensor<T> it goes into, or of a dtype such as complex64.
class DTypeError : public Error {
public:
    using Error::Error;
};

/// A file that cannot be opened, read or written, or whose contents are not what its format
/// says (a truncated or corrupt .npy file). The message names the file.
class FileError : public Error {
public:
    using Error::Error;
};

/// A linear-algebra routine that cannot complete for the values it was given (lt::linalg): a
/// matrix that is not positive definite (cholesky) or is singular (inv, solve,
/// solve_triangular), or a decomposition that does not converge. Thrown by the realize that
/// runs it, naming the function, the batch element and LAPACK's pivot; every tensor is left as
/// it was.
class LinAlgError : public Error {
public:
    using Error::Error;
};

/// Processes of one group (lt::dist) that disagree: ranks that realize different collectives
/// (operations, dtypes, shapes, order), or a rank whose realize failed before its collectives
/// started. Every rank throws it, naming what each rank had; no data has moved and every tensor
/// is left as it was.
class DistributedError : public Error {
public:
    using Error::Error;
};

/// A device that is unknown, unavailable, or mixed with another in one expression.
class DeviceError : public Error {
public:
    using Error::Error;
};

/// A failure inside a backend (allocation, compilation, launch).
class BackendError : public Error {
public:
    using Error::Error;
};

/// A device (or the host) ran out of memory, or an allocation would pass the limit set with
/// lt::set_memory_limit. Tensors that exist stay usable; free some and try again.
class OutOfMemoryError : public BackendError {
public:
    using BackendError::BackendError;
};

namespace detail {

template <class... Parts>
std::string concat(Parts&&... parts) {
    std::ostringstream out;
    (out << ... << std::forward<Parts>(parts));
    return out.str();
}

template <class E = Error, class... Parts>
[[noreturn]] void fail(Parts&&... parts) {
    throw E(concat(std::forward<Parts>(parts)...));
}

}  // namespace detail
}  // namespace lazytensor
