// kforge/vulkan/conv2d.hpp — conv2d on policy::vulkan, three ways:
//
// - implicit GEMM on the tiled kernel (record_conv2d_implicit; the default
//   for one group where the gemm's own config for the product is the tiled
//   kernel's — f32, and f16/bf16 on devices without tensor cores for them,
//   more filters than the decode kernel takes (gemv_max_m) — and its grid fits):
//   gemm_tiled with KF_CONV gathers its B tiles from x as it fetches them and
//   stores y (NKPQ) with the bias and activation; split along K, it writes
//   f32 partial sums and the sum pass below adds them. No im2col scratch.
// - explicit GEMM (record_conv2d_gemm; the default for one group otherwise:
//   the tensor-core and decode kernels): im2col of
//   a chunk of images into a scratch B [C·R·S][images·P·Q], the gemm
//   kernels' first pass on the filters [K][C·R·S] and B (any gemm_config:
//   the tile kernels, tensor cores for f16 and bf16, K split where the grid
//   is thin) into f32 partial sums, and a gather that sums the splits, adds
//   the bias, applies the activation and writes y (NKPQ): one rounding
//   (coopmat2 unsplit on f16: its T output, see shaders/conv2d.hpp).
//   The chunk keeps B under conv2d_im2col_max_bytes (a batch-32 ResNet-50
//   3x3 layer in f32: 231 MB, two chunks). It runs conv2d at the speed of
//   the gemm kernels, which the generic kernel's implicit GEMM does not reach.
// - implicit GEMM on the generic kernel (record_conv2d; grouped
//   convolutions, and a policy with tile knobs): shaders/gemm.hpp with
//   KF_CONV gathers B's tiles from x on the fly, with the policy's tiling.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/gemm.hpp"
#include "kforge/vulkan/shaders/conv2d.hpp"
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

/// The most bytes of im2col scratch one conv2d call allocates (its chunk of
/// images is cut to fit; a single image that needs more still runs alone).
inline constexpr std::uint64_t conv2d_im2col_max_bytes = 128ull << 20;

/// How record_conv2d_gemm cuts a convolution: images per chunk and the
/// columns of its B (images·P·Q rounded up to 8, so the gemm reads B as vectors).
struct conv2d_gemm_plan {
  index_t images = 1, cols = 0;
};
inline conv2d_gemm_plan plan_conv2d_gemm(index_t n_img, index_t pq, index_t crs, std::size_t elem_bytes,
                                         std::uint64_t max_bytes = conv2d_im2col_max_bytes) {
  auto cols_of = [&](index_t i) { return (i * pq + 7) / 8 * 8; };
  // The gather's and im2col's grids take 65535 workgroups of 256 columns.
  const index_t max_cols = 65535 * 256 - 8;
  index_t i = std::max<index_t>(1, n_img);
  while (i > 1 && (static_cast<std::uint64_t>(cols_of(i)) * crs * elem_bytes > max_bytes || cols_of(i) > max_cols))
    i = (i + 1) / 2;
  return {i, cols_of(i)};
}

namespace detail {
inline constexpr std::uint32_t conv_wg = 256, conv_rows = 8;
}

/// conv2d's sum pass (shaders/conv2d.hpp, conv2d_gather): y[img0 + i][m][pq]
/// = act(Σ_z part[z][m][n] + bias[m]) for the cols columns n = i·P·Q + pq of
/// part's m rows of np columns (part_t: one unsplit part in T, else f32 splits);
/// four columns per invocation where P·Q, np and cols are multiples of 4
/// (part and y then must start at offsets that are multiples of 16 bytes, as
/// every buffer the memory pool hands out does).
inline void record_conv2d_sum(stream& s, dtype dt, const buffer_ref* bias, fn act, float slope, bool part_t,
                              buffer_ref part, buffer_ref y, std::uint32_t m, std::uint32_t np, std::uint32_t pq,
                              std::uint32_t cols, std::uint32_t splits, std::uint32_t img0) {
  using namespace detail;
  // Four columns per invocation where they lie in one image and every index is a vector's.
  const bool vec = pq % 4 == 0 && np % 4 == 0 && cols % 4 == 0;
  const auto& gather = s.ctx().get_pipeline(
      make_variant("conv2d_gather", shaders::conv2d_gather, dt,
                   {{"KF_BIAS", bias ? "1" : "0"}, {"KF_ACT", str(static_cast<int>(act))}, {"KF_PART_T", part_t ? "1" : "0"},
                    {"KF_VEC", vec ? "1" : "0"}}),
      {3, 7 * 4, {0}}, {conv_wg});
  struct {
    std::uint32_t m, np, pq, cols, splits, img0;
    float slope;
  } gc{m, np, pq, cols, splits, img0, slope};
  const std::uint32_t per_group = conv_wg * (vec ? 4 : 1);
  s.dispatch(gather, {{part}, {bias ? *bias : part}, {y, true}}, &gc, sizeof gc, {(cols + per_group - 1) / per_group, m, 1},
             "conv2d sum");
}

