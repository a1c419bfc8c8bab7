// kforge/eigen/gemm.hpp — reference gemm: Eigen's product in f32, then
// beta·C, bias and the activation as array expressions.
#pragma once

#include "kforge/eigen/common.hpp"
#include "kforge/ops/gemm.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::eigen {

/// Applies a fused epilogue (per-column bias, then the activation) to an f32
/// accumulator in place.
template <class E>
void apply_epilogue(const E& e, matrix_rm& acc, const Eigen::ArrayXf& bias) {
  if constexpr (E::has_bias) acc.array().rowwise() += bias.transpose();
  if constexpr (E::activation != fn::identity) {
    const float slope = e.slope;
    acc = acc.unaryExpr([slope](float x) { return math::apply<E::activation>(x, slope); });
  }
}

/// C = act(alpha·acc + beta·C + bias) from the f32 product acc.
template <class T, class E, class A>
void gemm_finish(const op::gemm<T, E, A>& op, matrix_rm& acc, const tensor_view<const T>& bias, const tensor_view<T>& c) {
  if (op.alpha != 1.0f) acc *= op.alpha;
  if (op.beta != 0.0f) acc += op.beta * to_matrix(tensor_view<const T>(c));
  apply_epilogue(op.epilogue, acc, E::has_bias ? gather(bias) : Eigen::ArrayXf());
  store(acc, c);
}

template <class T, class E, class A>
void gemm_reference(const op::gemm<T, E, A>& op, const gemm_args<T>& g) {
  matrix_rm acc(g.m, g.n);
  if (g.k == 0) acc.setZero();
  else if constexpr (std::is_same_v<T, float>) acc.noalias() = map(g.a) * map(g.b);
  else acc.noalias() = to_matrix(g.a) * to_matrix(g.b);
  gemm_finish(op, acc, g.bias, g.c);
}

/// The meaning of a quantized B: the f32 gemm of A and dequantize(W)ᵀ (the
/// whole of W dequantized: this is the reference, not a fast path).
template <class T, class E, class A>
void gemm_reference(const op::gemm<T, E, A>& op, const gemm_qargs<T>& g) {
  const std::vector<float> wd = g.w->dequantize();
  const Eigen::Map<const matrix_rm> w(wd.data(), g.n, g.k);
  matrix_rm acc(g.m, g.n);
  if constexpr (std::is_same_v<T, float>) acc.noalias() = map(g.a) * w.transpose();
  else acc.noalias() = to_matrix(g.a) * w.transpose();
  gemm_finish(op, acc, g.bias, g.c);
}

}  // namespace kforge::eigen

namespace kforge::detail {
template <class T, class E, class A>
struct impl<policy::eigen, op::gemm<T, E, A>> : gemm_entry<impl<policy::eigen, op::gemm<T, E, A>>, op::gemm<T, E, A>> {
  static void compute(const op::gemm<T, E, A>& op, const gemm_args<T>& g) { eigen::gemm_reference(op, g); }
  static void compute_quantized(const op::gemm<T, E, A>& op, const gemm_qargs<T>& g) { eigen::gemm_reference(op, g); }
};
}  // namespace kforge::detail
