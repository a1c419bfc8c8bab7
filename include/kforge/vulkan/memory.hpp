// kforge/vulkan/memory.hpp — sub-allocation of buffers from large blocks.
//
// A memory_pool owns blocks of one memory kind (device-local for tensors,
// host-visible for staging). Each block is one VkDeviceMemory bound to one
// VkBuffer; a tensor is a slice (offset, size) of a block's buffer, so a
// chain of ops allocates nothing per call once the pool has grown. Free
// ranges are kept per block, first fit, coalesced on release.
//
// Block size: 64 MiB, or the request itself when it is larger. A request is
// refused with out_of_memory naming the sizes when it exceeds the device's
// maxStorageBufferRange (a slice is bound as one storage buffer) or the heap.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/handles.hpp"

namespace kforge::vulkan {

class memory_pool;

/// One slice of a pool block: where a tensor or staging area lives.
struct buffer_ref {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
};

/// Move-only owner of a slice; returns it to its pool on destruction.
class buffer_slice {
 public:
  buffer_slice() = default;
  buffer_slice(std::shared_ptr<memory_pool> pool, std::size_t block, buffer_ref ref, void* mapped)
      : pool_(std::move(pool)), block_(block), ref_(ref), mapped_(mapped) {}
  buffer_slice(const buffer_slice&) = delete;
  buffer_slice& operator=(const buffer_slice&) = delete;
  buffer_slice(buffer_slice&& o) noexcept { *this = std::move(o); }
  buffer_slice& operator=(buffer_slice&& o) noexcept;
  ~buffer_slice() { release(); }

  const buffer_ref& ref() const { return ref_; }
  /// Host pointer for host-visible pools, nullptr otherwise.
  void* mapped() const { return mapped_; }
  explicit operator bool() const { return pool_ != nullptr; }
  void release();

 private:
  std::shared_ptr<memory_pool> pool_;
  std::size_t block_ = 0;
  buffer_ref ref_;
  void* mapped_ = nullptr;
};

/// Counters a test or benchmark can read.
struct pool_stats {
  std::size_t blocks = 0;
  std::uint64_t block_bytes = 0;
  std::uint64_t live_bytes = 0;
  std::uint64_t allocations = 0;
};

class memory_pool : public std::enable_shared_from_this<memory_pool> {
 public:
  struct limits {
    VkDeviceSize max_range = 0;   // maxStorageBufferRange
    VkDeviceSize alignment = 16;  // minStorageBufferOffsetAlignment (at least 16)
    VkDeviceSize block_size = VkDeviceSize{64} << 20;
  };

  memory_pool(std::shared_ptr<device_state> st, VkPhysicalDevice phys, VkMemoryPropertyFlags required,
              VkMemoryPropertyFlags preferred, limits lim, std::string name)
      : st_(std::move(st)), phys_(phys), required_(required), preferred_(preferred), lim_(lim), name_(std::move(name)) {
    vkGetPhysicalDeviceMemoryProperties(phys_, &mem_);
    VkPhysicalDeviceProperties pr{};
    vkGetPhysicalDeviceProperties(phys_, &pr);
    dedicated_ = pr.apiVersion >= VK_API_VERSION_1_1;
  }

  buffer_slice allocate(VkDeviceSize bytes) {
    const VkDeviceSize a = std::max<VkDeviceSize>(lim_.alignment, 16);
    const VkDeviceSize size = std::max<VkDeviceSize>(a, (bytes + a - 1) / a * a);
    if (bytes > lim_.max_range)
      throw out_of_memory("kforge::vulkan: " + name_ + " allocation of " + std::to_string(bytes) +
                          " bytes exceeds the device's maxStorageBufferRange of " + std::to_string(lim_.max_range) +
                          " bytes");
    std::lock_guard lock(mu_);
    for (std::size_t b = 0; b < blocks_.size(); ++b)
      if (auto off = take(blocks_[b], size)) return make_slice(b, *off, size);
    const VkDeviceSize block_bytes = std::max(lim_.block_size, size);
    add_block(block_bytes, bytes);
    auto off = take(blocks_.back(), size);
    return make_slice(blocks_.size() - 1, *off, size);
  }

  pool_stats stats() const {
    std::lock_guard lock(mu_);
    pool_stats s;
    s.blocks = blocks_.size();
    for (const auto& b : blocks_) s.block_bytes += b.size;
    s.live_bytes = live_;
    s.allocations = allocations_;
    return s;
  }

  void free(std::size_t block, VkDeviceSize offset, VkDeviceSize size) {
    std::lock_guard lock(mu_);
    auto& fr = blocks_[block].free;
    auto it = fr.emplace(offset, size).first;
    if (auto next = std::next(it); next != fr.end() && it->first + it->second == next->first) {
      it->second += next->second;
      fr.erase(next);
    }
    if (it != fr.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        fr.erase(it);
      }
    }
    live_ -= size;
  }

