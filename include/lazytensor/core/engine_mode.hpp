// SPDX-License-Identifier: MIT
// How a unit sees the engine (runtime/seam.hpp tells the modes apart): LAZYTENSOR_ENGINE_API
// marks the engine's functions, inline in header-only mode, external ones otherwise, and
// LAZYTENSOR_ENGINE_DEFINITIONS says whether this unit holds their definitions. Any layer that
// defines an engine function (the graph builders, reverse mode) uses them.
//
// A program must not mix header-only units with separate-runtime ones: the link fails, naming
// lazytensor_ERROR_a_unit_is_header_only_while_another_uses_LAZYTENSOR_SEPARATE_RUNTIME; a
// separate-runtime program without an implementation unit fails to link, naming
// lazytensor_ERROR_LAZYTENSOR_SEPARATE_RUNTIME_needs_one_unit_with_LAZYTENSOR_IMPLEMENTATION
// (GCC and Clang with an ELF linker; elsewhere these checks are absent).
#pragma once

#if defined(LAZYTENSOR_IMPLEMENTATION)
#define LAZYTENSOR_ENGINE_DEFINITIONS 1
#define LAZYTENSOR_ENGINE_API
#elif defined(LAZYTENSOR_SEPARATE_RUNTIME)
#define LAZYTENSOR_ENGINE_DEFINITIONS 0
#define LAZYTENSOR_ENGINE_API
#else
#define LAZYTENSOR_ENGINE_DEFINITIONS 1
#define LAZYTENSOR_ENGINE_API inline
#endif

#if defined(__GNUC__) && defined(__ELF__)
#if !defined(LAZYTENSOR_IMPLEMENTATION) && !defined(LAZYTENSOR_SEPARATE_RUNTIME)
// Header-only: every unit defines this symbol in one COMDAT group (so header-only units link
// together), as a global symbol that clashes with the implementation unit's plain definition.
__asm__(".pushsection .rodata.lazytensor_mode_marker,\"aG\",@progbits,lazytensor_mode_marker,comdat\n"
        ".globl lazytensor_ERROR_a_unit_is_header_only_while_another_uses_LAZYTENSOR_SEPARATE_RUNTIME\n"
        "lazytensor_ERROR_a_unit_is_header_only_while_another_uses_LAZYTENSOR_SEPARATE_RUNTIME: .byte 0\n"
        ".popsection\n");
#elif !defined(LAZYTENSOR_IMPLEMENTATION)
// Separate runtime: every unit refers to a symbol that only the implementation unit defines.
extern "C" const char lazytensor_ERROR_LAZYTENSOR_SEPARATE_RUNTIME_needs_one_unit_with_LAZYTENSOR_IMPLEMENTATION;
namespace lazytensor::detail {
namespace {
[[maybe_unused]] __attribute__((used)) const char* const separate_runtime_link_check =
    &lazytensor_ERROR_LAZYTENSOR_SEPARATE_RUNTIME_needs_one_unit_with_LAZYTENSOR_IMPLEMENTATION;
}  // namespace
}  // namespace lazytensor::detail
#endif
#endif
