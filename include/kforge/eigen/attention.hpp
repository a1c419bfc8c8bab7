// kforge/eigen/attention.hpp — reference attention: per (batch, head) the
// full S×L score matrix, masked, softmaxed row-wise, times V. Materialises
// S×L floats; it is the oracle, not the fast path.
#pragma once

#include <limits>

#include "kforge/eigen/common.hpp"
#include "kforge/eigen/softmax.hpp"
#include "kforge/ops/attention.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::attention<T>> : attention_entry<impl<policy::eigen, op::attention<T>>, op::attention<T>> {
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    auto head = [](const tensor_view<const T>& v, index_t b, index_t h) {
      return eigen::to_matrix(tensor_view<const T>(v.data + b * v.stride(0) + h * v.stride(1), shape{v.size(2), v.size(3)},
                                                   shape{v.stride(2), v.stride(3)}));
    };
    for (index_t b = 0; b < g.b; ++b)
      for (index_t h = 0; h < g.h; ++h) {
        const tensor_view<T> o(g.o.data + b * g.o.stride(0) + h * g.o.stride(1), shape{g.s, g.dv},
                               shape{g.o.stride(2), g.o.stride(3)});
        if (g.l == 0) {
          eigen::store(eigen::matrix_rm::Zero(g.s, g.dv), o);
          continue;
        }
        eigen::array_rm scores = ((head(g.q, b, h) * head(g.k, b, h).transpose()) * g.scale).array();
        if (g.causal)
          for (index_t i = 0; i < g.s; ++i)
            for (index_t j = i + 1; j < g.l; ++j) scores(i, j) = -std::numeric_limits<float>::infinity();
        eigen::softmax_rows(scores);
        eigen::store(scores.matrix() * head(g.v, b, h), o);
      }
  }
};
}  // namespace kforge::detail
