// kforge/vulkan/conv2d.hpp — conv2d on policy::vulkan: implicit GEMM on the
// generic gemm kernel (shaders/gemm.hpp with KF_CONV) with the policy's tile knobs.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/gemm.hpp"

namespace kforge::vulkan {

namespace detail {
struct conv_push {
  std::uint32_t m, n, k, c, h, w, p, q, r, s, kt;
  std::int32_t sh, sw, ph, pw, dh, dw;
  float slope;
};

}  // namespace detail

/// conv2d as implicit GEMM on dense NCHW x, [K, C/G, R, S] w, NKPQ y.
inline void record_conv2d(stream& s, dtype dt, const gemm_tiling& t, index_t n_img, index_t c, index_t h, index_t w,
                          index_t kt, index_t r, index_t sw_, index_t p, index_t q, int sh, int sw, int ph, int pw,
                          int dh, int dw, int groups, fn act, float slope, buffer_ref x, buffer_ref wt,
                          const buffer_ref* bias, buffer_ref y) {
  using namespace detail;
  context& ctx = s.ctx();
  check_tiling(ctx, t, "conv2d");
  const auto& v = make_variant("conv2d_implicit_gemm", shaders::gemm, dt,
                               {{"KF_CONV", "1"}, {"KF_BIAS", bias ? "1" : "0"}, {"KF_ACT", str(static_cast<int>(act))}});
  const auto& pl = ctx.get_pipeline(v, {4, sizeof(conv_push), {0, 1, 2, 3, 4, 5}}, {t.wg(), t.bm, t.bn, t.bk, t.tm, t.tn});
  conv_push pc{u32(kt / groups, "K/groups"), u32(n_img * p * q, "N*P*Q"), u32(c / groups * r * sw_, "C/groups*R*S"),
               u32(c, "C"), u32(h, "H"), u32(w, "W"), u32(p, "P"), u32(q, "Q"), u32(r, "R"), u32(sw_, "S"),
               u32(kt, "K"), sh, sw, ph, pw, dh, dw, slope};
  u32(n_img * c * h * w, "x elements");
  const std::array<std::uint32_t, 3> g{(pc.n + t.bn - 1) / t.bn, (pc.m + t.bm - 1) / t.bm,
                                       static_cast<std::uint32_t>(groups)};
  s.dispatch(pl, {{x}, {wt}, {bias ? *bias : x}, {y, true}}, &pc, sizeof pc, g, "conv2d");
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T, class E>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::conv2d<T, E>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::conv2d<T, E>>, op::conv2d<T, E>, conv2d_entry> {
  static void compute(const op::conv2d<T, E>& op, const conv2d_args<T>& g) {
    vulkan::detail::call<T> c({&g.x, &g.w, E::has_bias ? &g.bias : nullptr}, g.y);
    const conv2d_dims& d = g.d;
    if (d.n * d.k * d.p * d.q != 0)
      vulkan::record_conv2d(c.s(), c.dt, vulkan::knobs<Knobs...>::tiling, d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q,
                            d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups, E::activation, op.epilogue.slope, c.in(0),
                            c.in(1), c.in_opt(2), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
