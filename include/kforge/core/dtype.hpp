// kforge/core/dtype.hpp — element types and their run-time tags.
//
// Storage types: float, half and bfloat16 (Eigen's, so that Eigen interop is
// free), double where the reference needs it. Arithmetic on half/bfloat16 is
// always done in float (the op's accumulation type).
//
// std::int32_t (dtype::i32) is the element type of integer operands: the ids
// of op::embedding, the indices op::topk writes. It is an operand's type, never
// a problem's (problem::type is the float type the op computes in; an operand
// of another type says so in its operand_spec, core/problem.hpp), so no float
// kernel is ever instantiated for it.
#pragma once

#include <Eigen/Core>

#include <cstdint>
#include <string_view>
#include <type_traits>

#include "kforge/core/error.hpp"

namespace kforge {

using half = Eigen::half;
using bfloat16 = Eigen::bfloat16;
using index_t = std::int64_t;

enum class dtype : std::uint8_t { f32, f16, bf16, f64, i32 };

template <class T>
inline constexpr bool is_storage_type_v =
    std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16> ||
    std::is_same_v<T, double> || std::is_same_v<T, std::int32_t>;

template <class T>
concept storage_type = is_storage_type_v<std::remove_const_t<T>>;

template <class T>
constexpr dtype dtype_of() {
  using U = std::remove_const_t<T>;
  static_assert(is_storage_type_v<U>, "kforge::dtype_of: not a kforge storage type");
  if constexpr (std::is_same_v<U, float>) return dtype::f32;
  else if constexpr (std::is_same_v<U, half>) return dtype::f16;
  else if constexpr (std::is_same_v<U, bfloat16>) return dtype::bf16;
  else if constexpr (std::is_same_v<U, std::int32_t>) return dtype::i32;
  else return dtype::f64;
}

constexpr std::string_view to_string(dtype d) {
  switch (d) {
    case dtype::f32: return "f32";
    case dtype::f16: return "f16";
    case dtype::bf16: return "bf16";
    case dtype::f64: return "f64";
    case dtype::i32: return "i32";
  }
  return "?";
}

constexpr std::size_t size_of(dtype d) {
  switch (d) {
    case dtype::f32: return 4;
    case dtype::f16: return 2;
    case dtype::bf16: return 2;
    case dtype::f64: return 8;
    case dtype::i32: return 4;
  }
  return 0;
}

/// True for the floating-point types (every type but i32).
constexpr bool is_float(dtype d) { return d != dtype::i32; }

inline dtype parse_dtype(std::string_view s) {
  if (s == "f32" || s == "float" || s == "float32") return dtype::f32;
  if (s == "f16" || s == "half" || s == "float16") return dtype::f16;
  if (s == "bf16" || s == "bfloat16") return dtype::bf16;
  if (s == "f64" || s == "double" || s == "float64") return dtype::f64;
  throw argument_error("kforge: unknown dtype '" + std::string(s) + "' (expected f32, f16 or bf16)");
}

/// Conversions between storage types and the float used for arithmetic.
template <class T>
inline float to_float(T v) {
  return static_cast<float>(v);
}
template <class T>
inline T from_float(float v) {
  return static_cast<T>(v);
}

}  // namespace kforge
