// kforge/eigen/attention.hpp — reference attention: per (batch, query head)
// the full S×L score matrix against its KV head, softmaxed row-wise over the
// keys each row sees, times those keys' V rows only (masked keys are
// excluded, not multiplied by 0: an Inf in a masked V row stays out).
// Materialises S×L floats; it is the oracle, not the fast path.
#pragma once

#include "kforge/eigen/common.hpp"
#include "kforge/eigen/softmax.hpp"
#include "kforge/ops/attention.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::attention<T>> : attention_entry<impl<policy::eigen, op::attention<T>>, op::attention<T>> {
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    for (index_t b = 0; b < g.b; ++b)
      for (index_t h = 0; h < g.h; ++h) {
        const tensor_view<T> o = g.head(g.o, b, h);
        if (g.l == 0) {
          eigen::store(eigen::matrix_rm::Zero(g.s, g.dv), o);
          continue;
        }
        const index_t hk = h / g.group();
        const eigen::matrix_rm v = eigen::to_matrix(g.head(g.v, b, hk));
        eigen::array_rm scores = ((eigen::to_matrix(g.head(g.q, b, h)) * eigen::to_matrix(g.head(g.k, b, hk)).transpose()) *
                                  g.scale).array();
        if (!g.causal) {
          eigen::softmax_rows(scores);
          eigen::store(scores.matrix() * v, o);
          continue;
        }
        eigen::matrix_rm out(g.s, g.dv);
        for (index_t i = 0; i < g.s; ++i) {
          const index_t n = g.visible(i);
          auto row = scores.row(i).head(n);
          row = (row - row.template maxCoeff<Eigen::PropagateNaN>()).exp();
          row /= row.sum();
          out.row(i) = row.matrix() * v.topRows(n);
        }
        eigen::store(out, o);
      }
  }
};
}  // namespace kforge::detail
