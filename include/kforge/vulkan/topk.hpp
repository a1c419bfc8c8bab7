// kforge/vulkan/topk.hpp — topk and argmax on policy::vulkan
// (shaders/topk.hpp: one workgroup per row, per-invocation candidate lists
// merged by selection). Few long rows — the sampling case: one row of a
// 32k–128k vocabulary, a few rows, k <= 64 — are split into chunks across
// workgroups and merged by a second pass. k beyond 64 runs rounds of 64
// picks, each walking the row again; on lavapipe, whose loop limiter stops a
// shader invocation after 65535 loop iterations, problems that would need more
// (k near N on rows of tens of thousands) are refused with unsupported_error.
// Not yet timed on a GPU: the lavapipe figures say nothing about one.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/rows.hpp"
#include "kforge/vulkan/shaders/topk.hpp"

namespace kforge::vulkan {

namespace detail {
// Elements per workgroup of the split pass: 16 per invocation of 256, so a
// 128k row spreads over 32 workgroups and the merge pass reads 32·k
// candidates. Rows are split when shorter splits would leave the device idle
// (fewer rows than split_rows_below, rows.hpp) and k <= 64 (the merge reads
// chunks·k candidates: for larger k the split saves nothing).
inline constexpr index_t topk_chunk = 4096;
/// The topk workgroup size: the wg knob where given, else 64 for rows up to
/// 1024 (16 elements per invocation) and 256 above, within the device's
/// limit and halved until its shared lists fit the device's shared memory.
inline std::uint32_t topk_wg(const context& ctx, std::uint32_t wg, index_t n, std::uint32_t kp) {
  if (wg) return wg;
  const device_info& d = ctx.info();
  wg = std::min<std::uint32_t>(n <= 1024 ? 64 : 256, d.max_workgroup_invocations);
  while (wg > 32 && shaders::topk_shared_bytes(wg, std::max(1u, d.min_subgroup_size), kp) > d.max_shared_memory) wg /= 2;
  return wg;
}
}  // namespace detail

/// values, indices [rows, k] = the first k of each row of dense x [rows, n]
/// in topk's order (ops/topk.hpp); wg 0 = the kernel's own choice.
inline void record_topk(stream& s, dtype dt, std::uint32_t wg, index_t rows, index_t n, index_t k, buffer_ref x,
                        buffer_ref values, buffer_ref indices) {
  using namespace detail;
  if (rows == 0) return;
  context& ctx = s.ctx();
  u32(rows * n, "elements of x");
  u32(rows * k, "elements of values");
  const std::uint32_t kp = shaders::topk_list_length(k);
  const std::uint32_t g = topk_wg(ctx, wg, n, kp);
  check_wg(ctx, g, "topk");
  const std::uint32_t min_sg = std::max(1u, ctx.info().min_subgroup_size);
  if (shaders::topk_shared_bytes(g, min_sg, kp) > ctx.info().max_shared_memory)
    throw unsupported_error("kforge::vulkan: topk workgroup of " + std::to_string(g) + " invocations needs " +
                            std::to_string(shaders::topk_shared_bytes(g, min_sg, kp)) + " bytes of shared memory; device '" +
                            ctx.info().name + "' has " + std::to_string(ctx.info().max_shared_memory));
  const std::string sg = std::to_string((g + min_sg - 1) / min_sg);
  // A pass whose invocations walk `count` elements each at most keeps lists of that length (an
  // invocation cannot give more picks than it has elements): the insertion is shorter.
  auto pipe = [&](int pass, std::uint32_t bindings, std::uint32_t push, index_t count) -> const pipeline& {
    const std::uint32_t kl = std::min(kp, shaders::topk_list_length((count + g - 1) / g));
    return ctx.get_pipeline(make_variant("topk", shaders::topk_kernel(kl), dt,
                                         {{"KF_PASS", std::to_string(pass)}, {"KF_KP", std::to_string(kp)},
                                          {"KF_KL", std::to_string(kl)}, {"KF_SG", sg}}),
                            {bindings, push, {0}}, {g});
  };
  const bool split = rows < split_rows_below && k <= 64 && n >= 2 * topk_chunk;
  // lavapipe ends a shader invocation after 65535 loop iterations in all (gallivm's loop limiter,
  // shared by every loop): refuse what would run into it there rather than return a wrong answer.
  // Per round of kp picks a subgroup walks its share of the row, picks kp, and subgroup 0 merges.
  if (ctx.info().driver_name == "llvmpipe") {
    const std::uint64_t sgs = (g + min_sg - 1) / min_sg, lanes = std::max(1u, ctx.info().subgroup_size);
    const std::uint64_t rounds = (static_cast<std::uint64_t>(k) + kp - 1) / kp;
    const std::uint64_t per_round = (static_cast<std::uint64_t>(split ? topk_chunk : n) + g - 1) / g + 2ull * kp +
                                    kp * ((sgs + lanes - 1) / lanes) + 8;
    if (rounds * per_round > 60000)
      throw unsupported_error("kforge::vulkan: topk with k = " + std::to_string(k) + " of rows of " + std::to_string(n) +
                              " runs " + std::to_string(rounds) + " rounds: more loop iterations than lavapipe runs in "
                              "one shader invocation (65535); use a CPU policy or a GPU there");
  }
  if (!split) {
    struct {
      std::uint32_t rows, n, k;
    } pc{u32(rows, "rows"), u32(n, "N"), u32(k, "k")};
    s.dispatch(pipe(0, 3, sizeof pc, n), {{x}, {values, true}, {indices, true}}, &pc, sizeof pc,
               grid(static_cast<std::uint64_t>(rows)), "topk");
    return;
  }
  const index_t chunks = (n + topk_chunk - 1) / topk_chunk;
  struct {
    std::uint32_t rows, n, k, chunk, chunks;
  } pc{u32(rows, "rows"), u32(n, "N"), u32(k, "k"), static_cast<std::uint32_t>(topk_chunk), u32(chunks, "chunks")};
  const std::uint64_t cand = static_cast<std::uint64_t>(rows * chunks * k);
  u32(static_cast<index_t>(cand), "candidates");
  const buffer_ref c = s.keep(ctx.device_memory().allocate(cand * 8)).ref();
  s.dispatch(pipe(1, 2, sizeof pc, topk_chunk), {{x}, {c, true}}, &pc, sizeof pc,
             grid(static_cast<std::uint64_t>(rows * chunks)), "topk (chunks)");
  s.dispatch(pipe(2, 4, sizeof pc, chunks * k), {{x}, {c}, {values, true}, {indices, true}}, &pc, sizeof pc,
             grid(static_cast<std::uint64_t>(rows)), "topk (merge)");
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::topk<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::topk<T>>, op::topk<T>, topk_entry> {
  static void compute(const op::topk<T>&, const topk_args<T>& g) {
    vulkan::detail::call<T> c(vulkan::detail::call<T>::by_operand);
    const vulkan::buffer_ref x = c.input(g.x), values = c.output(g.values), indices = c.output(g.indices);
    vulkan::record_topk(c.s(), c.dt, vulkan::knobs<Knobs...>::rows_wg, g.rows, g.n, g.k, x, values, indices);
    c.finish();
  }
};

}  // namespace kforge::detail
