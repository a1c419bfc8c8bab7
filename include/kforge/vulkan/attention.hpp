// kforge/vulkan/attention.hpp — scaled dot-product attention on
// policy::vulkan: per call one of three kernels (shaders/attention.hpp) —
// the split (flash-decoding) kernel for few query rows per KV head, the
// cooperative-matrix kernel for f16 and bf16 prefill, else the scalar flash
// kernel. A fourth, on workgroup-scope matrices (spirv/attention_coopmat2.hpp),
// runs only when asked for by tiling (record_attention's `cm2`): it is
// correct where it was checked on the H100/H200 but 3-4x slower than the
// cooperative-matrix kernel there (docs/bench/HISTORY.md), so no policy picks it.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <algorithm>
#include <string>
#include <vector>

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/gemm_config.hpp"
#include "kforge/vulkan/shaders/attention.hpp"
#include "kforge/vulkan/spirv/attention_coopmat2.hpp"

namespace kforge::vulkan {

/// The kernel an attention call runs on.
enum class attention_kernel {
  scalar,   ///< shaders::attention: one workgroup per query row; any dtype, any head dims
  coopmat,  ///< shaders::attention_coopmat: f16 or bf16 on f16 NV cooperative matrices, D, Dv multiples of 16 up to 256
  split,    ///< shaders::attention_split (+ attention_merge): keys split across workgroups, G·S <= 16 rows
  coopmat2, ///< spirv::attention_coopmat2 (asked for only): f16/bf16 on workgroup-scope matrices, S % Br == L % Bc == 0
};

constexpr std::string_view to_string(attention_kernel k) {
  return k == attention_kernel::coopmat    ? "coopmat"
         : k == attention_kernel::coopmat2 ? "coopmat2"
         : k == attention_kernel::split    ? "split"
                                           : "scalar";
}

/// An attention call's extents as the kernels see them.
struct attention_dims {
  index_t b = 0, h = 0, hkv = 0, s = 0, l = 0, d = 0, dv = 0;
  bool causal = false, bshd = false;
  index_t group() const { return hkv ? h / hkv : 1; }
  /// Keys some query sees: causal attention (top-left) sees none at or past S.
  index_t keys_seen() const { return causal ? std::min(l, s) : l; }
};

/// Tiling of attention_coopmat: `warps` subgroups of `rf` 16-row fragments
/// each (16·rf·warps query rows per workgroup), key blocks of `bkv`.
struct attention_coopmat_config {
  std::uint32_t warps = 4, rf = 1, bkv = 64;
  std::uint32_t probe = 0;  ///< the kernel's PROBE bits (timing experiments, wrong results); 0 in every real call
  std::uint32_t rows() const { return 16 * rf * warps; }
  std::string str() const {
    return "warps " + std::to_string(warps) + " rf " + std::to_string(rf) + " bkv " + std::to_string(bkv) +
           (probe ? " probe " + std::to_string(probe) : "");
  }
};

/// Shared memory attention_coopmat declares (bytes): Ks, Vs, the prelude's
/// reduction slots, and on bf16 data the nine tile-scale slots and flags.
inline std::uint64_t attention_coopmat_shared_bytes(const attention_coopmat_config& c, index_t d, index_t dv,
                                                    dtype dt = dtype::f16) {
  const std::uint64_t sk = static_cast<std::uint64_t>(d) / 8 + 1, sv = static_cast<std::uint64_t>(dv) / 8 + 1;
  return 16ull * c.bkv * (sk + sv) + 4ull * 32 * c.warps + (dt == dtype::bf16 ? 36 : 0);
}

/// Why config c cannot run attention with head dims d, dv on dt data on device
/// `info` (empty: it can).
inline std::string attention_coopmat_check(const device_info& info, dtype dt, index_t d, index_t dv,
                                           const attention_coopmat_config& c) {
  if (dt != dtype::f16 && dt != dtype::bf16) return "the data is neither f16 nor bf16";
  if (!coopmat_f16_available(info)) return "device '" + info.name + "' has no 16x16x16 f16 NV cooperative matrices";
  if (d <= 0 || dv <= 0 || d % 16 || dv % 16 || d > 256 || dv > 256)
    return "head dims D=" + std::to_string(d) + ", Dv=" + std::to_string(dv) + " are not multiples of 16 up to 256";
  // Ks and Vs also stage the Q and output rows of bkv / (16·rf) subgroups at a time, and the index fragments.
  if (c.warps < 1 || c.rf < 1 || c.rf > 16 || c.warps > 32 || c.bkv % 16 || c.bkv < 16 * c.rf || c.bkv < 32 || 32 * c.warps > info.max_workgroup_invocations)
    return "tiling " + c.str() + " is not one the kernel takes";
  const std::uint64_t bytes = attention_coopmat_shared_bytes(c, d, dv, dt);
  if (bytes > info.max_shared_memory)
    return "tiling " + c.str() + " needs " + std::to_string(bytes) + " bytes of shared memory, the device allows " +
           std::to_string(info.max_shared_memory);
  return {};
}

/// The tiling for head dims d, dv — chosen from register and shared-memory
/// budgets, not yet timed on the H100 (`vk_bench --attention-sweep` times
/// every tiling of {4, 8} warps × {1, 2} row fragments × {32, 64} keys
/// there): two row fragments per subgroup (half the shared-memory fragment
/// loads per multiply) and 64-key blocks where D <= 64; at D = 128 the
/// registers (Q 32, output 64, scores and P 48 per invocation) leave room for
/// one row fragment only, and eight subgroups halve the K/V stage per
/// invocation; D = 256 takes 32-key blocks to stay inside 48 KiB of shared
/// memory (the H100's limit) and the registers.
inline attention_coopmat_config attention_coopmat_default(index_t d, index_t dv) {
  const index_t m = std::max(d, dv);
  if (m <= 64) return {4, 2, 64};
  if (m <= 128) return {8, 1, 64};
  return {8, 1, 32};
}

/// Tiling of attention_coopmat2: `br` query rows and `bc` keys per block over
/// `wg` invocations (one workgroup-scope matrix per operand; the driver
/// splits them over the subgroups).
struct attention_coopmat2_config {
  std::uint32_t wg = 128, br = 64, bc = 64;
  std::uint32_t probe = 0;  ///< spirv::attention_coopmat2_spec::probe (timing experiments; wrong results)
  std::string str() const {
    return "invocations " + std::to_string(wg) + " rows " + std::to_string(br) + " keys " + std::to_string(bc) +
           (probe ? " probe " + std::to_string(probe) : "");
  }
};

/// Why config c cannot run attention_coopmat2 with head dims d, dv on dt data
/// on device `info` (empty: it can).
inline std::string attention_coopmat2_check(const device_info& info, dtype dt, index_t d, index_t dv,
                                            const attention_coopmat2_config& c) {
  auto n = [](std::uint64_t v) { return std::to_string(v); };
  if (!coopmat2_available(info, dt) || !info.coopmat2_reductions)
    return "device '" + info.name + "' lacks workgroup-scope " + std::string(to_string(dt)) +
           " cooperative matrices with reductions and conversions";
  // The bf16 variant keeps P, the masked V blocks and O in bf16 accumulator matrices, which NVIDIA's
  // drivers do not list (the validation layer 1.4.363 reports such types on the H200): not run.
  if (dt == dtype::bf16)
    return "attention_coopmat2 on bf16 needs bf16 accumulator matrices, which the device does not list (bf16 "
           "attention runs the coopmat kernel)";
  if (d <= 0 || dv <= 0 || d % 16 || dv % 16 || d > 256 || dv > 256)
    return "head dims D=" + n(static_cast<std::uint64_t>(d)) + ", Dv=" + n(static_cast<std::uint64_t>(dv)) +
           " are not multiples of 16 up to 256";
  if (!c.br || !c.bc || c.br % 16 || c.bc % 16 || c.wg > info.coopmat2_max_workgroup ||
      std::max({c.br, c.bc, static_cast<std::uint32_t>(std::max(d, dv))}) > info.coopmat2_max_dimension)
    return "tiling " + c.str() + " is not one the device's workgroup-scope matrices take";
  // Registers: the output (Br×Dv) and the softmax state (M, L and a score block, Br×Bc each) in f32.
  if (static_cast<std::uint64_t>(c.br) * (static_cast<std::uint64_t>(dv) + 3ull * c.bc) > 256ull * c.wg)
    return "tiling " + c.str() + " holds more than 256 f32 registers per invocation at Dv=" + n(static_cast<std::uint64_t>(dv));
  // Every product (Br×Bc×D, Br×Dv×Bc, Br×Bc×Bc) on a shape the device lists for wg invocations.
  auto listed = [&](std::uint64_t m, std::uint64_t nn, std::uint64_t k) {
    for (const auto& s : info.coopmat2_shapes)
      if (s.type == dt && s.invocations == c.wg && s.m && s.n && s.k && m % s.m == 0 && nn % s.n == 0 && k % s.k == 0) return true;
    return false;
  };
  const std::uint64_t D = static_cast<std::uint64_t>(d), Dv = static_cast<std::uint64_t>(dv);
  if (!listed(c.br, c.bc, D) || !listed(c.br, Dv, c.bc) || !listed(c.br, c.bc, c.bc))
    return "no workgroup-scope shape of " + std::string(to_string(dt)) + " with " + n(c.wg) + " invocations divides tiling " +
           c.str() + " at D=" + n(D) + ", Dv=" + n(Dv);
  return {};
}

/// The tiling vk_bench times attention_coopmat2 with first (--attention-sweep times the others).
inline attention_coopmat2_config attention_coopmat2_default(index_t d, index_t dv) {
  const index_t m = std::max(d, dv);
  if (m <= 128) return {128, 64, 64};
  return {256, 64, 32};
}

/// The SPIR-V variant of attention_coopmat2 (emitted once per variant and kept).
inline const shader_variant& attention_coopmat2_variant(const spirv::attention_coopmat2_spec& spec) {
  return detail::emitted_variant(spec.name(), [&] { return spirv::attention_coopmat2(spec); });
}

/// Whether attention on dt data with head dims d, dv can run on cooperative
/// matrices (shaders::attention_coopmat) on device `info`.
inline bool attention_coopmat_applies(const device_info& info, dtype dt, index_t d, index_t dv) {
  return attention_coopmat_check(info, dt, d, dv, attention_coopmat_default(d, dv)).empty();
}

/// attention_split: rows per workgroup (G·S) at most this (registers: rows ×
/// 4 output columns per invocation).
inline constexpr index_t attention_split_max_rows = 16;
inline constexpr std::uint32_t attention_split_wg = 128;
/// attention_merge: output columns per workgroup (a divisor of attention_split_wg).
inline constexpr std::uint32_t attention_merge_cols = 32;
static_assert(attention_split_wg % attention_merge_cols == 0);

/// Shared memory attention_split declares for a call (bytes).
inline std::uint64_t attention_split_shared_bytes(const attention_dims& a) {
  const std::uint64_t r = static_cast<std::uint64_t>(a.group() * a.s), wg = attention_split_wg;
  const std::uint64_t d = static_cast<std::uint64_t>(a.d), dv = static_cast<std::uint64_t>(a.dv);
  const std::uint64_t nc = a.d % 4 == 0 && a.dv % 4 == 0 ? dv / 4 : dv, kl = nc <= wg ? wg / nc : 1;
  return 4ull * r * d + 4ull * r * std::max(wg, kl * dv) + 12ull * r + 4ull * wg;
}

/// Whether the split kernel takes a call: few query rows per KV head (decode)
/// that fit its registers and the device's shared memory.
inline bool attention_split_applies(const device_info& info, dtype, const attention_dims& a) {
  const index_t r = a.group() * a.s;
  return a.keys_seen() > 0 && r >= 1 && r <= attention_split_max_rows && a.d > 0 && a.dv > 0 &&
         attention_split_shared_bytes(a) <= info.max_shared_memory;
}

/// How the split kernel cuts the keys: `nsplit` chunks of `chunk` keys (a
/// multiple of its 128-key block), aiming at `groups` workgroups over batch ×
/// KV heads × splits so that every SM holds several (an H100 has 132), but no
/// chunk below one block: the merge's extra dispatch is paid either way.
/// `loads`: K vectors and V rows the kernel issues before their products
/// (0: attention_split_loads' choice for the device). `lanes`: invocations
/// that share one key's scores (each a `lanes`-th of the K row; a power of
/// two no larger than the subgroup; 0: attention_split_lanes' choice).
struct attention_split_plan {
  std::uint32_t nsplit = 1, chunk = 0, loads = 0, lanes = 0;
};
inline constexpr std::uint32_t attention_split_max_loads = 32;
/// The split kernel's loads in flight by default: 8 on a GPU (one at a time
/// left each load's latency exposed: B1 H32/8 L32768 D128 f16 0.115 → 0.098
/// ms on the H200, 0.118 → 0.100 on the H100; 4 and 16 were slower), 1 on a
/// CPU device: llvmpipe builds a shader's machine code in the first
/// submission that runs it, and with 8 the tiny transformer step's split
/// kernels took ~6 s longer to build there (past the 5 s submission limit)
/// for no gain.
inline std::uint32_t attention_split_loads(const device_info& info) { return info.type == "cpu" ? 1u : 8u; }
/// The split kernel's lanes per key may be at most the smallest subgroup the
/// device may run it with (its groups of lanes sum over subgroup shuffles),
/// where the device has subgroup shuffles and every subgroup size divides the
/// workgroup; else only 1.
inline std::uint32_t attention_split_max_lanes(const device_info& info) {
  const std::uint32_t lo = info.min_subgroup_size ? std::min(info.min_subgroup_size, info.subgroup_size) : info.subgroup_size;
  const std::uint32_t hi = std::max(info.max_subgroup_size, info.subgroup_size);
  const bool shuffle = (info.subgroup_ops & VK_SUBGROUP_FEATURE_SHUFFLE_BIT) != 0;
  return !shuffle || lo == 0 || hi > attention_split_wg || attention_split_wg % hi != 0 ? 1u : std::min<std::uint32_t>(lo, 32);
}
/// The split kernel's lanes per key by default: on a GPU 8 where subgroups
/// allow it (a subgroup load then reads 8 consecutive vectors of each of 4
/// keys; with one key per lane it read 32 K rows per load), else 1; 1 on a
/// CPU device (no coalescing to gain, and llvmpipe builds the 8-lane kernel
/// inside the first submission that runs it, ~2 s more per pipeline).
inline std::uint32_t attention_split_lanes(const device_info& info) {
  return info.type == "cpu" ? 1u : std::min<std::uint32_t>(8, attention_split_max_lanes(info));
}
inline attention_split_plan attention_split_plan_for(const attention_dims& a, std::uint64_t groups = 512) {
  const std::uint64_t keys = static_cast<std::uint64_t>(a.keys_seen()), blk = attention_split_wg;
  const std::uint64_t nbk = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(a.b * a.hkv));
  std::uint64_t n = std::clamp<std::uint64_t>((groups + nbk - 1) / nbk, 1, std::max<std::uint64_t>(1, (keys + blk - 1) / blk));
  n = std::min<std::uint64_t>(n, 256);  // attention_merge's MAX_SPLITS
  const std::uint64_t chunk = std::max<std::uint64_t>(blk, ((keys + n - 1) / n + blk - 1) / blk * blk);
  return {static_cast<std::uint32_t>((keys + chunk - 1) / chunk), static_cast<std::uint32_t>(chunk), 0};
}

