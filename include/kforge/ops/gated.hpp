// kforge/ops/gated.hpp — the gated MLP activation (GLU family), fused:
//
//   x [..., 2F] → y [..., F],   y[..., j] = act(x[..., j]) · x[..., F + j]
//
// with act one of silu (SwiGLU: Llama, Mistral, Qwen), gelu with erf (GeGLU)
// or gelu's tanh approximation (GeGLU-tanh: Gemma). The packed form is the
// one taken: a decoder's gate and up projections are one gemm with the two
// weight matrices concatenated, producing [T, 2F] with the gate half first
// (vLLM's silu_and_mul and llama.cpp's fused swiglu read the same layout), so
// the op reads that output as it is, with one operand, one pass and no strided
// views; separate a and b tensors are the same call on a [..., 2F] tensor
// whose halves they are.
#pragma once

#include <string>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/ops/softmax.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct gated {
  using value_type = T;
  static constexpr std::string_view name = "gated";
  static constexpr int arity = 1;
  fn activation = fn::silu;  ///< silu, gelu_erf or gelu_tanh
};

}  // namespace op

/// The op names of the gated activations (problem::op), by activation.
constexpr std::string_view gated_op_name(fn f) {
  return f == fn::silu ? "swiglu" : f == fn::gelu_erf ? "geglu" : f == fn::gelu_tanh ? "geglu_tanh" : "";
}

/// Checked operands of one gated call: x [rows, 2F] and y [rows, F] (leading
/// dims folded as in rows_args; row_offset walks strided ones).
template <class T>
struct gated_args {
  tensor_view<const T> x;
  tensor_view<T> y;
  index_t rows = 0, f = 0;
};

namespace detail {
template <class Derived, class Op>
struct gated_entry;
template <class Derived, class T>
struct gated_entry<Derived, op::gated<T>> {
  static constexpr bool available = true;
  static void run(const op::gated<T>& op, tensor_view<const T> x, tensor_view<T> y) {
    if (gated_op_name(op.activation).empty())
      throw argument_error("kforge::gated: activation must be silu, gelu_erf or gelu_tanh, got " +
                           std::string(to_string(op.activation)));
    if (x.rank() < 1 || x.dims.back() % 2)
      throw shape_error("kforge::gated: x has shape " + x.dims.str() + ", expected [..., 2F] (last dim even)");
    shape out = x.dims;
    out[out.rank() - 1] = x.dims.back() / 2;
    expect_shape("gated", "y", out, y.dims);
    const index_t f = out.back();
    Derived::compute(op, gated_args<T>{x, y, f ? y.numel() / f : 0, f});
  }
};
}  // namespace detail

/// The activation's own error (elementwise_tolerance: a few f32 ulps between
/// libm, SIMD approximations and GPU builtins) and one more f32 rounding for
/// the product. Error scale: |b| times the unary ops' scale of act(a)
/// (unary_traits::unary_scale: relative for silu; the gelus add min(|a|, 1)
/// for their 1 + tanh / 1 + erf cancellation).
inline tolerance gated_tolerance(dtype d) {
  if (d == dtype::f32) return {1e-6, 6e-6, 0};
  return {1e-6, 6e-6, 1};
}

}  // namespace kforge

KFORGE_REFUSE(gated, (class T), (T))
