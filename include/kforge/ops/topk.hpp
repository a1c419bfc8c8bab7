// kforge/ops/topk.hpp — the k largest elements of each row (last axis), with
// their positions; argmax is k = 1.
//
//   x [..., N] (T) → values [..., k] (T), indices [..., k] (std::int32_t)
//
// Semantics (every backend, and the Eigen reference that checks them):
//   - each row's elements in descending order: values[..., 0] is the largest,
//     indices[..., j] is the position in the row of values[..., j];
//   - NaN counts as larger than every number, +Inf included (as torch.topk and
//     torch.argmax treat it), so a row's NaNs come first;
//   - equal values go by position, lower first: -0 and +0 are equal, and so
//     are all NaNs (the result is the first k of the row stably sorted in
//     descending order, so it is unique: no backend may pick another tie);
//   - values are exact copies of x's elements (a NaN's bits, -0's sign);
//   - 1 <= k <= N, else argument_error; rows of more than 2^31 - 1 elements
//     do not fit int32 indices (argument_error too).
// Two outputs: op_outputs_v<op::topk<T>> == 2, values first.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <tuple>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/softmax.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct topk {
  using value_type = T;
  using operand_types = std::tuple<T, T, std::int32_t>;  ///< x, values, indices
  static constexpr std::string_view name = "topk";
  static constexpr int arity = 1;
  static constexpr int outputs = 2;
  index_t k = 1;  ///< how many of each row's largest; 1 is argmax
};

}  // namespace op

/// Checked operands of one topk call: rows of x [rows, n] (leading dims
/// folded as in rows_args; row_offset walks strided ones), values and
/// indices [rows, k].
template <class T>
struct topk_args {
  tensor_view<const T> x;
  tensor_view<T> values;
  tensor_view<std::int32_t> indices;
  index_t rows = 0, n = 0, k = 0;
};

/// topk's order as one unsigned key per value, larger first: NaN (any sign or
/// payload) is 0xffffffff, above +Inf; -0 is +0; the rest keep their order
/// (the sign-magnitude float bits made monotone). Every key is at least
/// 0x007fffff (-Inf's), so 0 is free for "no candidate".
inline std::uint32_t topk_key(float v) {
  std::uint32_t b;
  std::memcpy(&b, &v, 4);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if ((b & 0x7fffffffu) == 0u) b = 0u;
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

namespace detail {
template <class Derived, class Op>
struct topk_entry;
template <class Derived, class T>
struct topk_entry<Derived, op::topk<T>> {
  static constexpr bool available = true;
  static void run(const op::topk<T>& op, tensor_view<const T> x, tensor_view<T> values, tensor_view<std::int32_t> indices) {
    if (x.rank() < 1) throw shape_error("kforge::topk: x has shape " + x.dims.str() + ", expected [..., N]");
    const index_t n = x.dims.back();
    if (op.k < 1 || op.k > n)
      throw argument_error("kforge::topk: k must be in [1, N] for rows of N = " + std::to_string(n) + ", got k = " +
                           std::to_string(op.k));
    if (n > 0x7fffffffll)
      throw argument_error("kforge::topk: rows of N = " + std::to_string(n) + " do not fit int32 indices");
    shape out = x.dims;
    out[out.rank() - 1] = op.k;
    expect_shape("topk", "values", out, values.dims);
    expect_shape("topk", "indices", out, indices.dims);
    Derived::compute(op, topk_args<T>{x, values, indices, x.numel() / n, n, op.k});
  }
};
}  // namespace detail

/// Copies and positions: exact in every dtype (indices equal, values the same bits).
inline tolerance topk_tolerance() { return {0, 0, 0}; }

}  // namespace kforge

KFORGE_REFUSE(topk, (class T), (T))
