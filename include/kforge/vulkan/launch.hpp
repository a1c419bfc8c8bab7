// kforge/vulkan/launch.hpp — what every record_* function of the backend
// uses: a shader variant (the common GLSL prelude + a kernel body + defines),
// a 2-D grid for many workgroups, and the checks of the kernels' 32-bit
// indices and of a workgroup size against the device's limit.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/vulkan/shaders/common.hpp"
#include "kforge/vulkan/stream.hpp"

namespace kforge::vulkan::detail {

inline std::string str(int v) { return std::to_string(v); }

/// A kernel variant: the common prelude + body, with dtype and extra defines.
/// dt is the storage type of the kernel's tensors: f32, f16 or bf16
/// (KF_F16 / KF_BF16, shaders/common.hpp); the arithmetic is f32 in each.
/// Each variant is made once per process and kept, with its cache key: the
/// key hashes the whole source (tens of KB), which done per dispatch cost
/// ~25 µs of host time each, most of a decode step's recording. `name`
/// names one body (a second body under a name is an internal error).
inline const shader_variant& make_variant(const std::string& name, const std::string& body, dtype dt,
                                          std::vector<std::pair<std::string, std::string>> defines) {
  if (dt != dtype::f32 && dt != dtype::f16 && dt != dtype::bf16)
    throw unsupported_error("kforge::vulkan: " + name + " runs on f32, f16 or bf16 device data, not " +
                            std::string(to_string(dt)));
  defines.insert(defines.begin(), {{"KF_F16", dt == dtype::f16 ? "1" : "0"}, {"KF_BF16", dt == dtype::bf16 ? "1" : "0"}});
  std::string id = name;
  for (const auto& [k, v] : defines) id += "\n" + k + "=" + v;
  static std::mutex mu;
  static std::map<std::string, shader_variant, std::less<>> made;
  const std::string_view common(shaders::common);
  std::lock_guard lock(mu);
  auto it = made.find(id);
  if (it == made.end()) {
    shader_variant v;
    v.name = name;
    v.source = std::string(common) + body;
    v.defines = std::move(defines);
    v.key = shader_compiler::cache_key(v);
    it = made.emplace(std::move(id), std::move(v)).first;
  } else if (std::string_view(it->second.source).substr(common.size()) != body) {
    throw error("kforge::vulkan: internal: two kernel bodies named '" + name + "'");
  }
  return it->second;
}

/// A kernel kforge emits as SPIR-V itself (vulkan/spirv/): made by `emit`
/// once per `name` (which names one module: the emitters are deterministic
/// in their spec) and kept with its cache key, as make_variant's.
template <class Emit>
const shader_variant& emitted_variant(const std::string& name, Emit&& emit) {
  static std::mutex mu;
  static std::map<std::string, shader_variant, std::less<>> made;
  std::lock_guard lock(mu);
  auto it = made.find(name);
  if (it == made.end()) {
    shader_variant v;
    v.name = name;
    v.spirv = emit();
    v.key = shader_compiler::cache_key(v);
    it = made.emplace(name, std::move(v)).first;
  }
  return it->second;
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

}  // namespace kforge::vulkan::detail
