// kforge/tune/vulkan_space.hpp — the Vulkan gemm and attention search spaces
// (only where kforge::vulkan is linked, KFORGE_HAS_VULKAN; empty otherwise).
//
// Attention (below the gemm's): every vulkan::attention_config the device
// takes for the problem — the scalar kernel's workgroup, the coopmat
// kernel's tiling, the split (flash-decoding) kernel's cut, loads in flight
// and lanes per key (vulkan::attention_configs) — run by
// vulkan::attention_with_config, timed by the GPU time of its kernels, the
// default what policy::vulkan<> runs for the shape.
//
// policy::vulkan's tile knobs are compile-time types, so this space is a
// run-time list instead of a policy_list: every config of
// vulkan::valid_configs(ctx, dtype), i.e. the backend's gemm_configs (the
// register-tiled kernel over its tile/thread-tile shapes × K step × grouped
// or row-major tile order, K splits of the tiles thin grids use, the gemv
// kernel over rows per workgroup × columns per invocation × lanes × splits,
// and for f16 where the device has NV cooperative matrices the coopmat
// kernel over its tile/subgroup shapes × K step × tile order and splits;
// gemm_config.hpp lists them) plus the generic kernel at 64×64×16 / 4×4. A
// candidate's executor is vulkan::gemm_with_config on the context and its
// device_seconds() the gemm dispatch's timestamp time. The default (where
// descent starts) is what policy::vulkan<> runs untuned for the shape,
// vulkan::gemm_default_config.
//
// The cache key's device is the Vulkan device (name, PCI vendor:device id),
// its driver the driver's name, info and version: a tuning made on lavapipe
// is never used for an NVIDIA GPU, nor one made under another driver.
#pragma once

#if defined(KFORGE_HAS_VULKAN)

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "kforge/tune/space.hpp"
#include "kforge/vulkan/tuning.hpp"