 private:
  struct block {
    unique_handle<VkBuffer> buffer;
    unique_handle<VkDeviceMemory> memory;
    VkDeviceSize size = 0;
    void* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size
  };

  static std::optional<VkDeviceSize> take(block& b, VkDeviceSize size) {
    for (auto it = b.free.begin(); it != b.free.end(); ++it) {
      if (it->second < size) continue;
      const VkDeviceSize off = it->first, rest = it->second - size;
      b.free.erase(it);
      if (rest) b.free.emplace(off + size, rest);
      return off;
    }
    return std::nullopt;
  }

  buffer_slice make_slice(std::size_t b, VkDeviceSize off, VkDeviceSize size) {
    live_ += size;
    ++allocations_;
    void* p = blocks_[b].mapped ? static_cast<char*>(blocks_[b].mapped) + off : nullptr;
    return buffer_slice(shared_from_this(), b, buffer_ref{blocks_[b].buffer.get(), off, size}, p);
  }

  void add_block(VkDeviceSize bytes, VkDeviceSize requested) {
    const VkDevice dev = st_->device;
    VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    bi.size = bytes;
    bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buf = VK_NULL_HANDLE;
    check(vkCreateBuffer(dev, &bi, nullptr, &buf), "vkCreateBuffer");
    block b;
    b.buffer = device_owned(st_, buf, vkDestroyBuffer);
    b.size = bytes;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, buf, &req);
    const int type = pick_type(req.memoryTypeBits);
    const VkDeviceSize heap = mem_.memoryHeaps[mem_.memoryTypes[type].heapIndex].size;
    if (req.size > heap)
      throw out_of_memory("kforge::vulkan: " + name_ + " allocation of " + std::to_string(requested) +
                          " bytes (block of " + std::to_string(req.size) + ") exceeds the memory heap of " +
                          std::to_string(heap) + " bytes");
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    // Each block is one buffer's memory: say so (Vulkan 1.1), which lets the
    // driver place it as a dedicated allocation.
    VkMemoryDedicatedAllocateInfo dedicated{VK_STRUCTURE_TYPE_MEMORY_DEDICATED_ALLOCATE_INFO};
    dedicated.buffer = buf;
    if (dedicated_) ai.pNext = &dedicated;
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = static_cast<std::uint32_t>(type);
    VkDeviceMemory mem = VK_NULL_HANDLE;
    const VkResult r = vkAllocateMemory(dev, &ai, nullptr, &mem);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
      throw out_of_memory("kforge::vulkan: " + name_ + " block of " + std::to_string(req.size) + " bytes (for a request of " +
                          std::to_string(requested) + " bytes) could not be allocated: " + result_name(r) + "; " +
                          std::to_string(live_) + " bytes live in " + std::to_string(blocks_.size()) + " blocks");
    check(r, "vkAllocateMemory");
    b.memory = device_owned(st_, mem, vkFreeMemory);
    check(vkBindBufferMemory(dev, buf, mem, 0), "vkBindBufferMemory");
    if (mem_.memoryTypes[type].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      check(vkMapMemory(dev, mem, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    b.free.emplace(0, bytes);
    blocks_.push_back(std::move(b));
  }

  int pick_type(std::uint32_t bits) const {
    for (VkMemoryPropertyFlags want : {required_ | preferred_, required_})
      for (std::uint32_t i = 0; i < mem_.memoryTypeCount; ++i)
        if ((bits & (1u << i)) && (mem_.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
    throw out_of_memory("kforge::vulkan: no memory type for the " + name_ + " pool");
  }

  std::shared_ptr<device_state> st_;
  VkPhysicalDevice phys_;
  VkMemoryPropertyFlags required_, preferred_;
  limits lim_;
  std::string name_;
  VkPhysicalDeviceMemoryProperties mem_{};
  bool dedicated_ = false;
  mutable std::mutex mu_;
  std::vector<block> blocks_;
  std::uint64_t live_ = 0, allocations_ = 0;
};

inline buffer_slice& buffer_slice::operator=(buffer_slice&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = std::move(o.pool_);
    block_ = o.block_;
    ref_ = std::exchange(o.ref_, buffer_ref{});
    mapped_ = std::exchange(o.mapped_, nullptr);
  }
  return *this;
}
inline void buffer_slice::release() {
  if (pool_) pool_->free(block_, ref_.offset, ref_.size);
  pool_.reset();
  ref_ = {};
  mapped_ = nullptr;
}

}  // namespace kforge::vulkan
