// kforge/vulkan/gemm_config.hpp — the run-time configurations of the Vulkan
// gemm kernels (the tuner's search space), which of them a device runs, and
// the untuned choice per shape.
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
// kernels' speed, and all of it is run-time (specialization constants, a
// variant define and the grid), so trying a config compiles no GLSL twice:
// SPIR-V is cached per (kernel, dtype, epilogue, vector/scalar loads, split
// or not) and a pipeline per spec constants. gemm_configs(info, dt)
// enumerates the candidates that are valid on a device; gemm_config_check()
// says why a config is not; gemm_default_config() is the untuned choice per
// shape class (what policy::vulkan<> uses when no tile knob is given);
// record_gemm(stream, dt, config, ...) runs one. Every kernel handles any M,
// N, K (bounds are checked in the shader), so validity never depends on the
// shape, only speed does.
//
// Split-K (splits > 1; tiled, coopmat_f16 and gemv): the grid's z axis cuts K
// into `splits` ranges (multiples of the kernel's K step, gemm_k_step); each
// workgroup writes the raw dot products of its range to an f32 scratch
// buffer [splits][M][N] that the stream keeps alive, and a second dispatch
// (shaders/gemm_splitk.hpp) sums the splits in a fixed order and applies the
// epilogue: deterministic, whatever order the workgroups run in. It pays
// where the grid of output tiles is too thin to fill the device and K is long.
enum class gemm_kernel : std::uint8_t {
  generic,      // shaders/gemm.hpp: any tile, scalar shared-memory reads
  tiled,        // shaders/gemm_tiled.hpp: vec4 register blocking, double-buffered
  coopmat_f16,  // shaders/gemm_coopmat.hpp: f16 tensor cores (VK_NV_cooperative_matrix)
  gemv,         // shaders/gemm_gemv.hpp: few rows of A (decode), streams B once
  coopmat2,     // spirv/gemm_coopmat2.hpp: f16/bf16 tensor cores, workgroup-scope matrices (VK_NV_cooperative_matrix2)
  gemv_coopmat, // shaders/gemm_gemv_coopmat.hpp: f16, few rows of A on the tensor cores, streams B once
};
inline const char* to_string(gemm_kernel k) {
  switch (k) {
    case gemm_kernel::generic: return "generic";
    case gemm_kernel::tiled: return "tiled";
    case gemm_kernel::coopmat_f16: return "coopmat_f16";
    case gemm_kernel::gemv: return "gemv";
    case gemm_kernel::coopmat2: return "coopmat2";
    case gemm_kernel::gemv_coopmat: return "gemv_coopmat";
  }
  return "?";
}

/// One gemm configuration. What each kernel reads:
///   generic, tiled  bm×bn×bk workgroup tile and K step, tm×tn outputs per
///                   invocation, group_m (tiled), splits (tiled)
///   coopmat_f16     bm×bn×bk, warps subgroups in warps_m rows, group_m, splits
///   gemv            bm rows of A and bn columns per workgroup, bk rows of B per
///                   lane per K step, tn columns per invocation, warps
///                   subgroups (their lanes per column group follow:
///                   gemv_lanes_k), splits
///   coopmat2        bm×bn×bk (one workgroup-scope matrix per tile), 32·warps
///                   invocations (a workgroupInvocations the device lists),
///                   tm K steps per unrolled loop iteration (1, 2, 4 or 8),
///                   group_m (>= 1), splits
///   gemv_coopmat    bm = 16 rows of A (one fragment) and bn columns per
///                   workgroup, bk rows of B per loop step (16, 32 or 64),
///                   warps subgroups (bn/warps/16 column fragments each),
///                   tm·256 columns of A staged per chunk (tm 1, 2 or 4), splits
struct gemm_config {
  gemm_kernel kernel = gemm_kernel::tiled;
  std::uint32_t bm = 128, bn = 128, bk = 8;  // workgroup tile and K step
  std::uint32_t tm = 8, tn = 8;              // generic/tiled: outputs per invocation; gemv: tn columns
  std::uint32_t warps = 8, warps_m = 2;      // coopmat_f16: subgroups per workgroup, and rows of them; gemv: warps
  std::uint32_t group_m = 8;                 // tiled/coopmat: grouped tile order (0: row-major)
  std::uint32_t splits = 1;                  // K split across workgroups (1: none)
  std::uint32_t wg() const {
    return kernel == gemm_kernel::coopmat_f16 || kernel == gemm_kernel::gemv || kernel == gemm_kernel::coopmat2 ||
                   kernel == gemm_kernel::gemv_coopmat
               ? 32 * warps
               : (bm / tm) * (bn / tn);
  }
  std::string str() const {
    auto n = [](std::uint32_t v) { return std::to_string(v); };
    std::string s = std::string(to_string(kernel)) + " " + n(bm) + "x" + n(bn) + "x" + n(bk);
    if (kernel == gemm_kernel::coopmat_f16) s += " warps " + n(warps) + " (" + n(warps_m) + " rows)";
    else if (kernel == gemm_kernel::coopmat2) s += " invocations " + n(wg()) + " unroll " + n(tm);
    else if (kernel == gemm_kernel::gemv) s += " thread " + n(bm) + "x" + n(tn) + " warps " + n(warps);
    else if (kernel == gemm_kernel::gemv_coopmat) s += " warps " + n(warps) + " chunk " + n(256 * tm);
    else s += " thread " + n(tm) + "x" + n(tn);
    if (kernel == gemm_kernel::tiled || kernel == gemm_kernel::coopmat_f16 || kernel == gemm_kernel::coopmat2)
      s += " group_m " + n(group_m);
    if (splits != 1) s += " splits " + n(splits);
    return s;
  }
};

