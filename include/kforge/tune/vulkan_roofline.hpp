// kforge/tune/vulkan_roofline.hpp — the roofline of a Vulkan device, measured
// by kforge's own probe kernels on a vulkan::context and cached in the same
// <cache dir>/roofline.json as the CPU's (include/kforge/tune/roofline.hpp),
// one entry per device identity (tune::vulkan_identity: device name, PCI ids,
// driver and its version). Only where kforge::vulkan is linked
// (KFORGE_HAS_VULKAN); empty otherwise.
//
// Probes (GLSL below, compiled in process like every kforge kernel; timed
// with the stream's GPU timestamps, the host clock where the queue has none):
//   bandwidth  a device-to-device copy: each invocation loads 4 vec4s (64 B in
//              flight), then stores them, 256 invocations per workgroup,
//              strided by the workgroup so each load instruction of a
//              workgroup reads one contiguous 4 KiB; two buffers of 256 MiB on
//              a discrete GPU (5× the H100's 50 MB L2), 128 MiB on an
//              integrated one, 32 MiB on a CPU implementation (lavapipe), and
//              never more than 1/8 of the largest device-local heap or
//              maxStorageBufferRange. Counted as bytes read + bytes written;
//              best of 10 runs (5 on a CPU implementation), rounds of them
//              repeated until the best stops improving (clocks ramp up on an
//              idle GPU; see best_of). The copy is
//              checked afterwards (a probe that moved nothing would be fast).
//   compute    an FMA loop: 4 independent vec4 accumulators (16 FMA chains)
//              per invocation, 4× unrolled, 8192 workgroups of 256 (2 M
//              invocations: several waves on every SM of any current GPU;
//              16 workgroups on a CPU implementation), counted as 2 flops per
//              lane per FMA; the iteration count is calibrated until one run
//              takes ~10 ms (~30 ms on a CPU implementation); best of 5 (3),
//              repeated the same way.
//              f32, and f16 (f16vec4, the packed half2 rate on NVIDIA) where
//              the device has shaderFloat16. These are the vector units' peaks:
//              tensor cores (the coopmat f16 gemm) are not probed and can
//              exceed the f16 roof.
// Grids respect maxComputeWorkGroupCount and workgroups
// maxComputeWorkGroupInvocations (queried, not assumed). The probe buffers
// come from the context's memory pools and stay there (pools keep their
// blocks) for the context's life.
#pragma once

#if defined(KFORGE_HAS_VULKAN)

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "kforge/tune/roofline.hpp"
#include "kforge/tune/vulkan_space.hpp"

namespace kforge::tune {

namespace shaders {
/// The compute probe: 16 independent FMA chains per invocation (4 vec4, or
/// f16vec4 with KF_F16=1), 64 FMAs per lane per iteration. The result is
/// stored only if it equals pc.never (it cannot: it stays positive), so the
/// loop cannot be removed and no memory traffic is added.
inline constexpr const char* roofline_fma = R"glsl(
#version 450
#extension GL_EXT_control_flow_attributes : require
#if KF_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define S float16_t
#define V f16vec4
#else
#define S float
#define V vec4
#endif
layout(local_size_x_id = 0) in;
layout(std430, set = 0, binding = 0) writeonly buffer Out { float result[]; };
layout(push_constant) uniform Push { uint iters; float m; float a; float never; } pc;
void main() {
  const uint id = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x +
                  gl_LocalInvocationID.x;
  const V m = V(S(pc.m)), a = V(S(pc.a));
  V acc[4];
  [[unroll]] for (int k = 0; k < 4; ++k) {
    const float f = float((id + uint(k)) & 255u) * 0.001;  // lanes differ: nothing to share between them
    acc[k] = V(S(f), S(f + 0.25), S(f + 0.5), S(f + 0.75));
  }
  for (uint i = 0u; i < pc.iters; ++i) {
    [[unroll]] for (int r = 0; r < 4; ++r) {
      [[unroll]] for (int k = 0; k < 4; ++k) acc[k] = fma(acc[k], m, a);
    }
  }
  const V t = acc[0] + acc[1] + acc[2] + acc[3];
  const float s = float(t.x) + float(t.y) + float(t.z) + float(t.w);
  if (s == pc.never) result[0] = s;
}
)glsl";
}  // namespace shaders

