// kforge/vulkan/pipelines.hpp — the compute pipelines of one device and the
// VkPipelineCache they are created through.
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

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kforge/vulkan/compiler.hpp"
#include "kforge/vulkan/device.hpp"
#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/handles.hpp"

namespace kforge::vulkan {

/// A compute pipeline and its layout, owned by the context.
struct pipeline {
  unique_handle<VkDescriptorSetLayout> set_layout;
  unique_handle<VkPipelineLayout> layout;
  unique_handle<VkPipeline> handle;
  std::uint32_t bindings = 0, push_bytes = 0;
  std::string name;
  /// The driver's statistics ("Register Count = 128, ..."), where the context
  /// captures them (context_options::pipeline_statistics); else empty.
  std::string statistics;
};

struct pipeline_stats {
  std::uint64_t created = 0;           // vkCreateComputePipelines calls
  std::uint64_t driver_cache_hits = 0; // creation feedback says the VkPipelineCache had it
  bool cache_loaded = false;           // a persisted VkPipelineCache was accepted
  bool cache_rejected = false;         // a persisted file existed but was for another device/driver
};

namespace detail {
/// The pipelines of one device and their VkPipelineCache; a context owns one.
/// It refers to the context's compiler, which must outlive it.
class pipeline_store {
 public:
  /// Loads the persisted cache (when `persist`) and creates the VkPipelineCache;
  /// `robust`/`robust2` are the robustness the device was created with.
  pipeline_store(std::shared_ptr<device_state> state, const device_info& info, bool robust, bool robust2,
                 bool statistics, shader_compiler& compiler, bool persist)
      : state_(std::move(state)),
        statistics_(statistics),
        compiler_(compiler),
        persist_(persist),
        creation_feedback_(info.api_version >= VK_API_VERSION_1_3),
        header_(cache_header(info, robust, robust2)) {
    std::vector<char> blob;
    if (persist_) {
      std::vector<char> file = read_file(cache_path());
      if (!file.empty()) {
        if (file.size() > header_.size() && std::memcmp(file.data(), header_.data(), header_.size()) == 0 &&
            valid_vulkan_header(info, file.data() + header_.size(), file.size() - header_.size())) {
          blob.assign(file.begin() + static_cast<std::ptrdiff_t>(header_.size()), file.end());
          stats_.cache_loaded = true;
        } else {
          stats_.cache_rejected = true;
        }
      }
    }
    VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    pci.initialDataSize = blob.size();
    pci.pInitialData = blob.empty() ? nullptr : blob.data();
    VkPipelineCache pc;
    check(vkCreatePipelineCache(state_->device, &pci, nullptr, &pc), "vkCreatePipelineCache");
    cache_ = device_owned(state_, pc, vkDestroyPipelineCache);
  }
  pipeline_store(const pipeline_store&) = delete;
  pipeline_store& operator=(const pipeline_store&) = delete;

  /// See context::get_pipeline.
  const pipeline& get(const shader_variant& v, const kernel_interface& iface, const std::vector<std::uint32_t>& spec) {
    std::string key = shader_compiler::cache_key(v);
    for (auto s : spec) (key += ':') += std::to_string(s);
    std::lock_guard lock(mu_);
    if (auto it = pipelines_.find(key); it != pipelines_.end()) return *it->second;
    if (spec.size() != iface.spec_ids.size())
      throw interface_error("kforge::vulkan: shader '" + v.name + "' given " + std::to_string(spec.size()) +
                            " specialization values for " + std::to_string(iface.spec_ids.size()) + " ids");
    const std::vector<std::uint32_t> code = compiler_.spirv(v);
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
    if (statistics_) ci.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
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
    if (creation_feedback_) ci.pNext = &fci;  // core in 1.3: needs no extension
    VkPipeline pipe;
    check(vkCreateComputePipelines(dev, cache_.get(), 1, &ci, nullptr, &pipe), "vkCreateComputePipelines");
    p->handle = device_owned(state_, pipe, vkDestroyPipeline);
    if (statistics_) p->statistics = read_statistics(pipe);
    ++stats_.created;
    if ((fb.flags & VK_PIPELINE_CREATION_FEEDBACK_VALID_BIT) &&
        (fb.flags & VK_PIPELINE_CREATION_FEEDBACK_APPLICATION_PIPELINE_CACHE_HIT_BIT))
      ++stats_.driver_cache_hits;
    return *pipelines_.emplace(key, std::move(p)).first->second;
  }

