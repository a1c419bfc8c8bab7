// tests/special_values.hpp — NaN and infinity as floats, for the tests that
// poison outputs or feed non-finite inputs; one definition for the files that
// a unity batch compiles together (tests/CMakeLists.txt).
#pragma once

#include <limits>

namespace kft {
inline constexpr float nan_f = std::numeric_limits<float>::quiet_NaN();
inline constexpr float inf_f = std::numeric_limits<float>::infinity();
}  // namespace kft