namespace detail {

/// Sizes of the probes on one device (from its type and limits).
struct vulkan_probe_plan {
  std::uint32_t wg = 256;             ///< invocations per workgroup
  std::uint32_t copy_per = 4;         ///< vec4s per invocation of the copy
  std::uint64_t copy_bytes = 0;       ///< bytes of each of the two copy buffers
  std::uint64_t fma_groups = 8192;    ///< workgroups of the FMA probe
  double fma_target_s = 0.010;        ///< calibrated length of one FMA run
  int copy_runs = 10, fma_runs = 5;
  double warm_s = 0.5;                ///< back-to-back runs before timing (0 on a CPU implementation)
  std::array<std::uint32_t, 3> max_groups{65535, 65535, 65535};  ///< maxComputeWorkGroupCount
};

inline vulkan_probe_plan plan_probes(const vulkan::context& ctx) {
  const auto& d = ctx.info();
  VkPhysicalDeviceProperties pr{};
  vkGetPhysicalDeviceProperties(ctx.physical_device(), &pr);
  vulkan_probe_plan p;
  for (int i = 0; i < 3; ++i) p.max_groups[static_cast<std::size_t>(i)] = pr.limits.maxComputeWorkGroupCount[i];
  p.wg = std::min<std::uint32_t>(256, std::min(d.max_workgroup_invocations, pr.limits.maxComputeWorkGroupSize[0]));
  const bool cpu = d.type == "cpu", integrated = d.type == "integrated";
  std::uint64_t bytes = cpu ? (std::uint64_t{32} << 20) : integrated ? (std::uint64_t{128} << 20) : (std::uint64_t{256} << 20);
  std::uint64_t heap = 0;
  for (const auto& h : d.heaps)
    if (h.device_local) heap = std::max(heap, h.size);
  if (heap) bytes = std::min(bytes, heap / 8);
  bytes = std::min<std::uint64_t>(bytes, d.max_storage_buffer_range);
  bytes = std::min<std::uint64_t>(bytes, std::uint64_t{16} * 0xffffffffull);  // the shader's uint vec4 index
  p.copy_bytes = bytes / 16 * 16;
  if (cpu) p.fma_groups = 16, p.fma_target_s = 0.030, p.copy_runs = 5, p.fma_runs = 3, p.warm_s = 0;
  return p;
}

/// A grid of `count` workgroups within maxComputeWorkGroupCount (x first, then y).
inline std::array<std::uint32_t, 3> probe_grid(std::uint64_t count, const std::array<std::uint32_t, 3>& max) {
  const std::uint64_t x = std::max<std::uint64_t>(1, std::min<std::uint64_t>(count, max[0]));
  const std::uint64_t y = (count + x - 1) / x;
  if (y > max[1])
    throw unsupported_error("kforge::tune: the roofline probe needs " + std::to_string(count) +
                            " workgroups; the device allows " + std::to_string(max[0]) + " x " + std::to_string(max[1]));
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1};
}

/// Seconds of the one dispatch recorded on `s` (submitted again: a replay):
/// its GPU timestamps, or the host clock around submit and wait where the
/// queue has no timestamps.
inline double time_replay(vulkan::stream& s) {
  const auto t0 = std::chrono::steady_clock::now();
  s.run();
  const double host = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!s.ctx().info().timestamps) return host;
  for (const auto& t : s.timings())
    if (!t.transfer && t.ms) return *t.ms * 1e-3;
  return host;
}

/// Best (shortest) of `runs` replays after `warm_s` seconds of back-to-back
/// replays, in rounds repeated until a round improves on the previous best
/// by less than 2% (at most 8): a GPU that was idle or busy with transfers
/// runs at low clocks and raises them only under sustained load (on the H100,
/// probing inside `kforge bench` without the warm-up measured 1/4 of the FMA
/// peak and 55% of the bandwidth). Throws when a run took no measurable time.
inline double best_of(vulkan::stream& s, int runs, const char* what, double warm_s) {
  for (const auto t0 = std::chrono::steady_clock::now();
       std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < warm_s;)
    time_replay(s);
  double best = 1e300;
  for (int round = 0; round < 8; ++round) {
    double b = 1e300;
    for (int r = 0; r < runs; ++r) b = std::min(b, time_replay(s));
    const bool settled = b > best * 0.98;
    best = std::min(best, b);
    if (settled) break;
  }
  if (!(best > 0) || !std::isfinite(best))
    throw error(std::string("kforge::tune: the Vulkan roofline's ") + what + " probe measured no time (" +
                std::to_string(best) + " s)");
  return best;
}

/// Bytes per second of the copy probe (read + write), after checking the copy.
inline double probe_vulkan_bandwidth(vulkan::context& ctx, const vulkan_probe_plan& plan) {
  const std::uint64_t bytes = plan.copy_bytes;
  auto src = ctx.device_memory().allocate(bytes);
  auto dst = ctx.device_memory().allocate(bytes);
  const vulkan::buffer_ref sref{src.ref().buffer, src.ref().offset, bytes}, dref{dst.ref().buffer, dst.ref().offset, bytes};
  vulkan::stream s(ctx);
  s.time_dispatches(true);
  auto& staging = s.staging(bytes);
  auto* host = static_cast<float*>(staging.mapped());
  for (std::uint64_t i = 0; i < bytes / 4; ++i) host[i] = static_cast<float>(i & 0xffffff);
  s.copy(staging.ref(), sref, bytes);
  s.run();
  s.reset();
  // The backend's own device copy (vulkan::record_copy: each invocation loads
  // copy_per vec4s, then stores them); bytes and the pool's offsets are
  // multiples of 16 and bytes / 16 fits 32 bits (plan_probes), so it never
  // falls back to vkCmdCopyBuffer here.
  vulkan::record_copy(s, sref, dref, bytes, plan.wg, plan.copy_per);
  s.run();  // warm-up
  const double sec = best_of(s, plan.copy_runs, "bandwidth", plan.warm_s);
  s.reset();
  auto& back = s.staging(bytes);
  s.copy(dref, back.ref(), bytes);
  s.run();
  const auto* got = static_cast<const float*>(back.mapped());
  for (std::uint64_t i = 0; i < bytes / 4; i += 997)
    if (got[i] != static_cast<float>(i & 0xffffff))
      throw error("kforge::tune: the Vulkan roofline's copy probe did not copy (float " + std::to_string(i) + " is " +
                  std::to_string(got[i]) + ")");
  if (got[bytes / 4 - 1] != static_cast<float>((bytes / 4 - 1) & 0xffffff))
    throw error("kforge::tune: the Vulkan roofline's copy probe did not copy its last element");
  return 2.0 * static_cast<double>(bytes) / sec;
}

