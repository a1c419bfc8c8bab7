// kforge/vulkan/tuning.hpp — what the tuner needs from the Vulkan backend:
// gemm with a kernel and tiling chosen at run time (policy::vulkan's tile
// knobs are compile-time types), the GPU time of that gemm, and the configs
// a device accepts. Include it on its own (it includes <kforge/vulkan.hpp>);
// the tuner's Vulkan space (kforge/tune/vulkan_space.hpp) is built on it.
//
// gemm_with_config / gemm_with_tiling run one gemm on host data: operands are
// uploaded (packed to dense row-major, as the host-view overloads of run()
// do), the gemm is recorded with record_gemm, the result downloaded, all in
// one submission on a stream of its own. Its GPU time is the timestamp time
// of the gemm dispatch alone (the stream times every dispatch and copy; the
// copies are left out), so a tuner ranks kernels, not PCIe transfers.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "kforge/validate/execute.hpp"
#include "kforge/vulkan.hpp"

namespace kforge::vulkan {

namespace detail {
/// typed((T*)nullptr) for the element type T of kernel dtype t (float, half,
/// bfloat16); unsupported_error naming `who` for f64 and i32.
template <class F>
void with_kernel_type(dtype t, const char* who, F&& typed) {
  switch (t) {
    case dtype::f32: typed(static_cast<float*>(nullptr)); return;
    case dtype::f16: typed(static_cast<half*>(nullptr)); return;
    case dtype::bf16: typed(static_cast<bfloat16*>(nullptr)); return;
    case dtype::f64:
    case dtype::i32: break;
  }
  throw unsupported_error("kforge::vulkan::" + std::string(who) + ": " + std::string(to_string(t)) + " is not a kernel dtype");
}

inline std::optional<double>& last_gemm_seconds_slot() {
  thread_local std::optional<double> s;
  return s;
}

/// Uploads, runs one gemm with knobs t (a gemm_config or a gemm_tiling),
/// downloads; returns the dispatch's GPU seconds (none: not timed).
template <class T, class Knobs>
std::optional<double> gemm_host_tiled(context& ctx, const Knobs& t, float alpha, float beta, fn act, float slope,
                       const kforge::gemm_args<T>& g, bool has_bias) {
  call<T> c(ctx, {&g.a, &g.b, has_bias ? &g.bias : nullptr}, g.c, beta != 0.0f);
  if (g.m && g.n)
    record_gemm(c.s(), c.dt, t, g.m, g.n, g.k, alpha, beta, act, slope, c.in(0), c.in(1), c.in_opt(2), c.out());
  c.finish();
  const std::optional<double> sec = g.m && g.n ? last_call_seconds_slot() : std::optional<double>(0.0);
  last_gemm_seconds_slot() = sec;
  return sec;
}
}  // namespace detail

/// GPU seconds of the gemm dispatch of the last gemm_with_config / gemm_with_tiling on this
/// thread; none when the device has no timestamps (or before the first call).
inline std::optional<double> last_gemm_seconds() { return detail::last_gemm_seconds_slot(); }

namespace detail {
template <class Knobs, class T, class E>
std::optional<double> gemm_knobs(context& ctx, const Knobs& t, const op::gemm<T, E, float>& op, tensor_view<const T> a,
                  tensor_view<const T> b, tensor_view<const T> bias, tensor_view<T> c) {
  return gemm_host_tiled<T>(ctx, t, op.alpha, op.beta, E::activation, op.epilogue.slope,
                            kforge::check_gemm<T>(a, b, bias, E::has_bias, c), E::has_bias);
}

template <class Knobs>
std::optional<double> gemm_problem(context& ctx, const Knobs& t, const problem& p, std::vector<host_tensor>& ts) {
  if (!is_family<gemm_traits>(p))
    throw unsupported_error("kforge::vulkan::gemm_with_config: runs gemm, not " + p.op);
  std::optional<double> sec;
  auto typed = [&]<class T>(T*) {
    kforge::detail::with_epilogue(p.epilogue, [&](auto e) {
      using E = decltype(e);
      op::gemm<T, E> o;
      o.alpha = p.alpha;
      o.beta = p.beta;
      o.epilogue.slope = p.slope;
      const std::size_t want = E::has_bias ? 4 : 3;
      if (ts.size() != want)
        throw argument_error("kforge::vulkan::gemm_with_config: gemm with epilogue " + p.epilogue + " takes " +
                             std::to_string(want) + " tensors, got " + std::to_string(ts.size()));
      const auto& cts = ts;
      sec = gemm_knobs(ctx, t, o, cts[0].view<T>(), cts[1].view<T>(),
                       E::has_bias ? cts[2].view<T>() : tensor_view<const T>{}, ts.back().view<T>());
    });
  };
  with_kernel_type(p.type, "gemm_with_config", typed);
  return sec;
}
}  // namespace detail

/// C = epilogue(alpha·A·B + beta·C) with gemm config cfg (kernel and tiling,
/// kernels.hpp) on host views of any strides. Returns the GPU seconds of the
/// gemm dispatch (none when not timed). A config the device cannot run throws
/// unsupported_error (gemm_config_check's reason) before anything runs.
template <class T, class E>
std::optional<double> gemm_with_config(context& ctx, const gemm_config& cfg, const op::gemm<T, E, float>& op,
                        tensor_view<const T> a, tensor_view<const T> b, tensor_view<T> c)
  requires(!E::has_bias)
{
  return detail::gemm_knobs(ctx, cfg, op, a, b, {}, c);
}
/// The same with a bias epilogue: bias has N elements.
template <class T, class E>
std::optional<double> gemm_with_config(context& ctx, const gemm_config& cfg, const op::gemm<T, E, float>& op,
                        tensor_view<const T> a, tensor_view<const T> b, tensor_view<const T> bias, tensor_view<T> c)
  requires(E::has_bias)
{
  return detail::gemm_knobs(ctx, cfg, op, a, b, bias, c);
}
/// A run-time gemm problem (validate/problem.hpp) on its host tensors
/// (A, B[, bias], C), as the tuner's executors are called.
inline std::optional<double> gemm_with_config(context& ctx, const gemm_config& cfg, const problem& p, std::vector<host_tensor>& ts) {
  return detail::gemm_problem(ctx, cfg, p, ts);
}

/// The same three with policy::vulkan's tile knobs as a run-time gemm_tiling
/// (record_gemm's tiling overload: the tiled kernel where the thread tile and
/// K step are multiples of 4, else the generic one).
template <class T, class E>
std::optional<double> gemm_with_tiling(context& ctx, const gemm_tiling& t, const op::gemm<T, E, float>& op, tensor_view<const T> a,
                        tensor_view<const T> b, tensor_view<T> c)
  requires(!E::has_bias)
{
  return detail::gemm_knobs(ctx, t, op, a, b, {}, c);
}
template <class T, class E>
std::optional<double> gemm_with_tiling(context& ctx, const gemm_tiling& t, const op::gemm<T, E, float>& op, tensor_view<const T> a,
                        tensor_view<const T> b, tensor_view<const T> bias, tensor_view<T> c)
  requires(E::has_bias)
{
  return detail::gemm_knobs(ctx, t, op, a, b, bias, c);
}
inline std::optional<double> gemm_with_tiling(context& ctx, const gemm_tiling& t, const problem& p, std::vector<host_tensor>& ts) {
  return detail::gemm_problem(ctx, t, p, ts);
}

// ---- attention --------------------------------------------------------------

/// Attention problem p's extents as the kernels see them (Dv = D: the
/// problem form has one head dim; L is the keys attended, kv_len's cut).
/// Throws argument_error where the heads do not group (attention_traits).
inline attention_dims attention_dims_of(const problem& p) {
  if (!is_family<attention_traits>(p)) throw unsupported_error("kforge::vulkan: not an attention problem: " + p.op);
  (void)attention_traits::operands(p);  // the heads group, kv_len is inside L
  return {p.dims[0], p.dims[1], attention_traits::kv_heads(p), p.dims[2], attention_traits::attended(p), p.dims[3],
          p.dims[3],  p.causal, attention_traits::layout(p) == attention_layout::bshd};
}

namespace detail {
inline std::optional<double>& last_attention_seconds_slot() {
  thread_local std::optional<double> s;
  return s;
}
/// op::attention's entry (its checks verbatim) running config `cfg` on `ctx`.
template <class T>
struct attention_with : kforge::detail::attention_entry<attention_with<T>, op::attention<T>> {
  static inline thread_local context* ctx = nullptr;
  static inline thread_local const attention_config* cfg = nullptr;
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    call<T> c(*ctx, {&g.q, &g.k, &g.v}, g.o);
    record_attention_call(c, g, cfg, -1, 128);
    c.finish();
  }
};
}  // namespace detail