/// The kernel a call runs on. coopmat: -1 where it applies (policy::vulkan<>'s
/// default), 0 never, 1 required (unsupported_error where it does not apply).
inline attention_kernel attention_kernel_for(const device_info& info, dtype dt, const attention_dims& a, int coopmat = -1) {
  const attention_coopmat_config c = attention_coopmat_default(a.d, a.dv);
  if (coopmat == 1) {
    const std::string why = attention_coopmat_check(info, dt, a.d, a.dv, c);
    if (!why.empty())
      throw unsupported_error("kforge::vulkan: policy::coopmat<true> asks for cooperative matrices, but attention with D=" +
                              std::to_string(a.d) + ", Dv=" + std::to_string(a.dv) + " cannot use them: " + why);
    return attention_kernel::coopmat;
  }
  if (attention_split_applies(info, dt, a)) return attention_kernel::split;
  if (coopmat != 0 && attention_coopmat_check(info, dt, a.d, a.dv, c).empty()) return attention_kernel::coopmat;
  return attention_kernel::scalar;
}

/// The scalar kernel's head-dim stage (max(32, the larger head dim rounded up to 32)).
inline std::uint32_t attention_scalar_stage(const attention_dims& a) {
  return std::max<std::uint32_t>(32, static_cast<std::uint32_t>((std::max(a.d, a.dv) + 31) / 32 * 32));
}
/// Shared memory the scalar kernel declares with `wg` invocations (bytes).
inline std::uint64_t attention_scalar_shared_bytes(const attention_dims& a, std::uint32_t wg) {
  return 8ull * attention_scalar_stage(a) + 8ull * wg;
}

