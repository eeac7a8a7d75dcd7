// SPDX-License-Identifier: MIT
// The library's version: the one place it is written (CMake's project() reads it from here, and
// the single header is stamped with it).
#pragma once

#define LAZYTENSOR_VERSION_MAJOR 0
#define LAZYTENSOR_VERSION_MINOR 1
#define LAZYTENSOR_VERSION_PATCH 0
/// The version as one comparable number: major * 10000 + minor * 100 + patch.
#define LAZYTENSOR_VERSION (LAZYTENSOR_VERSION_MAJOR * 10000 + LAZYTENSOR_VERSION_MINOR * 100 + LAZYTENSOR_VERSION_PATCH)

namespace lazytensor {
/// The version of the headers in use, "major.minor.patch".
inline const char* version() {
#define LAZYTENSOR_STRINGIFY_(x) #x
#define LAZYTENSOR_STRINGIFY(x) LAZYTENSOR_STRINGIFY_(x)
    return LAZYTENSOR_STRINGIFY(LAZYTENSOR_VERSION_MAJOR) "." LAZYTENSOR_STRINGIFY(
        LAZYTENSOR_VERSION_MINOR) "." LAZYTENSOR_STRINGIFY(LAZYTENSOR_VERSION_PATCH);
#undef LAZYTENSOR_STRINGIFY
#undef LAZYTENSOR_STRINGIFY_
}
}  // namespace lazytensor
