// kforge/vulkan/gated.hpp — the gated activation on policy::vulkan
// (shaders/gated.hpp: one output element per invocation).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/gated.hpp"

namespace kforge::vulkan {

/// y [rows, F] = act(x[:, :F]) · x[:, F:] for dense x [rows, 2F].
inline void record_gated(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t f, fn act, buffer_ref x,
                         buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "gated");
  const auto& p = s.ctx().get_pipeline(make_variant("gated", shaders::gated, dt, {}), {2, 12, {0}}, {wg});
  struct {
    std::uint32_t rows, f, act;
  } pc{u32(rows, "rows"), u32(f, "F"), static_cast<std::uint32_t>(act)};
  const std::uint64_t n = static_cast<std::uint64_t>(u32(2 * rows * f, "elements of x"));
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((n / 2 + wg - 1) / wg, 65535ull * 64)), "gated");
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::gated<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::gated<T>>, op::gated<T>, gated_entry> {
  static void compute(const op::gated<T>& op, const gated_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.y);
    if (g.rows * g.f != 0)
      vulkan::record_gated(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.rows, g.f, op.activation, c.in(0), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
