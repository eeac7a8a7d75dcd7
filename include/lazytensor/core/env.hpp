// SPDX-License-Identifier: MIT
// Environment variables, read by one set of rules: unset or empty means the default; a switch
// is 1/0, on/off, true/false or yes/no (any case); a number is a whole number in its range.
// Anything else is a ValueError naming the variable and the value: a typo never silently
// means something else.
#pragma once

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "error.hpp"

namespace lazytensor::detail {

/// The value of an environment variable, or null when it is unset or empty.
inline const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

/// `v` in lower case (variables' words are read in any case).
inline std::string env_lower(const char* v) {
    std::string s(v);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

/// A switch variable: `fallback` when unset or empty.
inline bool env_flag(const char* name, bool fallback) {
    const char* v = env(name);
    if (!v) return fallback;
    const std::string s = env_lower(v);
    if (s == "1" || s == "on" || s == "true" || s == "yes") return true;
    if (s == "0" || s == "off" || s == "false" || s == "no") return false;
    fail<ValueError>(name, "=", v, " is not a switch: use 1 or 0 (also on/off, true/false, yes/no)");
}

/// A whole-number variable in [lo, hi] (`what` names it in the error, e.g. "a thread count");
/// `fallback` when unset or empty.
inline long long env_int(const char* name, long long fallback, long long lo, long long hi, const char* what) {
    const char* v = env(name);
    if (!v) return fallback;
    bool digits = true;
    for (const char* c = *v == '-' ? v + 1 : v; *c; ++c) digits = digits && std::isdigit(static_cast<unsigned char>(*c));
    errno = 0;
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (!digits || *end || errno == ERANGE || n < lo || n > hi)
        fail<ValueError>(name, "=", v, " is not ", what, " (a whole number from ", lo, " to ", hi, ")");
    return n;
}

/// A variable naming one of `words` (any case): its index; `fallback` when unset or empty.
/// `choices` lists them for the error, with what each means, e.g. "auto, own (lazytensor's
/// kernel) or clblast".
inline int env_choice(const char* name, std::initializer_list<const char*> words, int fallback, const char* choices) {
    const char* v = env(name);
    if (!v) return fallback;
    const std::string s = env_lower(v);
    int index = 0;
    for (const char* w : words) {
        if (s == w) return index;
        ++index;
    }
    fail<ValueError>(name, "=", v, " is not a choice: use ", choices);
}

}  // namespace lazytensor::detail
