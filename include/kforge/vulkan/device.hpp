// kforge/vulkan/device.hpp — what a physical device offers (device_info),
// read once through Vulkan's property and feature chains, and the listing of
// every device behind `kforge devices`. Choosing among them and creating the
// logical device is the context's work (context.hpp).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "kforge/vulkan/instance.hpp"

namespace kforge::vulkan {

struct memory_heap {
  std::uint64_t size = 0;
  bool device_local = false;
};

/// What a physical device offers, as recorded when the context was made.
struct device_info {
  int index = -1;
  std::string name, type, driver_name, driver_info;
  std::uint32_t vendor_id = 0, device_id = 0, driver_version = 0, api_version = 0;
  std::array<std::uint8_t, VK_UUID_SIZE> device_uuid{}, pipeline_cache_uuid{};
  bool fp16_arithmetic = false;  // shaderFloat16
  bool storage_16bit = false;    // storageBuffer16BitAccess
  std::uint32_t subgroup_size = 0, min_subgroup_size = 0, max_subgroup_size = 0;
  std::uint32_t subgroup_ops = 0;  // VkSubgroupFeatureFlags in compute
  bool subgroup_size_control = false;
  bool nv_cooperative_matrix = false;  // extension, cooperativeMatrix feature and shaderFloat16
  bool nv_coopmat_f16_16x16x16 = false;  // lists 16x16x16 f16·f16 + f32 -> f32 at subgroup scope
  bool robustness2 = false;            // VK_EXT_robustness2 is listed
  bool robust_buffer_access = false;   // VkPhysicalDeviceFeatures::robustBufferAccess
  bool robust_buffer_access2 = false;  // VK_EXT_robustness2 with its robustBufferAccess2 feature
  bool push_descriptor = false;
  bool timestamps = false;  // compute queue has timestampValidBits > 0
  float timestamp_period_ns = 0;
  std::uint64_t max_storage_buffer_range = 0;
  std::uint32_t max_shared_memory = 0, max_workgroup_invocations = 0;
  std::uint32_t min_storage_offset_alignment = 0;
  std::vector<memory_heap> heaps;
  int rank = 0;  // lower is preferred
};

namespace detail {
inline const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
  }
}
inline int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}
inline std::vector<VkExtensionProperties> device_extensions(VkPhysicalDevice p) {
  std::uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(p, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> v(n);
  vkEnumerateDeviceExtensionProperties(p, nullptr, &n, v.data());
  return v;
}
inline int compute_queue_family(VkPhysicalDevice p, std::uint32_t* ts_bits = nullptr) {
  std::uint32_t n = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(p, &n, nullptr);
  std::vector<VkQueueFamilyProperties> q(n);
  vkGetPhysicalDeviceQueueFamilyProperties(p, &n, q.data());
  for (std::uint32_t i = 0; i < n; ++i)
    if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      if (ts_bits) *ts_bits = q[i].timestampValidBits;
      return static_cast<int>(i);
    }
  return -1;
}