/// One attention kernel and its knobs, chosen at run time: what the tuner
/// searches (tune/vulkan_space.hpp) and policy::autotune runs. `wg`: the
/// scalar kernel's workgroup; `tiling`: the coopmat kernel's; `groups`,
/// `loads`, `lanes`: the split kernel's workgroups aimed at
/// (attention_split_plan_for), loads in flight and lanes per key (0: the
/// device's default). The knobs of the other kernels are left at their
/// defaults (the name and the cache entry ignore them).
struct attention_config {
  attention_kernel kernel = attention_kernel::scalar;
  std::uint32_t wg = 128;
  attention_coopmat_config tiling{};
  std::uint32_t groups = 512, loads = 0, lanes = 0;
};

/// Why config c cannot run attention a on dt data on device `info` (empty: it
/// can). The coopmat2 kernel is no choice here (no policy picks it).
inline std::string attention_config_check(const device_info& info, dtype dt, const attention_dims& a,
                                          const attention_config& c) {
  switch (c.kernel) {
    case attention_kernel::scalar:
      if (c.wg < 32 || c.wg > 1024 || (c.wg & (c.wg - 1)) || c.wg > info.max_workgroup_invocations)
        return "a scalar workgroup of " + std::to_string(c.wg) + " invocations (a power of two from 32 to " +
               std::to_string(std::min<std::uint32_t>(1024, info.max_workgroup_invocations)) + " on this device)";
      if (attention_scalar_shared_bytes(a, c.wg) > info.max_shared_memory)
        return "head dims D=" + std::to_string(a.d) + ", Dv=" + std::to_string(a.dv) + " need " +
               std::to_string(attention_scalar_shared_bytes(a, c.wg)) + " bytes of shared memory; the device allows " +
               std::to_string(info.max_shared_memory);
      return {};
    case attention_kernel::coopmat: return attention_coopmat_check(info, dt, a.d, a.dv, c.tiling);
    case attention_kernel::split: {
      if (!attention_split_applies(info, dt, a))
        return "the split kernel takes at most " + std::to_string(attention_split_max_rows) +
               " query rows per KV head (and keys to attend), not " + std::to_string(a.group() * a.s);
      const std::uint32_t lanes = c.lanes ? c.lanes : attention_split_lanes(info);
      if (c.groups < 1 || c.groups > 65536) return "the split kernel aims at 1 to 65536 workgroups, not " + std::to_string(c.groups);
      if (c.loads > attention_split_max_loads)
        return std::to_string(c.loads) + " loads in flight (at most " + std::to_string(attention_split_max_loads) + ")";
      if ((lanes & (lanes - 1)) != 0 || lanes > attention_split_max_lanes(info))
        return std::to_string(lanes) + " lanes per key (a power of two, at most " +
               std::to_string(attention_split_max_lanes(info)) + " on this device)";
      return {};
    }
    case attention_kernel::coopmat2: break;
  }
  return "the coopmat2 kernel is not a tunable choice";
}