namespace kforge::tune {

/// The cache identity of a Vulkan device: "vulkan <name> [vendor:device]" and
/// "<driver name> <driver info>, driverVersion 0x…".
inline device_identity vulkan_identity(const vulkan::context& ctx) {
  const auto& d = ctx.info();
  char ids[48], ver[32];
  std::snprintf(ids, sizeof ids, "[%04x:%04x]", d.vendor_id, d.device_id);
  std::snprintf(ver, sizeof ver, "0x%08x", d.driver_version);
  device_identity id;
  id.device = "vulkan " + d.name + " " + ids;
  id.driver = (d.driver_name.empty() ? std::string("unknown driver") : d.driver_name) +
              (d.driver_info.empty() ? "" : " " + d.driver_info) + ", driverVersion " + ver;
  return id;
}

namespace detail {
/// Zeroes the knobs a kernel ignores, so that equal configs compare (and
/// name) equal: warps for generic/tiled, thread tile for coopmat, the tile
/// order for generic; coopmat2 keeps its warps (invocations) and tm (unroll).
inline vulkan::gemm_config normalised(vulkan::gemm_config c) {
  if (c.kernel == vulkan::gemm_kernel::coopmat_f16) c.tm = c.tn = 0;
  else if (c.kernel == vulkan::gemm_kernel::gemv) c.tm = c.warps_m = c.group_m = 0;
  else if (c.kernel == vulkan::gemm_kernel::gemv_coopmat) c.tn = c.warps_m = c.group_m = 0;
  else if (c.kernel == vulkan::gemm_kernel::coopmat2) c.tn = c.warps_m = 0;
  else c.warps = c.warps_m = 0;
  if (c.kernel == vulkan::gemm_kernel::generic) c.group_m = 0;
  return c;
}
}  // namespace detail

/// "vulkan/tiled/128x64x8/8x4/g8", "vulkan/coopmat_f16/128x128x32/w8x2/g8/s4",
/// "vulkan/gemv/8x256x8/t4w8/g0/s16", "vulkan/generic/64x64x16/4x4/g0",
/// "vulkan/coopmat2/128x256x32/u4w8/g8": kernel, tile M×N×K, thread tile (or
/// subgroups × subgroup rows; gemv: columns per invocation and subgroups;
/// coopmat2: K steps per unrolled iteration and subgroups), tile-order group,
/// and "/s<splits>" where K is split (names of unsplit configs are those of
/// earlier caches).
inline std::string vulkan_config_name(const vulkan::gemm_config& raw) {
  const auto c = detail::normalised(raw);
  auto n = [](std::uint32_t v) { return std::to_string(v); };
  std::string s = std::string("vulkan/") + vulkan::to_string(c.kernel) + "/" + n(c.bm) + "x" + n(c.bn) + "x" + n(c.bk) + "/";
  if (c.kernel == vulkan::gemm_kernel::coopmat_f16) s += "w" + n(c.warps) + "x" + n(c.warps_m);
  else if (c.kernel == vulkan::gemm_kernel::gemv) s += "t" + n(c.tn) + "w" + n(c.warps);
  else if (c.kernel == vulkan::gemm_kernel::gemv_coopmat) s += "c" + n(c.tm) + "w" + n(c.warps);
  else if (c.kernel == vulkan::gemm_kernel::coopmat2) s += "u" + n(c.tm) + "w" + n(c.warps);
  else s += n(c.tm) + "x" + n(c.tn);
  s += "/g" + n(c.group_m);
  return c.splits == 1 ? s : s + "/s" + n(c.splits);
}

/// The tuning-cache entry of a config (vulkan_config_of reads it back).
inline config vulkan_config_entry(const vulkan::gemm_config& raw) {
  const auto c = detail::normalised(raw);
  auto n = [](std::uint32_t v) { return std::to_string(v); };
  return {{"policy", "vulkan"}, {"kernel", vulkan::to_string(c.kernel)}, {"bm", n(c.bm)}, {"bn", n(c.bn)},
          {"bk", n(c.bk)},      {"tm", n(c.tm)},  {"tn", n(c.tn)},       {"warps", n(c.warps)},
          {"warps_m", n(c.warps_m)}, {"group_m", n(c.group_m)}, {"splits", n(c.splits)}};
}

/// The candidate that runs gemm with config cfg on ctx (cfg is not checked
/// here: one the device refuses throws when run, and the tuner records it as
/// an error).
inline candidate vulkan_gemm_candidate(vulkan::context& ctx, const vulkan::gemm_config& cfg) {
  const auto c = detail::normalised(cfg);
  candidate out;
  out.name = vulkan_config_name(c);
  out.family = "vulkan";
  out.cfg = vulkan_config_entry(c);
  vulkan::context* cp = &ctx;
  out.run = [cp, c](const problem& p, std::vector<host_tensor>& ts) { vulkan::gemm_with_config(*cp, c, p, ts); };
  out.device_seconds = [] { return vulkan::last_gemm_seconds(); };
  return out;
}

/// The space for gemm problem p (its dtype; its M and N pick the default).
inline std::vector<candidate> vulkan_gemm_candidates(vulkan::context& ctx, const problem& p) {
  const dtype dev = vulkan::device_dtype(ctx.info(), p.type);
  std::string dflt;
  if (p.dims.rank() == 3 && p.type != dtype::f64)
    dflt = vulkan_config_name(vulkan::gemm_default_config(ctx.info(), dev, static_cast<std::uint64_t>(p.dims[0]),
                                                          static_cast<std::uint64_t>(p.dims[1]),
                                                          static_cast<std::uint64_t>(p.dims[2])));
  std::vector<candidate> out;
  for (const auto& c : vulkan::valid_configs(ctx, p.type)) {
    out.push_back(vulkan_gemm_candidate(ctx, c));
    out.back().is_default = out.back().name == dflt;
  }
  return out;
}

/// The config a cached Vulkan entry names, or nullopt when it is not one of this space's.
inline std::optional<vulkan::gemm_config> vulkan_config_of(const config& c) {
  if (config_value(c, "policy") != "vulkan") return std::nullopt;
  vulkan::gemm_config g;
  const std::string k = config_value(c, "kernel");
  if (k == "generic") g.kernel = vulkan::gemm_kernel::generic;
  else if (k == "tiled") g.kernel = vulkan::gemm_kernel::tiled;
  else if (k == "coopmat_f16") g.kernel = vulkan::gemm_kernel::coopmat_f16;
  else if (k == "gemv") g.kernel = vulkan::gemm_kernel::gemv;
  else if (k == "coopmat2") g.kernel = vulkan::gemm_kernel::coopmat2;
  else if (k == "gemv_coopmat") g.kernel = vulkan::gemm_kernel::gemv_coopmat;
  else return std::nullopt;
  std::uint32_t* fields[] = {&g.bm, &g.bn, &g.bk, &g.tm, &g.tn, &g.warps, &g.warps_m, &g.group_m, &g.splits};
  const char* keys[] = {"bm", "bn", "bk", "tm", "tn", "warps", "warps_m", "group_m", "splits"};
  for (int i = 0; i < 9; ++i) {
    const std::string v = config_value(c, keys[i]);
    if (i == 8 && v.empty()) break;  // entries written before K splits existed: no split
    if (!is_integer_text(v) || v[0] == '-' || v.size() > 9) return std::nullopt;
    *fields[i] = static_cast<std::uint32_t>(std::stoul(v));
  }
  return g;
}

// ---- attention --------------------------------------------------------------

namespace detail {
/// Zeroes the knobs the config's kernel ignores (as normalised() for gemm).
inline vulkan::attention_config normalised(vulkan::attention_config c) {
  if (c.kernel != vulkan::attention_kernel::scalar) c.wg = 0;
  if (c.kernel != vulkan::attention_kernel::coopmat) c.tiling = {0, 0, 0};
  if (c.kernel != vulkan::attention_kernel::split) c.groups = c.loads = c.lanes = 0;
  return c;
}
}  // namespace detail

/// "vulkan/attention/scalar/wg128", "vulkan/attention/coopmat/w8r1k64"
/// (subgroups, row fragments, keys per block), "vulkan/attention/split/g512/ld8/ln8"
/// (workgroups aimed at, loads in flight, lanes per key).
inline std::string vulkan_attention_config_name(const vulkan::attention_config& raw) {
  const auto c = detail::normalised(raw);
  auto n = [](std::uint32_t v) { return std::to_string(v); };
  std::string s = "vulkan/attention/" + std::string(vulkan::to_string(c.kernel)) + "/";
  if (c.kernel == vulkan::attention_kernel::scalar) return s + "wg" + n(c.wg);
  if (c.kernel == vulkan::attention_kernel::coopmat)
    return s + "w" + n(c.tiling.warps) + "r" + n(c.tiling.rf) + "k" + n(c.tiling.bkv);
  return s + "g" + n(c.groups) + "/ld" + n(c.loads) + "/ln" + n(c.lanes);
}

/// The tuning-cache entry of an attention config (vulkan_attention_config_of
/// reads it back). Every kernel's entry has the same keys, the ignored ones 0,
/// so that descent walks one kernel's knobs from the default.
inline config vulkan_attention_config_entry(const vulkan::attention_config& raw) {
  const auto c = detail::normalised(raw);
  auto n = [](std::uint32_t v) { return std::to_string(v); };
  return {{"policy", "vulkan"},          {"kernel", std::string(vulkan::to_string(c.kernel))},
          {"wg", n(c.wg)},               {"warps", n(c.tiling.warps)},
          {"rf", n(c.tiling.rf)},        {"bkv", n(c.tiling.bkv)},
          {"groups", n(c.groups)},       {"loads", n(c.loads)},
          {"lanes", n(c.lanes)}};
}

/// The attention config a cached entry names, or nullopt when it is not one.
inline std::optional<vulkan::attention_config> vulkan_attention_config_of(const config& c) {
  if (config_value(c, "policy") != "vulkan") return std::nullopt;
  vulkan::attention_config a;
  const std::string k = config_value(c, "kernel");
  if (k == "scalar") a.kernel = vulkan::attention_kernel::scalar;
  else if (k == "coopmat") a.kernel = vulkan::attention_kernel::coopmat;
  else if (k == "split") a.kernel = vulkan::attention_kernel::split;
  else return std::nullopt;
  std::uint32_t* fields[] = {&a.wg, &a.tiling.warps, &a.tiling.rf, &a.tiling.bkv, &a.groups, &a.loads, &a.lanes};
  const char* keys[] = {"wg", "warps", "rf", "bkv", "groups", "loads", "lanes"};
  for (int i = 0; i < 7; ++i) {
    const std::string v = config_value(c, keys[i]);
    if (!is_integer_text(v) || v[0] == '-' || v.size() > 9) return std::nullopt;
    *fields[i] = static_cast<std::uint32_t>(std::stoul(v));
  }
  return a;
}

/// The candidate that runs attention with config cfg on ctx.
inline candidate vulkan_attention_candidate(vulkan::context& ctx, const vulkan::attention_config& cfg) {
  candidate out;
  out.name = vulkan_attention_config_name(cfg);
  out.family = "vulkan";
  out.cfg = vulkan_attention_config_entry(cfg);
  vulkan::context* cp = &ctx;
  out.run = [cp, cfg](const problem& p, std::vector<host_tensor>& ts) { vulkan::attention_with_config(*cp, cfg, p, ts); };
  out.device_seconds = [] { return vulkan::last_attention_seconds(); };
  return out;
}

/// The space for attention problem p: vulkan::valid_attention_configs, the
/// default (where descent starts) what policy::vulkan<> runs for p.
inline std::vector<candidate> vulkan_attention_candidates(vulkan::context& ctx, const problem& p) {
  const dtype dev = vulkan::device_dtype(ctx.info(), p.type);
  const std::string dflt =
      vulkan_attention_config_name(vulkan::attention_default_config(ctx.info(), dev, vulkan::attention_dims_of(p)));
  std::vector<candidate> out;
  for (const auto& c : vulkan::valid_attention_configs(ctx, p)) {
    out.push_back(vulkan_attention_candidate(ctx, c));
    out.back().is_default = out.back().name == dflt;
  }
  return out;
}

}  // namespace kforge::tune

#endif  // KFORGE_HAS_VULKAN
