// kforge/vulkan/probe.hpp — what a device does that no property reports,
// measured once per process with a tiny kernel: the loop limit, and whether
// its arithmetic flushes subnormal operands.
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

namespace detail {
/// measure(), once per device (UUID, driver version, name) and process: each
/// probe (each call site's lambda type) keeps its own answers.
template <class T, class F>
T once_per_device(context& ctx, F&& measure) {
  static std::mutex mu;
  static std::map<std::string, T> known;
  const device_info& d = ctx.info();
  const std::string key = uuid_str(d.device_uuid) + "/" + std::to_string(d.driver_version) + "/" + d.name;
  {
    std::lock_guard lock(mu);
    if (auto it = known.find(key); it != known.end()) return it->second;
  }
  const T v = measure();
  std::lock_guard lock(mu);
  return known.emplace(key, v).first->second;
}

/// Runs `source` (one binding `io` of io_words 32-bit words, push constants
/// {uint n; uint seed;}, local size by specialization constant 0) as one
/// invocation: io uploaded from `io` before, downloaded into it after.
inline void run_probe(context& ctx, const char* name, const char* source, std::uint32_t* io, std::size_t io_words,
                      const std::uint32_t (&push)[2]) {
  const pipeline& pipe = ctx.get_pipeline(shader_variant{name, source, {}}, kernel_interface{1, 8, {0}}, {1});
  const std::size_t bytes = io_words * 4;
  buffer_slice dev = ctx.device_memory().allocate(bytes);
  buffer_slice host = ctx.staging_memory().allocate(bytes);
  std::memcpy(host.mapped(), io, bytes);
  stream s(ctx);
  s.copy(host.ref(), dev.ref(), bytes);
  s.dispatch(pipe, {binding{dev.ref(), true}}, push, sizeof push, {1, 1, 1}, name);
  s.copy(dev.ref(), host.ref(), bytes);
  s.run();
  std::memcpy(io, host.mapped(), bytes);
}
}  // namespace detail

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
  return detail::once_per_device<std::uint64_t>(ctx, [&ctx]() -> std::uint64_t {
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
    std::uint32_t io[4] = {0, 0, 0, 0};
    detail::run_probe(ctx, "kforge_loop_probe", source, io, 4, {loop_probe_iterations, 0x6b666f72u});
    return io[0] < loop_probe_iterations ? io[0] : 0;
  });
}

/// Whether arithmetic on ctx's device flushes f32 subnormal operands to zero
/// (what Vulkan leaves to the implementation where a kernel declares no
/// float-controls mode; VkPhysicalDeviceFloatControlsProperties says what a
/// device can do, not what it does by default). Measured with one invocation:
/// a = 2^-130 read from a buffer, a·1, a + a and (a·1)·2^100 (a normal
/// result that exists only if a was kept); any of them 0 means the device
/// flushes. Once per device and process, like loop_iteration_limit. The
/// generation gate accepts an output computed on flushed inputs only where
/// this says the device flushes (docs/GENERATION.md).
inline bool flushes_subnormals(context& ctx) {
  return detail::once_per_device<bool>(ctx, [&ctx] {
    static const char* const source = R"(#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Io { float v[]; };
layout(push_constant) uniform Push { uint n; uint seed; } pc;
void main() {
  uint o = pc.n;  // 0: the operands come from the buffer, so nothing folds
  float a = v[o], one = v[o + 1u], big = v[o + 2u];
  v[o + 4u] = a * one;
  v[o + 5u] = a + a;
  v[o + 6u] = (a * one) * big;
}
)";
    const float in[8] = {0x1p-130f, 1.0f, 0x1p100f, 0.0f, -1.0f, -1.0f, -1.0f, -1.0f};
    std::uint32_t io[8];
    std::memcpy(io, in, sizeof io);
    detail::run_probe(ctx, "kforge_subnormal_probe", source, io, 8, {0, 0});
    float out[8];
    std::memcpy(out, io, sizeof out);
    return out[4] == 0.0f || out[5] == 0.0f || out[6] == 0.0f;
  });
}

}  // namespace kforge::vulkan
