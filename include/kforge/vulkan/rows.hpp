// kforge/vulkan/rows.hpp — the last-axis row ops on policy::vulkan: softmax,
// layer_norm and rms_norm (rows held in registers where they fit, else read twice).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/rows.hpp"

namespace kforge::vulkan {

namespace detail {
/// Four-vectors per invocation for the register-resident row kernels: the
/// power of two that holds a row of `cols`, or 0 when the row kernels that
/// read twice must be used (cols % 4 != 0, or more than 16 per invocation:
/// 64 floats of registers).
inline std::uint32_t row_regs(index_t cols, std::uint32_t wg) {
  if (cols % 4) return 0;
  const std::uint64_t need = (static_cast<std::uint64_t>(cols) / 4 + wg - 1) / wg;
  std::uint32_t r = 1;
  while (r < need) r *= 2;
  return r <= 16 ? r : 0;
}
}  // namespace detail

inline void record_softmax(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, buffer_ref x,
                           buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "softmax");
  const std::uint32_t r = row_regs(cols, wg);
  const auto v = r ? make_variant("softmax_rowreg", shaders::softmax_rowreg, dt, {{"KF_R", str(static_cast<int>(r))}})
                   : make_variant("softmax_online", shaders::softmax, dt, {});
  const auto& p = s.ctx().get_pipeline(v, {2, 8, {0}}, {wg});
  struct {
    std::uint32_t rows, cols;
  } pc{u32(rows, "rows"), u32(cols, "cols")};
  u32(rows * cols, "elements");
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(cols ? rows : 0)), "softmax");
}

/// layer_norm (beta given) or rms_norm (beta == nullptr) over the last axis.
inline void record_norm(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, float eps, buffer_ref x,
                        buffer_ref gamma, const buffer_ref* beta, buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "norm");
  const std::uint32_t r = row_regs(cols, wg);
  const std::string name = beta ? "layer_norm" : "rms_norm";
  const auto v = r ? make_variant(name + "_rowreg", shaders::norm_rowreg, dt,
                                  {{"KF_RMS", beta ? "0" : "1"}, {"KF_R", str(static_cast<int>(r))}})
                   : make_variant(name, shaders::norm, dt, {{"KF_RMS", beta ? "0" : "1"}});
  const auto& p = s.ctx().get_pipeline(v, {4, 12, {0}}, {wg});
  struct {
    std::uint32_t rows, cols;
    float eps;
  } pc{u32(rows, "rows"), u32(cols, "cols"), eps};
  u32(rows * cols, "elements");
  s.dispatch(p, {{x}, {gamma}, {beta ? *beta : gamma}, {y, true}}, &pc, sizeof pc,
             grid(static_cast<std::uint64_t>(cols ? rows : 0)), name);
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::softmax<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::softmax<T>>, op::softmax<T>, softmax_entry> {
  static void compute(const op::softmax<T>&, const rows_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.y);
    if (g.rows * g.cols != 0) vulkan::record_softmax(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.rows, g.cols, c.in(0), c.out());
    c.finish();
  }
};

// layer_norm and rms_norm: one kernel, beta present or not.
template <class... Knobs, class T, template <class> class Norm>
  requires vulkan::detail::vk_type<T> && (std::is_same_v<Norm<T>, op::layer_norm<T>> || std::is_same_v<Norm<T>, op::rms_norm<T>>)
struct impl<policy::vulkan<Knobs...>, Norm<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, Norm<T>>, Norm<T>, norm_entry> {
  static void compute(const Norm<T>& op, const norm_args<T>& g) {
    constexpr bool layer_norm = std::is_same_v<Norm<T>, op::layer_norm<T>>;
    vulkan::detail::call<T> c({&g.x, &g.gamma, layer_norm ? &g.beta : nullptr}, g.y);
    if (g.rows * g.cols != 0)
      vulkan::record_norm(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.rows, g.cols, op.epsilon, c.in(0), c.in(1),
                          c.in_opt(2), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
