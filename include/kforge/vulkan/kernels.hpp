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
#include <initializer_list>
#include <string>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/vulkan/shaders/attention.hpp"
#include "kforge/vulkan/shaders/common.hpp"
#include "kforge/vulkan/shaders/elementwise.hpp"
#include "kforge/vulkan/shaders/gemm.hpp"
#include "kforge/vulkan/shaders/gemm_coopmat.hpp"
#include "kforge/vulkan/shaders/gemm_tiled.hpp"
#include "kforge/vulkan/shaders/reduce.hpp"
#include "kforge/vulkan/shaders/rows.hpp"
#include "kforge/vulkan/stream.hpp"

namespace kforge::vulkan {

/// Tile knobs of the generic GEMM kernel (policy::tile, thread_tile); conv2d uses it.
struct gemm_tiling {
  std::uint32_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  std::uint32_t wg() const { return (bm / tm) * (bn / tn); }
};

// ---- gemm run-time configurations (the tuner's search space) -----------------
//
// Note for the tuner: a gemm_config is everything that changes the gemm
// kernels' speed, and all of it is run-time (specialization constants and a
// variant define), so trying a config compiles no GLSL twice: SPIR-V is cached
// per (kernel, dtype, epilogue, vector/scalar loads) and a pipeline per spec
// constants. gemm_configs(info, dt) enumerates the candidates that are valid on
// a device; gemm_config_check() says why a config is not; gemm_default_config()
// is the untuned choice (what policy::vulkan<> uses when no tile knob is
// given); record_gemm(stream, dt, config, ...) runs one. Every kernel handles
// any M, N, K (bounds are checked in the shader), so validity never depends on
// the shape, only speed does. There is no K-split yet: each output tile is
// owned by one workgroup (K-split would help shapes with few tiles and long K).
enum class gemm_kernel : std::uint8_t {
  generic,      // shaders/gemm.hpp: any tile, scalar shared-memory reads
  tiled,        // shaders/gemm_tiled.hpp: vec4 register blocking, double-buffered
  coopmat_f16,  // shaders/gemm_coopmat.hpp: f16 tensor cores (VK_NV_cooperative_matrix)
};
inline const char* to_string(gemm_kernel k) {
  return k == gemm_kernel::generic ? "generic" : k == gemm_kernel::tiled ? "tiled" : "coopmat_f16";
}

struct gemm_config {
  gemm_kernel kernel = gemm_kernel::tiled;
  std::uint32_t bm = 128, bn = 128, bk = 8;  // workgroup tile and K step
  std::uint32_t tm = 8, tn = 8;              // generic/tiled: outputs per invocation
  std::uint32_t warps = 8, warps_m = 2;      // coopmat_f16: subgroups per workgroup, and rows of them
  std::uint32_t group_m = 8;                 // tiled/coopmat: grouped tile order (0: row-major)
  std::uint32_t wg() const { return kernel == gemm_kernel::coopmat_f16 ? 32 * warps : (bm / tm) * (bn / tn); }
  std::string str() const {
    std::string s = std::string(to_string(kernel)) + " " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                    std::to_string(bk);
    if (kernel == gemm_kernel::coopmat_f16)
      s += " warps " + std::to_string(warps) + " (" + std::to_string(warps_m) + " rows)";
    else
      s += " thread " + std::to_string(tm) + "x" + std::to_string(tn);
    if (kernel != gemm_kernel::generic) s += " group_m " + std::to_string(group_m);
    return s;
  }
};

/// Whether the device runs the coopmat_f16 kernel (f16 data only).
inline bool coopmat_f16_available(const device_info& d) {
  return d.nv_coopmat_f16_16x16x16 && d.storage_16bit && d.fp16_arithmetic && d.subgroup_size == 32;
}

/// Shared memory a config's kernel declares (bytes), including the prelude's reduction slots.
inline std::uint64_t gemm_shared_bytes(const gemm_config& c) {
  const std::uint64_t red = 4ull * c.wg();
  switch (c.kernel) {
    case gemm_kernel::generic: return 4ull * c.bk * (c.bm + c.bn) + red;
    case gemm_kernel::tiled: return 2ull * 4 * c.bk * (c.bm + 4) + 2ull * 4 * c.bk * (c.bn + 4) + red;
    default: return 2ull * 16 * c.bm * (c.bk / 8 + 1) + 2ull * 16 * c.bk * (c.bn / 8 + 1) + 1024ull * c.warps + red;
  }
}

/// Empty when `c` runs on device `d` with element type `dt`, else why not.
inline std::string gemm_config_check(const device_info& d, dtype dt, const gemm_config& c) {
  auto n = [](std::uint32_t v) { return std::to_string(v); };
  if (!c.bm || !c.bn || !c.bk) return "empty tile";
  if (c.kernel == gemm_kernel::coopmat_f16) {
    if (dt != dtype::f16) return "coopmat_f16 needs f16 data";
    if (!coopmat_f16_available(d)) return "device lacks 16x16x16 f16 NV cooperative matrices (or 16-bit storage, or subgroup size 32)";
    if (!c.warps || !c.warps_m || c.warps % c.warps_m) return "warps " + n(c.warps) + " not a multiple of warps_m " + n(c.warps_m);
    const std::uint32_t wn = c.warps / c.warps_m;
    if (c.bk % 16 || c.bm % (16 * c.warps_m) || c.bn % (16 * wn))
      return "tile " + n(c.bm) + "x" + n(c.bn) + "x" + n(c.bk) + " is not a multiple of the 16x16x16 fragments of a " +
             n(c.warps_m) + "x" + n(wn) + " subgroup grid";
  } else {
    if (!c.tm || !c.tn || c.bm % c.tm || c.bn % c.tn)
      return "tile " + n(c.bm) + "x" + n(c.bn) + " is not a multiple of the thread tile " + n(c.tm) + "x" + n(c.tn);
    if (c.kernel == gemm_kernel::tiled && (c.tm % 4 || c.tn % 4 || c.bk % 4))
      return "tiled kernel needs thread tile and K step multiples of 4";
  }
  if (c.wg() == 0 || c.wg() > d.max_workgroup_invocations)
    return "workgroup of " + n(c.wg()) + " invocations; device allows " + n(d.max_workgroup_invocations);
  if (gemm_shared_bytes(c) > d.max_shared_memory)
    return "needs " + std::to_string(gemm_shared_bytes(c)) + " bytes of shared memory; device allows " +
           n(d.max_shared_memory);
  return {};
}

/// The untuned choice for an m×n×k gemm. Thresholds: the largest tile of
/// which there are >= 256 (two per H100 multiprocessor, 132 of them), so the
/// grid still fills the device: tiled 128×128×8 with 8×8 per invocation, else
/// 128×64×8 with 8×4, else 64×64×8 with 4×4; coopmat 128×128 else 64×64. On the
/// H100 (driver 580.159, docs/bench/h100-2026-11-22-sweep-f32.txt) 128×128×8/8×8
/// ran 4096³ at 36.2 TFLOP/s and 2048³ at 35.1, against 27.5 and 19.8 for
/// 128×64×8/8×4. (8×8 ran at 2 TFLOP/s while the epilogue indexed the
/// accumulators element by element: they were not kept in registers.)
inline gemm_config gemm_default_config(const device_info& d, dtype dt, std::uint64_t m, std::uint64_t n,
                                       bool allow_coopmat = true) {
  auto tiles = [&](std::uint64_t bm, std::uint64_t bn) { return ((m + bm - 1) / bm) * ((n + bn - 1) / bn); };
  // Largest first; a config the device refuses (e.g. 16 KiB of shared memory)
  // passes its turn to the next smaller one.
  // (Runs on every gemm dispatch of policy::vulkan<>: no allocation.)
  std::array<gemm_config, 5> order;
  std::size_t n_order = 0;
  if (allow_coopmat && dt == dtype::f16 && coopmat_f16_available(d)) {
    if (tiles(128, 128) >= 256) order[n_order++] = {gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 8};
    order[n_order++] = {gemm_kernel::coopmat_f16, 64, 64, 32, 0, 0, 4, 2, 8};
  }
  if (tiles(128, 128) >= 256) order[n_order++] = {gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8};
  if (tiles(128, 64) >= 256) order[n_order++] = {gemm_kernel::tiled, 128, 64, 8, 8, 4, 8, 2, 8};
  order[n_order++] = {gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 8};
  for (std::size_t i = 0; i < n_order; ++i)
    if (gemm_config_check(d, dt, order[i]).empty()) return order[i];
  return gemm_config{gemm_kernel::generic, 64, 64, 16, 4, 4};
}

/// Candidate configs for the tuner: every combination below that the device runs.
inline std::vector<gemm_config> gemm_configs(const device_info& d, dtype dt) {
  std::vector<gemm_config> out;
  for (std::uint32_t g : {0u, 8u}) {
    for (auto [bm, bn, tm, tn] : std::initializer_list<std::array<std::uint32_t, 4>>{
             {128, 128, 8, 8}, {128, 64, 8, 8}, {64, 128, 8, 8}, {64, 64, 8, 8}, {128, 64, 8, 4},
             {64, 128, 4, 8}, {64, 64, 4, 4}, {128, 128, 8, 4}, {128, 128, 4, 8}})
      for (std::uint32_t bk : {8u, 16u}) {
        gemm_config c{gemm_kernel::tiled, bm, bn, bk, tm, tn, 8, 2, g};
        if (gemm_config_check(d, dt, c).empty()) out.push_back(c);
      }
    for (auto [bm, bn, w, wm] : std::initializer_list<std::array<std::uint32_t, 4>>{
             {128, 128, 8, 2}, {128, 128, 4, 2}, {128, 64, 4, 2}, {64, 128, 4, 2}, {64, 64, 4, 2}, {128, 256, 8, 2}})
      for (std::uint32_t bk : {16u, 32u}) {
        gemm_config c{gemm_kernel::coopmat_f16, bm, bn, bk, 0, 0, w, wm, g};
        if (gemm_config_check(d, dt, c).empty()) out.push_back(c);
      }
  }
  return out;
}

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

/// C = act(alpha·A·B + beta·C + bias): dense row-major A [m,k], B [k,n], C [m,n],
/// with the kernel and tiling of `cfg` (see gemm_config).
inline void record_gemm(stream& s, dtype dt, const gemm_config& cfg, index_t m, index_t n, index_t k, float alpha,
                        float beta, fn act, float slope, buffer_ref a, buffer_ref b, const buffer_ref* bias,
                        buffer_ref c) {
  using namespace detail;
  context& ctx = s.ctx();
  if (const std::string why = gemm_config_check(ctx.info(), dt, cfg); !why.empty())
    throw unsupported_error("kforge::vulkan: gemm config '" + cfg.str() + "' on device '" + ctx.info().name +
                            "': " + why);
  const gemm_push pc{u32(m, "M"), u32(n, "N"), u32(k, "K"), alpha, beta, slope};
  u32(m * k, "A elements"), u32(k * n, "B elements"), u32(m * n, "C elements");
  std::vector<std::pair<std::string, std::string>> defs{{"KF_BIAS", bias ? "1" : "0"},
                                                        {"KF_ACT", str(static_cast<int>(act))}};
  std::vector<std::uint32_t> spec;
  const pipeline* p = nullptr;
  const std::string label = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  if (cfg.kernel == gemm_kernel::generic) {
    defs.insert(defs.begin(), {"KF_CONV", "0"});
    p = &ctx.get_pipeline(make_variant("gemm", shaders::gemm, dt, defs), {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5}},
                          {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn});
  } else if (cfg.kernel == gemm_kernel::tiled) {
    defs.push_back({"KF_VEC", (k % 4 == 0 && n % 4 == 0) ? "1" : "0"});
    p = &ctx.get_pipeline(make_variant("gemm_tiled", shaders::gemm_tiled, dt, defs),
                          {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5, 6}},
                          {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn, cfg.group_m});
  } else {
    defs.push_back({"KF_VEC", (k % 8 == 0 && n % 8 == 0) ? "1" : "0"});
    defs.push_back({"KF_COOPMAT", "1"});
    p = &ctx.get_pipeline(make_variant("gemm_coopmat_f16", shaders::gemm_coopmat_f16, dt, defs),
                          {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5}},
                          {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.warps_m, cfg.group_m});
  }
  const std::array<std::uint32_t, 3> g{static_cast<std::uint32_t>((pc.n + cfg.bn - 1) / cfg.bn),
                                       static_cast<std::uint32_t>((pc.m + cfg.bm - 1) / cfg.bm), 1};
  if (g[0] > 65535 || g[1] > 65535)
    throw unsupported_error("kforge::vulkan: " + label + " needs a " + std::to_string(g[0]) + "x" + std::to_string(g[1]) +
                            " grid of workgroups; at most 65535 per axis");
  s.dispatch(*p, {{a}, {b}, {bias ? *bias : a}, {c, true}}, &pc, sizeof pc, g, label);
}