/// Whether the device runs the coopmat_f16 kernel (f16 data only).
inline bool coopmat_f16_available(const device_info& d) {
  return d.nv_coopmat_f16_16x16x16 && d.storage_16bit && d.fp16_arithmetic && d.subgroup_size == 32;
}

/// Whether the device runs the coopmat2 kernel on `dt` data (f16, or bf16 where it has bf16 matrices).
inline bool coopmat2_available(const device_info& d, dtype dt) {
  if (dt != dtype::f16 && dt != dtype::bf16) return false;
  if (dt == dtype::f16 && !d.fp16_arithmetic) return false;
  return coopmat2_lists(d, dt);  // bf16: with use conversions (its C leaves as a matrix of use A)
}

/// gemv: lanes of one column group, which split its K step between them (0 if bn does not divide).
inline std::uint32_t gemv_lanes_k(const gemm_config& c) {
  const std::uint64_t cols = c.tn ? c.bn / c.tn : 0;
  return cols && c.bn % c.tn == 0 && (32ull * c.warps) % cols == 0 ? static_cast<std::uint32_t>(32ull * c.warps / cols) : 0;
}

/// The K granularity of a config's split ranges: its K step (gemv: all lanes of a column group).
inline std::uint32_t gemm_k_step(const gemm_config& c) {
  return c.kernel == gemm_kernel::gemv ? gemv_lanes_k(c) * c.bk : c.bk;
}

/// How many splits of K a config dispatches for depth k: its `splits`, less
/// where ranges of whole K steps run out (shaders/gemm_common.hpp kf_split_k
/// computes the same ranges). 1 means no split (no scratch, one dispatch).
inline std::uint32_t gemm_splits_used(const gemm_config& c, std::uint64_t k) {
  const std::uint64_t step = gemm_k_step(c);
  if (c.splits <= 1 || k == 0 || step == 0) return 1;
  const std::uint64_t chunk = ((k + c.splits - 1) / c.splits + step - 1) / step * step;
  return static_cast<std::uint32_t>((k + chunk - 1) / chunk);
}

/// Shared memory a config's kernel declares (bytes), including the prelude's reduction slots.
inline std::uint64_t gemm_shared_bytes(const gemm_config& c) {
  const std::uint64_t red = 4ull * c.wg();
  switch (c.kernel) {
    case gemm_kernel::generic: return 4ull * c.bk * (c.bm + c.bn) + red;
    case gemm_kernel::tiled: return 2ull * 4 * c.bk * (c.bm + 4) + 2ull * 4 * c.bk * (c.bn + 4) + red;
    case gemm_kernel::gemv: return red;
    case gemm_kernel::coopmat2: return 0;  // the driver stages the matrices (coopmat2_reserved_shared)
    case gemm_kernel::gemv_coopmat: {  // A chunk, each subgroup's B block (padded rows), its 16×16 f32 epilogue area
      const std::uint64_t nf = c.warps ? c.bn / (16ull * c.warps) : 0;
      return 16ull * 16 * (256ull * c.tm / 8 + 1) + (16ull * c.bk * (2 * nf + 1) + 1024) * c.warps + red;
    }
    default: return 2ull * 16 * c.bm * (c.bk / 8 + 1) + 2ull * 16 * c.bk * (c.bn / 8 + 1) + 1024ull * c.warps + red;
  }
}

/// The most splits a config may ask for (the scratch is splits·M·N floats).
inline constexpr std::uint32_t gemm_max_splits = 64;

