// kforge/vulkan/context.hpp — instance, device choice, features, validation
// messages, memory pools, shader compiler and pipelines of one device.
//
// Device choice: an index or a case-insensitive name substring (options, else
// KFORGE_VK_DEVICE), else the best kind present: discrete > integrated >
// virtual > other > CPU (lavapipe is used only when nothing else exists, or
// when asked for by name/index/prefer_cpu).
//
// Validation: the Khronos layer and a debug-utils messenger are enabled when
// options.validation is on (KFORGE_VK_VALIDATION=1 sets the default); every
// warning or error message is counted and kept so tests can fail on them.
//
// Robust buffer access (options.robust_buffer_access, for kernels nobody
// vouches for, such as the generation sandbox's): the device is created with
// robustBufferAccess, and where VK_EXT_robustness2 reports robustBufferAccess2
// with that too. Then a shader's access outside the range a descriptor binds
// cannot reach memory outside the VkBuffer: with robustBufferAccess2 such a
// write is discarded and such a read returns zero; with robustBufferAccess
// alone a write may land anywhere in the memory bound to the VkBuffer (for
// kforge's pools, a whole block holding other tensors too) and a read returns
// a value from there or zero. A device without
// robustBufferAccess is refused (no_device) rather than silently run without.
//
// Pipelines are created once per (shader variant, specialization values) and
// kept for the context's life. A VkPipelineCache is loaded from and saved to
// <cache dir>/pipeline/, prefixed by our own header (vendor, device, driver
// version, pipelineCacheUUID, deviceUUID, and the robustness enabled): a file
// made by another driver or device is rejected, never handed to the driver,
// and robust and plain contexts keep separate files (see cache_header).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "kforge/vulkan/compiler.hpp"
#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/handles.hpp"
#include "kforge/vulkan/memory.hpp"

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

struct context_options {
  int device_index = -1;          // -1: KFORGE_VK_DEVICE, else automatic
  std::string device_name;        // case-insensitive substring
  bool prefer_cpu = false;        // rank CPU implementations first
  int validation = -1;            // -1: KFORGE_VK_VALIDATION, 0 off, 1 on
  std::chrono::milliseconds timeout{-1};  // per wait; -1: KFORGE_VK_TIMEOUT_MS, else 5000 ms
  std::string cache_dir;          // empty: cache_dir()
  bool persist_pipeline_cache = true;
  /// Create the device with robustBufferAccess (and robustBufferAccess2 where
  /// VK_EXT_robustness2 offers it), so that out-of-range accesses of a shader
  /// stay inside the buffers it was given. For untrusted kernels; it may cost
  /// speed on real GPUs. A device without the feature throws no_device.
  bool robust_buffer_access = false;
};

