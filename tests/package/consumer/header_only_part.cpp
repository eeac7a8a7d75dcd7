// SPDX-License-Identifier: MIT
// A header-only unit: linked into a separate-runtime program, it must fail to link (check_modes.cmake).
#include <lazytensor.hpp>

float header_only_sum() { return lazytensor::sum(lazytensor::arange<float>(4)).item(); }
