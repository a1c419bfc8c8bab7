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

template <class T, class E, class A>
void gemm_reference(const op::gemm<T, E, A>& op, const gemm_args<T>& g) {
  matrix_rm acc(g.m, g.n);
  if (g.k == 0) acc.setZero();
  else if constexpr (std::is_same_v<T, float>) acc.noalias() = map(g.a) * map(g.b);
  else acc.noalias() = to_matrix(g.a) * to_matrix(g.b);
  if (op.alpha != 1.0f) acc *= op.alpha;
  if (op.beta != 0.0f) acc += op.beta * to_matrix(tensor_view<const T>(g.c));
  apply_epilogue(op.epilogue, acc, E::has_bias ? gather(g.bias) : Eigen::ArrayXf());
  store(acc, g.c);
}

}  // namespace kforge::eigen

namespace kforge::detail {
template <class T, class E, class A>
struct impl<policy::eigen, op::gemm<T, E, A>> : gemm_entry<impl<policy::eigen, op::gemm<T, E, A>>, op::gemm<T, E, A>> {
  static void compute(const op::gemm<T, E, A>& op, const gemm_args<T>& g) { eigen::gemm_reference(op, g); }
};
}  // namespace kforge::detail