  pipeline_stats stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

  /// Writes the VkPipelineCache to cache_path(), behind our header.
  void save() {
    if (!persist_ || state_->lost.load()) return;
    std::size_t n = 0;
    check(vkGetPipelineCacheData(state_->device, cache_.get(), &n, nullptr), "vkGetPipelineCacheData");
    std::vector<char> data(n);
    check(vkGetPipelineCacheData(state_->device, cache_.get(), &n, data.data()), "vkGetPipelineCacheData");
    data.resize(n);
    std::string file = header_;
    file.append(data.data(), data.size());
    write_atomic(cache_path(), file.data(), file.size());
  }
  std::filesystem::path cache_path() const {
    return compiler_.directory() / "pipeline" / (hex64(fnv1a(header_)) + ".bin");
  }

 private:
  // Our prefix: magic, then the identity a cache is valid for. Robustness
  // changes the code a driver generates (bounds checks); drivers key their
  // cache entries by it, but a robust context (a sandbox) and a plain one
  // still keep separate files: neither overwrites the other's at exit, and a
  // driver that forgot the robustness state in its key could not hand a
  // pipeline compiled without bounds checks to a context that asked for them.
  // A plain context's header is unchanged, so its existing files stay valid.
  static std::string cache_header(const device_info& info, bool robust, bool robust2) {
    std::string h = "KFPC1";
    auto add = [&](const void* p, std::size_t n) { h.append(static_cast<const char*>(p), n); };
    add(&info.vendor_id, 4);
    add(&info.device_id, 4);
    add(&info.driver_version, 4);
    add(info.pipeline_cache_uuid.data(), VK_UUID_SIZE);
    add(info.device_uuid.data(), VK_UUID_SIZE);
    if (robust) h += robust2 ? "robust2" : "robust1";
    return h;
  }

  // The driver's own header (VkPipelineCacheHeaderVersionOne) must name this device too.
  static bool valid_vulkan_header(const device_info& info, const char* p, std::size_t n) {
    if (n < 32) return false;
    std::uint32_t len, ver, vendor, dev;
    std::memcpy(&len, p, 4);
    std::memcpy(&ver, p + 4, 4);
    std::memcpy(&vendor, p + 8, 4);
    std::memcpy(&dev, p + 12, 4);
    return len >= 32 && ver == VK_PIPELINE_CACHE_HEADER_VERSION_ONE && vendor == info.vendor_id &&
           dev == info.device_id && std::memcmp(p + 16, info.pipeline_cache_uuid.data(), VK_UUID_SIZE) == 0;
  }

  // "name = value, ..." of the pipeline's first executable (compute pipelines have one).
  std::string read_statistics(VkPipeline pipe) const {
    const VkDevice dev = state_->device;
    auto props = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
        vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR"));
    auto stats = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
        vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));
    if (!props || !stats) return {};
    VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
    pi.pipeline = pipe;
    std::uint32_t n = 0;
    if (props(dev, &pi, &n, nullptr) != VK_SUCCESS || n == 0) return {};
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipe;
    ei.executableIndex = 0;
    std::uint32_t m = 0;
    if (stats(dev, &ei, &m, nullptr) != VK_SUCCESS) return {};
    std::vector<VkPipelineExecutableStatisticKHR> v(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    if (stats(dev, &ei, &m, v.data()) != VK_SUCCESS) return {};
    std::string out;
    for (const auto& st : v) {
      out += (out.empty() ? "" : ", ") + std::string(st.name) + " = ";
      switch (st.format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: out += st.value.b32 ? "true" : "false"; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: out += std::to_string(st.value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: out += std::to_string(st.value.u64); break;
        default: out += std::to_string(st.value.f64); break;
      }
    }
    return out;
  }

  std::shared_ptr<device_state> state_;
  bool statistics_;
  shader_compiler& compiler_;
  bool persist_;
  bool creation_feedback_;  // the device offers Vulkan 1.3
  std::string header_;
  unique_handle<VkPipelineCache> cache_;  // declared before pipelines_: destroyed after them
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<pipeline>> pipelines_;
  pipeline_stats stats_;
};
}  // namespace detail

}  // namespace kforge::vulkan
