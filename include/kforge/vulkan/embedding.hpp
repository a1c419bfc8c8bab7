// kforge/vulkan/embedding.hpp — embedding lookup on policy::vulkan
// (shaders/embedding.hpp: one output element per invocation). Host views:
// the entry has checked the ids before anything is uploaded. Device tensors:
// a second kernel finds the first id out of range and writes it to a status
// buffer, read back by a check that runs when the submission completes
// (stream::check_after_wait). A quantized table (vulkan::quantized_tensor,
// or a quantized_matrix uploaded for a host call): each unit of a named row
// decoded by shaders/gemm_quant.hpp's gemm_quant_embedding, the same checks.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstring>
#include <optional>

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/quant.hpp"
#include "kforge/vulkan/shaders/embedding.hpp"

namespace kforge::vulkan {

namespace detail {
inline void record_embedding_id_check(stream& s, dtype dt, std::uint32_t wg, index_t v, index_t n, buffer_ref ids,
                                      const shape& ids_dims);
}

/// out [n, D] = rows ids[i] of dense table [V, D], ids dense int32 [n]. With
/// `checked_ids` given (ids the host has not seen, of that shape), ids
/// outside [0, V) are reported after the submission: s.wait() throws
/// argument_error naming the first one (their rows are written as zeros).
inline void record_embedding(stream& s, dtype dt, std::uint32_t wg, index_t v, index_t d, index_t n, buffer_ref table,
                             buffer_ref ids, buffer_ref out, const shape* checked_ids = nullptr) {
  using namespace detail;
  context& ctx = s.ctx();
  check_wg(ctx, wg, "embedding");
  const bool vec = d % 4 == 0;
  struct {
    std::uint32_t v, d, n;
  } pc{u32(v, "V"), u32(vec ? d / 4 : d, "D"), u32(n, "ids")};
  u32(v * d, "table elements");
  const std::uint64_t total = static_cast<std::uint64_t>(u32(n * d, "elements of out")) / (vec ? 4 : 1);
  const std::uint64_t per_group = vec ? 4ull * wg : wg;
  const auto groups = grid(std::min<std::uint64_t>((total + per_group - 1) / per_group, 65535ull * 64));
  const auto& p =
      ctx.get_pipeline(make_variant("embedding", shaders::embedding, dt, {{"KF_VEC", vec ? "1" : "0"}}), {3, 12, {0}}, {wg});
  s.dispatch(p, {{table}, {ids}, {out, true}}, &pc, sizeof pc, groups, "embedding");
  if (checked_ids) detail::record_embedding_id_check(s, dt, wg, v, n, ids, *checked_ids);
}

/// out [n, D] = rows ids[i] of a quantized table (V rows of D) dequantized
/// and rounded once to dt (shaders/gemm_quant.hpp, gemm_quant_embedding;
/// a bad id's row written as zeros), ids dense int32 [n]; checked_ids as
/// record_embedding's.
inline void record_embedding_quantized(stream& s, dtype dt, const quantized_tensor& table, index_t n, buffer_ref ids,
                                       buffer_ref out, const shape* checked_ids = nullptr) {
  using namespace detail;
  constexpr std::uint32_t wg = 256;
  table.check_not_empty();
  if (&s.ctx() != &table.ctx()) throw argument_error("kforge::vulkan::embedding: the table lives in another context");
  check_wg(s.ctx(), wg, "embedding");
  const quant_push pc{u32(n, "ids"), u32(table.rows(), "V"), u32(table.cols(), "D"), u32(table.units(), "units"), 1.0f, 0.0f, 0.0f};
  u32(n * table.cols(), "elements of out");
  const std::uint64_t work = static_cast<std::uint64_t>(pc.m) * pc.nb;
  u32(static_cast<index_t>(work), "units of out");
  const auto& p = s.ctx().get_pipeline(make_variant("embedding_quant", shaders::quant_embedding(), dt,
                                                    {{"KF_QF", std::to_string(static_cast<int>(table.format()))},
                                                     {"KF_QPROBE", "0"},
                                                     {"KF_QPAIRS", "0"}}),
                                       {4, sizeof pc, {0}}, {wg});
  s.dispatch(p, {{table.codes()}, {table.scales()}, {ids}, {out, true}}, &pc, sizeof pc, grid((work + wg - 1) / wg),
             "embedding " + std::string(to_string(table.format())));
  if (checked_ids) detail::record_embedding_id_check(s, dt, wg, table.rows(), n, ids, *checked_ids);
}

namespace detail {
/// The check of ids the host has not seen (device tensors): embedding_check
/// finds the lowest position of an id outside [0, v); s.wait() throws
/// argument_error naming it.
inline void record_embedding_id_check(stream& s, dtype dt, std::uint32_t wg, index_t v, index_t n, buffer_ref ids,
                                      const shape& ids_dims) {
  context& ctx = s.ctx();
  // status[0]: lowest position of a bad id (0xffffffff: none); status[1]: that id.
  buffer_ref status = s.keep(ctx.device_memory().allocate(8)).ref();
  status.size = 8;
  const struct {
    std::uint32_t v, n;
  } cpc{u32(v, "V"), u32(n, "ids")};
  const auto& r = ctx.get_pipeline(make_variant("embedding_check", shaders::embedding_check, dt, {}), {2, 8, {0}}, {wg});
  s.dispatch(r, {{ids}, {status, true}}, &cpc, sizeof cpc, {1, 1, 1}, "embedding (id check)");
  auto& staging = s.staging(8);
  s.copy(status, staging.ref(), 8);
  const void* host = staging.mapped();
  s.check_after_wait([host, v, ids_dims] {
    std::uint32_t w[2];
    std::memcpy(w, host, 8);
    if (w[0] != 0xffffffffu)
      throw argument_error(embedding_bad_id(static_cast<std::int32_t>(w[1]), w[0], ids_dims, v));
  });
}
}  // namespace detail

/// op::embedding from a quantized table on device tensors: ids [...] int32, out [..., D].
template <class Policy = policy::vulkan<>, class T>
void record(stream& s, const op::embedding<T>&, const quantized_tensor& table, const device_tensor<std::int32_t>& ids,
            device_tensor<T>& out) {
  static_assert(!std::is_same_v<T, std::int32_t>, "kforge::vulkan: embedding's output is float, half or bfloat16");
  table.check_not_empty();
  kforge::detail::check_embedding_shapes(ids.dims(), table.cols(), out.dims());
  for (const context* x : {&ids.ctx(), &out.ctx(), &table.ctx()})
    if (x != &s.ctx()) throw argument_error("kforge::vulkan::embedding: tensors belong to another context than the stream");
  if (ids.numel() == 0 || table.cols() == 0) return;
  record_embedding_quantized(s, dtype_of<T>(), table, ids.numel(), ids.ref(), out.ref(), &ids.dims());
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::embedding<T>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::embedding<T>>, op::embedding<T>, embedding_entry> {
  using base = vulkan::detail::impl_base<impl, op::embedding<T>, embedding_entry>;
  using base::run;
  static void compute(const op::embedding<T>&, const embedding_args<T>& g) {
    vulkan::detail::call<T> c(vulkan::detail::call<T>::by_operand);
    const vulkan::buffer_ref table = c.input(g.table), ids = c.input(g.ids), out = c.output(g.out);
    if (g.n * g.d != 0)
      vulkan::record_embedding(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, g.v, g.d, g.n, table, ids, out,
                               c.device() ? &g.ids.dims : nullptr);
    c.finish();
  }
  /// Device tensors with a quantized table (uploaded once by the caller: vulkan::quantized_tensor).
  static void run(const op::embedding<T>& op, const vulkan::quantized_tensor& table, const vulkan::device_tensor<std::int32_t>& ids,
                  vulkan::device_tensor<T>& out) {
    vulkan::stream s(ids.ctx());
    vulkan::record(s, op, table, ids, out);
    s.run();
  }
  /// Host views with a quantized table: the table uploaded for this call alone.
  static void compute_quantized(const op::embedding<T>&, const embedding_qargs<T>& g) {
    vulkan::detail::call<T> c(vulkan::detail::call<T>::by_operand);
    const vulkan::buffer_ref ids = c.input(g.ids), out = c.output(g.out);
    std::optional<vulkan::quantized_tensor> table;  // alive until the call has finished
    if (g.n * g.d != 0) {
      table.emplace(c.ctx(), *g.table);
      vulkan::record_embedding_quantized(c.s(), c.dt, *table, g.n, ids, out);
    }
    c.finish();
  }
};

}  // namespace kforge::detail
