// kforge/eigen/topk.hpp — the reference topk: each row's positions stably
// sorted by a comparison written out (NaN above every number, then >), the
// first k taken; values copied from x at those positions. It shares nothing
// with the backends' key trick (ops/topk.hpp's topk_key), so it checks it.
#pragma once

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "kforge/eigen/common.hpp"
#include "kforge/ops/topk.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::topk<T>> : topk_entry<impl<policy::eigen, op::topk<T>>, op::topk<T>> {
  static void compute(const op::topk<T>&, const topk_args<T>& g) {
    std::vector<float> row(static_cast<std::size_t>(g.n));
    std::vector<index_t> pos(static_cast<std::size_t>(g.n));
    // a before b: a is NaN and b is not, or both are numbers and a > b (-0 > +0 is false: equal).
    auto before = [&](index_t a, index_t b) {
      const float x = row[static_cast<std::size_t>(a)], y = row[static_cast<std::size_t>(b)];
      if (std::isnan(x)) return !std::isnan(y);
      return !std::isnan(y) && x > y;
    };
    const index_t sx = g.x.strides.back(), sv = g.values.strides.back(), si = g.indices.strides.back();
    for (index_t r = 0; r < g.rows; ++r) {
      const T* x = g.x.data + row_offset(g.x, r);
      for (index_t j = 0; j < g.n; ++j) row[static_cast<std::size_t>(j)] = static_cast<float>(x[j * sx]);
      std::iota(pos.begin(), pos.end(), index_t{0});
      std::stable_sort(pos.begin(), pos.end(), before);
      T* v = g.values.data + row_offset(g.values, r);
      std::int32_t* i = g.indices.data + row_offset(g.indices, r);
      for (index_t j = 0; j < g.k; ++j) {
        v[j * sv] = x[pos[static_cast<std::size_t>(j)] * sx];
        i[j * si] = static_cast<std::int32_t>(pos[static_cast<std::size_t>(j)]);
      }
    }
  }
};
}  // namespace kforge::detail
