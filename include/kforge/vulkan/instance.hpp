// kforge/vulkan/instance.hpp — the VkInstance under a context or a device
// listing, and the validation messages it collects.
//
// Validation: the Khronos layer and a debug-utils messenger are enabled when
// context_options::validation is on (KFORGE_VK_VALIDATION=1 sets the
// default); every warning or error message is counted and kept so tests can
// fail on them.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kforge/vulkan/error.hpp"

namespace kforge::vulkan {

namespace detail {
inline bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}
/// The spec version of an installed layer, or 0 when it is not installed.
inline std::uint32_t layer_version(const char* name) {
  std::uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return 0;
  std::vector<VkLayerProperties> v(n);
  vkEnumerateInstanceLayerProperties(&n, v.data());
  for (const auto& l : v)
    if (std::strcmp(l.layerName, name) == 0) return l.specVersion ? l.specVersion : 1;
  return 0;
}
inline bool layer_present(const char* name) { return layer_version(name) != 0; }

/// Messages collected by the debug-utils messenger.
struct message_log {
  std::mutex mu;
  std::vector<std::string> messages;
};
inline VKAPI_ATTR VkBool32 VKAPI_CALL debug_callback(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                      VkDebugUtilsMessageTypeFlagsEXT,
                                                      const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  auto* log = static_cast<message_log*>(user);
  std::string m = std::string(severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error: " : "warning: ") +
                  (data && data->pMessage ? data->pMessage : "");
  std::cerr << "kforge::vulkan validation " << m << "\n";
  std::lock_guard lock(log->mu);
  log->messages.push_back(std::move(m));
  return VK_FALSE;
}

/// A bare instance (optionally with validation and a messenger).
struct instance_holder {
  std::unique_ptr<message_log> log = std::make_unique<message_log>();
  VkInstance instance = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger = VK_NULL_HANDLE;
  bool validation = false;
  std::uint32_t layer_version = 0;  ///< the validation layer's spec version, when validation is on

  explicit instance_holder(bool want_validation) {
    validation = want_validation;
    if (validation) layer_version = detail::layer_version("VK_LAYER_KHRONOS_validation");
    if (validation && !layer_version)
      throw unsupported_error("kforge::vulkan: validation was requested but VK_LAYER_KHRONOS_validation is not installed");
    std::uint32_t n = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &n, nullptr);
    std::vector<VkExtensionProperties> exts(n);
    vkEnumerateInstanceExtensionProperties(nullptr, &n, exts.data());
    std::vector<const char*> want;
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    if (has_extension(exts, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
      want.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
      ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    if (validation) want.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "kforge";
    app.pEngineName = "kforge";
    app.apiVersion = VK_API_VERSION_1_3;  // the effective version is the lower of this and the device's
    const char* layer = "VK_LAYER_KHRONOS_validation";
    ci.pApplicationInfo = &app;
    ci.enabledExtensionCount = static_cast<std::uint32_t>(want.size());
    ci.ppEnabledExtensionNames = want.data();
    ci.enabledLayerCount = validation ? 1 : 0;
    ci.ppEnabledLayerNames = validation ? &layer : nullptr;
    VkDebugUtilsMessengerCreateInfoEXT mi{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    mi.pfnUserCallback = debug_callback;
    mi.pUserData = log.get();
    if (validation) ci.pNext = &mi;  // also catches messages of vkCreateInstance itself
    const VkResult r = vkCreateInstance(&ci, nullptr, &instance);
    if (r != VK_SUCCESS)
      throw no_device(std::string("kforge::vulkan: no Vulkan instance (vkCreateInstance returned ") + result_name(r) +
                      "); is a Vulkan loader and driver installed?");
    if (validation) {
      auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
      check(create(instance, &mi, nullptr, &messenger), "vkCreateDebugUtilsMessengerEXT");
    }
  }
  instance_holder(const instance_holder&) = delete;
  instance_holder& operator=(const instance_holder&) = delete;
  /// Destroys the instance; `abandon` leaks it (a lost device may still run).
  void destroy(bool abandon) {
    if (abandon || !instance) return;
    if (messenger) {
      auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
          vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
      destroy(instance, messenger, nullptr);
    }
    vkDestroyInstance(instance, nullptr);
    instance = VK_NULL_HANDLE;
  }
  std::vector<VkPhysicalDevice> physical_devices() const {
    std::uint32_t n = 0;
    vkEnumeratePhysicalDevices(instance, &n, nullptr);
    std::vector<VkPhysicalDevice> v(n);
    vkEnumeratePhysicalDevices(instance, &n, v.data());
    return v;
  }
};
}  // namespace detail

/// True when the Khronos validation layer is installed.
inline bool validation_layer_available() { return detail::layer_present("VK_LAYER_KHRONOS_validation"); }

}  // namespace kforge::vulkan
