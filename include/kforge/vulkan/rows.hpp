// kforge/vulkan/rows.hpp — the last-axis row ops on policy::vulkan: softmax,
// layer_norm and rms_norm, by row length: one subgroup per row up to 32
// values per lane (short rows: 64..1024 columns on a 32-wide subgroup), one
// workgroup per register-resident row (up to 16 four-vectors per invocation),
// else rows read twice (softmax: split into chunks when there are few rows).
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

/// Values per lane of rows_subgroup for rows of `cols` (a power of two up to
/// 32), or 0 when it does not apply: the subgroup size must be fixed (the
/// kernel's registers are sized for it) and a row must fit 32 per lane.
inline std::uint32_t subgroup_regs(const device_info& d, index_t cols) {
  if (d.min_subgroup_size != d.max_subgroup_size || d.subgroup_size == 0) return 0;
  const std::uint64_t need = (static_cast<std::uint64_t>(cols) + d.subgroup_size - 1) / d.subgroup_size;
  std::uint32_t r = 1;
  while (r < need) r *= 2;
  return r <= 32 ? r : 0;
}

// Rows below this count get split into chunks by softmax_long: fewer rows
// than ~2 per multiprocessor of a large GPU (the H100 has 132) would leave
// most of it idle for the length of one row.
inline constexpr index_t split_rows_below = 264;
// Columns per chunk of a split row: 8 loads per invocation of a 1024-wide workgroup.
inline constexpr index_t split_chunk = 8192;

/// The row kernels' workgroup size: the policy's wg knob where given (wg > 0),
/// else 256 (one subgroup per row takes 8 rows of up to 1024 columns per
/// workgroup; a register-resident row of 4096 floats is 4 four-vectors per
/// invocation), and 1024 for rows read twice (more loads in flight per row),
/// within the device's limit.
inline std::uint32_t row_wg(const context& ctx, std::uint32_t wg, bool read_twice) {
  return wg ? wg : std::min<std::uint32_t>(read_twice ? 1024 : 256, ctx.info().max_workgroup_invocations);
}
}  // namespace detail

/// softmax over the last axis of dense [rows, cols]; wg 0 = the kernel's own choice.
inline void record_softmax(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, buffer_ref x,
                           buffer_ref y) {
  using namespace detail;
  if (rows * cols == 0) return;
  context& ctx = s.ctx();
  u32(rows * cols, "elements");
  struct {
    std::uint32_t rows, cols;
  } pc{u32(rows, "rows"), u32(cols, "cols")};
  const std::uint32_t g = row_wg(ctx, wg, false);
  check_wg(ctx, g, "softmax");
  if (const std::uint32_t r = g % ctx.info().subgroup_size ? 0 : subgroup_regs(ctx.info(), cols)) {
    const auto& p = ctx.get_pipeline(make_variant("softmax_subgroup", shaders::rows_subgroup, dt,
                                                  {{"KF_KIND", "0"}, {"KF_R", str(static_cast<int>(r))}}),
                                     {2, 8, {0}}, {g});
    const std::uint64_t per_group = std::max<std::uint32_t>(1, g / ctx.info().subgroup_size);
    s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid((static_cast<std::uint64_t>(rows) + per_group - 1) / per_group),
               "softmax");
    return;
  }
  if (const std::uint32_t r = row_regs(cols, g)) {
    const auto& p = ctx.get_pipeline(make_variant("softmax_rowreg", shaders::softmax_rowreg, dt, {{"KF_R", str(static_cast<int>(r))}}),
                                     {2, 8, {0}}, {g});
    s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(rows)), "softmax");
    return;
  }
  const std::uint32_t gl = row_wg(ctx, wg, true);
  check_wg(ctx, gl, "softmax");
  const bool split = rows < split_rows_below && cols > split_chunk;
  struct {
    std::uint32_t rows, cols, chunk, chunks;
  } lp{pc.rows, pc.cols, split ? static_cast<std::uint32_t>(split_chunk) : pc.cols,
       split ? static_cast<std::uint32_t>((cols + split_chunk - 1) / split_chunk) : 1u};
  const std::uint64_t groups = static_cast<std::uint64_t>(rows) * lp.chunks;
  auto pipe = [&](int pass, std::uint32_t bindings) -> const pipeline& {
    return ctx.get_pipeline(make_variant("softmax_long", shaders::softmax_long, dt, {{"KF_PASS", str(pass)}}),
                            {bindings, sizeof lp, {0}}, {gl});
  };
  if (!split) {
    s.dispatch(pipe(0, 2), {{x}, {y, true}}, &lp, sizeof lp, grid(groups), "softmax");
    return;
  }
  const buffer_ref part = s.keep(ctx.device_memory().allocate(groups * 8)).ref();
  s.dispatch(pipe(1, 2), {{x}, {part, true}}, &lp, sizeof lp, grid(groups), "softmax (chunk statistics)");
  s.dispatch(pipe(2, 3), {{x}, {part}, {y, true}}, &lp, sizeof lp, grid(groups), "softmax");
}

