// kforge/cpu/common.hpp — shared pieces of the CPU backend's op files.
#pragma once

#include <type_traits>

#include "kforge/core/dtype.hpp"
#include "kforge/cpu/config.hpp"

namespace kforge::cpu::detail {

/// Element types the CPU kernels compute (in f32): float, half, bfloat16.
template <class T>
concept cpu_element = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

}  // namespace kforge::cpu::detail
