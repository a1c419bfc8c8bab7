// kforge/vulkan/handles.hpp — one RAII style for every Vulkan object: a
// move-only owner of a handle and the function that destroys it.
//
// Objects that belong to a VkDevice hold a shared device_state. When the
// device is lost (or a wait timed out while work may still be running), the
// state is marked and the destructors leak their objects on purpose:
// destroying a fence, buffer or pipeline the GPU may still use is undefined
// behaviour and vkDeviceWaitIdle could block forever.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <vulkan/vulkan.h>

#include <atomic>
#include <functional>
#include <memory>
#include <utility>

namespace kforge::vulkan {

/// The logical device and whether it has been abandoned.
struct device_state {
  VkDevice device = VK_NULL_HANDLE;
  std::atomic<bool> lost{false};
};

/// Move-only owner of one Vulkan handle.
template <class H>
class unique_handle {
 public:
  unique_handle() = default;
  unique_handle(H h, std::function<void(H)> destroy) : h_(h), destroy_(std::move(destroy)) {}
  unique_handle(const unique_handle&) = delete;
  unique_handle& operator=(const unique_handle&) = delete;
  unique_handle(unique_handle&& o) noexcept : h_(std::exchange(o.h_, H{})), destroy_(std::move(o.destroy_)) {}
  unique_handle& operator=(unique_handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, H{});
      destroy_ = std::move(o.destroy_);
    }
    return *this;
  }
  ~unique_handle() { reset(); }
  H get() const { return h_; }
  explicit operator bool() const { return h_ != H{}; }
  void reset() {
    if (h_ != H{} && destroy_) destroy_(h_);
    h_ = H{};
  }

 private:
  H h_{};
  std::function<void(H)> destroy_;
};

/// Wraps a device-owned handle: destroyed with `fn` unless the device is lost.
template <class H, class Fn>
unique_handle<H> device_owned(const std::shared_ptr<device_state>& st, H h, Fn fn) {
  return unique_handle<H>(h, [st, fn](H x) {
    if (!st->lost.load()) fn(st->device, x, nullptr);
  });
}

}  // namespace kforge::vulkan