/// What policy::vulkan<> runs for a (coopmat: its knob, as attention_kernel_for).
inline attention_config attention_default_config(const device_info& info, dtype dt, const attention_dims& a,
                                                 int coopmat = -1) {
  attention_config c;
  c.kernel = attention_kernel_for(info, dt, a, coopmat);
  c.tiling = attention_coopmat_default(a.d, a.dv);
  c.loads = attention_split_loads(info);
  c.lanes = attention_split_lanes(info);
  return c;
}

/// Every config the device takes for a: the scalar kernel at 32-256
/// invocations; where they apply, the coopmat kernel over {4, 8} subgroups ×
/// {1, 2} row fragments × {32, 64, 128} keys per block, and the split kernel
/// over {128 .. 2048} workgroups aimed at (those that cut the keys
/// differently; 512, the default's, where several cut alike) × {1, 4, 8, 16}
/// loads (at most 4 on a CPU device: llvmpipe builds the kernel inside the
/// submission that first runs it, ~4 s with 16 loads at D = 128, close to the
/// context's submission limit) × every lane count the device takes.
inline std::vector<attention_config> attention_configs(const device_info& info, dtype dt, const attention_dims& a) {
  std::vector<attention_config> out;
  auto add = [&](const attention_config& c) {
    if (attention_config_check(info, dt, a, c).empty()) out.push_back(c);
  };
  for (std::uint32_t wg : {32u, 64u, 128u, 256u}) add({attention_kernel::scalar, wg});
  for (std::uint32_t w : {4u, 8u})
    for (std::uint32_t rf : {1u, 2u})
      for (std::uint32_t bkv : {32u, 64u, 128u}) add({attention_kernel::coopmat, 128, {w, rf, bkv}});
  if (attention_split_applies(info, dt, a)) {
    std::vector<std::uint32_t> cuts;  // nsplit of each aim taken; the default's aim first, so it names its cut
    for (std::uint32_t g : {512u, 128u, 256u, 1024u, 2048u}) {
      const std::uint32_t n = attention_split_plan_for(a, g).nsplit;
      if (std::find(cuts.begin(), cuts.end(), n) != cuts.end()) continue;
      cuts.push_back(n);
      for (std::uint32_t loads : {1u, 4u, 8u, 16u})
        for (std::uint32_t lanes = 1; loads <= (info.type == "cpu" ? 4u : 16u) && lanes <= attention_split_max_lanes(info); lanes *= 2)
          add({attention_kernel::split, 128, {}, g, loads, lanes});
    }
  }
  return out;
}

