// kforge/ops/functions.hpp — the scalar functions ops are built from:
// activations (shared by unary ops and fused epilogues), binary functions and
// reductions. Every backend computes the same formulas; the GLSL sources mirror
// them line for line.
//
// NaN semantics follow PyTorch: activations, max/min and reductions propagate
// NaN (relu(NaN) = NaN, max(NaN, 1) = NaN).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

namespace kforge {

/// Element-wise functions of one argument. The first six are also the
/// activations a gemm or conv2d epilogue can fuse.
enum class fn : std::uint8_t { identity, relu, leaky_relu, gelu_tanh, gelu_erf, silu, exp, tanh, sigmoid, abs, neg };

/// Element-wise functions of two arguments.
enum class binop : std::uint8_t { add, sub, mul, div, max, min };

/// Reductions over one axis.
enum class reduce_fn : std::uint8_t { sum, mean, max, min };

constexpr std::string_view to_string(fn f) {
  switch (f) {
    case fn::identity: return "identity";
    case fn::relu: return "relu";
    case fn::leaky_relu: return "leaky_relu";
    case fn::gelu_tanh: return "gelu_tanh";
    case fn::gelu_erf: return "gelu";
    case fn::silu: return "silu";
    case fn::exp: return "exp";
    case fn::tanh: return "tanh";
    case fn::sigmoid: return "sigmoid";
    case fn::abs: return "abs";
    case fn::neg: return "neg";
  }
  return "?";
}
constexpr std::string_view to_string(binop f) {
  switch (f) {
    case binop::add: return "add";
    case binop::sub: return "sub";
    case binop::mul: return "mul";
    case binop::div: return "div";
    case binop::max: return "max";
    case binop::min: return "min";
  }
  return "?";
}
constexpr std::string_view to_string(reduce_fn f) {
  switch (f) {
    case reduce_fn::sum: return "sum";
    case reduce_fn::mean: return "mean";
    case reduce_fn::max: return "max";
    case reduce_fn::min: return "min";
  }
  return "?";
}

/// True for the functions a gemm/conv2d epilogue may fuse.
constexpr bool is_activation(fn f) { return f <= fn::silu; }

inline std::optional<fn> parse_fn(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(fn::neg); ++i)
    if (to_string(static_cast<fn>(i)) == s) return static_cast<fn>(i);
  if (s == "gelu_erf") return fn::gelu_erf;
  if (s == "none") return fn::identity;
  return std::nullopt;
}
inline std::optional<binop> parse_binop(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(binop::min); ++i)
    if (to_string(static_cast<binop>(i)) == s) return static_cast<binop>(i);
  return std::nullopt;
}
inline std::optional<reduce_fn> parse_reduce_fn(std::string_view s) {
  for (int i = 0; i <= static_cast<int>(reduce_fn::min); ++i)
    if (to_string(static_cast<reduce_fn>(i)) == s) return static_cast<reduce_fn>(i);
  return std::nullopt;
}

namespace math {

inline constexpr float sqrt_2_over_pi = 0.7978845608028654f;
inline constexpr float inv_sqrt_2 = 0.7071067811865476f;

inline float relu(float x) { return x < 0.0f ? 0.0f : x; }  // NaN passes through
inline float leaky_relu(float x, float slope) { return x < 0.0f ? slope * x : x; }
inline float gelu_tanh(float x) {
  return 0.5f * x * (1.0f + std::tanh(sqrt_2_over_pi * (x + 0.044715f * x * x * x)));
}
inline float gelu_erf(float x) { return 0.5f * x * (1.0f + std::erf(x * inv_sqrt_2)); }
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float silu(float x) { return x * sigmoid(x); }

/// Applies an element-wise function; `slope` is leaky_relu's negative slope.
template <fn F>
inline float apply(float x, [[maybe_unused]] float slope) {
  if constexpr (F == fn::identity) return x;
  else if constexpr (F == fn::relu) return relu(x);
  else if constexpr (F == fn::leaky_relu) return leaky_relu(x, slope);
  else if constexpr (F == fn::gelu_tanh) return gelu_tanh(x);
  else if constexpr (F == fn::gelu_erf) return gelu_erf(x);
  else if constexpr (F == fn::silu) return silu(x);
  else if constexpr (F == fn::exp) return std::exp(x);
  else if constexpr (F == fn::tanh) return std::tanh(x);
  else if constexpr (F == fn::sigmoid) return sigmoid(x);
  else if constexpr (F == fn::abs) return std::fabs(x);
  else return -x;
}

/// max/min that propagate NaN from either side (torch.maximum semantics).
inline float nan_max(float a, float b) { return (a != a || b != b) ? std::numeric_limits<float>::quiet_NaN() : (a > b ? a : b); }
inline float nan_min(float a, float b) { return (a != a || b != b) ? std::numeric_limits<float>::quiet_NaN() : (a < b ? a : b); }

template <binop F>
inline float apply(float a, float b) {
  if constexpr (F == binop::add) return a + b;
  else if constexpr (F == binop::sub) return a - b;
  else if constexpr (F == binop::mul) return a * b;
  else if constexpr (F == binop::div) return a / b;
  else if constexpr (F == binop::max) return nan_max(a, b);
  else return nan_min(a, b);
}

}  // namespace math
}  // namespace kforge