/// The same with the tile knobs of policy::vulkan (tile, thread_tile): the
/// tiled kernel where the thread tile allows it (multiples of 4), else generic.
inline void record_gemm(stream& s, dtype dt, const gemm_tiling& t, index_t m, index_t n, index_t k, float alpha,
                        float beta, fn act, float slope, buffer_ref a, buffer_ref b, const buffer_ref* bias,
                        buffer_ref c) {
  gemm_config cfg{gemm_kernel::tiled, t.bm, t.bn, t.bk, t.tm, t.tn, 8, 2, 8};
  if (!gemm_config_check(s.ctx().info(), dt, cfg).empty()) {
    detail::check_tiling(s.ctx(), t, "gemm");
    cfg.kernel = gemm_kernel::generic;
  }
  record_gemm(s, dt, cfg, m, n, k, alpha, beta, act, slope, a, b, bias, c);
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
  const bool vec = n % 4 == 0;
  const auto v = make_variant("unary", shaders::unary, dt, {{"KF_FN", str(static_cast<int>(f))}, {"KF_VEC", vec ? "1" : "0"}});
  const auto& p = s.ctx().get_pipeline(v, {2, 8, {0}}, {wg});
  struct {
    std::uint32_t n;
    float slope;
  } pc{u32(vec ? n / 4 : n, "elements"), slope};
  const std::uint64_t per_group = vec ? 4ull * wg : wg;
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pc.n + per_group - 1) / per_group, 65535ull * 64)),
             std::string(to_string(f)));
}

