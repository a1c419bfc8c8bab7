// kforge/ops/gemm.hpp — C = act(alpha · A·B + beta · C + bias)
//
// Operands: A [M,K], B [K,N], C [M,N], optional bias [N] (one per column,
// broadcast over rows). Any strides: row-major, column-major (Eigen's default)
// or a sub-block. beta == 0 means C is not read (BLAS semantics: NaN in C does
// not propagate). The epilogue is a compile-time fact so backends can apply it
// in the kernel's write-back instead of a second pass.
//
// B may be a quantized weight (core/quant.hpp): `run<P>(op, A, W, C)` with
// W a quantized_matrix of N rows of K stands for B = dequantize(W)ᵀ [K, N] —
// that is its meaning, and policy::eigen computes exactly that; the other
// policies read W's packed bytes (Derived::compute_quantized).
#pragma once

#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/core/quant.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace epilogue {

/// A fused epilogue: optional per-column bias, then an activation.
template <fn Act = fn::identity, bool Bias = false>
struct fused {
  static_assert(is_activation(Act), "kforge::epilogue::fused: only identity, relu, leaky_relu, gelu_tanh, gelu_erf and silu can be fused");
  static constexpr fn activation = Act;
  static constexpr bool has_bias = Bias;
  float slope = 0.01f;  ///< leaky_relu's negative slope
};

using none = fused<>;
using bias = fused<fn::identity, true>;
using relu = fused<fn::relu>;
using bias_relu = fused<fn::relu, true>;
using leaky_relu = fused<fn::leaky_relu>;
using bias_leaky_relu = fused<fn::leaky_relu, true>;
using gelu_tanh = fused<fn::gelu_tanh>;
using bias_gelu_tanh = fused<fn::gelu_tanh, true>;
using gelu = fused<fn::gelu_erf>;
using bias_gelu = fused<fn::gelu_erf, true>;
using silu = fused<fn::silu>;
using bias_silu = fused<fn::silu, true>;

template <class E>
std::string epilogue_name() {
  std::string s = E::has_bias ? "bias" : "";
  if (E::activation != fn::identity) {
    if (!s.empty()) s += '_';
    s += to_string(E::activation);
  }
  return s.empty() ? "none" : s;
}

}  // namespace epilogue

namespace op {

template <class T, class Epilogue = epilogue::none, class Acc = float>
struct gemm {
  using value_type = T;
  using epilogue_type = Epilogue;
  using acc_type = Acc;
  static constexpr std::string_view name = "gemm";
  static constexpr int arity = Epilogue::has_bias ? 3 : 2;  ///< inputs before the output

  Epilogue epilogue{};
  float alpha = 1.0f;
  float beta = 0.0f;
};

}  // namespace op

/// Checked operands of one gemm call.
template <class T>
struct gemm_args {
  tensor_view<const T> a, b, bias;  // bias.data == nullptr without a bias
  tensor_view<T> c;
  index_t m = 0, n = 0, k = 0;
};

template <class T>
gemm_args<T> check_gemm(tensor_view<const T> a, tensor_view<const T> b, tensor_view<const T> bias, bool has_bias,
                        tensor_view<T> c) {
  if (a.rank() != 2) throw shape_error("kforge::gemm: A has shape " + a.dims.str() + ", expected rank 2 [M,K]");
  if (b.rank() != 2) throw shape_error("kforge::gemm: B has shape " + b.dims.str() + ", expected rank 2 [K,N]");
  gemm_args<T> g{a, b, {}, c, a.size(0), b.size(1), a.size(1)};
  expect_shape("gemm", "B", shape{g.k, g.n}, b.dims);
  expect_shape("gemm", "C", shape{g.m, g.n}, c.dims);
  if (has_bias) g.bias = as_vector("gemm", "bias", bias, g.n);
  return g;
}

/// Checked operands of one gemm call whose B is a quantized weight W [N, K] (B = Wᵀ).
template <class T>
struct gemm_qargs {
  tensor_view<const T> a, bias;  // bias.data == nullptr without a bias
  const quantized_matrix* w = nullptr;
  tensor_view<T> c;
  index_t m = 0, n = 0, k = 0;
};

