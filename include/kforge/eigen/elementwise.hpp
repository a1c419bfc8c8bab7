// kforge/eigen/elementwise.hpp — reference unary and binary ops as Eigen
// array expressions in f32 (operands gathered when strided or broadcast).
#pragma once

#include <cmath>

#include "kforge/eigen/common.hpp"
#include "kforge/ops/elementwise.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::eigen {

template <fn F>
Eigen::ArrayXf unary_reference(const Eigen::ArrayXf& x, float slope) {
  // exp and tanh through libm, not Eigen's vectorised forms: Eigen 3.4's
  // exp gives Inf from x = 88.38 on (2^128 formed before the mantissa
  // scales it down), where the true value is still finite up to 88.72.
  if constexpr (F == fn::exp) return x.unaryExpr([](float v) { return std::exp(v); });
  else if constexpr (F == fn::tanh) return x.unaryExpr([](float v) { return std::tanh(v); });
  else if constexpr (F == fn::abs) return x.abs();
  else if constexpr (F == fn::neg) return -x;
  else return x.unaryExpr([slope](float v) { return math::apply<F>(v, slope); });
}

template <binop F>
Eigen::ArrayXf binary_reference(const Eigen::ArrayXf& a, const Eigen::ArrayXf& b) {
  if constexpr (F == binop::add) return a + b;
  else if constexpr (F == binop::sub) return a - b;
  else if constexpr (F == binop::mul) return a * b;
  else if constexpr (F == binop::div) return a / b;
  else if constexpr (F == binop::max) return a.binaryExpr(b, [](float x, float y) { return math::nan_max(x, y); });
  else return a.binaryExpr(b, [](float x, float y) { return math::nan_min(x, y); });
}

}  // namespace kforge::eigen

namespace kforge::detail {
template <class T, fn F>
struct impl<policy::eigen, op::unary<T, F>> : unary_entry<impl<policy::eigen, op::unary<T, F>>, op::unary<T, F>> {
  static void compute(const op::unary<T, F>& op, const unary_args<T>& g) {
    eigen::scatter(eigen::unary_reference<F>(eigen::gather(g.x), op.slope), g.y);
  }
};
template <class T, binop F>
struct impl<policy::eigen, op::binary<T, F>> : binary_entry<impl<policy::eigen, op::binary<T, F>>, op::binary<T, F>> {
  static void compute(const op::binary<T, F>&, const binary_args<T>& g) {
    eigen::scatter(eigen::binary_reference<F>(eigen::gather(g.a), eigen::gather(g.b)), g.c);
  }
};
}  // namespace kforge::detail