namespace detail {
inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
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
inline bool has_extension(const std::vector<VkExtensionProperties>& exts, const char* name) {
  for (const auto& e : exts)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
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
inline bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}
inline bool layer_present(const char* name) {
  std::uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> v(n);
  vkEnumerateInstanceLayerProperties(&n, v.data());
  for (const auto& l : v)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

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

  explicit instance_holder(bool want_validation) {
    validation = want_validation;
    if (validation && !layer_present("VK_LAYER_KHRONOS_validation"))
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

/// Every physical device, in the loader's order (index = KFORGE_VK_DEVICE index).
inline std::vector<device_info> list_devices() {
  detail::instance_holder inst(false);
  std::vector<device_info> out;
  int i = 0;
  for (VkPhysicalDevice p : inst.physical_devices()) out.push_back(detail::query_device(p, i++));
  inst.destroy(false);
  return out;
}

/// A compute pipeline and its layout, owned by the context.
struct pipeline {
  unique_handle<VkDescriptorSetLayout> set_layout;
  unique_handle<VkPipelineLayout> layout;
  unique_handle<VkPipeline> handle;
  std::uint32_t bindings = 0, push_bytes = 0;
  std::string name;
};

struct pipeline_stats {
  std::uint64_t created = 0;           // vkCreateComputePipelines calls
  std::uint64_t driver_cache_hits = 0; // creation feedback says the VkPipelineCache had it
  bool cache_loaded = false;           // a persisted VkPipelineCache was accepted
  bool cache_rejected = false;         // a persisted file existed but was for another device/driver
};

class context {
 public:
  explicit context(context_options opt = {}) : opt_(std::move(opt)) {
    if (opt_.validation < 0) opt_.validation = detail::env_flag("KFORGE_VK_VALIDATION") ? 1 : 0;
    if (opt_.timeout.count() < 0) {
      const char* t = std::getenv("KFORGE_VK_TIMEOUT_MS");
      opt_.timeout = std::chrono::milliseconds(t && *t ? std::atoll(t) : 5000);
    }
    if (opt_.device_index < 0 && opt_.device_name.empty())
      if (const char* e = std::getenv("KFORGE_VK_DEVICE"); e && *e) {
        const std::string s = e;
        if (s.find_first_not_of("0123456789") == std::string::npos) opt_.device_index = std::atoi(e);
        else opt_.device_name = s;
      }
    inst_ = std::make_unique<detail::instance_holder>(opt_.validation == 1);
    try {
      pick_device();
      create_device();
    } catch (...) {
      inst_->destroy(false);
      throw;
    }
  }
  context(const context&) = delete;
  context& operator=(const context&) = delete;

  ~context() {
    const bool lost = state_ && state_->lost.load();
    if (!lost && state_ && state_->device) {
      vkDeviceWaitIdle(state_->device);
      try {
        save_pipeline_cache();
      } catch (...) {
      }
    }
    pipelines_.clear();
    pcache_.reset();
    device_pool_.reset();
    staging_pool_.reset();
    if (!lost && state_ && state_->device) vkDestroyDevice(state_->device, nullptr);
    // Anything still holding this device (a device_tensor that outlived its
    // context, which is a usage error) must not call into a destroyed device.
    if (state_) state_->lost.store(true);
    if (inst_) inst_->destroy(lost);
  }

  const device_info& info() const { return info_; }
  const context_options& options() const { return opt_; }
  VkDevice device() const { return state_->device; }
  VkPhysicalDevice physical_device() const { return phys_; }
  VkQueue queue() const { return queue_; }
  std::uint32_t queue_family() const { return family_; }
  const std::shared_ptr<device_state>& state() const { return state_; }
  std::chrono::milliseconds timeout() const { return opt_.timeout; }
  void set_timeout(std::chrono::milliseconds t) { opt_.timeout = t; }
  bool validation_enabled() const { return inst_->validation; }
  /// Whether the device was created with robustBufferAccess (options.robust_buffer_access).
  bool robust_buffer_access() const { return robust_; }
  /// Whether robustBufferAccess2 (VK_EXT_robustness2) is on as well: out-of-range reads return zero.
  bool robust_buffer_access2() const { return robust2_; }
  bool lost() const { return state_->lost.load(); }
  /// Marks the device abandoned: nothing it owns will be destroyed or waited on.
  void mark_lost() { state_->lost.store(true); }
  void ensure_usable() const {
    if (lost()) throw device_lost("kforge::vulkan: the context for '" + info_.name + "' was lost; build a new context");
  }

  /// Validation messages (warnings and errors) received so far.
  std::vector<std::string> validation_messages() const {
    std::lock_guard lock(inst_->log->mu);
    return inst_->log->messages;
  }
  std::size_t validation_message_count() const {
    std::lock_guard lock(inst_->log->mu);
    return inst_->log->messages.size();
  }

  memory_pool& device_memory() { return *device_pool_; }
  memory_pool& staging_memory() { return *staging_pool_; }
  std::shared_ptr<memory_pool> device_pool() { return device_pool_; }
  std::shared_ptr<memory_pool> staging_pool() { return staging_pool_; }
  shader_compiler& compiler() { return *compiler_; }
  pipeline_stats pipelines_stats() const {
    std::lock_guard lock(pmu_);
    return pstats_;
  }
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn() const { return push_desc_; }

  /// The pipeline of a shader variant with the given specialization values
  /// (one per kernel_interface::spec_ids entry, in that order). Compiles (or
  /// loads) SPIR-V and checks its interface the first time.
  const pipeline& get_pipeline(const shader_variant& v, const kernel_interface& iface,
                               const std::vector<std::uint32_t>& spec) {
    ensure_usable();
    std::string key = shader_compiler::cache_key(v);
    for (auto s : spec) key += ":" + std::to_string(s);
    std::lock_guard lock(pmu_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;
    if (spec.size() != iface.spec_ids.size())
      throw interface_error("kforge::vulkan: shader '" + v.name + "' given " + std::to_string(spec.size()) +
                            " specialization values for " + std::to_string(iface.spec_ids.size()) + " ids");
    const std::vector<std::uint32_t> code = compiler_->spirv(v);
    check_interface(v.name, code, iface);
    auto p = std::make_unique<pipeline>();
    p->name = v.name;
    p->bindings = iface.bindings;
    p->push_bytes = iface.push_bytes;
    const VkDevice dev = state_->device;

    std::vector<VkDescriptorSetLayoutBinding> b(iface.bindings);
    for (std::uint32_t i = 0; i < iface.bindings; ++i)
      b[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    dl.bindingCount = iface.bindings;
    dl.pBindings = b.data();
    VkDescriptorSetLayout dsl;
    check(vkCreateDescriptorSetLayout(dev, &dl, nullptr, &dsl), "vkCreateDescriptorSetLayout");
    p->set_layout = device_owned(state_, dsl, vkDestroyDescriptorSetLayout);

    VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, iface.push_bytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &dsl;
    pl.pushConstantRangeCount = iface.push_bytes ? 1 : 0;
    pl.pPushConstantRanges = iface.push_bytes ? &pcr : nullptr;
    VkPipelineLayout layout;
    check(vkCreatePipelineLayout(dev, &pl, nullptr, &layout), "vkCreatePipelineLayout");
    p->layout = device_owned(state_, layout, vkDestroyPipelineLayout);

    VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    sm.codeSize = code.size() * 4;
    sm.pCode = code.data();
    VkShaderModule mod;
    check(vkCreateShaderModule(dev, &sm, nullptr, &mod), "vkCreateShaderModule");
    auto mod_owner = device_owned(state_, mod, vkDestroyShaderModule);

    std::vector<VkSpecializationMapEntry> entries(spec.size());
    for (std::size_t i = 0; i < spec.size(); ++i)
      entries[i] = {iface.spec_ids[i], static_cast<std::uint32_t>(4 * i), 4};
    VkSpecializationInfo si{static_cast<std::uint32_t>(entries.size()), entries.data(), spec.size() * 4, spec.data()};
    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = mod;
    ci.stage.pName = "main";
    ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
    ci.layout = layout;
    VkPipelineCreationFeedback fb{}, stage_fb{};
    VkPipelineCreationFeedbackCreateInfo fci{VK_STRUCTURE_TYPE_PIPELINE_CREATION_FEEDBACK_CREATE_INFO};
    fci.pPipelineCreationFeedback = &fb;
    fci.pipelineStageCreationFeedbackCount = 1;
    fci.pPipelineStageCreationFeedbacks = &stage_fb;
    if (info_.api_version >= VK_API_VERSION_1_3) ci.pNext = &fci;  // core in 1.3: needs no extension
    VkPipeline pipe;
    check(vkCreateComputePipelines(dev, pcache_.get(), 1, &ci, nullptr, &pipe), "vkCreateComputePipelines");
    p->handle = device_owned(state_, pipe, vkDestroyPipeline);
    ++pstats_.created;
    if ((fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
        (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT))
      ++pstats_.driver_cache_hits;
    return *pipelines_.emplace(key, std::move(p)).first->second;
  }

  /// Writes the VkPipelineCache to disk (also done by the destructor).
  void save_pipeline_cache() {
    if (!opt_.persist_pipeline_cache || !pcache_ || lost()) return;
    std::size_t n = 0;
    check(vkGetPipelineCacheData(state_->device, pcache_.get(), &n, nullptr), "vkGetPipelineCacheData");
    std::vector<char> data(n);
    check(vkGetPipelineCacheData(state_->device, pcache_.get(), &n, data.data()), "vkGetPipelineCacheData");
    data.resize(n);
    std::string file = cache_header();
    file.append(data.data(), data.size());
    detail::write_atomic(pipeline_cache_path(), file.data(), file.size());
  }
  std::filesystem::path pipeline_cache_path() const {
    return compiler_->directory() / "pipeline" /
           (detail::hex64(detail::fnv1a(cache_header())) + ".bin");
  }

 private:
  // Our prefix: magic, then the identity a cache is valid for. Robustness
  // changes the code a driver generates (bounds checks); drivers key their
  // cache entries by it, but a robust context (a sandbox) and a plain one
  // still keep separate files: neither overwrites the other's at exit, and a
  // driver that forgot the robustness state in its key could not hand a
  // pipeline compiled without bounds checks to a context that asked for them.
  // A plain context's header is unchanged, so its existing files stay valid.
  std::string cache_header() const {
    std::string h = "KFPC1";
    auto add = [&](const void* p, std::size_t n) { h.append(static_cast<const char*>(p), n); };
    add(&info_.vendor_id, 4);
    add(&info_.device_id, 4);
    add(&info_.driver_version, 4);
    add(info_.pipeline_cache_uuid.data(), VK_UUID_SIZE);
    add(info_.device_uuid.data(), VK_UUID_SIZE);
    if (robust_) h += robust2_ ? "robust2" : "robust1";
    return h;
  }

  void pick_device() {
    const auto phys = inst_->physical_devices();
    if (phys.empty()) throw no_device("kforge::vulkan: no Vulkan physical device found");
    std::vector<device_info> infos;
    for (std::size_t i = 0; i < phys.size(); ++i) infos.push_back(detail::query_device(phys[i], static_cast<int>(i)));
    int chosen = -1;
    if (opt_.device_index >= 0) {
      if (opt_.device_index >= static_cast<int>(phys.size()))
        throw no_device("kforge::vulkan: device index " + std::to_string(opt_.device_index) + " requested, but only " +
                        std::to_string(phys.size()) + " device(s) exist");
      chosen = opt_.device_index;
    } else if (!opt_.device_name.empty()) {
      for (const auto& d : infos)
        if (detail::lower(d.name).find(detail::lower(opt_.device_name)) != std::string::npos) {
          chosen = d.index;
          break;
        }
      if (chosen < 0) {
        std::string names;
        for (const auto& d : infos) names += (names.empty() ? "" : ", ") + d.name;
        throw no_device("kforge::vulkan: no device name contains '" + opt_.device_name + "' (devices: " + names + ")");
      }
    } else {
      for (const auto& d : infos) {
        const int r = opt_.prefer_cpu && d.type == "cpu" ? -1 : d.rank;
        const int cr = chosen < 0 ? 99 : (opt_.prefer_cpu && infos[chosen].type == "cpu" ? -1 : infos[chosen].rank);
        if (r < cr) chosen = d.index;
      }
    }
    phys_ = phys[static_cast<std::size_t>(chosen)];
    info_ = infos[static_cast<std::size_t>(chosen)];
    if (info_.nv_cooperative_matrix) query_coopmat_shapes();
    if (info_.api_version < VK_API_VERSION_1_2)
      throw no_device("kforge::vulkan: device '" + info_.name + "' offers Vulkan " + detail::version_str(info_.api_version) +
                      "; kforge needs 1.2");
    if (!info_.push_descriptor)
      throw no_device("kforge::vulkan: device '" + info_.name + "' lacks VK_KHR_push_descriptor, which kforge needs");
  }

  // The gemm_coopmat_f16 kernel uses 16x16x16 f16 x f16 + f32 tiles at
  // subgroup scope; use it only where the driver lists exactly that.
  void query_coopmat_shapes() {
    auto fn = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
        vkGetInstanceProcAddr(inst_->instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
    std::uint32_t n = 0;
    if (!fn || fn(phys_, &n, nullptr) != VK_SUCCESS) return;
    std::vector<VkCooperativeMatrixPropertiesNV> props(n, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV});
    if (fn(phys_, &n, props.data()) != VK_SUCCESS && n) return;
    for (const auto& c : props)
      if (c.MSize == 16 && c.NSize == 16 && c.KSize == 16 && c.AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
          c.BType == VK_COMPONENT_TYPE_FLOAT16_NV && c.CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
          c.DType == VK_COMPONENT_TYPE_FLOAT32_NV && c.scope == VK_SCOPE_SUBGROUP_NV)
        info_.nv_coopmat_f16_16x16x16 = true;
  }

  void create_device() {
    std::uint32_t ts_bits = 0;
    const int fam = detail::compute_queue_family(phys_, &ts_bits);
    if (fam < 0) throw no_device("kforge::vulkan: device '" + info_.name + "' has no compute queue");
    family_ = static_cast<std::uint32_t>(fam);
    const float prio = 1.0f;
    VkDeviceQueueCreateInfo qi{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    qi.queueFamilyIndex = family_;
    qi.queueCount = 1;
    qi.pQueuePriorities = &prio;
    VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    f11.storageBuffer16BitAccess = info_.storage_16bit;
    f12.shaderFloat16 = info_.fp16_arithmetic;
    VkPhysicalDeviceFeatures2 feats{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    // feats -> f11 -> f12 -> [cooperative matrix] -> [robustness2]
    void** tail = &feats.pNext;
    *tail = &f11, tail = &f11.pNext;
    *tail = &f12, tail = &f12.pNext;
    std::vector<const char*> exts{VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    VkPhysicalDeviceCooperativeMatrixFeaturesNV fcm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
    if (info_.nv_coopmat_f16_16x16x16) {
      fcm.cooperativeMatrix = VK_TRUE;
      f12.vulkanMemoryModel = VK_TRUE;
      *tail = &fcm, tail = &fcm.pNext;
      exts.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
    }
    VkPhysicalDeviceRobustness2FeaturesEXT frb{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT};
    if (opt_.robust_buffer_access) {
      if (!info_.robust_buffer_access)
        throw no_device("kforge::vulkan: robust buffer access was requested, but device '" + info_.name +
                        "' does not offer robustBufferAccess");
      feats.features.robustBufferAccess = VK_TRUE;
      // robustBufferAccess2 requires robustBufferAccess, enabled just above.
      if (info_.robust_buffer_access2) {
        frb.robustBufferAccess2 = VK_TRUE;
        *tail = &frb, tail = &frb.pNext;
        exts.push_back(VK_EXT_ROBUSTNESS_2_EXTENSION_NAME);
      }
    }
    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    ci.pNext = &feats;
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &qi;
    ci.enabledExtensionCount = static_cast<std::uint32_t>(exts.size());
    ci.ppEnabledExtensionNames = exts.data();
    state_ = std::make_shared<device_state>();
    check(vkCreateDevice(phys_, &ci, nullptr, &state_->device), "vkCreateDevice");
    robust_ = opt_.robust_buffer_access;
    robust2_ = robust_ && info_.robust_buffer_access2;
    vkGetDeviceQueue(state_->device, family_, 0, &queue_);
    push_desc_ = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vkGetDeviceProcAddr(state_->device, "vkCmdPushDescriptorSetKHR"));
    if (!push_desc_) throw no_device("kforge::vulkan: vkCmdPushDescriptorSetKHR not available");

    memory_pool::limits lim;
    lim.max_range = info_.max_storage_buffer_range;
    lim.alignment = std::max<VkDeviceSize>(info_.min_storage_offset_alignment, 16);
    device_pool_ = std::make_shared<memory_pool>(state_, phys_, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, lim, "device");
    lim.max_range = ~VkDeviceSize{0};
    staging_pool_ = std::make_shared<memory_pool>(
        state_, phys_, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        VK_MEMORY_PROPERTY_HOST_CACHED_BIT, lim, "staging");

    compiler_ = std::make_unique<shader_compiler>(opt_.cache_dir.empty() ? cache_dir() : std::filesystem::path(opt_.cache_dir));
    std::vector<char> blob;
    if (opt_.persist_pipeline_cache) {
      const std::string hdr = cache_header();
      std::vector<char> file = detail::read_file(pipeline_cache_path());
      if (!file.empty()) {
        if (file.size() > hdr.size() && std::memcmp(file.data(), hdr.data(), hdr.size()) == 0 &&
            valid_vulkan_header(file.data() + hdr.size(), file.size() - hdr.size())) {
          blob.assign(file.begin() + static_cast<std::ptrdiff_t>(hdr.size()), file.end());
          pstats_.cache_loaded = true;
        } else {
          pstats_.cache_rejected = true;
        }
      }
    }
    VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    pci.initialDataSize = blob.size();
    pci.pInitialData = blob.empty() ? nullptr : blob.data();
    VkPipelineCache pc;
    check(vkCreatePipelineCache(state_->device, &pci, nullptr, &pc), "vkCreatePipelineCache");
    pcache_ = device_owned(state_, pc, vkDestroyPipelineCache);
  }

  // The driver's own header (VkPipelineCacheHeaderVersionOne) must name this device too.
  bool valid_vulkan_header(const char* p, std::size_t n) const {
    if (n < 32) return false;
    std::uint32_t len, ver, vendor, dev;
    std::memcpy(&len, p, 4);
    std::memcpy(&ver, p + 4, 4);
    std::memcpy(&vendor, p + 8, 4);
    std::memcpy(&dev, p + 12, 4);
    return len >= 32 && ver == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && vendor == info_.vendor_id &&
           dev == info_.device_id && std::memcmp(p + 16, info_.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
  }

  context_options opt_;
  std::unique_ptr<detail::instance_holder> inst_;
  VkPhysicalDevice phys_ = VK_NULL_HANDLE;
  device_info info_;
  std::shared_ptr<device_state> state_;
  VkQueue queue_ = VK_NULL_HANDLE;
  std::uint32_t family_ = 0;
  PFN_vkCmdPushDescriptorSetKHR push_desc_ = nullptr;
  bool robust_ = false, robust2_ = false;
  std::shared_ptr<memory_pool> device_pool_, staging_pool_;
  std::unique_ptr<shader_compiler> compiler_;
  unique_handle<VkPipelineCache> pcache_;
  mutable std::mutex pmu_;
  std::unordered_map<std::string, std::unique_ptr<pipeline>> pipelines_;
  pipeline_stats pstats_;
};

namespace detail {
inline std::mutex& default_mutex() {
  static std::mutex m;
  return m;
}
inline std::unique_ptr<context>& default_slot() {
  static std::unique_ptr<context> c;
  return c;
}
}  // namespace detail

inline void release_default_context();

/// The process-wide context policy::vulkan runs on; made on first use and
/// rebuilt when the previous one was lost.
inline context& default_context() {
  std::lock_guard lock(detail::default_mutex());
  auto& c = detail::default_slot();
  if (c && c->lost()) c.release();  // abandoned on purpose: its device may still be running
  if (!c) {
    c = std::make_unique<context>();
    // Registered only now, after the driver was loaded: exit handlers run in
    // reverse order, so the context goes before the driver's own teardown
    // (destroying it later crashed NVIDIA's driver at exit).
    static const bool registered = (std::atexit([] { release_default_context(); }), true);
    (void)registered;
  }
  return *c;
}
/// Replaces the default context (e.g. with options, or after device loss).
inline context& reset_default_context(context_options opt = {}) {
  std::lock_guard lock(detail::default_mutex());
  auto& c = detail::default_slot();
  if (c && c->lost()) c.release();
  c.reset();
  c = std::make_unique<context>(std::move(opt));
  static const bool registered = (std::atexit([] { release_default_context(); }), true);
  (void)registered;
  return *c;
}
/// Destroys the default context (saving its pipeline cache).
inline void release_default_context() {
  std::lock_guard lock(detail::default_mutex());
  auto& c = detail::default_slot();
  if (c && c->lost()) c.release();
  c.reset();
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
