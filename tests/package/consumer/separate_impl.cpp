// SPDX-License-Identifier: MIT
// The implementation unit of a plain compile line (no CMake): the engine's definitions.
#define LAZYTENSOR_IMPLEMENTATION
#include <lazytensor.hpp>
