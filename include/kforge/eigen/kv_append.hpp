// kforge/eigen/kv_append.hpp — the reference KV-cache append: the cache
// gathered, the new rows copied in at pos, scattered back whole (rows
// outside [pos, pos + T) are written with the values they had).
#pragma once

#include "kforge/eigen/common.hpp"
#include "kforge/ops/kv_append.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::kv_append<T>> : kv_append_entry<impl<policy::eigen, op::kv_append<T>>, op::kv_append<T>> {
  static void compute(const op::kv_append<T>& op, const kv_append_args<T>& g) {
    const Eigen::ArrayXf x = eigen::gather(g.x);
    Eigen::ArrayXf c = eigen::gather(tensor_view<const T>(g.cache));
    const index_t row = g.h * g.d;
    for (index_t b = 0; b < g.b; ++b)
      c.segment((b * g.lmax + op.pos) * row, g.t * row) = x.segment(b * g.t * row, g.t * row);
    eigen::scatter(c, g.cache);
  }
};
}  // namespace kforge::detail