/// GPU seconds of the attention kernels (split and merge: both) of the last
/// attention_with_config on this thread; none when not timed.
inline std::optional<double> last_attention_seconds() { return detail::last_attention_seconds_slot(); }

/// Attention problem p on its host tensors (Q, K, V, O) with config cfg on
/// ctx: uploaded, run and downloaded in one submission, as run() with host
/// views does. Returns the GPU seconds of its kernels (none: not timed); a
/// config the device cannot run throws unsupported_error before anything runs.
inline std::optional<double> attention_with_config(context& ctx, const attention_config& cfg, const problem& p,
                                    std::vector<host_tensor>& ts) {
  const attention_dims a = attention_dims_of(p);
  const std::string why = attention_config_check(ctx.info(), device_dtype(ctx.info(), p.type), a, cfg);
  if (!why.empty()) throw unsupported_error("kforge::vulkan::attention_with_config: " + why);
  if (ts.size() != 4)
    throw argument_error("kforge::vulkan::attention_with_config: attention takes 4 tensors, got " + std::to_string(ts.size()));
  std::optional<double> sec;
  auto typed = [&]<class T>(T*) {
    using W = detail::attention_with<T>;
    W::ctx = &ctx;
    W::cfg = &cfg;
    const auto& cts = ts;
    attention_traits::with_op<T>(p, [&](const op::attention<T>& o) {
      W::run(o, cts[0].view<T>(), cts[1].view<T>(), cts[2].view<T>(), ts[3].view<T>());
    });
    sec = a.b * a.h * a.s * a.dv != 0 ? detail::last_call_seconds_slot() : std::optional<double>(0.0);
  };
  detail::with_kernel_type(p.type, "attention_with_config", typed);
  detail::last_attention_seconds_slot() = sec;
  return sec;
}

