// kforge/eigen/reduce.hpp — reference reductions: the input gathered as
// [outer, n, inner] floats, reduced over n with Eigen (sum/mean) or a
// NaN-propagating loop (max/min).
#pragma once

#include <limits>

#include "kforge/eigen/common.hpp"
#include "kforge/ops/reduce.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T, reduce_fn F>
struct impl<policy::eigen, op::reduce<T, F>> : reduce_entry<impl<policy::eigen, op::reduce<T, F>>, op::reduce<T, F>> {
  static void compute(const op::reduce<T, F>&, const reduce_args<T>& g) {
    const Eigen::ArrayXf x = eigen::gather(g.x);  // row-major: [outer][n][inner]
    Eigen::ArrayXf y(g.outer * g.inner);
    for (index_t o = 0; o < g.outer; ++o) {
      Eigen::Map<const eigen::array_rm> block(x.data() + o * g.n * g.inner, g.n, g.inner);
      auto out = y.segment(o * g.inner, g.inner);
      if constexpr (F == reduce_fn::sum) out = block.colwise().sum().transpose();
      else if constexpr (F == reduce_fn::mean) out = block.colwise().sum().transpose() / static_cast<float>(g.n);
      else {
        for (index_t i = 0; i < g.inner; ++i) {
          float acc = block(0, i);
          for (index_t j = 1; j < g.n; ++j)
            acc = F == reduce_fn::max ? math::nan_max(acc, block(j, i)) : math::nan_min(acc, block(j, i));
          out[i] = acc;
        }
      }
    }
    eigen::scatter(y, g.y);
  }
};
}  // namespace kforge::detail
