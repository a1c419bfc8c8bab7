// kforge/ops/elementwise.hpp — unary y = f(x) and binary c = a ∘ b with
// NumPy-style broadcasting.
//
// Broadcasting: shapes are aligned at their last dimension; each pair of
// extents must be equal or one of them 1; the output has the larger extent.
// Missing leading dimensions count as 1. The output view must have exactly the
// broadcast shape.
#pragma once

#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T, fn F>
struct unary {
  using value_type = T;
  static constexpr fn function = F;
  static constexpr std::string_view name = to_string(F);
  static constexpr int arity = 1;
  float slope = 0.01f;  ///< leaky_relu's negative slope
};

template <class T, binop F>
struct binary {
  using value_type = T;
  static constexpr binop function = F;
  static constexpr std::string_view name = to_string(F);
  static constexpr int arity = 2;
};

}  // namespace op

/// The broadcast shape of a and b, or shape_error naming the op.
inline shape broadcast_shape(std::string_view op, const shape& a, const shape& b) {
  const int r = a.rank() > b.rank() ? a.rank() : b.rank();
  shape out;
  for (int i = 0; i < r; ++i) out.push_back(1);
  for (int i = 0; i < r; ++i) {
    const index_t da = i < a.rank() ? a.back(i) : 1;
    const index_t db = i < b.rank() ? b.back(i) : 1;
    if (da != db && da != 1 && db != 1)
      throw shape_error("kforge::" + std::string(op) + ": shapes " + a.str() + " and " + b.str() +
                        " do not broadcast (dimension " + std::to_string(r - 1 - i) + ": " + std::to_string(da) +
                        " vs " + std::to_string(db) + ")");
    out[r - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

/// Strides that read `v` as if it had shape `out` (broadcast dims get stride 0).
template <class T>
shape broadcast_strides(const tensor_view<T>& v, const shape& out) {
  shape st;
  const int off = out.rank() - v.rank();
  for (int i = 0; i < out.rank(); ++i) {
    const int j = i - off;
    st.push_back(j < 0 || v.size(j) == 1 ? 0 : v.stride(j));
  }
  return st;
}

template <class T>
struct unary_args {
  tensor_view<const T> x;
  tensor_view<T> y;
};
template <class T>
struct binary_args {
  tensor_view<const T> a, b;  // both re-viewed with the output's shape (stride 0 where broadcast)
  tensor_view<T> c;
};

namespace detail {
template <class Derived, class Op>
struct unary_entry;
template <class Derived, class T, fn F>
struct unary_entry<Derived, op::unary<T, F>> {
  static constexpr bool available = true;
  static void run(const op::unary<T, F>& op, tensor_view<const T> x, tensor_view<T> y) {
    expect_shape(op.name, "output", x.dims, y.dims);
    Derived::compute(op, unary_args<T>{x, y});
  }
};
template <class Derived, class Op>
struct binary_entry;
template <class Derived, class T, binop F>
struct binary_entry<Derived, op::binary<T, F>> {
  static constexpr bool available = true;
  static void run(const op::binary<T, F>& op, tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> c) {
    const shape out = broadcast_shape(op.name, a.dims, b.dims);
    expect_shape(op.name, "output", out, c.dims);
    Derived::compute(op, binary_args<T>{tensor_view<const T>(a.data, out, broadcast_strides(a, out)),
                                        tensor_view<const T>(b.data, out, broadcast_strides(b, out)), c});
  }
};
}  // namespace detail

/// Element-wise ops round once in f32 and once to the storage type; the
/// transcendental functions may differ by a few f32 ulps between libm, SIMD
/// approximations and GPU builtins.
inline tolerance elementwise_tolerance(dtype d) {
  if (d == dtype::f32) return {1e-6, 4e-6, 0};
  return {1e-6, 4e-6, 1};
}

}  // namespace kforge

KFORGE_REFUSE(unary, (class T, ::kforge::fn F), (T, F))
KFORGE_REFUSE(binary, (class T, ::kforge::binop F), (T, F))
