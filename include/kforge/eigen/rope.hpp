// kforge/eigen/rope.hpp — the reference rotary position embedding, in double:
// angles p·base^(-2i/D) and their cos/sin exactly as the definition
// (ops/rope.hpp) says, rounded to the storage type once at the end.
#pragma once

#include <cmath>
#include <vector>

#include "kforge/eigen/common.hpp"
#include "kforge/ops/rope.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::detail {
template <class T>
struct impl<policy::eigen, op::rope<T>> : rope_entry<impl<policy::eigen, op::rope<T>>, op::rope<T>> {
  static void compute(const op::rope<T>& op, const rope_args<T>& g) {
    const index_t half = g.d / 2;
    std::vector<double> inv(static_cast<std::size_t>(half));
    for (index_t i = 0; i < half; ++i) inv[static_cast<std::size_t>(i)] = std::pow(static_cast<double>(op.base), -2.0 * static_cast<double>(i) / static_cast<double>(g.d));
    const Eigen::ArrayXf x = eigen::gather(g.x);
    Eigen::ArrayXf y(x.size());
    for (index_t row = 0; row < g.outer * g.s; ++row) {
      const double pos = static_cast<double>(op.offset + row % g.s);
      for (index_t h = 0; h < g.h; ++h) {
        const index_t base = (row * g.h + h) * g.d;
        for (index_t i = 0; i < half; ++i) {
          const index_t ia = op.interleaved ? base + 2 * i : base + i, ib = op.interleaved ? ia + 1 : ia + half;
          const double t = pos * inv[static_cast<std::size_t>(i)], c = std::cos(t), s = std::sin(t);
          const double a = x[ia], b = x[ib];
          y[ia] = static_cast<float>(a * c - b * s);
          y[ib] = static_cast<float>(a * s + b * c);
        }
      }
    }
    eigen::scatter(y, g.y);
  }
};
}  // namespace kforge::detail