/// Empty when conv2d's implicit GEMM (record_conv2d_implicit) runs `cfg` for
/// m filters, n = images·P·Q columns and k = C·R·S, else why not.
inline std::string conv2d_implicit_check(const device_info& d, dtype dt, const gemm_config& cfg, std::uint64_t m,
                                         std::uint64_t n, std::uint64_t k) {
  if (cfg.kernel != gemm_kernel::tiled)
    return std::string("the implicit GEMM runs the tiled kernel, not ") + to_string(cfg.kernel);
  if (std::string why = gemm_config_check(d, dt, cfg); !why.empty()) return why;
  // Each invocation gathers the same 4 columns of B in every K tile.
  if (cfg.wg() % (cfg.bn / 4) != 0)
    return "the workgroup (" + std::to_string(cfg.wg()) + " invocations) is not a multiple of the tile's " +
           std::to_string(cfg.bn / 4) + " column vectors";
  const std::uint32_t splits = gemm_splits_used(cfg, k);
  if ((n + cfg.bn - 1) / cfg.bn > 65535 || (m + cfg.bm - 1) / cfg.bm > 65535 ||
      (splits > 1 && ((n + detail::conv_wg - 1) / detail::conv_wg > 65535 || m > 65535)))  // the sum pass: y = filters
    return "a grid of more than 65535 workgroups per axis";
  if (splits * m * n > 0xffffffffull) return "more than 2^32 partial sums";
  return {};
}

/// conv2d with one group as implicit GEMM on the tiled kernel (cfg passes
/// conv2d_implicit_check): dense NCHW x [n_img, c, h, w], weights [kt, c, r,
/// s], optional bias [kt], y [n_img, kt, p, q]. The kernel gathers its B tiles
/// from x as it fetches them; unsplit, it stores y with the bias and
/// activation (one dispatch, no scratch); split along K, it writes f32 partial
/// sums that the explicit GEMM's sum pass adds in order into y (two
/// dispatches; the stream keeps the scratch until reset()).
inline void record_conv2d_implicit(stream& s, dtype dt, const gemm_config& cfg, index_t n_img, index_t c, index_t h,
                                   index_t w, index_t kt, index_t r, index_t sw_, index_t p, index_t q, int sh, int sw,
                                   int ph, int pw, int dh, int dw, fn act, float slope, buffer_ref x, buffer_ref wt,
                                   const buffer_ref* bias, buffer_ref y) {
  using namespace detail;
  context& ctx = s.ctx();
  const index_t crs = c * r * sw_, npq = n_img * p * q;
  if (const std::string why = conv2d_implicit_check(ctx.info(), dt, cfg, static_cast<std::uint64_t>(kt),
                                                    static_cast<std::uint64_t>(npq), static_cast<std::uint64_t>(crs));
      !why.empty())
    throw unsupported_error("kforge::vulkan: conv2d implicit GEMM with '" + cfg.str() + "': " + why);
  if (npq * kt == 0) return;
  // No B is built (gemm_check would ask C·R·S × N·P·Q to fit 32 bits); the check above took the config and grid.
  u32(n_img * c * h * w, "x elements"), u32(n_img * kt * p * q, "y elements"), u32(kt * crs, "weight elements");
  const std::string label = "conv2d implicit " + std::to_string(kt) + "x" + std::to_string(npq) + "x" + std::to_string(crs);
  const std::uint32_t splits = gemm_splits_used(cfg, static_cast<std::uint64_t>(crs));
  // gemm_tiled's constants, then R and S (constants 7 and 8: the gather's divisions by them fold).
  const bool split = splits > 1;  // the sum pass applies the bias and activation
  const pipeline& pl = ctx.get_pipeline(gemm_variant(cfg, dt, bias && !split, split ? fn::identity : act, crs % 4 == 0, split,
                                                     false, true),
                                        {4, sizeof(conv_push), {0, 1, 2, 3, 4, 5, 6, 7, 8}},
                                        {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn, cfg.group_m, u32(r, "R"), u32(sw_, "S")});
  const conv_push pc{u32(kt, "K"), u32(npq, "N*P*Q"), u32(crs, "C*R*S"), u32(c, "C"), u32(h, "H"), u32(w, "W"),
                     u32(p, "P"), u32(q, "Q"), u32(r, "R"), u32(sw_, "S"), u32(kt, "K"), sh, sw, ph, pw, dh, dw, slope};
  const std::array<std::uint32_t, 3> grid{(pc.n + cfg.bn - 1) / cfg.bn, (pc.m + cfg.bm - 1) / cfg.bm, splits};
  if (splits == 1) {
    s.dispatch(pl, {{wt}, {x}, {bias ? *bias : wt}, {y, true}}, &pc, sizeof pc, grid, label);
    return;
  }
  const buffer_ref part = s.keep(ctx.device_memory().allocate(4ull * splits * pc.m * pc.n)).ref();
  s.dispatch(pl, {{wt}, {x}, {wt}, {part, true}}, &pc, sizeof pc, grid, label + " split " + std::to_string(splits));
  record_conv2d_sum(s, dt, bias, act, slope, false, part, y, pc.m, pc.n, pc.p * pc.q, pc.n, splits, 0);
}