inline device_info query_device(VkPhysicalDevice p, int index) {
  device_info d;
  d.index = index;
  const auto exts = device_extensions(p);
  VkPhysicalDeviceProperties base{};
  vkGetPhysicalDeviceProperties(p, &base);
  const bool v12 = base.apiVersion >= VK_API_VERSION_1_2, v13 = base.apiVersion >= VK_API_VERSION_1_3;
  d.robustness2 = has_extension(exts, VK_EXT_ROBUSTNESS_2_EXTENSION_NAME);
  d.nv_cooperative_matrix = has_extension(exts, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  d.push_descriptor = has_extension(exts, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  const bool ssc = v13 || has_extension(exts, VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);

  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties sgc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceIDProperties idp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &sg;
  sg.pNext = &idp;
  void** tail = &idp.pNext;
  if (v12) *tail = &drv, tail = &drv.pNext;
  if (ssc) *tail = &sgc, tail = &sgc.pNext;
  vkGetPhysicalDeviceProperties2(p, &props);

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures fsc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  void** ft = &feats.pNext;
  if (v12) {
    *ft = &f11, ft = &f11.pNext;
    *ft = &f12, ft = &f12.pNext;
  }
  if (ssc) *ft = &fsc, ft = &fsc.pNext;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (d.nv_cooperative_matrix) *ft = &fcm, ft = &fcm.pNext;
  VkPhysicalDeviceRobustness2FeaturesEXT frb{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT};
  if (d.robustness2) *ft = &frb, ft = &frb.pNext;
  vkGetPhysicalDeviceFeatures2(p, &feats);
  d.robust_buffer_access = feats.features.robustBufferAccess;
  d.robust_buffer_access2 = d.robustness2 && frb.robustBufferAccess2;
  // glslang's NV cooperative-matrix code declares the VulkanMemoryModel capability (its scopes come from
  // GL_KHR_memory_scope_semantics), so that feature is needed too.
  d.nv_cooperative_matrix = d.nv_cooperative_matrix && fcm.cooperativeMatrix && v12 && f12.shaderFloat16 &&
                            f12.vulkanMemoryModel;

  const auto& pr = props.properties;
  d.name = pr.deviceName;
  d.type = type_name(pr.deviceType);
  d.rank = type_rank(pr.deviceType);
  d.vendor_id = pr.vendorID;
  d.device_id = pr.deviceID;
  d.driver_version = pr.driverVersion;
  d.api_version = pr.apiVersion;
  std::memcpy(d.pipeline_cache_uuid.data(), pr.pipelineCacheUUID, VK_UUID_SIZE);
  std::memcpy(d.device_uuid.data(), idp.deviceUUID, VK_UUID_SIZE);
  if (v12) {
    d.driver_name = drv.driverName;
    d.driver_info = drv.driverInfo;
    d.fp16_arithmetic = f12.shaderFloat16;
    d.storage_16bit = f11.storageBuffer16BitAccess;
  }
  d.subgroup_size = sg.subgroupSize;
  d.subgroup_ops = (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sg.supportedOperations : 0;
  if (ssc) {
    d.subgroup_size_control = fsc.subgroupSizeControl;
    d.min_subgroup_size = sgc.minSubgroupSize;
    d.max_subgroup_size = sgc.maxSubgroupSize;
  } else {
    d.min_subgroup_size = d.max_subgroup_size = sg.subgroupSize;
  }
  std::uint32_t ts_bits = 0;
  compute_queue_family(p, &ts_bits);
  d.timestamps = ts_bits > 0;
  d.timestamp_period_ns = pr.limits.timestampPeriod;
  d.max_storage_buffer_range = pr.limits.maxStorageBufferRange;
  d.max_shared_memory = pr.limits.maxComputeSharedMemorySize;
  d.max_workgroup_invocations = pr.limits.maxComputeWorkGroupInvocations;
  d.min_storage_offset_alignment = static_cast<std::uint32_t>(pr.limits.minStorageBufferOffsetAlignment);
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(p, &mem);
  for (std::uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    d.heaps.push_back({mem.memoryHeaps[i].size, (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
  return d;
}

inline std::string uuid_str(const std::array<std::uint8_t, VK_UUID_SIZE>& u) {
  std::string s;
  char b[3];
  for (std::size_t i = 0; i < u.size(); ++i) {
    std::snprintf(b, sizeof b, "%02x", u[i]);
    s += b;
    if (i == 3 || i == 5 || i == 7 || i == 9) s += '-';
  }
  return s;
}
inline std::string version_str(std::uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}
inline std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) o += ' ';
    else o += c;
  }
  return o;
}
}  // namespace detail

/// Every physical device, in the loader's order (index = KFORGE_VK_DEVICE index).
inline std::vector<device_info> list_devices() {
  detail::instance_holder inst(false);
  std::vector<device_info> out;
  int i = 0;
  for (VkPhysicalDevice p : inst.physical_devices()) out.push_back(detail::query_device(p, i++));
  inst.destroy(false);
  return out;
}

/// Every device and its features as JSON (for `kforge devices --json`).
inline std::string devices_json() {
  std::ostringstream o;
  const auto devs = list_devices();
  o << "[";
  for (std::size_t i = 0; i < devs.size(); ++i) {
    const auto& d = devs[i];
    o << (i ? "," : "") << "\n  {\"index\": " << d.index << ", \"name\": \"" << detail::json_escape(d.name)
      << "\", \"type\": \"" << d.type << "\", \"vendor_id\": " << d.vendor_id << ", \"device_id\": " << d.device_id
      << ", \"api_version\": \"" << detail::version_str(d.api_version) << "\", \"driver_version\": " << d.driver_version
      << ", \"driver_name\": \"" << detail::json_escape(d.driver_name) << "\", \"driver_info\": \""
      << detail::json_escape(d.driver_info) << "\", \"device_uuid\": \"" << detail::uuid_str(d.device_uuid)
      << "\", \"fp16_arithmetic\": " << (d.fp16_arithmetic ? "true" : "false")
      << ", \"storage_16bit\": " << (d.storage_16bit ? "true" : "false") << ", \"subgroup_size\": " << d.subgroup_size
      << ", \"min_subgroup_size\": " << d.min_subgroup_size << ", \"max_subgroup_size\": " << d.max_subgroup_size
      << ", \"subgroup_ops\": " << d.subgroup_ops
      << ", \"subgroup_arithmetic\": " << ((d.subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) ? "true" : "false")
      << ", \"subgroup_size_control\": " << (d.subgroup_size_control ? "true" : "false")
      << ", \"nv_cooperative_matrix\": " << (d.nv_cooperative_matrix ? "true" : "false")
      << ", \"robustness2\": " << (d.robustness2 ? "true" : "false")
      << ", \"robust_buffer_access\": " << (d.robust_buffer_access ? "true" : "false")
      << ", \"robust_buffer_access2\": " << (d.robust_buffer_access2 ? "true" : "false")
      << ", \"push_descriptor\": " << (d.push_descriptor ? "true" : "false")
      << ", \"timestamps\": " << (d.timestamps ? "true" : "false") << ", \"timestamp_period_ns\": " << d.timestamp_period_ns
      << ", \"max_storage_buffer_range\": " << d.max_storage_buffer_range
      << ", \"max_shared_memory\": " << d.max_shared_memory
      << ", \"max_workgroup_invocations\": " << d.max_workgroup_invocations << ", \"heaps\": [";
    for (std::size_t h = 0; h < d.heaps.size(); ++h)
      o << (h ? ", " : "") << "{\"size\": " << d.heaps[h].size
        << ", \"device_local\": " << (d.heaps[h].device_local ? "true" : "false") << "}";
    o << "]}";
  }
  o << "\n]\n";
  return o.str();
}

/// Every device and its features as readable text (for `kforge devices`).
inline std::string devices_text() {
  std::ostringstream o;
  const auto devs = list_devices();
  if (devs.empty()) o << "no Vulkan devices\n";
  for (const auto& d : devs) {
    o << "[" << d.index << "] " << d.name << " (" << d.type << ", Vulkan " << detail::version_str(d.api_version)
      << ", driver " << d.driver_name << " " << d.driver_info << ")\n"
      << "    fp16 arithmetic " << (d.fp16_arithmetic ? "yes" : "no") << ", 16-bit storage "
      << (d.storage_16bit ? "yes" : "no") << ", subgroup " << d.subgroup_size << " (" << d.min_subgroup_size << "-"
      << d.max_subgroup_size << ", arithmetic " << ((d.subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) ? "yes" : "no")
      << ", size control " << (d.subgroup_size_control ? "yes" : "no") << ")\n"
      << "    NV cooperative matrix " << (d.nv_cooperative_matrix ? "yes" : "no") << ", robust buffer access "
      << (d.robust_buffer_access ? "yes" : "no") << " (robustness2 " << (d.robust_buffer_access2 ? "yes" : "no")
      << "), timestamps " << (d.timestamps ? "yes" : "no") << " ("
      << d.timestamp_period_ns << " ns/tick)\n"
      << "    maxStorageBufferRange " << d.max_storage_buffer_range << ", shared memory " << d.max_shared_memory
      << ", max workgroup " << d.max_workgroup_invocations << "\n    heaps:";
    for (const auto& h : d.heaps) o << " " << (h.size >> 20) << " MiB" << (h.device_local ? " (device-local)" : "");
    o << "\n";
  }
  return o.str();
}

}  // namespace kforge::vulkan
