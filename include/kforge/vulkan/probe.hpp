// kforge/vulkan/probe.hpp — what a device does that no property reports,
// measured once per process with a tiny kernel: the loop limit.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "kforge/vulkan/context.hpp"
#include "kforge/vulkan/stream.hpp"

namespace kforge::vulkan {

/// How often the probe's one invocation loops (2^20: a few milliseconds on a GPU).
inline constexpr std::uint32_t loop_probe_iterations = 1u << 20;

/// How many loop iterations one invocation may run on ctx's device before
/// the driver ends its loops, or 0 where the probe saw no limit. lavapipe
/// (gallivm's loop limiter) counts every loop of an invocation against one
/// counter and, past 65535 iterations in all, leaves each loop as if its
/// condition had failed: the invocation carries on and writes whatever it
/// has, with no error — a kernel whose invocation loops over a long row
/// several times is wrong there and right elsewhere. Measured with a kernel
/// whose one invocation loops loop_probe_iterations times and writes how
/// many iterations it ran; once per device (UUID, driver version, name) and
/// process. Throws what a dispatch throws (device_lost after the context's
/// timeout).
inline std::uint64_t loop_iteration_limit(context& ctx) {
  static std::mutex mu;
  static std::map<std::string, std::uint64_t> known;
  const device_info& d = ctx.info();
  const std::string key = detail::uuid_str(d.device_uuid) + "/" + std::to_string(d.driver_version) + "/" + d.name;
  {
    std::lock_guard lock(mu);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  // The recurrence keeps the loop from being folded into a closed form; the
  // count is what the invocation ran, whichever way the loop ended.
  static const char* const source = R"(#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Out { uint v[]; };
layout(push_constant) uniform Push { uint n; uint seed; } pc;
void main() {
  uint h = pc.seed, i = 0u;
  for (; i < pc.n; ++i) h = h * 1664525u + (i ^ 1013904223u);
  v[0] = i;
  v[1] = h;
}
)";
  const pipeline& pipe = ctx.get_pipeline(shader_variant{"kforge_loop_probe", source, {}}, kernel_interface{1, 8, {0}}, {1});
  buffer_slice dev = ctx.device_memory().allocate(16);
  buffer_slice host = ctx.staging_memory().allocate(16);
  std::memset(host.mapped(), 0, 16);
  const std::uint32_t push[2] = {loop_probe_iterations, 0x6b666f72u};
  stream s(ctx);
  s.copy(host.ref(), dev.ref(), 16);
  s.dispatch(pipe, {binding{dev.ref(), true}}, push, sizeof push, {1, 1, 1}, "kforge_loop_probe");
  s.copy(dev.ref(), host.ref(), 16);
  s.run();
  std::uint32_t ran = 0;
  std::memcpy(&ran, host.mapped(), 4);
  const std::uint64_t limit = ran < loop_probe_iterations ? ran : 0;
  std::lock_guard lock(mu);
  known[key] = limit;
  return limit;
}

}  // namespace kforge::vulkan