/// The first a.l key rows of a dense K or V buffer `kv` holding `rows` rows
/// (an op::attention kv_len shorter than the cache), as the dense [.., l, ..]
/// buffer the kernels index: the buffer itself when l == rows; its leading
/// bytes when the l rows are a prefix of it (one sequence in bshd, one
/// sequence and KV head in bhsd: the decoder's case, no copy); otherwise the
/// rows of each (batch[, KV head]) gathered into a temporary kept by the
/// stream, one copy per block (several sequences: 2·B or 2·B·Hkv copies, as
/// much traffic again as attention reads; a row stride in the kernels would
/// save it). `dim` is the row's head dim (D for K, Dv for V).
inline buffer_ref record_kv_prefix(stream& s, dtype dt, const attention_dims& a, index_t rows, index_t dim, buffer_ref kv) {
  if (rows == a.l) return kv;
  const std::uint64_t es = size_of(dt);
  const std::uint64_t blocks = static_cast<std::uint64_t>(a.bshd ? a.b : a.b * a.hkv);
  const std::uint64_t block = static_cast<std::uint64_t>(a.l) * (a.bshd ? a.hkv : 1) * dim * es;  // bytes kept per block
  const std::uint64_t stride = static_cast<std::uint64_t>(rows) * (a.bshd ? a.hkv : 1) * dim * es;
  if (blocks == 1 || block == 0) {
    kv.size = std::max<std::uint64_t>(block, es);
    return kv;
  }
  const buffer_ref tmp = s.keep(s.ctx().device_memory().allocate(blocks * block)).ref();
  for (std::uint64_t i = 0; i < blocks; ++i)
    s.copy(buffer_ref{kv.buffer, kv.offset + i * stride, block}, buffer_ref{tmp.buffer, tmp.offset + i * block, block}, block);
  return buffer_ref{tmp.buffer, tmp.offset, blocks * block};
}