/// layer_norm (beta given) or rms_norm (beta == nullptr) over the last axis; wg 0 = the kernel's own choice.
inline void record_norm(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t cols, float eps, buffer_ref x,
                        buffer_ref gamma, const buffer_ref* beta, buffer_ref y) {
  using namespace detail;
  if (rows * cols == 0) return;
  context& ctx = s.ctx();
  u32(rows * cols, "elements");
  const std::string name = beta ? "layer_norm" : "rms_norm";
  struct {
    std::uint32_t rows, cols;
    float eps;
  } pc{u32(rows, "rows"), u32(cols, "cols"), eps};
  const std::vector<binding> bufs{{x}, {gamma}, {beta ? *beta : gamma}, {y, true}};
  const std::uint32_t g = row_wg(ctx, wg, false);
  check_wg(ctx, g, name);
  if (const std::uint32_t r = g % ctx.info().subgroup_size ? 0 : subgroup_regs(ctx.info(), cols)) {
    const auto& p = ctx.get_pipeline(make_variant(name + "_subgroup", shaders::rows_subgroup, dt,
                                                  {{"KF_KIND", beta ? "1" : "2"}, {"KF_R", str(static_cast<int>(r))}}),
                                     {4, 12, {0}}, {g});
    const std::uint64_t per_group = std::max<std::uint32_t>(1, g / ctx.info().subgroup_size);
    s.dispatch(p, bufs, &pc, sizeof pc, grid((static_cast<std::uint64_t>(rows) + per_group - 1) / per_group), name);
    return;
  }
  const std::uint32_t r = row_regs(cols, g);
  const auto& v = r ? make_variant(name + "_rowreg", shaders::norm_rowreg, dt,
                                   {{"KF_RMS", beta ? "0" : "1"}, {"KF_R", str(static_cast<int>(r))}})
                    : make_variant(name, shaders::norm, dt, {{"KF_RMS", beta ? "0" : "1"}});
  s.dispatch(ctx.get_pipeline(v, {4, 12, {0}}, {g}), bufs, &pc, sizeof pc, grid(static_cast<std::uint64_t>(rows)), name);
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::softmax<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::softmax<T>>, op::softmax<T>, softmax_entry> {
  static void compute(const op::softmax<T>&, const rows_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.y);
    if (g.rows * g.cols != 0) vulkan::record_softmax(c.s(), c.dt, vulkan::knobs<Knobs...>::rows_wg, g.rows, g.cols, c.in(0), c.out());
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
      vulkan::record_norm(c.s(), c.dt, vulkan::knobs<Knobs...>::rows_wg, g.rows, g.cols, op.epsilon, c.in(0), c.in(1),
                          c.in_opt(2), c.out());
    c.finish();
  }
};

}  // namespace kforge::detail
