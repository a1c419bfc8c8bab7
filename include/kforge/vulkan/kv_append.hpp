// kforge/vulkan/kv_append.hpp — KV-cache append on policy::vulkan
// (shaders/kv_append.hpp: one element per invocation). Host views: the cache
// is uploaded, the new rows written into it, and downloaded whole; device
// tensors: the cache is updated in place.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/kv_append.hpp"

namespace kforge::vulkan {

/// Copies dense x [B, T, HD] into rows [pos, pos + T) of dense cache [B, Lmax, HD].
inline void record_kv_append(stream& s, dtype dt, std::uint32_t wg, index_t b, index_t t, index_t hd, index_t lmax,
                             index_t pos, buffer_ref x, buffer_ref cache) {
  using namespace detail;
  check_wg(s.ctx(), wg, "kv_append");
  const auto& p = s.ctx().get_pipeline(make_variant("kv_append", shaders::kv_append, dt, {}), {2, 20, {0}}, {wg});
  struct {
    std::uint32_t b, t, hd, lmax, pos;
  } pc{u32(b, "B"), u32(t, "T"), u32(hd, "HD"), u32(lmax, "Lmax"), u32(pos, "pos")};
  u32(b * lmax * hd, "cache elements");
  const std::uint64_t n = static_cast<std::uint64_t>(u32(b * t * hd, "elements of x"));
  s.dispatch(p, {{x}, {cache, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((n + wg - 1) / wg, 65535ull * 64)),
             "kv_append");
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::kv_append<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::kv_append<T>>, op::kv_append<T>, kv_append_entry> {
  static void compute(const op::kv_append<T>& op, const kv_append_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.cache, true);
    if (g.b * g.t * g.h * g.d != 0)
      vulkan::record_kv_append(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.b, g.t, g.h * g.d, g.lmax, op.pos,
                               c.in(0), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
