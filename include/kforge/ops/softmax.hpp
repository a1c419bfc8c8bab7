// kforge/ops/softmax.hpp — softmax over the last axis, numerically stable
// (max subtracted before exp). Rows whose entries are all -inf give NaN, as
// in PyTorch; a NaN anywhere in a row makes the whole row NaN.
#pragma once

#include <algorithm>
#include <cmath>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct softmax {
  using value_type = T;
  static constexpr std::string_view name = "softmax";
  static constexpr int arity = 1;
};

}  // namespace op

/// Operands of a last-axis op seen as rows × cols. Views of any rank are
/// folded into rows when their leading dims are contiguous; otherwise the
/// backend walks rows with row_offset().
template <class T>
struct rows_args {
  tensor_view<const T> x;
  tensor_view<T> y;
  index_t rows = 0, cols = 0;
};

/// Offset of row r of a view whose last axis is the row (leading dims folded).
template <class T>
index_t row_offset(const tensor_view<T>& v, index_t r) {
  index_t off = 0;
  for (int d = v.rank() - 2; d >= 0; --d) {
    off += (r % v.size(d)) * v.stride(d);
    r /= v.size(d);
  }
  return off;
}

template <class T>
rows_args<T> check_rows(std::string_view op, tensor_view<const T> x, tensor_view<T> y) {
  if (x.rank() < 1) throw shape_error("kforge::" + std::string(op) + ": input has shape " + x.dims.str() + ", expected rank >= 1");
  expect_shape(op, "output", x.dims, y.dims);
  return {x, y, x.numel() / (x.dims.back() == 0 ? 1 : x.dims.back()), x.dims.back()};
}

namespace detail {
template <class Derived, class Op>
struct softmax_entry;
template <class Derived, class T>
struct softmax_entry<Derived, op::softmax<T>> {
  static constexpr bool available = true;
  static void run(const op::softmax<T>& op, tensor_view<const T> x, tensor_view<T> y) {
    Derived::compute(op, check_rows<T>(op.name, x, y));
  }
};
}  // namespace detail

inline tolerance softmax_tolerance(dtype d, index_t cols) {
  // Outputs lie in [0,1]; error scale is 1. The denominator is a sum of cols
  // terms: summed in order in f32 its relative error is bounded by
  // (cols - 1)·u (u = ε/2), and rows of equal terms (the sparse case's zeros)
  // reach that bound's order, since each addition rounds the same way. A
  // tree, subgroup, two-pass or online sum stays below it; sqrt(cols)·4ε,
  // the statistical estimate, rejected a correct sequential sum of 32000
  // terms (2.3e-4 relative). A normaliser missing k terms is off by ~k/cols.
  const double n = static_cast<double>(cols);
  const double t = 1e-6 + std::max(4 * epsilon_of(dtype::f32) * std::sqrt(n), n * epsilon_of(dtype::f32) / 2);
  return d == dtype::f32 ? tolerance{t, 1e-5, 0} : tolerance{t, 1e-5, 2};
}

}  // namespace kforge

KFORGE_REFUSE(softmax, (class T), (T))
