// kforge/ops/attention.hpp — scaled dot-product attention.
//
//   O[b,h] = softmax(Q[b,h] · K[b,h]ᵀ · scale + mask) · V[b,h]
// Q [B,H,S,D], K [B,H,L,D], V [B,H,L,Dv], O [B,H,S,Dv]; scale defaults to
// 1/sqrt(D). With `causal`, query i sees keys j <= i (PyTorch's is_causal,
// aligned at the top left); a row that sees no key (only when L < 1) is zero.
#pragma once

#include <cmath>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct attention {
  using value_type = T;
  static constexpr std::string_view name = "attention";
  static constexpr int arity = 3;  // q, k, v
  bool causal = false;
  float scale = 0.0f;  ///< 0 means 1/sqrt(D)
};

}  // namespace op

template <class T>
struct attention_args {
  tensor_view<const T> q, k, v;
  tensor_view<T> o;
  index_t b, h, s, l, d, dv;
  float scale;
  bool causal;
};

namespace detail {
template <class Derived, class Op>
struct attention_entry;
template <class Derived, class T>
struct attention_entry<Derived, op::attention<T>> {
  static constexpr bool available = true;
  static void run(const op::attention<T>& op, tensor_view<const T> q, tensor_view<const T> k, tensor_view<const T> v,
                  tensor_view<T> o) {
    if (q.rank() != 4) throw shape_error("kforge::attention: Q has shape " + q.dims.str() + ", expected rank 4 [B,H,S,D]");
    if (k.rank() != 4) throw shape_error("kforge::attention: K has shape " + k.dims.str() + ", expected rank 4 [B,H,L,D]");
    if (v.rank() != 4) throw shape_error("kforge::attention: V has shape " + v.dims.str() + ", expected rank 4 [B,H,L,Dv]");
    attention_args<T> g{q, k, v, o, q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3), op.scale, op.causal};
    expect_shape("attention", "K", shape{g.b, g.h, g.l, g.d}, k.dims);
    expect_shape("attention", "V", shape{g.b, g.h, g.l, g.dv}, v.dims);
    expect_shape("attention", "O", shape{g.b, g.h, g.s, g.dv}, o.dims);
    if (!(op.scale >= 0.0f)) throw argument_error("kforge::attention: scale must be >= 0 (0 means 1/sqrt(D))");
    if (g.scale == 0.0f) g.scale = g.d > 0 ? 1.0f / std::sqrt(static_cast<float>(g.d)) : 1.0f;
    Derived::compute(op, g);
  }
};
}  // namespace detail

inline tolerance attention_tolerance(dtype d, index_t dim, index_t keys) {
  // Error scale: max |V| over the keys a row sees (outputs are convex
  // combinations of V rows); scores carry dot-product error of length D.
  const double t = dot_error(dim) + 4 * epsilon_of(dtype::f32) * std::sqrt(static_cast<double>(keys));
  return d == dtype::f32 ? tolerance{t, 1e-5, 0} : tolerance{t, 1e-5, 2};
}

}  // namespace kforge

KFORGE_REFUSE(attention, (class T), (T))