/// The pipeline of attention_coopmat for head dims d, dv and tiling c (built
/// once per context; its `statistics` are the driver's where the context
/// captures them). The caller has checked c (attention_coopmat_check).
inline const pipeline& attention_coopmat_pipeline(context& ctx, dtype dt, index_t d, index_t dv,
                                                  const attention_coopmat_config& c) {
  const auto& v = detail::make_variant("attention_coopmat", shaders::attention_coopmat, dt, {{"KF_COOPMAT", "1"}});
  return ctx.get_pipeline(v, {4, 40, {0, 1, 2, 3, 4, 5}},
                          {32 * c.warps, detail::u32(d, "D"), detail::u32(dv, "Dv"), c.bkv, c.rf, c.probe});
}

namespace detail {
/// record_attention on kernel `kind` (no key: the scalar kernel, which writes zeros).
inline void record_attention_kernel(stream& s, dtype dt, const attention_dims& a, float scale, buffer_ref q, buffer_ref k,
                                    buffer_ref v_, buffer_ref o, attention_kernel kind, std::uint32_t wg,
                                    const attention_coopmat_config* config, const attention_split_plan* plan,
                                    const attention_coopmat2_config* cm2) {
  context& ctx = s.ctx();
  if (a.l == 0) kind = attention_kernel::scalar;
  struct push {
    std::uint32_t bh, s, l, d, dv;
    float scale;
    std::uint32_t causal, h, g, bshd;
  } pc{u32(a.b * a.h, "B*H"), u32(a.s, "S"), u32(a.l, "L"), u32(a.d, "D"), u32(a.dv, "Dv"), scale,
       a.causal ? 1u : 0u, u32(a.h, "H"), u32(a.group(), "H/Hkv"), a.bshd ? 1u : 0u};
  static_assert(sizeof(push) == 40, "attention_coopmat_pipeline's push-constant size");
  // Every index the kernels form fits 32 bits (elements of the largest tensor).
  u32(std::max(a.b * a.h * a.s * std::max(a.d, a.dv), a.b * a.hkv * a.l * std::max(a.d, a.dv)), "elements");
  const std::vector<binding> io{{q}, {k}, {v_}, {o, true}};
  if (kind == attention_kernel::coopmat2) {
    const attention_coopmat2_config c = cm2 ? *cm2 : attention_coopmat2_default(a.d, a.dv);
    const std::string why = attention_coopmat2_check(ctx.info(), dt, a.d, a.dv, c);
    if (!why.empty()) throw unsupported_error("kforge::vulkan: attention_coopmat2: " + why);
    // It reads through unclamped tensor layouts: whole blocks only. (A bounds-checked form, for a
    // query block past S or a key block past L, ran into the tests' time limits on the H200 — slow
    // pipeline builds or a hang, not told apart — and was removed.)
    if (a.s % c.br || a.l % c.bc)
      throw unsupported_error("kforge::vulkan: attention_coopmat2 takes S and L in whole blocks (" + c.str() + "), not S=" +
                              std::to_string(a.s) + ", L=" + std::to_string(a.l));
    const auto& v = attention_coopmat2_variant({dt == dtype::bf16, a.causal, c.probe});
    const auto& p = ctx.get_pipeline(v, {4, sizeof pc, {0, 1, 2, 3, 4}}, {c.wg, c.br, c.bc, pc.d, pc.dv});
    const std::uint64_t blocks = static_cast<std::uint64_t>(pc.bh) * ((static_cast<std::uint64_t>(a.s) + c.br - 1) / c.br);
    s.dispatch(p, io, &pc, sizeof pc, grid(blocks), "attention coopmat2");
    return;
  }
  if (kind == attention_kernel::coopmat) {
    const attention_coopmat_config c = config ? *config : attention_coopmat_default(a.d, a.dv);
    const std::string why = attention_coopmat_check(ctx.info(), dt, a.d, a.dv, c);
    if (!why.empty()) throw unsupported_error("kforge::vulkan: attention_coopmat: " + why);
    const pipeline& p = attention_coopmat_pipeline(ctx, dt, a.d, a.dv, c);
    const std::uint64_t blocks = static_cast<std::uint64_t>(pc.bh) * ((static_cast<std::uint64_t>(a.s) + c.rows() - 1) / c.rows());
    s.dispatch(p, io, &pc, sizeof pc, grid(blocks), "attention coopmat");
    return;
  }
  if (kind == attention_kernel::split) {
    const attention_split_plan cut = plan ? *plan : attention_split_plan_for(a);
    if (cut.nsplit < 1 || cut.nsplit > 256 || static_cast<std::uint64_t>(cut.nsplit) * cut.chunk < static_cast<std::uint64_t>(a.keys_seen()))
      throw argument_error("kforge::vulkan: attention split plan of " + std::to_string(cut.nsplit) + " chunks of " +
                           std::to_string(cut.chunk) + " keys does not cover " + std::to_string(a.keys_seen()) + " keys");
    if (cut.loads > attention_split_max_loads)
      throw argument_error("kforge::vulkan: attention split plan with " + std::to_string(cut.loads) +
                           " loads in flight (at most " + std::to_string(attention_split_max_loads) + ")");
    const std::uint32_t loads = cut.loads ? cut.loads : attention_split_loads(ctx.info());
    const std::uint32_t lanes = cut.lanes ? cut.lanes : attention_split_lanes(ctx.info());
    if ((lanes & (lanes - 1)) != 0 || lanes > attention_split_max_lanes(ctx.info()))
      throw argument_error("kforge::vulkan: attention split plan with " + std::to_string(lanes) +
                           " lanes per key (a power of two, at most " + std::to_string(attention_split_max_lanes(ctx.info())) +
                           " on this device)");
    struct {
      push base;
      std::uint32_t chunk, nsplit;
    } ps{pc, cut.chunk, cut.nsplit};
    const std::uint32_t rows = u32(a.group() * a.s, "G*S"), vec = a.d % 4 == 0 && a.dv % 4 == 0 ? 4 : 1;
    const std::uint64_t nbk = static_cast<std::uint64_t>(a.b * a.hkv);
    const std::uint64_t part_bytes = cut.nsplit > 1 ? 4ull * cut.nsplit * nbk * rows * (static_cast<std::uint64_t>(a.dv) + 2) : 4;
    u32(static_cast<index_t>(part_bytes / 4), "split partials");
    const buffer_ref part = s.keep(ctx.device_memory().allocate(part_bytes)).ref();
    const auto& v = make_variant("attention_split", shaders::attention_split, dt,
                                  {{"KF_VEC", std::to_string(vec)}, {"KF_SHUFFLE", lanes > 1 ? "1" : "0"}});
    const auto& p = ctx.get_pipeline(v, {5, sizeof ps, {0, 1, 2, 3, 4, 5}}, {attention_split_wg, pc.d, pc.dv, rows, loads, lanes});
    s.dispatch(p, {{q}, {k}, {v_}, {o, cut.nsplit == 1}, {part, cut.nsplit > 1}}, &ps, sizeof ps,
               grid(nbk * cut.nsplit), "attention split");
    if (cut.nsplit > 1) {
      const auto& mv = make_variant("attention_merge", shaders::attention_merge, dt, {});
      const auto& mp = ctx.get_pipeline(mv, {2, sizeof ps, {0, 1, 2, 3}}, {attention_split_wg, pc.dv, rows, attention_merge_cols});
      s.dispatch(mp, {{part}, {o, true}}, &ps, sizeof ps, grid(nbk * rows * ((pc.dv + attention_merge_cols - 1) / attention_merge_cols)),
                 "attention merge");
    }
    return;
  }
  check_wg(ctx, wg, "attention");
  u32(std::max(a.d, a.dv), "head dim");
  const std::uint32_t maxd = attention_scalar_stage(a);
  const std::uint64_t shared = attention_scalar_shared_bytes(a, wg);
  if (shared > ctx.info().max_shared_memory)
    throw unsupported_error("kforge::vulkan: attention head dims D=" + std::to_string(a.d) + ", Dv=" + std::to_string(a.dv) +
                            " need " + std::to_string(shared) + " bytes of shared memory; device '" + ctx.info().name +
                            "' allows " + std::to_string(ctx.info().max_shared_memory));
  const auto& v = make_variant("attention_flash", shaders::attention, dt, {});
  const auto& p = ctx.get_pipeline(v, {4, sizeof pc, {0, 1}}, {wg, maxd});
  s.dispatch(p, io, &pc, sizeof pc, grid(static_cast<std::uint64_t>(a.b * a.h * a.s)), "attention");
}
}  // namespace detail