template <class T>
gemm_qargs<T> check_gemm_quantized(tensor_view<const T> a, const quantized_matrix& w, tensor_view<const T> bias,
                                   bool has_bias, tensor_view<T> c) {
  if (w.rows() == 0) throw argument_error("kforge::gemm: the quantized B is empty (a default-constructed quantized_matrix)");
  if (a.rank() != 2) throw shape_error("kforge::gemm: A has shape " + a.dims.str() + ", expected rank 2 [M,K]");
  gemm_qargs<T> g{a, {}, &w, c, a.size(0), w.rows(), w.cols()};
  if (a.size(1) != g.k)
    throw shape_error("kforge::gemm: A has shape " + a.dims.str() + ", the quantized B (" + std::string(to_string(w.format())) +
                      ") stands for [" + std::to_string(g.k) + "," + std::to_string(g.n) + "]");
  expect_shape("gemm", "C", shape{g.m, g.n}, c.dims);
  if (has_bias) g.bias = as_vector("gemm", "bias", bias, g.n);
  return g;
}

namespace detail {
/// Entry points shared by every backend's gemm: shape checks, then
/// Derived::compute(op, gemm_args). The member functions are not templates, so
/// views of T convert to views of const T.
template <class Derived, class Op>
struct gemm_entry;
template <class Derived, class T, class E, class A>
struct gemm_entry<Derived, op::gemm<T, E, A>> {
  static constexpr bool available = true;
  static void run(const op::gemm<T, E, A>& op, tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> c)
    requires(!E::has_bias)
  {
    Derived::compute(op, check_gemm<T>(a, b, {}, false, c));
  }
  static void run(const op::gemm<T, E, A>& op, tensor_view<const T> a, tensor_view<const T> b,
                  tensor_view<const T> bias, tensor_view<T> c)
    requires(E::has_bias)
  {
    Derived::compute(op, check_gemm<T>(a, b, bias, true, c));
  }
  // B quantized (B = Wᵀ): Derived::compute_quantized(op, gemm_qargs).
  static void run(const op::gemm<T, E, A>& op, tensor_view<const T> a, const quantized_matrix& w, tensor_view<T> c)
    requires(!E::has_bias)
  {
    Derived::compute_quantized(op, check_gemm_quantized<T>(a, w, {}, false, c));
  }
  static void run(const op::gemm<T, E, A>& op, tensor_view<const T> a, const quantized_matrix& w,
                  tensor_view<const T> bias, tensor_view<T> c)
    requires(E::has_bias)
  {
    Derived::compute_quantized(op, check_gemm_quantized<T>(a, w, bias, true, c));
  }
};
}  // namespace detail

/// Per-dtype tolerance of gemm, given the reduction length K.
inline tolerance gemm_tolerance(dtype d, index_t k) {
  // f32 accumulation differs between blockings by ~sqrt(K)·eps of the sum of
  // magnitudes; half/bf16 add the final rounding of the stored output.
  const double t = dot_error(k);
  switch (d) {
    case dtype::f32: return {t, 1e-6, 0};
    default: return {t, 0, 2};
  }
}

/// gemm with a quantized B and f16 or bf16 activations: gemm's tolerance plus
/// half an ulp of the storage type per weight (atol + eps/2 of the error
/// scale, the sum of |A|·|B|): a kernel may round each dequantized weight
/// once to the activations' type before the product, as the Vulkan prefill
/// path does to feed the tensor cores (vulkan/gemm.hpp,
/// record_gemm_quantized) — the weights a model of that type would hold.
/// f32 activations: gemm's tolerance (every path is exact there).
inline tolerance gemm_quantized_tolerance(dtype d, index_t k) {
  tolerance t = gemm_tolerance(d, k);
  if (d == dtype::f16 || d == dtype::bf16) t.atol += epsilon_of(d) / 2;
  return t;
}

}  // namespace kforge

KFORGE_REFUSE(gemm, (class T, class E, class A), (T, E, A))
