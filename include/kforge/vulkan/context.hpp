// kforge/vulkan/context.hpp — one device in use: its options, the choice of
// device, the logical device with the features kforge enables, its queue,
// memory pools, shader compiler and pipelines; and the process-wide default
// context. The instance and validation messages are in instance.hpp, device
// records in device.hpp, pipelines and their cache in pipelines.hpp.
//
// Device choice: an index or a case-insensitive name substring (options, else
// KFORGE_VK_DEVICE), else the best kind present: discrete > integrated >
// virtual > other > CPU (lavapipe is used only when nothing else exists, or
// when asked for by name/index/prefer_cpu).
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
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/input.hpp"
#include "kforge/vulkan/compiler.hpp"
#include "kforge/vulkan/device.hpp"
#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/handles.hpp"
#include "kforge/vulkan/instance.hpp"
#include "kforge/vulkan/memory.hpp"
#include "kforge/vulkan/pipelines.hpp"

namespace kforge::vulkan {

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
  /// Size of the device pool's blocks in MiB (a larger request gets a block of
  /// its own); 0: KFORGE_VK_BLOCK_MIB, else 64.
  std::uint32_t block_mib = 0;
  /// Capture the driver's statistics of every pipeline (registers, shared
  /// memory, spills... as VK_KHR_pipeline_executable_properties reports them;
  /// pipeline::statistics) where the device offers them; -1:
  /// KFORGE_VK_PIPELINE_STATS, 0 off, 1 on. For kernel developers.
  int pipeline_statistics = -1;
  /// false: create the device without 16-bit storage (storageBuffer16BitAccess,
  /// and the tensor-core kernels that need it), as on a device that lacks it:
  /// f16 tensors are refused and bf16 host data runs as f32 (device_dtype).
  /// For testing that fallback on any device.
  bool use_16bit_storage = true;
  /// How long stream::wait() polls the fence (yielding) before it sleeps in
  /// vkWaitForFences, in microseconds: a thread woken from sleep when the GPU
  /// finishes can take a tenth of a millisecond to run again (as CUDA, which
  /// spins by default, avoids). -1: KFORGE_VK_SPIN_US, else 20000 on a GPU and
  /// 0 on a CPU implementation (whose own threads the polling would slow).
  long long spin_us = -1;
};

namespace detail {
inline std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace detail

class context {
 public:
  /// Vulkan-Headers version that declares every extension a context may enable
  /// (VK_KHR_shader_bfloat16 came last, 1.4.311); an older validation layer
  /// turns the newer ones off (see pick_device).
  static constexpr std::uint32_t newest_extension_version = VK_MAKE_API_VERSION(0, 1, 4, 311);

  /// What the KFORGE_VK_* variables set where `o` leaves it to them, each
  /// checked against its range (core/input.hpp): env_var_error otherwise.
  static context_options with_env(context_options o) {
    if (o.validation < 0) o.validation = kforge::env_flag("KFORGE_VK_VALIDATION") ? 1 : 0;
    if (o.pipeline_statistics < 0) o.pipeline_statistics = kforge::env_flag("KFORGE_VK_PIPELINE_STATS") ? 1 : 0;
    if (o.timeout.count() < 0)
      o.timeout = std::chrono::milliseconds(
          static_cast<long long>(env_number("KFORGE_VK_TIMEOUT_MS", number_ranges::timeout_ms, 5000)));
    if (o.device_index < 0 && o.device_name.empty())
      if (const char* e = std::getenv("KFORGE_VK_DEVICE"); e && *e) {
        const std::string s = e;
        if (s.find_first_not_of("0123456789") == std::string::npos)
          o.device_index = static_cast<int>(env_number("KFORGE_VK_DEVICE", number_range{0, 65535, false, true}, 0));
        else o.device_name = s;
      }
    if (o.spin_us < 0 && std::getenv("KFORGE_VK_SPIN_US"))
      o.spin_us = static_cast<long long>(env_number("KFORGE_VK_SPIN_US", number_range{0, 1e7, false, true}, 0));
    if (o.block_mib == 0)
      o.block_mib = static_cast<std::uint32_t>(env_number("KFORGE_VK_BLOCK_MIB", number_range{1, 1 << 20, false, true}, 64));
    return o;
  }

