// kforge/vulkan/tensor.hpp — device_tensor, the owning GPU tensor that stays
// on the device across ops, and the host packing used by uploads/downloads.
//
// A device_tensor is dense row-major, float, half or bfloat16 (the 16-bit
// types need storageBuffer16BitAccess), or std::int32_t (the ids and indices
// of embedding and topk). Moving data between host and device is always
// explicit (upload/download, or the host-view overloads of run(), which
// upload, run and download in one submission). Host views of any strides are
// packed to dense row-major while being copied into staging memory, converted
// to the tensor's element type there (a view of the same type is copied bit
// for bit). On a device without 16-bit storage, host bfloat16 data given to
// run() is widened to f32 instead (device_dtype) and rounded back on download.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kforge/core/tensor.hpp"
#include "kforge/eigen/common.hpp"
#include "kforge/vulkan/stream.hpp"

namespace kforge::vulkan {

/// The element type a host type T is stored as on the device: float, half,
/// bfloat16 and std::int32_t as they are, anything else as float (where the
/// device lacks 16-bit storage, host-view calls on bfloat16 data widen it to
/// float instead: device_dtype).
template <class T>
using device_type_t = std::conditional_t<std::is_same_v<std::remove_const_t<T>, half> ||
                                             std::is_same_v<std::remove_const_t<T>, bfloat16> ||
                                             std::is_same_v<std::remove_const_t<T>, std::int32_t>,
                                         std::remove_const_t<T>, float>;

/// The storage dtype of host data of dtype t on device d: t itself, except
/// bf16 on a device without storageBuffer16BitAccess, which is computed as f32
/// (widened on upload, rounded back to bf16 on download). f16 has no such
/// fallback: it needs 16-bit storage (unsupported_error where it is missing).
inline dtype device_dtype(const device_info& d, dtype t) {
  return t == dtype::bf16 && !d.storage_16bit ? dtype::f32 : t;
}

namespace detail {
template <class M>
inline constexpr bool is_view_v = false;
template <class U>
inline constexpr bool is_view_v<tensor_view<U>> = true;
/// Host objects (Eigen, spans, vectors) that convert to a view.
template <class M>
concept host_viewable = !is_view_v<std::remove_cvref_t<M>> && requires(M&& m) { as_view(std::forward<M>(m)); };

/// One element as type D: a plain copy between equal types (integers stay
/// exact), through float between the float types.
template <class D, class S>
D convert(S v) {
  if constexpr (std::is_same_v<std::remove_const_t<S>, D>) return v;
  else return static_cast<D>(static_cast<float>(v));
}

/// Copies a view of any strides into dense row-major D elements.
template <class D, class T>
void pack(const tensor_view<T>& v, D* dst) {
  if constexpr (std::is_same_v<std::remove_const_t<T>, D>) {
    if (v.is_contiguous()) {
      if (v.numel()) std::memcpy(dst, v.data, static_cast<std::size_t>(v.numel()) * sizeof(D));
      return;
    }
  }
  eigen::for_each_offset(v.dims, v.strides, [&](index_t e, index_t off) { dst[e] = convert<D>(v.data[off]); });
}
/// Copies dense row-major D elements into a view of any strides.
template <class D, class T>
void unpack(const D* src, const tensor_view<T>& v) {
  if constexpr (std::is_same_v<T, D>) {
    if (v.is_contiguous()) {
      if (v.numel()) std::memcpy(v.data, src, static_cast<std::size_t>(v.numel()) * sizeof(D));
      return;
    }
  }
  eigen::for_each_offset(v.dims, v.strides, [&](index_t e, index_t off) { v.data[off] = convert<T>(src[e]); });
}
}  // namespace detail

template <class T>
class device_tensor {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16> ||
                    std::is_same_v<T, std::int32_t>,
                "kforge::vulkan::device_tensor: element type must be float, kforge::half, kforge::bfloat16 or "
                "std::int32_t");

 public:
  using value_type = T;

  device_tensor() = default;
  device_tensor(context& ctx, kforge::shape dims) : ctx_(&ctx), dims_(dims) {
    if (sizeof(T) == 2 && !ctx.info().storage_16bit)
      throw unsupported_error("kforge::vulkan: device '" + ctx.info().name + "' lacks storageBuffer16BitAccess, so " +
                              std::string(to_string(dtype_of<T>())) + " tensors are unsupported there" +
                              (std::is_same_v<T, bfloat16> ? " (host bf16 data given to run() is computed as f32 on it; "
                                                             "device_tensor<float> holds such data)"
                                                           : ""));
    mem_ = ctx.device_memory().allocate(bytes() ? bytes() : sizeof(T));
  }
  /// A tensor holding a copy of host data (any strides), uploaded now.
  template <class U>
  static device_tensor from_host(context& ctx, const tensor_view<U>& v) {
    device_tensor t(ctx, v.dims);
    t.upload(v);
    return t;
  }
  template <detail::host_viewable M>
  static device_tensor from_host(context& ctx, M&& m) {
    return from_host(ctx, as_view(std::forward<M>(m)));
  }

  /// Synchronous upload of a host view with this tensor's shape.
  template <class U>
  void upload(const tensor_view<U>& v) {
    expect_shape("vulkan::device_tensor::upload", "source", dims_, v.dims);
    stream s(*ctx_);
    record_upload(s, v);
    s.run();
  }
  template <detail::host_viewable M>
  void upload(M&& m) {
    upload(as_view(std::forward<M>(m)));
  }
  /// Synchronous download into a host view with this tensor's shape.
  template <class U>
  void download(const tensor_view<U>& v) const {
    expect_shape("vulkan::device_tensor::download", "destination", dims_, v.dims);
    stream s(*ctx_);
    const void* p = record_download(s);
    s.run();
    detail::unpack(static_cast<const T*>(p), v);
  }
  template <detail::host_viewable M>
  void download(M&& m) const {
    download(as_view(std::forward<M>(m)));
  }
  std::vector<T> to_vector() const {
    std::vector<T> out(static_cast<std::size_t>(numel()));
    download(tensor_view<T>(out.data(), dims_));
    return out;
  }

  /// Records an upload into stream s (the host data is copied to staging now).
  template <class U>
  void record_upload(stream& s, const tensor_view<U>& v) const {
    if (!bytes()) return;
    auto& st = s.staging(bytes());
    detail::pack(v, static_cast<T*>(st.mapped()));
    s.copy(st.ref(), ref(), bytes());
  }
  /// Records a download; the returned pointer holds the data after s.wait().
  const void* record_download(stream& s) const {
    if (!bytes()) return nullptr;
    auto& st = s.staging(bytes());
    s.copy(ref(), st.ref(), bytes());
    return st.mapped();
  }

  const kforge::shape& dims() const { return dims_; }
  index_t numel() const { return dims_.numel(); }
  int rank() const { return dims_.rank(); }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * sizeof(T); }
  /// The slice a dispatch binds (exactly the tensor's bytes, at least one element).
  buffer_ref ref() const {
    buffer_ref r = mem_.ref();
    r.size = bytes() ? bytes() : sizeof(T);
    return r;
  }
  context& ctx() const { return *ctx_; }
  /// The same storage seen with another shape of equal element count.
  void reshape(kforge::shape s) {
    if (s.numel() != numel())
      throw shape_error("kforge::vulkan::device_tensor::reshape: cannot view " + dims_.str() + " as " + s.str());
    dims_ = s;
  }

 private:
  context* ctx_ = nullptr;
  buffer_slice mem_;
  kforge::shape dims_;
};

}  // namespace kforge::vulkan
