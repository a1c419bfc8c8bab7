// kforge/eigen/conv2d.hpp — reference conv2d: im2col per image and group,
// then Eigen's product [K/G, C/G·R·S] × [C/G·R·S, P·Q], then bias and the
// activation.
#pragma once

#include "kforge/eigen/common.hpp"
#include "kforge/ops/conv2d.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T, class E>
struct impl<policy::eigen, op::conv2d<T, E>> : conv2d_entry<impl<policy::eigen, op::conv2d<T, E>>, op::conv2d<T, E>> {
  static void compute(const op::conv2d<T, E>& op, const conv2d_args<T>& g) {
    const conv2d_dims& d = g.d;
    const index_t cg = d.c_per_group(), kg = d.k_per_group(), crs = cg * d.r * d.s, pq = d.p * d.q;
    const Eigen::ArrayXf wflat = eigen::gather(g.w);  // [K][C/G][R][S]
    const Eigen::ArrayXf bias = E::has_bias ? eigen::gather(g.bias) : Eigen::ArrayXf();
    eigen::matrix_rm cols(crs, pq), out(kg, pq);
    for (index_t n = 0; n < d.n; ++n) {
      for (int grp = 0; grp < d.groups; ++grp) {
        for (index_t c = 0; c < cg; ++c)
          for (index_t r = 0; r < d.r; ++r)
            for (index_t s = 0; s < d.s; ++s) {
              const index_t row = (c * d.r + r) * d.s + s;
              for (index_t p = 0; p < d.p; ++p) {
                const index_t ih = p * d.sh - d.ph + r * d.dh;
                for (index_t q = 0; q < d.q; ++q) {
                  const index_t iw = q * d.sw - d.pw + s * d.dw;
                  const bool inside = ih >= 0 && ih < d.h && iw >= 0 && iw < d.w;
                  cols(row, p * d.q + q) = inside ? static_cast<float>(g.x(n, grp * cg + c, ih, iw)) : 0.0f;
                }
              }
            }
        Eigen::Map<const eigen::matrix_rm> wg(wflat.data() + grp * kg * crs, kg, crs);
        out.noalias() = wg * cols;
        for (index_t k = 0; k < kg; ++k)
          for (index_t j = 0; j < pq; ++j) {
            float v = out(k, j);
            if constexpr (E::has_bias) v += bias[grp * kg + k];
            g.y(n, grp * kg + k, j / d.q, j % d.q) = static_cast<T>(math::apply<E::activation>(v, op.epilogue.slope));
          }
      }
    }
  }
};
}  // namespace kforge::detail
