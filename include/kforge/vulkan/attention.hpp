// kforge/vulkan/attention.hpp — scaled dot-product attention on
// policy::vulkan: the cooperative-matrix kernel where it applies, else the
// scalar flash kernel.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/attention.hpp"

namespace kforge::vulkan {

/// Whether attention on dt data with head dims d, dv runs on cooperative
/// matrices (shaders::attention_coopmat) on device `info`.
inline bool attention_coopmat_applies(const device_info& info, dtype dt, index_t d, index_t dv) {
  if (!(dt == dtype::f16 && coopmat_f16_available(info) && d > 0 && dv > 0 && d % 16 == 0 && dv % 16 == 0 &&
        d <= 64 && dv <= 64))
    return false;
  // The shader's shared arrays (64 query rows, 32 keys, 128 invocations): Qs, Ks, Vs, Ss, Ph + Pl, kf_red.
  const std::uint64_t ud = static_cast<std::uint64_t>(d), udv = static_cast<std::uint64_t>(dv);
  const std::uint64_t bytes = 64 * (ud / 8 + 1) * 16 + 32 * (ud / 8 + 1) * 16 + 32 * (udv / 8 + 1) * 16 +
                              64 * (std::max<std::uint64_t>(udv, 32) + 4) * 4 + 2 * 64 * 40 * 2 + 128 * 4;
  return bytes <= info.max_shared_memory;
}

/// Flash-style attention on dense [B·H, S, D] q, [B·H, L, D] k, [B·H, L, Dv] v:
/// on cooperative matrices where attention_coopmat_applies (4 subgroups, 64
/// query rows per workgroup), else the scalar kernel with workgroup size wg.
/// coopmat: -1 where it applies (policy::vulkan<>'s default), 0 never (the
/// scalar kernel), 1 required (unsupported_error where it does not apply).
inline void record_attention(stream& s, dtype dt, std::uint32_t wg, index_t bh, index_t sq, index_t l, index_t d,
                             index_t dv, float scale, bool causal, buffer_ref q, buffer_ref k, buffer_ref v_,
                             buffer_ref o, int coopmat = -1) {
  using namespace detail;
  context& ctx = s.ctx();
  const bool coop = coopmat != 0 && attention_coopmat_applies(ctx.info(), dt, d, dv);
  if (coopmat == 1 && !coop)
    throw unsupported_error("kforge::vulkan: policy::coopmat<true> asks for cooperative matrices, but attention with D=" +
                            std::to_string(d) + ", Dv=" + std::to_string(dv) + " on " + std::string(to_string(dt)) +
                            " data on device '" + ctx.info().name +
                            "' cannot use them (f16, D and Dv multiples of 16 up to 64, NV cooperative matrices)");
  struct {
    std::uint32_t bh, s, l, d, dv;
    float scale;
    std::uint32_t causal;
  } pc{u32(bh, "B*H"), u32(sq, "S"), u32(l, "L"), u32(d, "D"), u32(dv, "Dv"), scale, causal ? 1u : 0u};
  u32(bh * std::max(sq, l) * std::max(d, dv), "elements");
  if (coop) {
    constexpr std::uint32_t warps = 4, rows = 16 * warps;
    const auto v = make_variant("attention_coopmat", shaders::attention_coopmat, dt, {{"KF_COOPMAT", "1"}});
    const auto& p = ctx.get_pipeline(v, {4, sizeof pc, {0, 1, 2}}, {32 * warps, pc.d, pc.dv});
    const std::uint64_t blocks = static_cast<std::uint64_t>(bh) * ((static_cast<std::uint64_t>(sq) + rows - 1) / rows);
    s.dispatch(p, {{q}, {k}, {v_}, {o, true}}, &pc, sizeof pc, grid(blocks), "attention");
    return;
  }
  check_wg(ctx, wg, "attention");
  const std::uint32_t maxd = std::max<std::uint32_t>(32, (u32(std::max(d, dv), "head dim") + 31) / 32 * 32);
  const std::uint64_t shared = 8ull * maxd + 8ull * wg;
  if (shared > ctx.info().max_shared_memory)
    throw unsupported_error("kforge::vulkan: attention head dims D=" + std::to_string(d) + ", Dv=" + std::to_string(dv) +
                            " need " + std::to_string(shared) + " bytes of shared memory; device '" + ctx.info().name +
                            "' allows " + std::to_string(ctx.info().max_shared_memory));
  const auto v = make_variant("attention_flash", shaders::attention, dt, {});
  const auto& p = ctx.get_pipeline(v, {4, sizeof pc, {0, 1}}, {wg, maxd});
  s.dispatch(p, {{q}, {k}, {v_}, {o, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(bh * sq)), "attention");
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::attention<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::attention<T>>, op::attention<T>, attention_entry> {
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    using K = vulkan::knobs<Knobs...>;
    vulkan::detail::call<T> c({&g.q, &g.k, &g.v}, g.o);
    if (g.b * g.h * g.s * g.dv != 0)
      vulkan::record_attention(c.s(), c.dt, std::min<std::uint32_t>(K::row_wg, 128), g.b * g.h, g.s, g.l, g.d, g.dv,
                               g.scale, g.causal, c.in(0), c.in(1), c.in(2), c.out(), K::coopmat_mode);
    c.finish();
  }
};

}  // namespace kforge::detail