/// The attention configs the tuner tries for problem p on this device
/// (attention_configs at the dtype the device stores p's in).
inline std::vector<attention_config> valid_attention_configs(const context& ctx, const problem& p) {
  if (p.type == dtype::f64 || p.type == dtype::i32 || (p.type == dtype::f16 && !ctx.info().storage_16bit)) return {};
  return attention_configs(ctx.info(), device_dtype(ctx.info(), p.type), attention_dims_of(p));
}

/// gemm_tilings (policy::vulkan's tile and thread_tile knobs) worth trying:
/// tile M, N ∈ {32, 64, 128}, K step ∈ {8, 16, 32}, thread tile ∈ {2, 4, 8}²,
/// before filtering by device. The tuner's gemm space is
/// valid_configs() below, which also chooses the kernel.
inline std::vector<gemm_tiling> candidate_tilings() {
  std::vector<gemm_tiling> out;
  for (std::uint32_t bm : {32u, 64u, 128u})
    for (std::uint32_t bn : {32u, 64u, 128u})
      for (std::uint32_t bk : {8u, 16u, 32u})
        for (std::uint32_t tm : {2u, 4u, 8u})
          for (std::uint32_t tn : {2u, 4u, 8u})
            out.push_back({bm, bn, bk, tm, tn});
  return out;
}

/// Whether the device runs gemm with tiling t on element type dt ("" = yes, else why not).
inline std::string tiling_problem(const context& ctx, dtype dt, const gemm_tiling& t) {
  if (!is_float(dt) || dt == dtype::f64) return std::string(to_string(dt)) + " is not a kernel dtype";
  if (dt == dtype::f16 && !ctx.info().storage_16bit) return "device lacks storageBuffer16BitAccess (f16 tensors)";
  try {
    // check_tiling only reads the device's limits; it takes a non-const context for its callers' sake.
    detail::check_tiling(const_cast<context&>(ctx), t, "gemm");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

/// candidate_tilings() that pass check_tiling on this device for dtype dt.
inline std::vector<gemm_tiling> valid_tilings(const context& ctx, dtype dt) {
  std::vector<gemm_tiling> out;
  for (const auto& t : candidate_tilings())
    if (tiling_problem(ctx, dt, t).empty()) out.push_back(t);
  return out;
}

/// The gemm configs the tuner tries on this device for dtype dt: the
/// backend's own list (gemm_configs: tiled, gemv and, for f16 where
/// available, cooperative-matrix kernels, with and without grouped tile
/// order, K split or not) and the generic kernel's default tiling, which the
/// backend falls back to.
inline std::vector<gemm_config> valid_configs(const context& ctx, dtype dt) {
  std::vector<gemm_config> out;
  if (dt == dtype::f64 || dt == dtype::i32 || (dt == dtype::f16 && !ctx.info().storage_16bit)) return out;
  // bf16 is stored as bf16, or computed as f32 where the device lacks 16-bit storage.
  const dtype dev = device_dtype(ctx.info(), dt);
  out = gemm_configs(ctx.info(), dev);
  const gemm_config generic{gemm_kernel::generic, 64, 64, 16, 4, 4, 0, 0, 0};
  if (gemm_config_check(ctx.info(), dev, generic).empty()) out.push_back(generic);
  return out;
}

}  // namespace kforge::vulkan
