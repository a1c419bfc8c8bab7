// kforge/eigen/gated.hpp — the reference gated activation, in double:
// act(a) · b with the definitions of ops/functions.hpp evaluated in double,
// rounded to the storage type once at the end.
#pragma once

#include <cmath>

#include "kforge/eigen/common.hpp"
#include "kforge/ops/gated.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
inline double gated_act_double(fn f, double x) {
  if (f == fn::silu) return x / (1.0 + std::exp(-x));
  if (f == fn::gelu_erf) return 0.5 * x * (1.0 + std::erf(x * 0.70710678118654752));
  return 0.5 * x * (1.0 + std::tanh(0.79788456080286536 * (x + 0.044715 * x * x * x)));
}

template <class T>
struct impl<policy::eigen, op::gated<T>> : gated_entry<impl<policy::eigen, op::gated<T>>, op::gated<T>> {
  static void compute(const op::gated<T>& op, const gated_args<T>& g) {
    const Eigen::ArrayXf x = eigen::gather(g.x);
    Eigen::ArrayXf y(g.rows * g.f);
    for (index_t r = 0; r < g.rows; ++r)
      for (index_t j = 0; j < g.f; ++j) {
        const double a = x[r * 2 * g.f + j], b = x[r * 2 * g.f + g.f + j];
        y[r * g.f + j] = static_cast<float>(gated_act_double(op.activation, a) * b);
      }
    eigen::scatter(y, g.y);
  }
};
}  // namespace kforge::detail
