// kforge/vulkan/elementwise.hpp — unary and binary ops on policy::vulkan
// (vec4 paths where sizes and layouts allow), and the backend's
// device-to-device copy.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/elementwise.hpp"

namespace kforge::vulkan {

inline void record_unary(stream& s, dtype dt, std::uint32_t wg, fn f, float slope, index_t n, buffer_ref x,
                         buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "unary");
  const bool vec = n % 4 == 0;
  const auto& v = make_variant("unary", shaders::unary, dt, {{"KF_FN", str(static_cast<int>(f))}, {"KF_VEC", vec ? "1" : "0"}});
  const auto& p = s.ctx().get_pipeline(v, {2, 8, {0}}, {wg});
  struct {
    std::uint32_t n;
    float slope;
  } pc{u32(vec ? n / 4 : n, "elements"), slope};
  const std::uint64_t per_group = vec ? 4ull * wg : wg;
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pc.n + per_group - 1) / per_group, 65535ull * 64)),
             std::string(to_string(f)));
}

/// Device-to-device copy of `bytes` bytes: a compute shader moving 16-byte
/// vectors where sizes and offsets allow (it reached 2.5-3x vkCmdCopyBuffer's
/// bandwidth on the H100, docs/bench), else vkCmdCopyBuffer. wg: workgroup
/// size; unroll: vectors per invocation per pass (1, 2, 4, 8 or 16);
/// max_groups: cap on the grid (a smaller grid loops more).
inline void record_copy(stream& s, buffer_ref src, buffer_ref dst, std::uint64_t bytes, std::uint32_t wg = 256,
                        std::uint32_t unroll = 4, std::uint64_t max_groups = 65535ull * 64) {
  using namespace detail;
  if (bytes % 16 || src.offset % 16 || dst.offset % 16 || bytes / 16 > 0xffffffffull) {
    s.copy(src, dst, bytes);
    return;
  }
  if (!bytes) return;
  check_wg(s.ctx(), wg, "copy");
  if (unroll == 0 || unroll > 16 || (unroll & (unroll - 1)))
    throw argument_error("kforge::vulkan::record_copy: unroll must be 1, 2, 4, 8 or 16, not " + std::to_string(unroll));
  const auto& v = make_variant("copy_vec4", shaders::copy_vec4, dtype::f32, {{"KF_U", str(static_cast<int>(unroll))}});
  const auto& p = s.ctx().get_pipeline(v, {2, 4, {0}}, {wg});
  const std::uint32_t n = static_cast<std::uint32_t>(bytes / 16);
  const std::uint64_t per_group = std::uint64_t{unroll} * wg;
  s.dispatch(p, {{buffer_ref{src.buffer, src.offset, bytes}}, {buffer_ref{dst.buffer, dst.offset, bytes}, true}}, &n, 4,
             grid(std::max<std::uint64_t>(1, std::min<std::uint64_t>((n + per_group - 1) / per_group, max_groups))),
             "copy " + std::to_string(bytes) + " B");
}

/// c = a∘b over `dims` (rank <= 6); sa/sb: element strides of a and b (0 where broadcast).
inline void record_binary(stream& s, dtype dt, std::uint32_t wg, binop f, const shape& dims, const shape& sa,
                          const shape& sb, buffer_ref a, buffer_ref b, buffer_ref c) {
  using namespace detail;
  check_wg(s.ctx(), wg, "binary");
  // Vector path: n % 4 == 0 and both operands dense with the output's layout.
  bool vec = dims.numel() % 4 == 0;
  index_t st = 1;
  for (int i = dims.rank() - 1; i >= 0; --i) {
    const index_t want = dims[i] == 1 ? 0 : st;
    if (sa[i] != want || sb[i] != want) vec = false;
    st *= dims[i];
  }
  const auto& v = make_variant("binary", shaders::binary, dt, {{"KF_OP", str(static_cast<int>(f))}, {"KF_VEC", vec ? "1" : "0"}});
  const auto& p = s.ctx().get_pipeline(v, {3, 80, {0}}, {wg});
  struct {
    std::uint32_t n, rank, dims[6], sa[6], sb[6];
  } pc{};
  pc.n = u32(dims.numel(), "elements");
  pc.rank = static_cast<std::uint32_t>(dims.rank());
  for (int i = 0; i < dims.rank(); ++i) {
    pc.dims[i] = u32(dims[i], "extent");
    pc.sa[i] = u32(sa[i], "stride");
    pc.sb[i] = u32(sb[i], "stride");
  }
  if (vec) pc.n /= 4;
  const std::uint64_t per_group = vec ? 4ull * wg : wg;
  s.dispatch(p, {{a}, {b}, {c, true}}, &pc, sizeof pc, grid(std::min<std::uint64_t>((pc.n + per_group - 1) / per_group, 65535ull * 64)),
             std::string(to_string(f)));
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T, fn F>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::unary<T, F>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::unary<T, F>>, op::unary<T, F>, unary_entry> {
  static void compute(const op::unary<T, F>& op, const unary_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.y);
    if (g.x.numel()) vulkan::record_unary(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, F, op.slope, g.x.numel(), c.in(0), c.out());
    c.finish();
  }
};

template <class... Knobs, class T, binop F>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::binary<T, F>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::binary<T, F>>, op::binary<T, F>, binary_entry> {
  // An operand re-viewed with the output's shape: its own extents are those
  // with a non-zero stride (1 where broadcast); on the device it is dense
  // over those extents.
  static tensor_view<const T> own(const tensor_view<const T>& v) {
    shape d = v.dims;
    for (int i = 0; i < d.rank(); ++i)
      if (v.stride(i) == 0) d[i] = 1;
    return tensor_view<const T>(v.data, d, v.strides);
  }
  static void compute(const op::binary<T, F>&, const binary_args<T>& g) {
    if (g.c.rank() > 6) throw unsupported_error("kforge::vulkan::binary: rank above 6");
    const tensor_view<const T> a = own(g.a), b = own(g.b);
    vulkan::detail::call<T> c({&a, &b}, g.c);
    if (g.c.numel())
      vulkan::record_binary(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, F, g.c.dims, vulkan::detail::dense_strides_of(a.dims),
                            vulkan::detail::dense_strides_of(b.dims), c.in(0), c.in(1), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
