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

#include "kforge/core/dtype.hpp"
#include "kforge/vulkan/extensions.hpp"
#include "kforge/vulkan/instance.hpp"

namespace kforge::vulkan {

/// A workgroup-scope cooperative-matrix shape class a device offers
/// (VK_NV_cooperative_matrix2's flexible dimensions): A and B of `type`,
/// f32 accumulator and result; sizes multiples of m×n×k; exactly
/// `invocations` invocations per workgroup.
struct coopmat2_shape {
  std::uint32_t m = 0, n = 0, k = 0;
  dtype type = dtype::f16;
  std::uint32_t invocations = 0;
};

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
  bool maintenance4 = false;             // Vulkan 1.3's maintenance4 (LocalSizeId)
  bool vulkan_memory_model = false;      // Vulkan 1.2's vulkanMemoryModel
  bool pipeline_executable_info = false; // VK_KHR_pipeline_executable_properties (per-pipeline statistics)
  bool khr_cooperative_matrix = false;   // VK_KHR_cooperative_matrix, cooperativeMatrix in compute shaders
  // VK_NV_cooperative_matrix2 with what kforge's workgroup-scope kernels use: workgroup scope, flexible
  // dimensions, tensor addressing and per-element operations (and the KHR extension, the memory model,
  // maintenance4, 16-bit storage, Vulkan 1.3).
  bool nv_cooperative_matrix2 = false;
  bool coopmat2_conversions = false;  // ... with use conversions (bf16 gemm's output: no bf16 accumulators are listed)
  bool coopmat2_reductions = false;   // ... with reductions and use conversions (attention_coopmat2)
  std::uint32_t coopmat2_max_workgroup = 0, coopmat2_max_dimension = 0, coopmat2_reserved_shared = 0;
  std::vector<coopmat2_shape> coopmat2_shapes;  // f16 and bf16 inputs, f32 accumulation, workgroup scope
  bool bf16_type = false;                // VK_KHR_shader_bfloat16: shaderBFloat16Type
  bool bf16_cooperative_matrix = false;  // ... and shaderBFloat16CooperativeMatrix
  bool robustness2 = false;            // VK_EXT_robustness2 is listed
  bool robust_buffer_access = false;   // VkPhysicalDeviceFeatures::robustBufferAccess
  bool robust_buffer_access2 = false;  // VK_EXT_robustness2 with its robustBufferAccess2 feature
  bool push_descriptor = false;
  bool timestamps = false;  // compute queue has timestampValidBits > 0
  float timestamp_period_ns = 0;
  std::uint64_t max_storage_buffer_range = 0;
  std::uint32_t max_shared_memory = 0, max_workgroup_invocations = 0;  // maxComputeSharedMemorySize, ...WorkGroupInvocations
  std::array<std::uint32_t, 3> max_workgroup_size{};  // maxComputeWorkGroupSize
  std::uint32_t max_push_constants = 0;               // maxPushConstantsSize (bytes)
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

/// The cooperative-matrix shapes a device lists (NV subgroup 16x16x16, NV2 flexible workgroup-scope).
inline void query_coopmat_shapes(VkInstance inst, VkPhysicalDevice p, device_info& d) {
  if (d.nv_cooperative_matrix) {
    auto fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    std::uint32_t n = 0;
    if (fn && fn(p, &n, nullptr) == VK_SUCCESS) {
      std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
      if (fn(p, &n, props.data()) == VK_SUCCESS)
        for (const auto& c : props)
          if (c.MSize == 16 && c.NSize == 16 && c.KSize == 16 && c.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
              c.BType == VK_COMPONENT_TYPE_FLOAT16_NV && c.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
              c.DType == VK_COMPONENT_TYPE_FLOAT32_NV && c.scope == VK_SCOPE_SUBGROUP_NV)
            d.nv_coopmat_f16_16x16x16 = true;
    }
  }
  if (d.nv_cooperative_matrix2) {
    auto fn = reinterpret_cast<ext::get_coopmat_flexible_properties_nv>(
        vkGetInstanceProcAddr(inst, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
    std::uint32_t n = 0;
    if (fn && fn(p, &n, nullptr) == VK_SUCCESS) {
      std::vector<ext::coopmat_flexible_properties_nv> props(n);
      if (fn(p, &n, props.data()) == VK_SUCCESS)
        for (const auto& c : props) {
          const bool f16 = c.AType == ext::component_float16 && c.BType == ext::component_float16;
          const bool bf16 = c.AType == ext::component_bfloat16 && c.BType == ext::component_bfloat16;
          if ((f16 || (bf16 && d.bf16_cooperative_matrix)) && c.CType == ext::component_float32 &&
              c.ResultType == ext::component_float32 && c.scope == ext::scope_workgroup && !c.saturatingAccumulation)
            d.coopmat2_shapes.push_back({c.MGranularity, c.NGranularity, c.KGranularity, f16 ? dtype::f16 : dtype::bf16,
                                         c.workgroupInvocations});
        }
    }
    if (d.coopmat2_shapes.empty()) d.nv_cooperative_matrix2 = false;
  }
}

/// What device `p` offers. `newer_extensions` false leaves out the extensions
/// newer than Debian's Vulkan headers (KHR/NV2 cooperative matrices, bf16):
/// their structures are not queried (a validation layer older than them
/// reports every unknown structure).
inline device_info query_device(VkInstance inst, VkPhysicalDevice p, int index, bool newer_extensions = true) {
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
  const bool khr_cm = newer_extensions && has_extension(exts, ext::khr_cooperative_matrix);
  const bool nv_cm2 = v13 && khr_cm && has_extension(exts, ext::nv_cooperative_matrix2);
  const bool bf16 = newer_extensions && has_extension(exts, ext::khr_shader_bfloat16);

  VkPhysicalDeviceSubgroupProperties sg{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties sgc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  VkPhysicalDeviceIDProperties idp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  ext::coopmat2_properties_nv cm2p;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &sg;
  sg.pNext = &idp;
  void** tail = &idp.pNext;
  if (v12) *tail = &drv, tail = &drv.pNext;
  if (ssc) *tail = &sgc, tail = &sgc.pNext;
  if (nv_cm2) *tail = &cm2p, tail = &cm2p.pNext;
  vkGetPhysicalDeviceProperties2(p, &props);

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  VkPhysicalDeviceSubgroupSizeControlFeatures fsc{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES};
  VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  void** ft = &feats.pNext;
  if (v12) {
    *ft = &f11, ft = &f11.pNext;
    *ft = &f12, ft = &f12.pNext;
  }
  if (v13) *ft = &f13, ft = &f13.pNext;
  else if (ssc) *ft = &fsc, ft = &fsc.pNext;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  if (d.nv_cooperative_matrix) *ft = &fcm, ft = &fcm.pNext;
  VkPhysicalDeviceRobustness2FeaturesEXT frb{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT};
  if (d.robustness2) *ft = &frb, ft = &frb.pNext;
  ext::coopmat_features_khr fkhr;
  if (khr_cm) *ft = &fkhr, ft = &fkhr.pNext;
  ext::coopmat2_features_nv fcm2;
  if (nv_cm2) *ft = &fcm2, ft = &fcm2.pNext;
  ext::bfloat16_features_khr fbf;
  if (bf16) *ft = &fbf, ft = &fbf.pNext;
  const bool pe = has_extension(exts, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fpe{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (pe) *ft = &fpe, ft = &fpe.pNext;
  vkGetPhysicalDeviceFeatures2(p, &feats);
  d.robust_buffer_access = feats.features.robustBufferAccess;
  d.robust_buffer_access2 = d.robustness2 && frb.robustBufferAccess2;
  // glslang's NV cooperative-matrix code declares the VulkanMemoryModel capability (its scopes come from
  // GL_KHR_memory_scope_semantics), so that feature is needed too.
  d.nv_cooperative_matrix = d.nv_cooperative_matrix && fcm.cooperativeMatrix && v12 && f12.shaderFloat16 &&
                            f12.vulkanMemoryModel;
  d.maintenance4 = v13 && f13.maintenance4;
  d.vulkan_memory_model = v12 && f12.vulkanMemoryModel;
  d.pipeline_executable_info = pe && fpe.pipelineExecutableInfo;
  d.khr_cooperative_matrix = khr_cm && fkhr.cooperativeMatrix && v12 && f12.vulkanMemoryModel;
  d.bf16_type = bf16 && fbf.shaderBFloat16Type;
  d.bf16_cooperative_matrix = d.bf16_type && fbf.shaderBFloat16CooperativeMatrix && d.khr_cooperative_matrix;
  d.nv_cooperative_matrix2 = nv_cm2 && d.khr_cooperative_matrix && d.maintenance4 && f11.storageBuffer16BitAccess &&
                             fcm2.cooperativeMatrixWorkgroupScope && fcm2.cooperativeMatrixFlexibleDimensions &&
                             fcm2.cooperativeMatrixTensorAddressing && fcm2.cooperativeMatrixPerElementOperations;
  d.coopmat2_conversions = d.nv_cooperative_matrix2 && fcm2.cooperativeMatrixConversions;
  d.coopmat2_reductions = d.coopmat2_conversions && fcm2.cooperativeMatrixReductions;
  if (d.nv_cooperative_matrix2) {
    d.coopmat2_max_workgroup = cm2p.cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
    d.coopmat2_max_dimension = cm2p.cooperativeMatrixFlexibleDimensionsMaxDimension;
    d.coopmat2_reserved_shared = cm2p.cooperativeMatrixWorkgroupScopeReservedSharedMemory;
  }

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
    d.subgroup_size_control = v13 ? f13.subgroupSizeControl : fsc.subgroupSizeControl;
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
  for (int i = 0; i < 3; ++i) d.max_workgroup_size[static_cast<std::size_t>(i)] = pr.limits.maxComputeWorkGroupSize[i];
  d.max_push_constants = pr.limits.maxPushConstantsSize;
  d.min_storage_offset_alignment = static_cast<std::uint32_t>(pr.limits.minStorageBufferOffsetAlignment);
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(p, &mem);
  for (std::uint32_t i = 0; i < mem.memoryHeapCount; ++i)
    d.heaps.push_back({mem.memoryHeaps[i].size, (mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
  query_coopmat_shapes(inst, p, d);
  return d;
}

/// The workgroup-scope shapes as text: "f16 16x16x16/128 ..." (empty: none).
inline std::string coopmat2_shapes_str(const device_info& d) {
  std::string s;
  for (const auto& c : d.coopmat2_shapes)
    s += (s.empty() ? "" : ", ") + std::string(to_string(c.type)) + " " + std::to_string(c.m) + "x" + std::to_string(c.n) +
         "x" + std::to_string(c.k) + "/" + std::to_string(c.invocations);
  return s;
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

/// Whether d offers workgroup-scope cooperative matrices of dt inputs to the
/// coopmat2 kernel (VK_NV_cooperative_matrix2 with 16-bit storage, and a shape
/// of dt listed; for bf16 also use conversions: bf16 C leaves the kernel as a
/// matrix of use A, as no bf16 accumulators are listed). gemm_config.hpp's
/// coopmat2_available adds what else the kernel needs; for bf16 this is all:
/// bf16 gemm runs on the tensor cores.
inline bool coopmat2_lists(const device_info& d, dtype dt) {
  if (!d.nv_cooperative_matrix2 || !d.storage_16bit) return false;
  if (dt == dtype::bf16 && !d.coopmat2_conversions) return false;
  for (const auto& c : d.coopmat2_shapes)
    if (c.type == dt) return true;
  return false;
}

/// Every physical device, in the loader's order (index = KFORGE_VK_DEVICE index).
inline std::vector<device_info> list_devices() {
  detail::instance_holder inst(false);
  std::vector<device_info> out;
  int i = 0;
  for (VkPhysicalDevice p : inst.physical_devices()) out.push_back(detail::query_device(inst.instance, p, i++));
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
      << ", \"khr_cooperative_matrix\": " << (d.khr_cooperative_matrix ? "true" : "false")
      << ", \"nv_cooperative_matrix2\": " << (d.nv_cooperative_matrix2 ? "true" : "false")
      << ", \"coopmat2_conversions\": " << (d.coopmat2_conversions ? "true" : "false")
      << ", \"coopmat2_reductions\": " << (d.coopmat2_reductions ? "true" : "false")
      << ", \"coopmat2_shapes\": \"" << detail::coopmat2_shapes_str(d) << "\""
      << ", \"bf16_tensors\": " << (d.storage_16bit ? "true" : "false")
      << ", \"bf16_tensor_cores\": " << (coopmat2_lists(d, dtype::bf16) ? "true" : "false")
      << ", \"bf16_type\": " << (d.bf16_type ? "true" : "false")
      << ", \"bf16_cooperative_matrix\": " << (d.bf16_cooperative_matrix ? "true" : "false")
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
      << "    cooperative matrices: NV " << (d.nv_cooperative_matrix ? "yes" : "no") << ", KHR "
      << (d.khr_cooperative_matrix ? "yes" : "no") << ", NV2 workgroup scope "
      << (d.nv_cooperative_matrix2 ? "yes (" + detail::coopmat2_shapes_str(d) + ")" : std::string("no")) << "\n"
      << "    bf16: tensors "
      << (d.storage_16bit ? "yes (16-bit storage, f32 arithmetic)" : "no (no 16-bit storage: bf16 data runs as f32)")
      << ", gemm on tensor cores " << (coopmat2_lists(d, dtype::bf16) ? "yes (coopmat2)" : "no") << "; shader type "
      << (d.bf16_type ? "yes" : "no") << ", cooperative matrices " << (d.bf16_cooperative_matrix ? "yes" : "no") << "\n"
      << "    robust buffer access "
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
