// kforge/vulkan/rope.hpp — rotary position embedding on policy::vulkan
// (shaders/rope.hpp: one pair per invocation).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/rope.hpp"

namespace kforge::vulkan {

/// Rotates dense x [rows, H, D] into y; row r has position offset + r % S.
inline void record_rope(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t seq, index_t heads, index_t d,
                        index_t offset, float base, bool interleaved, buffer_ref x, buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "rope");
  const auto& p = s.ctx().get_pipeline(make_variant("rope", shaders::rope, dt, {}), {2, 28, {0}}, {wg});
  struct {
    std::uint32_t rows, s, h, d, offset;
    float base;
    std::uint32_t interleaved;
  } pc{u32(rows, "rows"), u32(seq, "S"), u32(heads, "H"), u32(d, "D"), u32(offset, "offset"), base, interleaved ? 1u : 0u};
  const std::uint64_t pairs = static_cast<std::uint64_t>(u32(rows * heads * (d / 2), "pairs"));
  u32(offset + seq, "last position");
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pairs + wg - 1) / wg, 65535ull * 64)), "rope");
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::rope<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::rope<T>>, op::rope<T>, rope_entry> {
  static void compute(const op::rope<T>& op, const rope_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.y);
    if (g.outer * g.s * g.h * g.d != 0)
      vulkan::record_rope(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.outer * g.s, g.s, g.h, g.d, op.offset, op.base,
                          op.interleaved, c.in(0), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
