// kforge/vulkan/gated.hpp — the gated activation on policy::vulkan
// (shaders/gated.hpp: 4 or 16 output elements per invocation where F % 4
// == 0, else one).
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
  const bool vec = f % 4 == 0;
  const std::uint64_t n = static_cast<std::uint64_t>(u32(2 * rows * f, "elements of x")) / 2;
  // 4 vectors per invocation where that leaves >= 1024 workgroups (a few waves on a large GPU), else 1.
  const std::uint64_t unroll = vec && n / 4 >= 1024ull * 4 * wg ? 4 : 1;
  const auto& p = s.ctx().get_pipeline(
      make_variant("gated", shaders::gated, dt, {{"KF_VEC", vec ? "1" : "0"}, {"KF_U", std::to_string(unroll)}}), {2, 12, {0}},
      {wg});
  struct {
    std::uint32_t rows, f, act;
  } pc{u32(rows, "rows"), u32(f, "F"), static_cast<std::uint32_t>(act)};
  const std::uint64_t per_group = vec ? 4 * unroll * wg : wg;
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((n + per_group - 1) / per_group, 65535ull * 64)),
             "gated");
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
