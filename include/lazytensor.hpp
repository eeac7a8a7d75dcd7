// SPDX-License-Identifier: MIT
// lazytensor: lazy tensor expressions in C++17, fused into kernels and run on a SIMD host
// interpreter or as generated OpenCL C on OpenCL devices.
//
//   #include <lazytensor.hpp>
//   namespace lt = lazytensor;
//   lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
//   lt::Tensor<float> c = lt::exp(a) * 0.5f + 1.0f;   // lazy
//   std::vector<float> v = c.to_vector();             // scheduled, fused, run
//
// To compile the engine once instead of in every unit: build every unit with
// LAZYTENSOR_SEPARATE_RUNTIME defined, and define LAZYTENSOR_IMPLEMENTATION before this include in
// exactly one of them (CMake: link lazytensor::runtime). See runtime/seam.hpp.
#pragma once

#include "lazytensor/core/version.hpp"
#include "lazytensor/core/config.hpp"
#include "lazytensor/core/dtype.hpp"
#include "lazytensor/core/error.hpp"
#include "lazytensor/core/shape.hpp"
#include "lazytensor/frontend/autodiff.hpp"
#include "lazytensor/frontend/composites.hpp"
#include "lazytensor/frontend/conv.hpp"
#include "lazytensor/frontend/creation.hpp"
#include "lazytensor/frontend/decompositions.hpp"
#include "lazytensor/frontend/dist.hpp"
#include "lazytensor/frontend/blob.hpp"
#include "lazytensor/frontend/complex.hpp"
#include "lazytensor/frontend/einsum.hpp"
#include "lazytensor/frontend/expr.hpp"
#include "lazytensor/frontend/extra_functions.hpp"
#include "lazytensor/frontend/fft.hpp"
#include "lazytensor/frontend/functions.hpp"
#include "lazytensor/frontend/linalg.hpp"
#include "lazytensor/frontend/movement.hpp"
#include "lazytensor/frontend/nn.hpp"
#include "lazytensor/frontend/npy.hpp"
#include "lazytensor/frontend/assign.hpp"
#include "lazytensor/frontend/random.hpp"
#include "lazytensor/frontend/sharded.hpp"
#include "lazytensor/frontend/sorting.hpp"
#include "lazytensor/frontend/subscript.hpp"
#include "lazytensor/frontend/print.hpp"
#include "lazytensor/frontend/static_kernel.hpp"
#include "lazytensor/frontend/tensor.hpp"
#include "lazytensor/runtime/seam.hpp"

// The engine: the seam's definitions, in header-only mode in every unit, with
// LAZYTENSOR_IMPLEMENTATION in one (only this header pulls it in; the front end sees the seam).
#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "lazytensor/runtime/engine.hpp"
#endif

// The MPI transport of lt::dist, where the program asks for it.
#if LAZYTENSOR_MPI
#include "lazytensor/dist/mpi.hpp"
#endif

/// \namespace lazytensor
/// The public API, spelled `lt::` in the guides (`namespace lt = lazytensor;`): tensors and
/// expressions, their functions and operators, devices, schedules and errors.

/// \namespace lazytensor::linalg
/// PyTorch's torch.linalg functions with their names, arguments and results, run by LAPACK
/// (docs/linear-algebra.md).

/// \namespace lazytensor::dist
/// Collectives over the processes of an MPI job, lazy like every op (docs/distributed.md).