/// Flop per second of the FMA probe (f32, or f16 with `f16`).
inline double probe_vulkan_fma(vulkan::context& ctx, const vulkan_probe_plan& plan, bool f16) {
  auto out = ctx.device_memory().allocate(16);
  const vulkan::buffer_ref oref{out.ref().buffer, out.ref().offset, 16};
  vulkan::shader_variant v;
  v.name = f16 ? "roofline_fma_f16" : "roofline_fma_f32";
  v.source = shaders::roofline_fma;
  v.defines = {{"KF_F16", f16 ? "1" : "0"}};
  const auto& pl = ctx.get_pipeline(v, {1, 16, {0}}, {plan.wg});
  const auto grid = probe_grid(plan.fma_groups, plan.max_groups);
  const double invocations = static_cast<double>(grid[0]) * grid[1] * plan.wg;
  struct {
    std::uint32_t iters;
    float m, a, never;
  } pc{f16 ? 8u : 64u, 0.999f, 0.001f, -1.0f};
  vulkan::stream s(ctx);
  s.time_dispatches(true);
  auto record = [&] {
    s.reset();
    s.dispatch(pl, {{oref, true}}, &pc, sizeof pc, grid, "roofline fma");
  };
  record();
  s.run();  // warm-up (and the first pipeline use)
  // Calibrate: grow the loop until one run takes about the target time.
  for (int c = 0; c < 8; ++c) {
    const double t = time_replay(s);
    if (t >= plan.fma_target_s / 2 || pc.iters >= (1u << 24)) break;
    const double grow = std::clamp(plan.fma_target_s / std::max(t, 1e-7), 2.0, 64.0);
    pc.iters = static_cast<std::uint32_t>(std::min(double(1u << 24), std::ceil(pc.iters * grow)));
    record();
  }
  const double sec = best_of(s, plan.fma_runs, f16 ? "f16 compute" : "compute", plan.warm_s);
  return 2.0 * 64.0 * invocations * pc.iters / sec;
}

}  // namespace detail

/// Measures the roofline of the context's device now (a fraction of a second
/// on a GPU, about a second on lavapipe). `device`/`driver` are left empty
/// (vulkan_roofline fills them from the identity).
inline roofline_peaks probe_vulkan(vulkan::context& ctx) {
  const detail::vulkan_probe_plan plan = detail::plan_probes(ctx);
  roofline_peaks r;
  r.measured_at = utc_now();
  r.bandwidth_Bps = detail::probe_vulkan_bandwidth(ctx, plan);
  r.flops = detail::probe_vulkan_fma(ctx, plan, false);
  if (ctx.info().fp16_arithmetic) r.flops_f16 = detail::probe_vulkan_fma(ctx, plan, true);
  const auto grid = detail::probe_grid(plan.fma_groups, plan.max_groups);
  r.method = "vec4 copy 2 x " + std::to_string(plan.copy_bytes >> 20) + " MiB (" + std::to_string(plan.copy_per) +
             " vec4/invocation, " + std::to_string(plan.wg) + "/workgroup), best of " +
             std::to_string(plan.copy_runs) + "; FMA 16 chains/invocation x " +
             std::to_string(std::uint64_t{grid[0]} * grid[1]) + " workgroups of " + std::to_string(plan.wg) +
             (r.flops_f16 > 0 ? ", f32 and f16" : ", f32") + ", best of " + std::to_string(plan.fma_runs) + "; " +
             (ctx.info().timestamps ? "GPU timestamps" : "host clock (no timestamps)");
  return r;
}

/// The cached roofline of the context's device (tune::vulkan_identity);
/// measured and stored in <dir>/roofline.json on first use or when
/// `remeasure` (see cached_roofline: corrupt files are set aside).
inline roofline_peaks vulkan_roofline(vulkan::context& ctx, const std::filesystem::path& dir = default_cache_dir(),
                                      bool remeasure = false,
                                      const std::function<void(const std::string&)>& warn = detail::warn_on_stderr) {
  return cached_roofline(dir, vulkan_identity(ctx), remeasure, [&] { return probe_vulkan(ctx); }, warn);
}

}  // namespace kforge::tune

#endif  // KFORGE_HAS_VULKAN