/// Records attention on dense tensors in a's layout (q, k, v, o). `wg` is the
/// scalar kernel's workgroup size; `config`, `cm2` and `plan` override the
/// coopmat kernel's tiling (and run it), the coopmat2 kernel's tiling (and
/// run it) and the split kernel's cut (benchmarks and tuning; nullptr:
/// attention_kernel_for's choice with the default tilings).
inline void record_attention(stream& s, dtype dt, const attention_dims& a, float scale, buffer_ref q, buffer_ref k,
                             buffer_ref v_, buffer_ref o, int coopmat = -1, std::uint32_t wg = 128,
                             const attention_coopmat_config* config = nullptr, const attention_split_plan* plan = nullptr,
                             const attention_coopmat2_config* cm2 = nullptr) {
  const attention_kernel kind = a.l == 0  ? attention_kernel::scalar
                                : cm2     ? attention_kernel::coopmat2
                                : config  ? attention_kernel::coopmat
                                          : attention_kernel_for(s.ctx().info(), dt, a, coopmat);
  detail::record_attention_kernel(s, dt, a, scale, q, k, v_, o, kind, wg, config, plan, cm2);
}

/// Records attention a with config c (attention_config_check'd first:
/// unsupported_error with its reason for one the device cannot run).
inline void record_attention(stream& s, dtype dt, const attention_dims& a, float scale, buffer_ref q, buffer_ref k,
                             buffer_ref v_, buffer_ref o, const attention_config& c) {
  const std::string why = attention_config_check(s.ctx().info(), dt, a, c);
  if (!why.empty()) throw unsupported_error("kforge::vulkan: attention config: " + why);
  attention_split_plan cut = attention_split_plan_for(a, c.groups);
  cut.loads = c.loads;
  cut.lanes = c.lanes;
  // The scalar kernel also runs a call with no keys (zeros): at c.wg only where c names it.
  const std::uint32_t wg = c.kernel == attention_kernel::scalar ? c.wg : 128;
  detail::record_attention_kernel(s, dt, a, scale, q, k, v_, o, c.kernel, wg, &c.tiling, &cut, nullptr);
}

