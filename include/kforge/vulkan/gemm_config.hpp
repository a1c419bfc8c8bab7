// kforge/vulkan/gemm_config.hpp — the run-time configurations of the Vulkan
// gemm kernels (the tuner's search space), which of them a device runs, and
// the untuned choice per shape.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/vulkan/launch.hpp"

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
/// Throws when the generic kernel cannot run tiling t on ctx's device.
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

}  // namespace detail

}  // namespace kforge::vulkan
