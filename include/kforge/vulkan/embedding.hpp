// kforge/vulkan/embedding.hpp — embedding lookup on policy::vulkan
// (shaders/embedding.hpp: one output element per invocation). Host views:
// the entry has checked the ids before anything is uploaded. Device tensors:
// a second kernel finds the first id out of range and writes it to a status
// buffer, read back by a check that runs when the submission completes
// (stream::check_after_wait).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstring>

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/embedding.hpp"

namespace kforge::vulkan {

/// out [n, D] = rows ids[i] of dense table [V, D], ids dense int32 [n]. With
/// `checked_ids` given (ids the host has not seen, of that shape), ids
/// outside [0, V) are reported after the submission: s.wait() throws
/// argument_error naming the first one (their rows are written as zeros).
inline void record_embedding(stream& s, dtype dt, std::uint32_t wg, index_t v, index_t d, index_t n, buffer_ref table,
                             buffer_ref ids, buffer_ref out, const shape* checked_ids = nullptr) {
  using namespace detail;
  context& ctx = s.ctx();
  check_wg(ctx, wg, "embedding");
  const bool vec = d % 4 == 0;
  struct {
    std::uint32_t v, d, n;
  } pc{u32(v, "V"), u32(vec ? d / 4 : d, "D"), u32(n, "ids")};
  u32(v * d, "table elements");
  const std::uint64_t total = static_cast<std::uint64_t>(u32(n * d, "elements of out")) / (vec ? 4 : 1);
  const std::uint64_t per_group = vec ? 4ull * wg : wg;
  const auto groups = grid(std::min<std::uint64_t>((total + per_group - 1) / per_group, 65535ull * 64));
  const auto& p =
      ctx.get_pipeline(make_variant("embedding", shaders::embedding, dt, {{"KF_VEC", vec ? "1" : "0"}}), {3, 12, {0}}, {wg});
  s.dispatch(p, {{table}, {ids}, {out, true}}, &pc, sizeof pc, groups, "embedding");
  if (!checked_ids) return;
  // status[0]: lowest position of a bad id (0xffffffff: none); status[1]: that id.
  buffer_ref status = s.keep(ctx.device_memory().allocate(8)).ref();
  status.size = 8;
  const struct {
    std::uint32_t v, n;
  } cpc{pc.v, pc.n};
  const auto& r = ctx.get_pipeline(make_variant("embedding_check", shaders::embedding_check, dt, {}), {2, 8, {0}}, {wg});
  s.dispatch(r, {{ids}, {status, true}}, &cpc, sizeof cpc, {1, 1, 1}, "embedding (id check)");
  auto& staging = s.staging(8);
  s.copy(status, staging.ref(), 8);
  const void* host = staging.mapped();
  s.check_after_wait([host, v, ids_dims = *checked_ids] {
    std::uint32_t w[2];
    std::memcpy(w, host, 8);
    if (w[0] != 0xffffffffu)
      throw argument_error(embedding_bad_id(static_cast<std::int32_t>(w[1]), w[0], ids_dims, v));
  });
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::embedding<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::embedding<T>>, op::embedding<T>, embedding_entry> {
  static void compute(const op::embedding<T>&, const embedding_args<T>& g) {
    vulkan::detail::call<T> c(vulkan::detail::call<T>::by_operand);
    const vulkan::buffer_ref table = c.input(g.table), ids = c.input(g.ids), out = c.output(g.out);
    if (g.n * g.d != 0)
      vulkan::record_embedding(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.v, g.d, g.n, table, ids, out,
                               c.device() ? &g.ids.dims : nullptr);
    c.finish();
  }
};

}  // namespace kforge::detail
