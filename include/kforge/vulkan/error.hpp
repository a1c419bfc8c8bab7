// kforge/vulkan/error.hpp — the typed errors of the Vulkan backend and the
// one place VkResult codes become exceptions.
//
// device_lost is what a caller catches to rebuild its context: it is thrown
// for VK_ERROR_DEVICE_LOST and for a fence wait that outlived the context's
// timeout (the device may still be running the work, so the context that
// timed out is abandoned, never waited on again).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <string>

#include "kforge/core/error.hpp"

namespace kforge::vulkan {

/// No Vulkan instance, no physical device, or none matching the selection.
class no_device : public unsupported_error {
 public:
  using unsupported_error::unsupported_error;
};
/// VK_ERROR_DEVICE_LOST, or a wait that timed out. The context is unusable.
class device_lost : public error {
 public:
  using error::error;
};
/// Host or device memory exhausted, or a request larger than the device allows.
class out_of_memory : public error {
 public:
  using error::error;
};
/// GLSL that glslang refused; what() holds the shader name, defines and log.
class shader_error : public error {
 public:
  using error::error;
};
/// SPIR-V interface (bindings, push constants, local size, specialization
/// constants) differs from what the host expects; what() names both sides.
class interface_error : public error {
 public:
  using error::error;
};
/// Any other Vulkan call that failed.
class vulkan_error : public error {
 public:
  using error::error;
};

inline const char* result_name(VkResult r) {
  switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_NOT_READY: return "VK_NOT_READY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    case VK_INCOMPLETE: return "VK_INCOMPLETE";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_MEMORY_MAP_FAILED: return "VK_ERROR_MEMORY_MAP_FAILED";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_FORMAT_NOT_SUPPORTED: return "VK_ERROR_FORMAT_NOT_SUPPORTED";
    case VK_ERROR_FRAGMENTED_POOL: return "VK_ERROR_FRAGMENTED_POOL";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    default: return "VkResult";
  }
}

/// Throws the typed error for a failed VkResult; `what` names the call.
inline void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  std::string msg = std::string("kforge::vulkan: ") + what + " failed with " + result_name(r) + " (" +
                    std::to_string(static_cast<int>(r)) + ")";
  if (r == VK_ERROR_DEVICE_LOST) throw device_lost(msg);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) throw out_of_memory(msg);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED) throw no_device(msg);
  throw vulkan_error(msg);
}

}  // namespace kforge::vulkan