  explicit context(context_options opt = {}) : opt_(with_env(std::move(opt))) {
    inst_ = std::make_unique<detail::instance_holder>(opt_.validation == 1);
    try {
      pick_device();
      if (opt_.spin_us < 0) opt_.spin_us = info_.type == "cpu" ? 0 : 20000;
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
    pipelines_.reset();
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
  /// How long a wait polls before it sleeps (context_options::spin_us).
  std::chrono::microseconds spin() const { return std::chrono::microseconds(opt_.spin_us); }
  void set_spin(std::chrono::microseconds s) { opt_.spin_us = s.count() < 0 ? 0 : s.count(); }
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
  pipeline_stats pipelines_stats() const { return pipelines_->stats(); }
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_fn() const { return push_desc_; }

  /// The pipeline of a shader variant with the given specialization values
  /// (one per kernel_interface::spec_ids entry, in that order). Compiles (or
  /// loads) SPIR-V and checks its interface the first time.
  const pipeline& get_pipeline(const shader_variant& v, const kernel_interface& iface,
                               const std::vector<std::uint32_t>& spec) {
    ensure_usable();
    return pipelines_->get(v, iface, spec);
  }

  /// Writes the VkPipelineCache to disk (also done by the destructor).
  void save_pipeline_cache() {
    if (pipelines_) pipelines_->save();
  }
  std::filesystem::path pipeline_cache_path() const { return pipelines_->cache_path(); }

 private:
  void pick_device() {
    const auto phys = inst_->physical_devices();
    if (phys.empty()) throw no_device("kforge::vulkan: no Vulkan physical device found");
    std::vector<device_info> infos;
    const bool newer = !inst_->validation || inst_->layer_version >= newest_extension_version;
    for (std::size_t i = 0; i < phys.size(); ++i)
      infos.push_back(detail::query_device(inst_->instance, phys[i], static_cast<int>(i), newer));
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
    if (!opt_.use_16bit_storage)
      info_.storage_16bit = info_.nv_coopmat_f16_16x16x16 = info_.nv_cooperative_matrix2 = false;
    // (A validation layer older than the tensor-core extensions cannot read their structures or the
    // SPIR-V that uses them — Debian 12's 1.3.239 rejects every such module — so under it the device
    // was queried without them: a context keeps to what the layer validates, the NV cooperative-matrix
    // and vector-unit kernels. The coopmat2 kernels are checked by spirv::check_module and,
    // numerically, by the suites without the layer.)
    if (info_.api_version < VK_API_VERSION_1_2)
      throw no_device("kforge::vulkan: device '" + info_.name + "' offers Vulkan " + detail::version_str(info_.api_version) +
                      "; kforge needs 1.2");
    if (!info_.push_descriptor)
      throw no_device("kforge::vulkan: device '" + info_.name + "' lacks VK_KHR_push_descriptor, which kforge needs");
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
    // feats -> f11 -> f12 -> [NV cooperative matrix] -> [1.3, KHR + NV2 cooperative matrix, bf16] -> [robustness2]
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
    // The workgroup-scope tensor-core kernels (vulkan/spirv/gemm_coopmat2.hpp): KHR and NV2 cooperative
    // matrices, LocalSizeId (maintenance4), the Vulkan memory model, and bf16 where the device has it.
    VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
    ext::coopmat_features_khr fkhr;
    ext::coopmat2_features_nv fcm2;
    ext::bfloat16_features_khr fbf;
    // kforge's own SPIR-V (vulkan/spirv/) uses the Vulkan memory model and sets its local size with LocalSizeId.
    f12.vulkanMemoryModel = info_.vulkan_memory_model;
    if (info_.maintenance4) {
      f13.maintenance4 = VK_TRUE;
      *tail = &f13, tail = &f13.pNext;
    }
    if (info_.nv_cooperative_matrix2) {
      fkhr.cooperativeMatrix = VK_TRUE;
      fcm2.cooperativeMatrixWorkgroupScope = fcm2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
      fcm2.cooperativeMatrixTensorAddressing = fcm2.cooperativeMatrixPerElementOperations = VK_TRUE;
      fcm2.cooperativeMatrixConversions = info_.coopmat2_conversions ? VK_TRUE : VK_FALSE;
      fcm2.cooperativeMatrixReductions = info_.coopmat2_reductions ? VK_TRUE : VK_FALSE;
      *tail = &fkhr, tail = &fkhr.pNext;
      *tail = &fcm2, tail = &fcm2.pNext;
      exts.push_back(ext::khr_cooperative_matrix);
      exts.push_back(ext::nv_cooperative_matrix2);
      if (info_.bf16_cooperative_matrix) {
        fbf.shaderBFloat16Type = fbf.shaderBFloat16CooperativeMatrix = VK_TRUE;
        *tail = &fbf, tail = &fbf.pNext;
        exts.push_back(ext::khr_shader_bfloat16);
      }
    }
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR fpe{
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
    const bool stats = opt_.pipeline_statistics > 0 && info_.pipeline_executable_info;
    if (stats) {
      fpe.pipelineExecutableInfo = VK_TRUE;
      *tail = &fpe, tail = &fpe.pNext;
      exts.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
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
    lim.block_size = VkDeviceSize{opt_.block_mib} << 20;
    lim.max_range = info_.max_storage_buffer_range;
    lim.alignment = std::max<VkDeviceSize>(info_.min_storage_offset_alignment, 16);
    device_pool_ = std::make_shared<memory_pool>(state_, phys_, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, lim, "device");
    lim.max_range = ~VkDeviceSize{0};
    lim.block_size = VkDeviceSize{64} << 20;  // host staging stays in small blocks
    staging_pool_ = std::make_shared<memory_pool>(
        state_, phys_, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        VK_MEMORY_PROPERTY_HOST_CACHED_BIT, lim, "staging");

    compiler_ = std::make_unique<shader_compiler>(opt_.cache_dir.empty() ? cache_dir() : std::filesystem::path(opt_.cache_dir));
    pipelines_ = std::make_unique<detail::pipeline_store>(state_, info_, robust_, robust2_, stats, *compiler_,
                                                          opt_.persist_pipeline_cache);
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
  std::unique_ptr<detail::pipeline_store> pipelines_;
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

}  // namespace kforge::vulkan