/// conv2d with one group as explicit GEMM (see the header): dense NCHW x
/// [n_img, c, h, w], weights [kt, c, r, s], optional bias [kt], y [n_img, kt,
/// p, q]. `pick(m, n, k)` gives the gemm_config for the chunk's gemm (m = kt
/// filters, n = its columns, k = c·r·s; the generic kernel, which has no
/// split pass, runs the implicit GEMM instead); im2col scratch at most max_bytes
/// (see plan_conv2d_gemm). Records 3 dispatches per chunk; the stream keeps
/// the scratch until reset().
template <class Pick>
void record_conv2d_gemm(stream& s, dtype dt, Pick&& pick, index_t n_img, index_t c, index_t h, index_t w, index_t kt,
                        index_t r, index_t sw_, index_t p, index_t q, int sh, int sw, int ph, int pw, int dh, int dw,
                        fn act, float slope, buffer_ref x, buffer_ref wt, const buffer_ref* bias, buffer_ref y,
                        std::uint64_t max_bytes = conv2d_im2col_max_bytes) {
  using namespace detail;
  context& ctx = s.ctx();
  if (n_img * kt * p * q == 0) return;
  const index_t pq = p * q, crs = c * r * sw_;
  u32(n_img * c * h * w, "x elements"), u32(n_img * kt * pq, "y elements"), u32(kt * crs, "weight elements");
  if (kt > 65535) throw unsupported_error("kforge::vulkan: conv2d with " + std::to_string(kt) + " filters; at most 65535");
  if ((crs + conv_rows - 1) / conv_rows > 65535)
    throw unsupported_error("kforge::vulkan: conv2d with C·R·S = " + std::to_string(crs) + "; at most " +
                            std::to_string(65535 * conv_rows));
  const conv2d_gemm_plan plan = plan_conv2d_gemm(n_img, pq, crs, size_of(dt), max_bytes);
  if (plan.cols > 65535 * 256)
    throw unsupported_error("kforge::vulkan: conv2d image of " + std::to_string(pq) + " output pixels is too large");
  const gemm_config cfg = pick(static_cast<std::uint64_t>(kt), static_cast<std::uint64_t>(plan.cols),
                               static_cast<std::uint64_t>(crs));
  if (cfg.kernel == gemm_kernel::generic) {  // the device runs no vector gemm kernel: the implicit GEMM
    record_conv2d(s, dt, gemm_tiling{}, n_img, c, h, w, kt, r, sw_, p, q, sh, sw, ph, pw, dh, dw, 1, act, slope, x, wt,
                  bias, y);
    return;
  }
  const std::string label = "conv2d gemm " + std::to_string(kt) + "x" + std::to_string(plan.cols) + "x" + std::to_string(crs);
  const std::uint32_t splits = gemm_check(s, dt, cfg, kt, plan.cols, crs, label);
  const buffer_ref b = s.keep(ctx.device_memory().allocate(static_cast<std::uint64_t>(crs) * plan.cols * size_of(dt))).ref();
  // Unsplit, coopmat2 stores T (half the bytes of f32 sums). Chosen when its split form was several
  // times slower (256x6272x2304 f16 on the H100: 0.049 ms unsplit, 0.19-0.25 split); since
  // 2026-11-27 a split reads its K range from advanced pointers and runs at about the unsplit rate.
  // Not for bf16: rounding the sums to bf16 before the bias is added loses up to 2^-8 of the sum's size
  // (on the H200, 1 % of the elements of the suite's bf16 convolutions were off by up to 20 % where
  // the bias cancelled the sum); bf16 keeps f32 sums. f16's 2^-11 stays within the tolerance.
  const bool part_t = cfg.kernel == gemm_kernel::coopmat2 && splits == 1 && dt != dtype::bf16;
  const buffer_ref part =
      s.keep(ctx.device_memory().allocate((part_t ? size_of(dt) : 4ull * splits) * kt * plan.cols)).ref();
  const std::uint32_t cw = size_of(dt) == 2 ? 4 : 1;  // im2col columns per invocation
  // Rows per im2col invocation: whole channels (each row's tap a constant) where R·S <= 32, at least
  // conv_rows of them (3x3: 9 rows, 1x1: 8, 5x5: 25); else conv_rows with (c, r, s) stepped.
  const index_t taps = r * sw_;
  const bool fixed = taps <= 32;
  const std::uint32_t kr = fixed ? static_cast<std::uint32_t>(taps * ((conv_rows + taps - 1) / taps)) : conv_rows;
  const auto& im2col = ctx.get_pipeline(
      make_variant("conv2d_im2col", shaders::conv2d_im2col, dt, {}), {2, 17 * 4, {0, 1, 2, 3}},
      {conv_wg, kr, fixed ? static_cast<std::uint32_t>(r) : 0u, fixed ? static_cast<std::uint32_t>(sw_) : 0u});
  for (index_t i0 = 0; i0 < n_img; i0 += plan.images) {
    const index_t images = std::min(plan.images, n_img - i0);
    struct {
      std::uint32_t c, h, w, p, q, r, s, np, img0, cols, rows;
      std::int32_t sh, sw, ph, pw, dh, dw;
    } ic{u32(c, "C"), u32(h, "H"), u32(w, "W"), u32(p, "P"), u32(q, "Q"), u32(r, "R"), u32(sw_, "S"),
         u32(plan.cols, "columns"), u32(i0, "image"), u32(images * pq, "columns"), u32(crs, "C*R*S"), sh, sw, ph, pw, dh, dw};
    static_assert(sizeof ic == 17 * 4);
    s.dispatch(im2col, {{x}, {b, true}}, &ic, sizeof ic,
               {static_cast<std::uint32_t>((plan.cols / cw + conv_wg - 1) / conv_wg),
                static_cast<std::uint32_t>((crs + kr - 1) / kr), 1},
               "conv2d im2col");
    if (part_t)
      record_gemm(s, dt, cfg, kt, plan.cols, crs, 1.0f, 0.0f, fn::identity, 0.0f, wt, b, nullptr, part);
    else
      record_gemm_partials(s, dt, cfg, kt, plan.cols, crs, wt, b, part, label);
    record_conv2d_sum(s, dt, bias, act, slope, part_t, part, y, u32(kt, "K"), u32(plan.cols, "columns"), u32(pq, "P*Q"),
                      ic.cols, splits, ic.img0);
  }
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
    using K = vulkan::knobs<Knobs...>;
    if (d.n * d.k * d.p * d.q == 0) {
    } else if (d.groups == 1 && !K::gemm_tile_given) {
      const auto& info = c.ctx().info();
      const auto m = static_cast<std::uint64_t>(d.k), n = static_cast<std::uint64_t>(d.n * d.p * d.q),
                 k = static_cast<std::uint64_t>(d.c * d.r * d.s);
      // The gemm's config for the product: on the tiled kernel, the implicit GEMM on it (no im2col);
      // else (the tensor cores, the decode kernel) the explicit one, whose gemm runs that config (an
      // implicit GEMM on coopmat_f16 ran 1.5-5x slower on the H100: docs/bench/HISTORY.md). A shape
      // the implicit GEMM refuses (conv2d_implicit_check: grid limits) takes the explicit one too.
      const vulkan::gemm_config cfg = K::gemm(info, c.dt, m, n, k);
      if (vulkan::conv2d_implicit_check(info, c.dt, cfg, m, n, k).empty())
        vulkan::record_conv2d_implicit(c.s(), c.dt, cfg, d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q, d.sh, d.sw,
                                       d.ph, d.pw, d.dh, d.dw, E::activation, op.epilogue.slope, c.in(0), c.in(1),
                                       c.in_opt(2), c.out());
      else
        vulkan::record_conv2d_gemm(
            c.s(), c.dt,
            [&](std::uint64_t m_, std::uint64_t n_, std::uint64_t k_) { return K::gemm(info, c.dt, m_, n_, k_); },
            d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, E::activation,
            op.epilogue.slope, c.in(0), c.in(1), c.in_opt(2), c.out());
    } else {
      vulkan::record_conv2d(c.s(), c.dt, K::tiling, d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q, d.sh, d.sw, d.ph,
                            d.pw, d.dh, d.dw, d.groups, E::activation, op.epilogue.slope, c.in(0), c.in(1),
                            c.in_opt(2), c.out());
    }
    c.finish();
  }
};

}  // namespace kforge::detail