/// Empty when `c` runs on device `d` with element type `dt`, else why not.
inline std::string gemm_config_check(const device_info& d, dtype dt, const gemm_config& c) {
  auto n = [](std::uint32_t v) { return std::to_string(v); };
  if (!c.bm || !c.bn || !c.bk) return "empty tile";
  if (!c.splits || c.splits > gemm_max_splits) return "splits " + n(c.splits) + " outside 1.." + n(gemm_max_splits);
  if (c.kernel == gemm_kernel::generic && c.splits != 1) return "the generic kernel does not split K";
  if (c.kernel == gemm_kernel::coopmat2) {
    if (!coopmat2_available(d, dt))
      return "device lacks workgroup-scope " + std::string(to_string(dt)) + " cooperative matrices (VK_NV_cooperative_matrix2)";
    if (!c.group_m) return "coopmat2: group_m must be >= 1 (1 is row-major)";
    if (c.tm != 1 && c.tm != 2 && c.tm != 4 && c.tm != 8) return "coopmat2: unroll (tm) " + n(c.tm) + " is not 1, 2, 4 or 8";
    if (c.bm > d.coopmat2_max_dimension || c.bn > d.coopmat2_max_dimension || c.bk > d.coopmat2_max_dimension)
      return "tile " + n(c.bm) + "x" + n(c.bn) + "x" + n(c.bk) + " exceeds the largest matrix dimension " +
             n(d.coopmat2_max_dimension);
    if (c.wg() > d.coopmat2_max_workgroup) return "workgroup of " + n(c.wg()) + " exceeds " + n(d.coopmat2_max_workgroup);
    // The f32 accumulator tile lives in the invocations' registers: 128x256 over 128 invocations (256
    // each) ran at 13 TFLOP/s on the H100, 256x256 over 128 failed to build; 128 each ran at full rate.
    if (static_cast<std::uint64_t>(c.bm) * c.bn > 128ull * c.wg())
      return "coopmat2: a " + n(c.bm) + "x" + n(c.bn) + " f32 accumulator over " + n(c.wg()) +
             " invocations is more than 128 registers each";
    bool listed = false;
    for (const auto& s : d.coopmat2_shapes)
      listed = listed || (s.type == dt && s.invocations == c.wg() && s.m && s.n && s.k && c.bm % s.m == 0 &&
                          c.bn % s.n == 0 && c.bk % s.k == 0 && (dt != dtype::bf16 || c.bn % s.k == 0));  // bf16 C: use A
    if (!listed)
      return "no workgroup-scope shape of " + std::string(to_string(dt)) + " with " + n(c.wg()) +
             " invocations divides the tile " + n(c.bm) + "x" + n(c.bn) + "x" + n(c.bk);
  } else if (c.kernel == gemm_kernel::coopmat_f16) {
    if (dt != dtype::f16) return "coopmat_f16 needs f16 data";
    if (!coopmat_f16_available(d)) return "device lacks 16x16x16 f16 NV cooperative matrices (or 16-bit storage, or subgroup size 32)";
    if (!c.warps || !c.warps_m || c.warps % c.warps_m) return "warps " + n(c.warps) + " not a multiple of warps_m " + n(c.warps_m);
    const std::uint32_t wn = c.warps / c.warps_m;
    if (c.bk % 16 || c.bm % (16 * c.warps_m) || c.bn % (16 * wn))
      return "tile " + n(c.bm) + "x" + n(c.bn) + "x" + n(c.bk) + " is not a multiple of the 16x16x16 fragments of a " +
             n(c.warps_m) + "x" + n(wn) + " subgroup grid";
  } else if (c.kernel == gemm_kernel::gemv_coopmat) {
    if (dt != dtype::f16) return "gemv_coopmat needs f16 data";
    if (!coopmat_f16_available(d)) return "device lacks 16x16x16 f16 NV cooperative matrices (or 16-bit storage, or subgroup size 32)";
    if (c.bm != 16) return "gemv_coopmat: bm " + n(c.bm) + " is not 16 (one fragment of rows)";
    if (c.bk != 16 && c.bk != 32 && c.bk != 64) return "gemv_coopmat: bk " + n(c.bk) + " is not 16, 32 or 64";
    if (c.tm != 1 && c.tm != 2 && c.tm != 4) return "gemv_coopmat: A chunk (tm) " + n(c.tm) + " is not 1, 2 or 4 times 256";
    if (!c.warps || c.bn % (16 * c.warps) || c.bn / (16 * c.warps) > 8)
      return "gemv_coopmat: " + n(c.bn) + " columns are not 1 to 8 fragments for each of " + n(c.warps) + " subgroups";
    // B is held two steps ahead in registers: 2 × 8 fragments is 64 registers a lane.
    if (c.bk / 16 * (c.bn / (16 * c.warps)) > 8)
      return "gemv_coopmat: " + n(c.bk / 16 * (c.bn / (16 * c.warps))) +
             " B fragments per subgroup and step exceed 8 (registers: two steps are in flight)";
  } else if (c.kernel == gemm_kernel::gemv) {
    if (!(d.subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT)) return "gemv needs subgroup shuffles";
    if (!c.warps) return "no subgroups";
    if (c.tn % 4 || c.tn > 16 || !c.tn) return "gemv: tn " + n(c.tn) + " is not 4, 8, 12 or 16 columns";
    if (c.bk % 4 || c.bk > 16) return "gemv: bk " + n(c.bk) + " rows per step is not 4, 8, 12 or 16";
    if (c.bm * c.tn > 128) return "gemv: " + n(c.bm) + "x" + n(c.tn) + " accumulators per invocation exceed 128";
    const std::uint32_t kl = gemv_lanes_k(c);
    if (!kl || (kl & (kl - 1)))
      return "gemv: " + n(32 * c.warps) + " invocations do not form column groups of a power-of-two lanes for a " +
             n(c.bn) + "-column tile of " + n(c.tn) + " per invocation";
    if (kl > d.subgroup_size || (32 * c.warps) % d.subgroup_size)
      return "gemv: " + n(kl) + " lanes per column group in whole subgroups of " + n(d.subgroup_size) + " do not fit";
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

// ---- the untuned choice per shape class -------------------------------------
//
// Measured on the H100 (driver 580.159; `vk_bench --gemm-sweep`, raw output
// docs/bench/h100-2026-11-23-gemm-sweep.txt: every config of a shape on a
// fresh context, back-to-back calls, wall clock per call):
//
// Decode (M <= gemv_max_m, or gemv_max_m_coopmat for f16 on cooperative
// matrices, and for bf16 on coopmat2, not timed there yet): gemv, bm the next
// power of two >= M (B is streamed once), K split until the grid has gemv_fill
// workgroups, each split at least gemv_min_steps K steps deep (one step for
// one row; gemv_coopmat: see its constants below). 1×14336×4096
// f32 reads B at 2627 GB/s (92 % of the 2860 GB/s copy), 1×128256×4096 at
// 2880; f16 2250 and 2940. gemv past 8 rows loses to the 32-row tile kernels
// split along K (16×4096×14336: gemv at best 0.213 ms f32 / 0.164 ms f16,
// tiled 32×128 split 16 0.171 ms, coopmat 32×128 split 4 0.094 ms), and in f16
// the tensor-core tile passes gemv between 1 row (gemv 0.018 ms at
// 1×4096×4096) and 8 (gemv 0.038 ms, coopmat 32×128 split 4 0.028 ms at 17
// rows): 4 is that midpoint.
//
// Otherwise the tile kernels (coopmat2 for f16 and bf16 where the device has
// it, else coopmat_f16 for f16 where it has that, else tiled), tiles at most
// the next power of two >= M tall (32 at least), largest first: the first tile
// whose grid has `as_is` tiles runs unsplit; else the first whose grid split
// along K reaches `split_to` workgroups, each split at least `min_split_k`
// deep (tile_fill below). The fallback (nothing fills: small or shallow
// problems) is the smallest tile, split as far as K allows. The order lives in
// fixed arrays: this runs on every policy::vulkan<> gemm dispatch, without
// allocating.

/// Largest M that runs gemv by default (f32, and f16 and bf16 without cooperative matrices).
inline constexpr std::uint64_t gemv_max_m = 8;
/// Largest M that runs gemv by default for f16 where coopmat_f16 or coopmat2 runs (and bf16 where coopmat2 does).
inline constexpr std::uint64_t gemv_max_m_coopmat = 4;
/// Workgroups a gemv grid is split to: ~1.5 per H100 multiprocessor (132).
/// 1×4096×4096 f32 ran 0.035–0.036 ms at 128–256 workgroups and 0.041 at
/// 512; 1×14336×4096 f32 0.089 ms at 224, 0.093 at 448.
inline constexpr std::uint64_t gemv_fill = 192;
/// Longest K at which 16-bit gemv takes 4 columns per invocation (256 per
/// workgroup) rather than 8, and splits K towards twice gemv_fill: a short K
/// leaves a lane few steps, and more workgroups keep more loads in flight
/// (H200, vk_bench --gemm-sweep --f16, docs/bench/h200-2026-11-29-gemv-prefetch2/,
/// the one shape timed: 1×50257×768, GPT-2's vocabulary, 0.0350 ms with 4
/// columns split 2 (this rule's pick), 0.0522 with 8 split 2 (the rule
/// before), 0.0783 with 8 unsplit).
inline constexpr std::uint64_t gemv_short_k = 1024;
/// Least K steps (lanes per column group × bk rows) per lane in a gemv split
/// of several rows: 8×4096×4096 f16 ran 0.038 ms split 16 (8 steps), 0.053
/// split 32 (4 steps). One row, where K holds that many steps, splits down to one step: a lane's step is
/// then one load and a few products, and more workgroups keep more loads in
/// flight (H200, vk_bench --gemm-sweep --f16, docs/bench/h200-2026-11-29-thin/:
/// 1×2304×768 0.0047 ms split 16 against 0.0116 split 2, 1×3072×768 0.0049
/// against 0.0116, 1×768×3072 0.0059 split 64 against 0.0112 split 8).
inline constexpr std::uint64_t gemv_min_steps = 8;

/// gemv_coopmat (f16, gemv_max_m_coopmat < M <= 16 where coopmat_f16 runs):
/// 4 subgroups of 4 column fragments (256 columns), 16 rows of B per step,
/// K split until the grid has gemv_coopmat_fill workgroups, splits at least
/// 256 deep (one staged chunk of A). `vk_bench --gemm-sweep --f16` on the
/// H100 (docs/bench/h100-2026-11-27-gemv-coopmat/): 8×14336×4096 split 4
/// 0.0675 ms (coopmat2's best 0.0782), 8×28672×8192 split 2 0.220 (0.233),
/// 8×128256×4096 unsplit 0.447 (0.469), 16×4096×14336 0.068–0.072 (0.078);
/// 32 rows of B per step, 2 or 8 subgroups and 8 fragments each within 5 %.
inline constexpr std::uint64_t gemv_coopmat_fill = 200;
inline constexpr std::uint64_t gemv_coopmat_max_m = 16;
/// A thin gemv_coopmat grid (fewer than gemv_coopmat_fill / 4 column blocks:
/// N <= 12544) takes 32 rows of B per step and 512-deep chunks of A, and is
/// split only to gemv_coopmat_thin_fill workgroups: with two steps of B in
/// flight (the shader's prefetch) fewer, deeper splits keep as many loads
/// in flight with half the partial sums. Where 512-deep splits cannot reach
/// that many workgroups (8×1024×4096: 32), the rule before runs. H200,
/// `vk_bench --gemm-shapes --f16`, this rule against the one before
/// (docs/bench/h200-2026-11-29-thin/): 8×4096×4096 0.0133 ms against
/// 0.0165, 5×4096×4096 0.0127 / 0.0140, 16×4096×4096 0.0162–0.0169 /
/// 0.0224–0.0228, 8×6144×4096 0.0305 / 0.0332, 16×4096×14336 0.0476 /
/// 0.0528, 16×2048×8192 0.0165 / 0.0227; but 8×1024×4096 0.0125 / 0.0107.
inline constexpr std::uint64_t gemv_coopmat_thin_fill = 128;

/// When a tile kernel's grid fills the device, and how far to split K otherwise.
struct tile_fill {
  std::uint64_t as_is;        // tiles that run unsplit
  std::uint64_t split_to;     // workgroups a thin grid is split to
  std::uint64_t min_split_k;  // least K per split
};
/// tiled: 2048² (256 tiles of 128×128) ran at 35.1 TFLOP/s against 19.8 with
/// 512 of 128×64 (docs/bench/h100-2026-11-22-sweep-f32.txt), so ~224 tiles
/// (85 % of two per multiprocessor) run as they are; thin grids went best at
/// 512 workgroups (32×4096×4096: 32×128 split 16 0.069 ms, split 8 0.081;
/// 64×4096×4096: 64×64 split 8 0.101 ms, split 4 0.140; 512×4096×4096:
/// 128×128 split 4 0.571 ms against 0.609 unsplit 128×64), splits down to
/// 256 deep (17×4096×4096 split 16).
inline constexpr tile_fill tiled_fill{224, 512, 256};
/// coopmat_f16: one 128×128 workgroup per multiprocessor already runs at
/// full rate (512×4096×4096: 128 tiles unsplit 0.117 ms, split 2 0.168,
/// 64×128 unsplit 0.197); thin grids split to 256 workgroups but no shallower
/// than 1024 (32×4096×4096: 32×128 split 4 0.031 ms, split 8 0.048, split 16
/// 0.061; 64×4096×4096: 64×128 split 4 0.046, split 2 0.058).
inline constexpr tile_fill coopmat_fill{128, 256, 1024};

namespace detail {
inline std::uint32_t pow2_at_least(std::uint64_t v) {
  std::uint32_t p = 1;
  while (p < v && p < (1u << 30)) p *= 2;
  return p;
}
/// The power-of-two splits (<= gemm_max_splits) that bring `blocks` workgroups
/// to `fill`, each split at least `min_k` deep (1 where K is too short).
inline std::uint32_t splits_to_fill(std::uint64_t blocks, std::uint64_t k, std::uint64_t fill, std::uint64_t min_k) {
  std::uint32_t s = 1;
  if (blocks == 0) return s;  // an empty output: nothing to fill
  while (blocks * s < fill && 2ull * s <= gemm_max_splits && k / (2ull * s) >= min_k) s *= 2;
  return s;
}
}  // namespace detail

/// The gemv config the default runs for an m×n×k gemm (few rows in mind; any m works).
inline gemm_config gemv_default_config(dtype dt, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
  // 4 lanes per column group of 256 invocations; f16: 8 columns (one
  // 16-byte load) per invocation where K > gemv_short_k, f32: 4 (gemv
  // 1×14336×4096 f16 0.052 ms with 8, 0.057 with 4). bf16 takes f16's: the
  // same bytes per load (not timed on its own yet).
  gemm_config c{gemm_kernel::gemv, 1, 256, 8, 0, 4, 8, 0, 0, 1};
  c.bm = detail::pow2_at_least(std::min<std::uint64_t>(std::max<std::uint64_t>(m, 1), 16));
  const bool wide = dt == dtype::f16 || dt == dtype::bf16;  // 16-bit elements
  const bool short_k = wide && k <= gemv_short_k;
  c.tn = wide && c.bm <= 8 && !short_k ? 8 : 4;
  c.bk = c.bm <= 8 ? 8 : 4;
  // f32 with 5–8 rows: 16 rows of B per lane step (vk_bench --gemm-sweep on the H100,
  // docs/bench/h100-2026-11-24-run2/sweep8.txt: 8×128256×4096 0.95 ms against 1.43 with 8,
  // 8×14336×4096 0.126 against 0.172).
  if (dt == dtype::f32 && c.bm == 8) c.bk = 16;
  c.bn = 256 / 4 * c.tn;
  const std::uint64_t blocks = ((n + c.bn - 1) / c.bn) * ((m + c.bm - 1) / c.bm);
  const std::uint64_t step = gemm_k_step(c);
  // One row, K worth splitting at all (8 steps: 256 rows of B; timed from K = 768 up).
  const bool one_step = c.bm == 1 && k >= gemv_min_steps * step;
  c.splits = detail::splits_to_fill(blocks, k, short_k ? 2 * gemv_fill : gemv_fill, (one_step ? 1 : gemv_min_steps) * step);
  return c;
}

/// The gemv_coopmat config the default runs for an m×n×k gemm (few rows in mind; any m works).
/// thin = false: the rule before gemv_coopmat_thin_fill (16 rows of B a step, 256-deep chunks),
/// for a device that does not take the thin config (its shared memory).
inline gemm_config gemv_coopmat_default_config(std::uint64_t m, std::uint64_t n, std::uint64_t k, bool thin = true) {
  gemm_config c{gemm_kernel::gemv_coopmat, 16, 256, 16, 1, 0, 4, 0, 0, 1};
  const std::uint64_t blocks = ((n + c.bn - 1) / c.bn) * ((m + c.bm - 1) / c.bm);
  const std::uint32_t thin_splits = detail::splits_to_fill(blocks, k, gemv_coopmat_thin_fill, 512);
  if (thin && 4 * blocks < gemv_coopmat_fill && blocks * thin_splits >= gemv_coopmat_thin_fill) {  // see gemv_coopmat_thin_fill
    c.bk = 32;
    c.tm = 2;
    c.splits = thin_splits;
  } else {
    c.splits = detail::splits_to_fill(blocks, k, gemv_coopmat_fill, 256);
  }
  return c;
}

/// The untuned coopmat2 config for an m×n×k gemm (vk_bench --coopmat2 on the H100,
/// docs/bench/h100-2026-11-24-coopmat2/): 128×256×32 over 256 invocations, 4 K steps per loop
/// iteration, where M >= 65 and its grid has >= 192 tiles (4096³ 303 TFLOP/s, 8192³ 326, 512×14336×4096 264);
/// also where M >= 256, every tile lies inside M×N with K a multiple of 8 (no tile takes the
/// bounds-checked path, which a grid of one wave would wait for), and its grid, split along K
/// towards 96 workgroups with splits at least 1024 deep, has >= 64 (vk_bench --gemm-sweep --f16 on
/// the H100, docs/bench/h100-2026-11-27-split/: 512×6144×4096 unsplit 0.122 ms against 128×128's
/// 0.185, 512×4096×4096 split 2 0.081 against 0.093, 256×4096×4096 split 4 0.053 against 0.078,
/// 1024×2304×768 0.034 against 0.040; but 256×6272×2304, N past its last full wide tile: 0.083 at
/// best against 128×128's 0.050);
/// else the first of 128×128×32/256, 64×128×32/128 and 32×128×32/128 (at most the next power of two
/// >= M tall) whose grid has 128 tiles, unsplit (512×4096×4096: 128×128 187 TFLOP/s; timed when coopmat2's splits
/// were slow, before 2026-11-27); else the first of those
/// split along K to 256 workgroups at least 512 deep (64×4096×4096: 64×128 split 8 52 TFLOP/s, the
/// NV subgroup-scope kernel 50); else the smallest tile, split as far as K allows.
inline gemm_config coopmat2_default_config(const device_info& d, dtype dt, std::uint64_t m, std::uint64_t n,
                                           std::uint64_t k) {
  static constexpr gemm_config wide{gemm_kernel::coopmat2, 128, 256, 32, 4, 0, 8, 0, 8, 1};
  static constexpr std::array<gemm_config, 3> order{{
      {gemm_kernel::coopmat2, 128, 128, 32, 4, 0, 8, 0, 8, 1},
      {gemm_kernel::coopmat2, 64, 128, 32, 2, 0, 4, 0, 8, 1},
      {gemm_kernel::coopmat2, 32, 128, 32, 2, 0, 4, 0, 8, 1},
  }};
  auto tiles = [&](const gemm_config& c) { return ((m + c.bm - 1) / c.bm) * ((n + c.bn - 1) / c.bn); };
  auto ok = [&](const gemm_config& c) { return gemm_config_check(d, dt, c).empty(); };
  const std::uint64_t max_bm = detail::pow2_at_least(std::max<std::uint64_t>(m, 32));
  if (wide.bm <= max_bm && tiles(wide) >= 192 && ok(wide)) return wide;  // not for a few rows: 8×128256 ran 4× slower
  if (m >= 256 && m % wide.bm == 0 && n % wide.bn == 0 && k % 8 == 0 && ok(wide)) {
    gemm_config c = wide;
    c.splits = detail::splits_to_fill(tiles(c), k, 96, 1024);
    if (tiles(c) * c.splits >= 64) return c;
  }
  // A few rows (decode: B streamed once): the 32-row tile split along K towards 896 workgroups
  // (~7 per SM of an H100), splits at least 512 deep. bf16 on the H100: 8x14336x4096 split 4 -> 8
  // 0.084 -> 0.072 ms, 8x28672x8192 unsplit -> split 4 0.262 -> 0.233; a vocabulary's 1002 column
  // tiles stay unsplit (docs/bench/HISTORY.md).
  if (max_bm <= order.back().bm && ok(order.back())) {
    gemm_config c = order.back();
    c.splits = detail::splits_to_fill(tiles(c), k, 896, 512);
    return c;
  }
  for (const auto& c : order)
    if (c.bm <= max_bm && tiles(c) >= 128 && ok(c)) return c;
  for (const auto& c0 : order) {
    if (c0.bm > max_bm || !ok(c0)) continue;
    gemm_config c = c0;
    c.splits = detail::splits_to_fill(tiles(c), k, 256, 512);
    if (tiles(c) * c.splits >= 256) return c;
  }
  gemm_config c = order.back();
  c.splits = detail::splits_to_fill(tiles(c), k, 256, 512);
  return c;
}

/// The untuned choice among the tile kernels (tiled; coopmat2 for f16 and
/// bf16, or coopmat_f16 for f16, where allowed and available) for an m×n×k gemm.
inline gemm_config gemm_tile_default_config(const device_info& d, dtype dt, std::uint64_t m, std::uint64_t n,
                                            std::uint64_t k, bool allow_coopmat = true) {
  auto tiles = [&](const gemm_config& c) { return ((m + c.bm - 1) / c.bm) * ((n + c.bn - 1) / c.bn); };
  // tiled 128×128×8/8×8 ran 4096³ at 35.8 TFLOP/s; 128×256/8×16, 256×128/16×8
  // and K step 16 at 32.4–32.8, 128×64/8×4 at 28.5 (8×8 ran at 2 TFLOP/s
  // while the epilogue indexed the accumulators element by element: they were
  // not kept in registers). coopmat 128×128×32 with 8 subgroups ran 159;
  // K step 16 99, 64×64 and 64×128 95–98. A config the device refuses (e.g.
  // 16 KiB of shared memory) passes its turn to the next one.
  static constexpr std::array<gemm_config, 4> coop{{
      {gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 8, 1},
      {gemm_kernel::coopmat_f16, 64, 128, 32, 0, 0, 4, 2, 8, 1},
      {gemm_kernel::coopmat_f16, 64, 64, 32, 0, 0, 4, 2, 8, 1},
      {gemm_kernel::coopmat_f16, 32, 128, 32, 0, 0, 4, 2, 8, 1},
  }};
  static constexpr std::array<gemm_config, 4> vec{{
      {gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8, 1},
      {gemm_kernel::tiled, 128, 64, 8, 8, 4, 8, 2, 8, 1},
      {gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 8, 1},
      {gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, 1},
  }};
  if (allow_coopmat && coopmat2_available(d, dt)) {
    const gemm_config c = coopmat2_default_config(d, dt, m, n, k);
    if (gemm_config_check(d, dt, c).empty()) return c;
  }
  const bool use_coop = allow_coopmat && dt == dtype::f16 && coopmat_f16_available(d);
  const auto& order = use_coop ? coop : vec;
  const tile_fill& f = use_coop ? coopmat_fill : tiled_fill;
  // A 128-row tile for 17 rows would multiply 7 zero rows for each real one.
  const std::uint64_t max_bm = detail::pow2_at_least(std::max<std::uint64_t>(m, 32));
  for (const auto& c0 : order) {
    if (c0.bm > max_bm || !gemm_config_check(d, dt, c0).empty()) continue;
    if (tiles(c0) >= f.as_is) return c0;
    gemm_config c = c0;
    c.splits = detail::splits_to_fill(tiles(c), k, f.split_to, f.min_split_k);
    if (tiles(c) * c.splits >= f.split_to) return c;
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    gemm_config c = *it;
    c.splits = detail::splits_to_fill(tiles(c), k, f.split_to, f.min_split_k);
    if (gemm_config_check(d, dt, c).empty()) return c;
  }
  if (use_coop) return gemm_tile_default_config(d, dt, m, n, k, false);
  return gemm_config{gemm_kernel::generic, 64, 64, 16, 4, 4, 0, 0, 0, 1};
}

/// The untuned choice for an m×n×k gemm (see above). allow_coopmat = false
/// keeps f16 and bf16 on the vector-unit kernels (policy::coopmat<false>).
inline gemm_config gemm_default_config(const device_info& d, dtype dt, std::uint64_t m, std::uint64_t n,
                                       std::uint64_t k, bool allow_coopmat = true) {
  const bool coop = allow_coopmat && ((dt == dtype::f16 && coopmat_f16_available(d)) || coopmat2_available(d, dt));
  if (m <= (coop ? gemv_max_m_coopmat : gemv_max_m)) {
    const gemm_config g = gemv_default_config(dt, m, n, k);
    if (gemm_config_check(d, dt, g).empty()) return g;
  }
  if (allow_coopmat && dt == dtype::f16 && m <= gemv_coopmat_max_m) {
    for (const bool thin : {true, false}) {
      const gemm_config g = gemv_coopmat_default_config(m, n, k, thin);
      if (gemm_config_check(d, dt, g).empty()) return g;
    }
  }
  return gemm_tile_default_config(d, dt, m, n, k, allow_coopmat);
}

/// Candidate configs for the tuner: every combination below that the device runs.
inline std::vector<gemm_config> gemm_configs(const device_info& d, dtype dt) {
  std::vector<gemm_config> out;
  auto add = [&](const gemm_config& c) {
    if (gemm_config_check(d, dt, c).empty()) out.push_back(c);
  };
  for (std::uint32_t g : {0u, 8u}) {
    for (auto [bm, bn, tm, tn] : std::initializer_list<std::array<std::uint32_t, 4>>{
             {128, 128, 8, 8}, {128, 64, 8, 8}, {64, 128, 8, 8}, {64, 64, 8, 8}, {128, 64, 8, 4},
             {64, 128, 4, 8}, {64, 64, 4, 4}, {128, 128, 8, 4}, {128, 128, 4, 8}})
      for (std::uint32_t bk : {8u, 16u}) add({gemm_kernel::tiled, bm, bn, bk, tm, tn, 8, 2, g, 1});
    for (auto [bm, bn, w, wm] : std::initializer_list<std::array<std::uint32_t, 4>>{
             {128, 128, 8, 2}, {128, 128, 4, 2}, {128, 64, 4, 2}, {64, 128, 4, 2}, {64, 64, 4, 2}, {128, 256, 8, 2}})
      for (std::uint32_t bk : {16u, 32u}) add({gemm_kernel::coopmat_f16, bm, bn, bk, 0, 0, w, wm, g, 1});
  }
  // Larger register tiles (fewer shared-memory reads per FMA) and a short-M tile.
  for (auto [bm, bn, tm, tn] : std::initializer_list<std::array<std::uint32_t, 4>>{
           {128, 256, 8, 16}, {256, 128, 16, 8}, {32, 128, 4, 4}})
    add({gemm_kernel::tiled, bm, bn, 8, tm, tn, 8, 2, 8, 1});
  add({gemm_kernel::coopmat_f16, 32, 128, 32, 0, 0, 4, 2, 8, 1});
  // K splits of the tile shapes thin grids use.
  for (std::uint32_t s : {2u, 4u, 8u}) {
    add({gemm_kernel::tiled, 128, 128, 8, 8, 8, 8, 2, 8, s});
    add({gemm_kernel::tiled, 64, 64, 8, 4, 4, 8, 2, 8, s});
    add({gemm_kernel::tiled, 32, 128, 8, 4, 4, 8, 2, 8, s});
    add({gemm_kernel::coopmat_f16, 128, 128, 32, 0, 0, 8, 2, 8, s});
    add({gemm_kernel::coopmat_f16, 64, 64, 32, 0, 0, 4, 2, 8, s});
    add({gemm_kernel::coopmat_f16, 32, 128, 32, 0, 0, 4, 2, 8, s});
  }
  // coopmat2: tiles × workgroup sizes the device lists (the check drops the others), K steps, unrolling,
  // tile order, splits.
  for (std::uint32_t w : {4u, 8u}) {
    for (auto [bm, bn] : std::initializer_list<std::array<std::uint32_t, 2>>{
             {128, 128}, {128, 256}, {256, 128}, {64, 128}, {64, 64}, {32, 128}, {256, 256}})
      for (std::uint32_t bk : {32u, 64u}) add({gemm_kernel::coopmat2, bm, bn, bk, 4, 0, w, 0, 8, 1});
    for (std::uint32_t u : {1u, 2u, 8u}) {
      add({gemm_kernel::coopmat2, 128, 128, 32, u, 0, w, 0, 8, 1});
      add({gemm_kernel::coopmat2, 128, 256, 32, u, 0, w, 0, 8, 1});
    }
    for (auto [bm, bn] : std::initializer_list<std::array<std::uint32_t, 2>>{{64, 128}, {64, 64}, {32, 128}})
      add({gemm_kernel::coopmat2, bm, bn, 32, 2, 0, w, 0, 8, 1});
    const std::uint32_t u = w == 8 ? 4 : 2;  // the defaults' unrolling for the workgroup size
    add({gemm_kernel::coopmat2, 128, 128, 32, u, 0, w, 0, 1, 1});
    for (std::uint32_t s : {2u, 4u, 8u}) {
      add({gemm_kernel::coopmat2, 128, 128, 32, u, 0, w, 0, 8, s});
      add({gemm_kernel::coopmat2, 64, 64, 32, u, 0, w, 0, 8, s});
      add({gemm_kernel::coopmat2, 32, 128, 32, u, 0, w, 0, 8, s});
    }
  }
  // gemv_coopmat: subgroups × column fragments each × B rows per step × splits.
  for (auto [w, nf, bk] : std::initializer_list<std::array<std::uint32_t, 3>>{
           {4, 4, 16}, {4, 4, 32}, {4, 2, 32}, {4, 8, 16}, {4, 2, 64}, {8, 2, 32}, {2, 4, 32}})
    for (std::uint32_t s : {1u, 2u, 4u, 8u, 16u}) add({gemm_kernel::gemv_coopmat, 16, 16 * nf * w, bk, 1, 0, w, 0, 0, s});
  // Deeper chunks of A: 512 with 16 or 32 rows of B a step (the thin default's), 1024 with 16
  // (1024 with 32 needs 55 KiB of shared memory).
  for (auto [kc, bk] : std::initializer_list<std::array<std::uint32_t, 2>>{{2, 16}, {2, 32}, {4, 16}})
    for (std::uint32_t s : {1u, 2u, 4u, 8u, 16u}) add({gemm_kernel::gemv_coopmat, 16, 256, bk, kc, 0, 4, 0, 0, s});
  // gemv: rows per workgroup × (columns per invocation, lanes per column group) × splits.
  for (std::uint32_t bm : {1u, 2u, 4u, 8u})
    for (auto [tn, kl] : std::initializer_list<std::array<std::uint32_t, 2>>{{4, 4}, {4, 8}, {8, 4}})
      for (std::uint32_t s : {1u, 4u, 16u, 64u}) add({gemm_kernel::gemv, bm, 256 / kl * tn, 8, 0, tn, 8, 0, 0, s});
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
