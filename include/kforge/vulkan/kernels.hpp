// kforge/vulkan/kernels.hpp — the non-template layer between ops and shaders:
// one record_* function per kernel that picks the shader variant (dtype and
// epilogue defines), the specialization constants (tile knobs), checks what a
// shader cannot handle, and records the dispatch on a stream. Templates above
// this layer only convert an op to these calls, so instantiations stay few.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/vulkan/shaders/attention.hpp"
#include "kforge/vulkan/shaders/common.hpp"
#include "kforge/vulkan/shaders/elementwise.hpp"
#include "kforge/vulkan/shaders/gemm.hpp"
#include "kforge/vulkan/shaders/reduce.hpp"
#include "kforge/vulkan/shaders/rows.hpp"
#include "kforge/vulkan/stream.hpp"

namespace kforge::vulkan {

/// Tile knobs of the GEMM kernels (policy::tile, thread_tile).
struct gemm_tiling {
  std::uint32_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  std::uint32_t wg() const { return (bm / tm) * (bn / tn); }
};

namespace detail {

inline std::string str(int v) { return std::to_string(v); }

/// A kernel variant: the common prelude + body, with dtype and extra defines.
inline shader_variant make_variant(const std::string& name, const char* body, dtype dt,
                                   std::vector<std::pair<std::string, std::string>> defines) {
  if (dt != dtype::f32 && dt != dtype::f16)
    throw unsupported_error("kforge::vulkan: " + name + " runs on f32 or f16 device data, not " +
                            std::string(to_string(dt)));
  shader_variant v;
  v.name = name;
  v.source = std::string(shaders::common) + body;
  defines.insert(defines.begin(), {"KF_F16", dt == dtype::f16 ? "1" : "0"});
  v.defines = std::move(defines);
  return v;
}

/// A 2-D grid of `count` workgroups (x capped at 65535; kernels use kf_group_id()).
inline std::array<std::uint32_t, 3> grid(std::uint64_t count) {
  if (count == 0) return {0, 1, 1};
  const std::uint64_t x = std::min<std::uint64_t>(count, 65535);
  const std::uint64_t y = (count + x - 1) / x;
  if (y > 65535) throw unsupported_error("kforge::vulkan: " + std::to_string(count) + " workgroups exceed the 2-D grid");
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1};
}

inline std::uint32_t u32(index_t v, const char* what) {
  if (v < 0 || v > 0xffffffffll)
    throw unsupported_error(std::string("kforge::vulkan: ") + what + " = " + std::to_string(v) +
                            " does not fit the kernels' 32-bit indices");
  return static_cast<std::uint32_t>(v);
}

inline void check_wg(context& ctx, std::uint32_t wg, const std::string& name) {
  if (wg == 0 || wg > ctx.info().max_workgroup_invocations)
    throw unsupported_error("kforge::vulkan: " + name + " workgroup of " + std::to_string(wg) +
                            " invocations; device '" + ctx.info().name + "' allows " +
                            std::to_string(ctx.info().max_workgroup_invocations));
}

inline void check_tiling(context& ctx, const gemm_tiling& t, const std::string& name) {
  if (!t.tm || !t.tn || t.bm % t.tm || t.bn % t.tn || !t.bk)
    throw argument_error("kforge::vulkan: " + name + " tile " + std::to_string(t.bm) + "x" + std::to_string(t.bn) +
                         " is not a multiple of the thread tile " + std::to_string(t.tm) + "x" + std::to_string(t.tn));
  check_wg(ctx, t.wg(), name);
  const std::uint64_t shared = 4ull * t.bk * (t.bm + t.bn) + 4ull * t.wg();
  if (shared > ctx.info().max_shared_memory)
    throw unsupported_error("kforge::vulkan: " + name + " tile needs " + std::to_string(shared) +
                            " bytes of shared memory; device allows " + std::to_string(ctx.info().max_shared_memory));
}

struct gemm_push {
  std::uint32_t m, n, k;
  float alpha, beta, slope;
};
struct conv_push {
  std::uint32_t m, n, k, c, h, w, p, q, r, s, kt;
  std::int32_t sh, sw, ph, pw, dh, dw;
  float slope;
};

}  // namespace detail