/// Device-to-device copy of `bytes` bytes: a compute shader moving 16-byte
/// vectors where sizes and offsets allow (it reached 2.5-3x vkCmdCopyBuffer's
/// bandwidth on the H100, docs/bench), else vkCmdCopyBuffer. wg: workgroup
/// size; unroll: vectors per invocation per pass (1, 2, 4, 8 or 16);
/// max_groups: cap on the grid (a smaller grid loops more).
inline void record_copy(stream& s, buffer_ref src, buffer_ref dst, std::uint64_t bytes, std::uint32_t wg = 256,
                        std::uint32_t unroll = 4, std::uint64_t max_groups = 65535ull * 64) {
  using namespace detail;
  if (bytes % 16 || src.offset % 16 || dst.offset % 16 || bytes / 16 > 0xffffffffull) {
    s.copy(src, dst, bytes);
    return;
  }
  if (!bytes) return;
  check_wg(s.ctx(), wg, "copy");
  if (unroll == 0 || unroll > 16 || (unroll & (unroll - 1)))
    throw argument_error("kforge::vulkan::record_copy: unroll must be 1, 2, 4, 8 or 16, not " + std::to_string(unroll));
  const auto v = make_variant("copy_vec4", shaders::copy_vec4, dtype::f32, {{"KF_U", str(static_cast<int>(unroll))}});
  const auto& p = s.ctx().get_pipeline(v, {2, 4, {0}}, {wg});
  const std::uint32_t n = static_cast<std::uint32_t>(bytes / 16);
  const std::uint64_t per_group = std::uint64_t{unroll} * wg;
  s.dispatch(p, {{buffer_ref{src.buffer, src.offset, bytes}}, {buffer_ref{dst.buffer, dst.offset, bytes}, true}}, &n, 4,
             grid(std::max<std::uint64_t>(1, std::min<std::uint64_t>((n + per_group - 1) / per_group, max_groups))),
             "copy " + std::to_string(bytes) + " B");
}

