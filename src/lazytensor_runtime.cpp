// SPDX-License-Identifier: MIT
// The implementation unit of lazytensor::runtime: the engine's definitions, compiled once.
// Programs that link lazytensor::runtime build their own units with LAZYTENSOR_SEPARATE_RUNTIME
// (the target sets it), so they see only the seam's declarations (runtime/seam.hpp).
#define LAZYTENSOR_IMPLEMENTATION
#include <lazytensor.hpp>