/// C = act(alpha·A·B + beta·C + bias): dense row-major A [m,k], B [k,n], C [m,n].
inline void record_gemm(stream& s, dtype dt, const gemm_tiling& t, index_t m, index_t n, index_t k, float alpha,
                        float beta, fn act, float slope, buffer_ref a, buffer_ref b, const buffer_ref* bias,
                        buffer_ref c) {
  using namespace detail;
  context& ctx = s.ctx();
  check_tiling(ctx, t, "gemm");
  const auto v = make_variant("gemm", shaders::gemm, dt,
                              {{"KF_CONV", "0"}, {"KF_BIAS", bias ? "1" : "0"}, {"KF_ACT", str(static_cast<int>(act))}});
  const auto& p = ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5}}, {t.wg(), t.bm, t.bn, t.bk, t.tm, t.tn});
  const gemm_push pc{u32(m, "M"), u32(n, "N"), u32(k, "K"), alpha, beta, slope};
  const std::array<std::uint32_t, 3> g{static_cast<std::uint32_t>((pc.n + t.bn - 1) / t.bn),
                                       static_cast<std::uint32_t>((pc.m + t.bm - 1) / t.bm), 1};
  s.dispatch(p, {{a}, {b}, {bias ? *bias : a}, {c, true}}, &pc, sizeof pc, g,
             "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
}

/// conv2d as implicit GEMM on dense NCHW x, [K, C/G, R, S] w, NKPQ y.
inline void record_conv2d(stream& s, dtype dt, const gemm_tiling& t, index_t n_img, index_t c, index_t h, index_t w,
                          index_t kt, index_t r, index_t sw_, index_t p, index_t q, int sh, int sw, int ph, int pw,
                          int dh, int dw, int groups, fn act, float slope, buffer_ref x, buffer_ref wt,
                          const buffer_ref* bias, buffer_ref y) {
  using namespace detail;
  context& ctx = s.ctx();
  check_tiling(ctx, t, "conv2d");
  const auto v = make_variant("conv2d_implicit_gemm", shaders::gemm, dt,
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

inline void record_unary(stream& s, dtype dt, std::uint32_t wg, fn f, float slope, index_t n, buffer_ref x,
                         buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "unary");
  const auto v = make_variant("unary", shaders::unary, dt, {{"KF_FN", str(static_cast<int>(f))}});
  const auto& p = s.ctx().get_pipeline(v, {2, 8, {0}}, {wg});
  struct {
    std::uint32_t n;
    float slope;
  } pc{u32(n, "elements"), slope};
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pc.n + wg - 1) / wg, 65535ull * 64)),
             std::string(to_string(f)));
}

/// c = a∘b over `dims` (rank <= 6); sa/sb: element strides of a and b (0 where broadcast).
inline void record_binary(stream& s, dtype dt, std::uint32_t wg, binop f, const shape& dims, const shape& sa,
                          const shape& sb, buffer_ref a, buffer_ref b, buffer_ref c) {
  using namespace detail;
  check_wg(s.ctx(), wg, "binary");
  const auto v = make_variant("binary", shaders::binary, dt, {{"KF_OP", str(static_cast<int>(f))}});
  const auto& p = s.ctx().get_pipeline(v, {3, 80, {0}}, {wg});
  struct {
    std::uint32_t n, rank, dims[6], sa[6], sb[6];
  } pc{};
  pc.n = u32(dims.numel(), "elements");
  pc.rank = static_cast<std::uint32_t>(dims.rank());
  for (int i = 0; i < dims.rank(); ++i) {
    pc.dims[i] = u32(dims[i], "extent");
    pc.sa[i] = u32(sa[i], "stride");
    pc.sb[i] = u32(sb[i], "stride");
  }
  s.dispatch(p, {{a}, {b}, {c, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pc.n + wg - 1) / wg, 65535ull * 64)),
             std::string(to_string(f)));
}

