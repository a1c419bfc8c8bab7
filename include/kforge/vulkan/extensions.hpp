// kforge/vulkan/extensions.hpp — the Vulkan structures of the extensions
// kforge's tensor-core kernels use that Debian 12's Vulkan headers (1.3.239)
// do not declare: VK_KHR_cooperative_matrix, VK_NV_cooperative_matrix2 and
// VK_KHR_shader_bfloat16. The layouts and numbers are the Vulkan ABI's
// (KhronosGroup/Vulkan-Headers vulkan_core.h); they are declared here under
// kforge's own names, so that a newer vulkan_core.h (which declares the
// originals) changes nothing.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <cstdint>

namespace kforge::vulkan::ext {

inline constexpr const char* khr_cooperative_matrix = "VK_KHR_cooperative_matrix";
inline constexpr const char* nv_cooperative_matrix2 = "VK_NV_cooperative_matrix2";
inline constexpr const char* khr_shader_bfloat16 = "VK_KHR_shader_bfloat16";

inline constexpr auto stype_coopmat_features_khr = static_cast<VkStructureType>(1000506000);
inline constexpr auto stype_coopmat_properties_khr = static_cast<VkStructureType>(1000506001);
inline constexpr auto stype_coopmat2_features_nv = static_cast<VkStructureType>(1000593000);
inline constexpr auto stype_coopmat_flexible_properties_nv = static_cast<VkStructureType>(1000593001);
inline constexpr auto stype_coopmat2_properties_nv = static_cast<VkStructureType>(1000593002);
inline constexpr auto stype_bfloat16_features_khr = static_cast<VkStructureType>(1000141000);

/// VkComponentTypeKHR values kforge reads.
inline constexpr std::uint32_t component_float16 = 0, component_float32 = 1, component_bfloat16 = 1000141000;
/// VkScopeKHR values.
inline constexpr std::uint32_t scope_workgroup = 2, scope_subgroup = 3;

/// VkPhysicalDeviceCooperativeMatrixFeaturesKHR
struct coopmat_features_khr {
  VkStructureType sType = stype_coopmat_features_khr;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrix = VK_FALSE;
  VkBool32 cooperativeMatrixRobustBufferAccess = VK_FALSE;
};
/// VkCooperativeMatrixPropertiesKHR
struct coopmat_properties_khr {
  VkStructureType sType = stype_coopmat_properties_khr;
  void* pNext = nullptr;
  std::uint32_t MSize = 0, NSize = 0, KSize = 0;
  std::uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  std::uint32_t scope = 0;
};
/// VkPhysicalDeviceCooperativeMatrix2FeaturesNV
struct coopmat2_features_nv {
  VkStructureType sType = stype_coopmat2_features_nv;
  void* pNext = nullptr;
  VkBool32 cooperativeMatrixWorkgroupScope = VK_FALSE;
  VkBool32 cooperativeMatrixFlexibleDimensions = VK_FALSE;
  VkBool32 cooperativeMatrixReductions = VK_FALSE;
  VkBool32 cooperativeMatrixConversions = VK_FALSE;
  VkBool32 cooperativeMatrixPerElementOperations = VK_FALSE;
  VkBool32 cooperativeMatrixTensorAddressing = VK_FALSE;
  VkBool32 cooperativeMatrixBlockLoads = VK_FALSE;
};
/// VkPhysicalDeviceCooperativeMatrix2PropertiesNV
struct coopmat2_properties_nv {
  VkStructureType sType = stype_coopmat2_properties_nv;
  void* pNext = nullptr;
  std::uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize = 0;
  std::uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension = 0;
  std::uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory = 0;
};
/// VkCooperativeMatrixFlexibleDimensionsPropertiesNV
struct coopmat_flexible_properties_nv {
  VkStructureType sType = stype_coopmat_flexible_properties_nv;
  void* pNext = nullptr;
  std::uint32_t MGranularity = 0, NGranularity = 0, KGranularity = 0;
  std::uint32_t AType = 0, BType = 0, CType = 0, ResultType = 0;
  VkBool32 saturatingAccumulation = VK_FALSE;
  std::uint32_t scope = 0;
  std::uint32_t workgroupInvocations = 0;
};
/// VkPhysicalDeviceShaderBfloat16FeaturesKHR
struct bfloat16_features_khr {
  VkStructureType sType = stype_bfloat16_features_khr;
  void* pNext = nullptr;
  VkBool32 shaderBFloat16Type = VK_FALSE;
  VkBool32 shaderBFloat16DotProduct = VK_FALSE;
  VkBool32 shaderBFloat16CooperativeMatrix = VK_FALSE;
};

static_assert(sizeof(coopmat_features_khr) == 24 && sizeof(coopmat_properties_khr) == 56 &&
              sizeof(coopmat2_features_nv) == 48 && sizeof(coopmat2_properties_nv) == 32 &&
              sizeof(coopmat_flexible_properties_nv) == 56 && sizeof(bfloat16_features_khr) == 32,
              "kforge::vulkan::ext: structure sizes differ from the Vulkan ABI (x86-64/aarch64 LP64)");

using get_coopmat_properties_khr = VkResult(VKAPI_PTR*)(VkPhysicalDevice, std::uint32_t*, coopmat_properties_khr*);
using get_coopmat_flexible_properties_nv = VkResult(VKAPI_PTR*)(VkPhysicalDevice, std::uint32_t*,
                                                                coopmat_flexible_properties_nv*);

}  // namespace kforge::vulkan::ext