namespace detail {
/// One op::attention call on call c's operands (Q, K, V; O): config `cfg`
/// where given, else the kernel attention_kernel_for picks with `coopmat`
/// and the scalar workgroup `wg`.
template <class T>
void record_attention_call(call<T>& c, const attention_args<T>& g, const attention_config* cfg, int coopmat,
                           std::uint32_t wg) {
  const attention_dims a{g.b, g.h, g.hkv, g.s, g.l, g.d, g.dv, g.causal, g.layout == attention_layout::bshd};
  if (g.b * g.h * g.s * g.dv == 0) return;
  // Host views cut by kv_len are uploaded as their first l rows already
  // (the call packs the views it is given); device tensors come whole.
  const index_t rows = c.device() ? g.kv_rows : g.l;
  const buffer_ref k = record_kv_prefix(c.s(), c.dt, a, rows, g.d, c.in(1));
  const buffer_ref v = record_kv_prefix(c.s(), c.dt, a, rows, g.dv, c.in(2));
  if (cfg) record_attention(c.s(), c.dt, a, g.scale, c.in(0), k, v, c.out(), *cfg);
  else record_attention(c.s(), c.dt, a, g.scale, c.in(0), k, v, c.out(), coopmat, wg);
}
}  // namespace detail

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::attention<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::attention<T>>, op::attention<T>, attention_entry> {
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    using K = vulkan::knobs<Knobs...>;
    vulkan::detail::call<T> c({&g.q, &g.k, &g.v}, g.o);
    vulkan::detail::record_attention_call(c, g, nullptr, K::coopmat_mode, std::min<std::uint32_t>(K::row_wg, 128));
    c.finish();
  }
};

}  // namespace kforge::detail