/// Reduces dense [outer, n, inner] over n into [outer, inner].
inline void record_reduce(stream& s, dtype dt, std::uint32_t wg, reduce_fn f, index_t outer, index_t n, index_t inner,
                          buffer_ref x, buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "reduce");
  const auto v = make_variant("reduce", shaders::reduce, dt, {{"KF_RED", str(static_cast<int>(f))}});
  const auto& p = s.ctx().get_pipeline(v, {2, 12, {0}}, {wg});
  struct {
    std::uint32_t outer, n, inner;
  } pc{u32(outer, "outer"), u32(n, "n"), u32(inner, "inner")};
  u32(outer * n * inner, "elements");
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(outer * inner)),
             "reduce_" + std::string(to_string(f)));
}

inline void record_softmax(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, buffer_ref x,
                           buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "softmax");
  const auto v = make_variant("softmax_online", shaders::softmax, dt, {});
  const auto& p = s.ctx().get_pipeline(v, {2, 8, {0}}, {wg});
  struct {
    std::uint32_t rows, cols;
  } pc{u32(rows, "rows"), u32(cols, "cols")};
  u32(rows * cols, "elements");
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(cols ? rows : 0)), "softmax");
}

/// layer_norm (beta given) or rms_norm (beta == nullptr) over the last axis.
inline void record_norm(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, float eps, buffer_ref x,
                        buffer_ref gamma, const buffer_ref* beta, buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "norm");
  const auto v = make_variant(beta ? "layer_norm" : "rms_norm", shaders::norm, dt, {{"KF_RMS", beta ? "0" : "1"}});
  const auto& p = s.ctx().get_pipeline(v, {4, 12, {0}}, {wg});
  struct {
    std::uint32_t rows, cols;
    float eps;
  } pc{u32(rows, "rows"), u32(cols, "cols"), eps};
  u32(rows * cols, "elements");
  s.dispatch(p, {{x}, {gamma}, {beta ? *beta : gamma}, {y, true}}, &pc, sizeof pc,
             grid(static_cast<std::uint64_t>(cols ? rows : 0)), beta ? "layer_norm" : "rms_norm");
}

/// Flash-style attention on dense [B·H, S, D] q, [B·H, L, D] k, [B·H, L, Dv] v.
inline void record_attention(stream& s, dtype dt, std::uint32_t wg, index_t bh, index_t sq, index_t l, index_t d,
                             index_t dv, float scale, bool causal, buffer_ref q, buffer_ref k, buffer_ref v_,
                             buffer_ref o) {
  using namespace detail;
  context& ctx = s.ctx();
  check_wg(ctx, wg, "attention");
  const std::uint32_t maxd = std::max<std::uint32_t>(32, (u32(std::max(d, dv), "head dim") + 31) / 32 * 32);
  const std::uint64_t shared = 8ull * maxd + 8ull * wg;
  if (shared > ctx.info().max_shared_memory)
    throw unsupported_error("kforge::vulkan: attention head dims D=" + std::to_string(d) + ", Dv=" + std::to_string(dv) +
                            " need " + std::to_string(shared) + " bytes of shared memory; device '" + ctx.info().name +
                            "' allows " + std::to_string(ctx.info().max_shared_memory));
  const auto v = make_variant("attention_flash", shaders::attention, dt, {});
  const auto& p = ctx.get_pipeline(v, {4, 28, {0, 1}}, {wg, maxd});
  struct {
    std::uint32_t bh, s, l, d, dv;
    float scale;
    std::uint32_t causal;
  } pc{u32(bh, "B*H"), u32(sq, "S"), u32(l, "L"), u32(d, "D"), u32(dv, "Dv"), scale, causal ? 1u : 0u};
  u32(bh * std::max(sq, l) * std::max(d, dv), "elements");
  s.dispatch(p, {{q}, {k}, {v_}, {o, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(bh * sq)), "attention");
}

}  // namespace kforge::vulkan
