// kforge/ops/rope.hpp — rotary position embedding (RoPE) over the last axis.
//
//   x, y [..., S, H, D] (rank >= 3, D even): the D values of head h at row s
//   are rotated in pairs by the angles of position p = offset + s,
//     θ_i = p · base^(-2i/D),  i = 0 .. D/2-1,
//     (a, b) → (a·cos θ_i − b·sin θ_i,  a·sin θ_i + b·cos θ_i),
//   where the pair is (x[2i], x[2i+1]) when `interleaved` (GPT-J, Meta's
//   Llama) and (x[i], x[i + D/2]) otherwise (GPT-NeoX, Hugging Face's Llama).
// The [S, H, D] order is what a Q/K projection of S tokens produces ([S, H·D]
// row-major); a view with other strides (e.g. [B, H, S, D] permuted) works
// on the CPU. `offset` is the position of the first row (decode: the number
// of tokens already in the cache).
#pragma once

#include <cmath>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct rope {
  using value_type = T;
  static constexpr std::string_view name = "rope";
  static constexpr int arity = 1;
  float base = 10000.0f;  ///< θ base (Llama 3: 500000)
  index_t offset = 0;     ///< position of the first row
  bool interleaved = false;
};

}  // namespace op

/// Checked operands of one rope call: x and y seen as [outer, S, H, D].
template <class T>
struct rope_args {
  tensor_view<const T> x;
  tensor_view<T> y;
  index_t outer = 1, s = 0, h = 0, d = 0;
};

namespace detail {
template <class Derived, class Op>
struct rope_entry;
template <class Derived, class T>
struct rope_entry<Derived, op::rope<T>> {
  static constexpr bool available = true;
  static void run(const op::rope<T>& op, tensor_view<const T> x, tensor_view<T> y) {
    if (x.rank() < 3) throw shape_error("kforge::rope: x has shape " + x.dims.str() + ", expected rank >= 3 [..., S, H, D]");
    expect_shape("rope", "y", x.dims, y.dims);
    rope_args<T> g{x, y, 1, x.dims.back(2), x.dims.back(1), x.dims.back(0)};
    for (int i = 0; i + 3 < x.rank(); ++i) g.outer *= x.size(i);
    if (g.d % 2) throw shape_error("kforge::rope: head dim D = " + std::to_string(g.d) + " must be even");
    if (!(op.base > 1.0f) || !std::isfinite(op.base))
      throw argument_error("kforge::rope: base must be finite and > 1, got " + std::to_string(op.base));
    if (op.offset < 0) throw argument_error("kforge::rope: offset must be >= 0, got " + std::to_string(op.offset));
    Derived::compute(op, g);
  }
};
}  // namespace detail

/// Kernels compute θ_i = p · base^(-2i/D) in f32: the power carries a few
/// ulps (more where it is exp2 of a log2, ~log2(base) · eps), the product one
/// more, and that error of θ, about 16·eps_f32·p, becomes the error of cos
/// and sin; so the tolerance grows with the largest position. Error scale:
/// |a| + |b| of the pair.
inline tolerance rope_tolerance(dtype d, index_t max_position) {
  const double t = 16 * epsilon_of(dtype::f32) * (4 + static_cast<double>(max_position));
  return d == dtype::f32 ? tolerance{t, 1e-6, 0} : tolerance{t, 1e-6, 2};
}

}  // namespace kforge

KFORGE_REFUSE(rope, (class T), (T))