/// c = a∘b over `dims` (rank <= 6); sa/sb: element strides of a and b (0 where broadcast).
inline void record_binary(stream& s, dtype dt, std::uint32_t wg, binop f, const shape& dims, const shape& sa,
                          const shape& sb, buffer_ref a, buffer_ref b, buffer_ref c) {
  using namespace detail;
  check_wg(s.ctx(), wg, "binary");
  // Vector path: n % 4 == 0 and both operands dense with the output's layout.
  bool vec = dims.numel() % 4 == 0;
  index_t st = 1;
  for (int i = dims.rank() - 1; i >= 0; --i) {
    const index_t want = dims[i] == 1 ? 0 : st;
    if (sa[i] != want || sb[i] != want) vec = false;
    st *= dims[i];
  }
  const auto v = make_variant("binary", shaders::binary, dt, {{"KF_OP", str(static_cast<int>(f))}, {"KF_VEC", vec ? "1" : "0"}});
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
  if (vec) pc.n /= 4;
  const std::uint64_t per_group = vec ? 4ull * wg : wg;
  s.dispatch(p, {{a}, {b}, {c, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pc.n + per_group - 1) / per_group, 65535ull * 64)),
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

namespace detail {
/// Four-vectors per invocation for the register-resident row kernels: the
/// power of two that holds a row of `cols`, or 0 when the row kernels that
/// read twice must be used (cols % 4 != 0, or more than 16 per invocation:
/// 64 floats of registers).
inline std::uint32_t row_regs(index_t cols, std::uint32_t wg) {
  if (cols % 4) return 0;
  const std::uint64_t need = (static_cast<std::uint64_t>(cols) / 4 + wg - 1) / wg;
  std::uint32_t r = 1;
  while (r < need) r *= 2;
  return r <= 16 ? r : 0;
}
}  // namespace detail

inline void record_softmax(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, buffer_ref x,
                           buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "softmax");
  const std::uint32_t r = row_regs(cols, wg);
  const auto v = r ? make_variant("softmax_rowreg", shaders::softmax_rowreg, dt, {{"KF_R", str(static_cast<int>(r))}})
                   : make_variant("softmax_online", shaders::softmax, dt, {});
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
  const std::uint32_t r = row_regs(cols, wg);
  const std::string name = beta ? "layer_norm" : "rms_norm";
  const auto v = r ? make_variant(name + "_rowreg", shaders::norm_rowreg, dt,
                                  {{"KF_RMS", beta ? "0" : "1"}, {"KF_R", str(static_cast<int>(r))}})
                   : make_variant(name, shaders::norm, dt, {{"KF_RMS", beta ? "0" : "1"}});
  const auto& p = s.ctx().get_pipeline(v, {4, 12, {0}}, {wg});
  struct {
    std::uint32_t rows, cols;
    float eps;
  } pc{u32(rows, "rows"), u32(cols, "cols"), eps};
  u32(rows * cols, "elements");
  s.dispatch(p, {{x}, {gamma}, {beta ? *beta : gamma}, {y, true}}, &pc, sizeof pc,
             grid(static_cast<std::uint64_t>(cols ? rows : 0)), name);
}

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
