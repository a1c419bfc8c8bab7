// kforge/ops/kv_append.hpp — KV-cache append: new K (or V) rows written into
// a preallocated cache at a position, in place.
//
//   x [B, T, H, D] (the T new tokens' rows, what a K/V projection gives),
//   cache [B, Lmax, H, D]:  cache[b, pos + t, h, :] = x[b, t, h, :]
//
// The cache is the call's output and is also read: rows outside
// [pos, pos + T) are left as they are (the validation suite fills the whole
// cache before the call and compares all of it, so a kernel that touches
// them fails). Prefill is pos = 0, T = prompt length; decode is T = 1 with
// pos = the number of tokens already cached.
#pragma once

#include <string>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct kv_append {
  using value_type = T;
  static constexpr std::string_view name = "kv_append";
  static constexpr int arity = 1;
  index_t pos = 0;  ///< cache row of the first new token
};

}  // namespace op

/// Checked operands of one kv_append call.
template <class T>
struct kv_append_args {
  tensor_view<const T> x;  ///< [B, T, H, D]
  tensor_view<T> cache;    ///< [B, Lmax, H, D]
  index_t b = 0, t = 0, h = 0, d = 0, lmax = 0;
};

namespace detail {
template <class Derived, class Op>
struct kv_append_entry;
template <class Derived, class T>
struct kv_append_entry<Derived, op::kv_append<T>> {
  static constexpr bool available = true;
  static void run(const op::kv_append<T>& op, tensor_view<const T> x, tensor_view<T> cache) {
    if (x.rank() != 4) throw shape_error("kforge::kv_append: x has shape " + x.dims.str() + ", expected [B, T, H, D]");
    if (cache.rank() != 4 || cache.size(0) != x.size(0) || cache.size(2) != x.size(2) || cache.size(3) != x.size(3))
      throw shape_error("kforge::kv_append: cache has shape " + cache.dims.str() + ", expected [" +
                        std::to_string(x.size(0)) + ", Lmax, " + std::to_string(x.size(2)) + ", " +
                        std::to_string(x.size(3)) + "] for x " + x.dims.str());
    const index_t t = x.size(1), lmax = cache.size(1);
    if (op.pos < 0) throw argument_error("kforge::kv_append: pos must be >= 0, got " + std::to_string(op.pos));
    if (op.pos > lmax - t)
      throw argument_error("kforge::kv_append: pos " + std::to_string(op.pos) + " + T " + std::to_string(t) +
                           " new rows = " + std::to_string(op.pos + t) + " exceeds the cache length Lmax " +
                           std::to_string(lmax));
    Derived::compute(op, kv_append_args<T>{x, cache, x.size(0), t, x.size(2), x.size(3), lmax});
  }
};
}  // namespace detail

/// A copy: exact in every dtype (NaN stays NaN).
inline tolerance kv_append_tolerance() { return {0, 0, 0}; }

}  // namespace kforge

KFORGE_REFUSE(kv_append, (class T), (T))
