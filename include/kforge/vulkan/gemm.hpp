// kforge/vulkan/gemm.hpp — gemm on policy::vulkan: record_gemm runs the
// kernel and tiling of a gemm_config (gemm_config.hpp) on buffers, and the
// implementation of op::gemm picks the config per call (the policy's knobs,
// else gemm_default_config for the call's shape).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <map>
#include <mutex>
#include <string>

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/quant.hpp"
#include "kforge/vulkan/shaders/gemm.hpp"
#include "kforge/vulkan/shaders/gemm_common.hpp"
#include "kforge/vulkan/shaders/gemm_coopmat.hpp"
#include "kforge/vulkan/shaders/gemm_gemv.hpp"
#include "kforge/vulkan/shaders/gemm_gemv_coopmat.hpp"
#include "kforge/vulkan/shaders/gemm_splitk.hpp"
#include "kforge/vulkan/shaders/gemm_tiled.hpp"
#include "kforge/vulkan/spirv/gemm_coopmat2.hpp"

namespace kforge::vulkan {

namespace detail {
struct gemm_push {
  std::uint32_t m, n, k;
  float alpha, beta, slope;
};

/// Whether a config's kernel reads A and B as vectors for a k×n B (rows must
/// start on a vector boundary): tiled 4 elements, coopmat 8, gemv tn columns
/// of B and 4 of A.
inline bool gemm_vector_loads(const gemm_config& cfg, index_t n, index_t k) {
  switch (cfg.kernel) {
    case gemm_kernel::generic: return false;
    case gemm_kernel::tiled: return k % 4 == 0 && n % 4 == 0;
    case gemm_kernel::coopmat_f16:
    case gemm_kernel::gemv_coopmat: return k % 8 == 0 && n % 8 == 0;
    case gemm_kernel::gemv: return cfg.tn && k % 4 == 0 && n % cfg.tn == 0;
    case gemm_kernel::coopmat2: return false;  // tensor layouts address elements
  }
  return false;
}

/// The SPIR-V variant of the coopmat2 kernel (emitted once per variant and kept).
inline const shader_variant& gemm_coopmat2_variant(const spirv::gemm_coopmat2_spec& spec) {
  return detail::emitted_variant(spec.name(), [&] { return spirv::gemm_coopmat2(spec); });
}

/// The shader variant of a gemm kernel: its source (gemm_common's prelude
/// before the tiled, coopmat and gemv bodies) and defines, or the coopmat2
/// kernel's SPIR-V. vec: A and B are read as vectors (gemm_vector_loads);
/// split: the kernel writes the partial sums of one K split
/// (shaders/gemm_common.hpp, KF_SPLIT); read_c: beta != 0 (coopmat2 only:
/// the GLSL kernels test beta at run time).
/// conv: conv2d's implicit GEMM (KF_CONV; the tiled kernel: vulkan/conv2d.hpp).
inline const shader_variant& gemm_variant(const gemm_config& cfg, dtype dt, bool bias, fn act, bool vec, bool split = false,
                                   bool read_c = false, bool conv = false) {
  if (cfg.kernel == gemm_kernel::coopmat2)
    return gemm_coopmat2_variant({dt == dtype::bf16, bias && !split, split ? fn::identity : act, read_c && !split, split, cfg.tm});
  std::vector<std::pair<std::string, std::string>> defs{{"KF_BIAS", bias ? "1" : "0"}, {"KF_ACT", str(static_cast<int>(act))}};
  if (conv) {
    if (cfg.kernel != gemm_kernel::tiled) throw error("kforge::vulkan: internal: conv2d's implicit GEMM runs the tiled kernel only");
    defs.push_back({"KF_CONV", "1"});
    defs.push_back({"KF_VW", "4"});
  }
  if (cfg.kernel == gemm_kernel::generic) {
    defs.insert(defs.begin(), {"KF_CONV", "0"});
    return make_variant("gemm", shaders::gemm, dt, std::move(defs));
  }
  defs.push_back({"KF_SPLIT", split ? "1" : "0"});
  defs.push_back({"KF_VEC", vec ? "1" : "0"});
  switch (cfg.kernel) {
    case gemm_kernel::tiled:
      defs.push_back({"KF_VEC_T", "T4"});
      return make_variant("gemm_tiled", shaders::gemm_common() + shaders::gemm_tiled, dt, std::move(defs));
    case gemm_kernel::coopmat_f16:
      defs.push_back({"KF_VEC_T", "uvec4"});
      defs.push_back({"KF_COOPMAT", "1"});
      return make_variant("gemm_coopmat_f16", shaders::gemm_common() + shaders::gemm_coopmat_f16, dt, std::move(defs));
    case gemm_kernel::gemv_coopmat:
      defs.push_back({"KF_VEC_T", "uvec4"});
      defs.push_back({"KF_COOPMAT", "1"});
      return make_variant("gemm_gemv_coopmat", shaders::gemm_common() + shaders::gemm_gemv_coopmat, dt, std::move(defs));
    case gemm_kernel::gemv: {
      // 16-bit B (f16, bf16) in 16-byte loads of 8 elements where a lane's columns come in eights.
      const bool packed = (dt == dtype::f16 || dt == dtype::bf16) && cfg.tn % 8 == 0;
      defs.push_back({"KF_VEC_T", packed ? "uvec4" : "T4"});
      defs.push_back({"KF_VEC_A_T", "T4"});
      defs.push_back({"KF_B_PACKED", packed ? "1" : "0"});
      return make_variant("gemm_gemv", shaders::gemm_common() + shaders::gemm_gemv, dt, std::move(defs));
    }
    default: break;
  }
  throw error("kforge::vulkan: internal: unknown gemm kernel");
}

/// The split-K sum pass (shaders/gemm_splitk.hpp) with gemm's epilogue.
inline const shader_variant& gemm_splitk_variant(dtype dt, bool bias, fn act) {
  return make_variant("gemm_splitk_reduce",
                      std::string(shaders::gemm_splitk_bindings) + shaders::gemm_push + shaders::gemm_epilogue +
                          shaders::gemm_splitk_reduce,
                      dt, {{"KF_BIAS", bias ? "1" : "0"}, {"KF_ACT", str(static_cast<int>(act))}, {"KF_SPLIT", "0"}});
}

/// Workgroup size of the split-K sum pass.
inline constexpr std::uint32_t splitk_wg = 256;
}  // namespace detail

namespace detail {
/// The pipeline of a gemm config's kernel, variant v (gemm_variant).
inline const pipeline& gemm_pipeline(context& ctx, const gemm_config& cfg, const shader_variant& v) {
  switch (cfg.kernel) {
    case gemm_kernel::generic:
      return ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5}}, {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn});
    case gemm_kernel::tiled:
      return ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5, 6}},
                              {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.tm, cfg.tn, cfg.group_m});
    case gemm_kernel::coopmat_f16:
      return ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4, 5}},
                              {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.warps_m, cfg.group_m});
    case gemm_kernel::gemv:
      return ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4}}, {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.tn});
    case gemm_kernel::coopmat2:
      return ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4}}, {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, cfg.group_m});
    case gemm_kernel::gemv_coopmat:
      return ctx.get_pipeline(v, {4, sizeof(gemm_push), {0, 1, 2, 3, 4}}, {cfg.wg(), cfg.bm, cfg.bn, cfg.bk, 256 * cfg.tm});
  }
  throw error("kforge::vulkan: internal: unknown gemm kernel");
}

/// Throws unless cfg runs on s's device with dt data and its grid for an m×n×k gemm fits; returns the splits it uses.
inline std::uint32_t gemm_check(stream& s, dtype dt, const gemm_config& cfg, index_t m, index_t n, index_t k,
                                const std::string& label) {
  context& ctx = s.ctx();
  if (const std::string why = gemm_config_check(ctx.info(), dt, cfg); !why.empty())
    throw unsupported_error("kforge::vulkan: gemm config '" + cfg.str() + "' on device '" + ctx.info().name +
                            "': " + why);
  u32(m, "M"), u32(n, "N"), u32(k, "K"), u32(m * k, "A elements"), u32(k * n, "B elements"), u32(m * n, "C elements");
  const std::uint32_t splits = gemm_splits_used(cfg, static_cast<std::uint64_t>(k));
  u32(static_cast<index_t>(splits) * m * n, "gemm partial sums (splits·M·N)");
  const std::uint64_t gx = (static_cast<std::uint64_t>(n) + cfg.bn - 1) / cfg.bn,
                      gy = (static_cast<std::uint64_t>(m) + cfg.bm - 1) / cfg.bm;
  if (gx > 65535 || gy > 65535)
    throw unsupported_error("kforge::vulkan: " + label + " needs a " + std::to_string(gx) + "x" + std::to_string(gy) +
                            " grid of workgroups; at most 65535 per axis");
  return splits;
}
}  // namespace detail

/// The first pass of a split gemm on its own: the raw f32 dot products of
/// dense row-major A [m,k] and B [k,n] over each K split of `cfg`, into
/// `part` [splits][m][n] (splits = gemm_splits_used(cfg, k), 1 for an
/// unsplit config: then `part` holds A·B in f32; not the generic kernel,
/// which has no split form). A caller with its own
/// epilogue or output layout (conv2d) sums the splits itself; returns splits.
inline std::uint32_t record_gemm_partials(stream& s, dtype dt, const gemm_config& cfg, index_t m, index_t n, index_t k,
                                          buffer_ref a, buffer_ref b, buffer_ref part, const std::string& label) {
  using namespace detail;
  if (cfg.kernel == gemm_kernel::generic)
    throw unsupported_error("kforge::vulkan: the generic gemm kernel writes no partial sums (" + label + ")");
  const std::uint32_t splits = gemm_check(s, dt, cfg, m, n, k, label);
  const gemm_push pc{u32(m, "M"), u32(n, "N"), u32(k, "K"), 1.0f, 0.0f, 0.0f};
  const pipeline& p = gemm_pipeline(s.ctx(), cfg, gemm_variant(cfg, dt, false, fn::identity, gemm_vector_loads(cfg, n, k), true));
  s.dispatch(p, {{a}, {b}, {a}, {part, true}}, &pc, sizeof pc,
             {static_cast<std::uint32_t>((pc.n + cfg.bn - 1) / cfg.bn), static_cast<std::uint32_t>((pc.m + cfg.bm - 1) / cfg.bm),
              splits},
             splits > 1 ? label + " split " + std::to_string(splits) : label);
  return splits;
}

/// C = act(alpha·A·B + beta·C + bias): dense row-major A [m,k], B [k,n], C [m,n],
/// with the kernel, tiling and K split of `cfg` (see gemm_config). A split
/// gemm (gemm_splits_used(cfg, k) > 1) records two dispatches and an f32
/// scratch buffer of splits·m·n elements that the stream keeps until reset().
inline void record_gemm(stream& s, dtype dt, const gemm_config& cfg, index_t m, index_t n, index_t k, float alpha,
                        float beta, fn act, float slope, buffer_ref a, buffer_ref b, const buffer_ref* bias,
                        buffer_ref c) {
  using namespace detail;
  context& ctx = s.ctx();
  const std::string label = "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
  const std::uint32_t splits = gemm_check(s, dt, cfg, m, n, k, label);
  const gemm_push pc{u32(m, "M"), u32(n, "N"), u32(k, "K"), alpha, beta, slope};
  if (splits == 1) {
    const pipeline& p =
        gemm_pipeline(ctx, cfg, gemm_variant(cfg, dt, bias != nullptr, act, gemm_vector_loads(cfg, n, k), false, beta != 0.0f));
    s.dispatch(p, {{a}, {b}, {bias ? *bias : a}, {c, true}}, &pc, sizeof pc,
               {static_cast<std::uint32_t>((pc.n + cfg.bn - 1) / cfg.bn),
                static_cast<std::uint32_t>((pc.m + cfg.bm - 1) / cfg.bm), 1},
               label);
    return;
  }
  const buffer_ref part = s.keep(ctx.device_memory().allocate(4ull * splits * pc.m * pc.n)).ref();
  record_gemm_partials(s, dt, cfg, m, n, k, a, b, part, label);
  const gemm_push rp{pc.m, pc.n, splits, alpha, beta, slope};
  const pipeline& r = ctx.get_pipeline(gemm_splitk_variant(dt, bias != nullptr, act), {3, sizeof(gemm_push), {0}}, {splitk_wg});
  s.dispatch(r, {{part}, {bias ? *bias : part}, {c, true}}, &rp, sizeof rp,
             grid((static_cast<std::uint64_t>(pc.m) * pc.n + splitk_wg - 1) / splitk_wg), label + " split-K sum");
}

/// The same with the tile knobs of policy::vulkan (tile, thread_tile): the
/// tiled kernel where the thread tile allows it (multiples of 4), else generic.
inline void record_gemm(stream& s, dtype dt, const gemm_tiling& t, index_t m, index_t n, index_t k, float alpha,
                        float beta, fn act, float slope, buffer_ref a, buffer_ref b, const buffer_ref* bias,
                        buffer_ref c) {
  gemm_config cfg{gemm_kernel::tiled, t.bm, t.bn, t.bk, t.tm, t.tn, 8, 2, 8, 1};
  if (!gemm_config_check(s.ctx().info(), dt, cfg).empty()) {
    detail::check_tiling(s.ctx(), t, "gemm");
    cfg.kernel = gemm_kernel::generic;
  }
  record_gemm(s, dt, cfg, m, n, k, alpha, beta, act, slope, a, b, bias, c);
}

/// From this many rows of X on, a quantized gemm without explicit decode
/// knobs takes the prefill path (record_gemm_quantized): past the decode
/// kernel's largest band (16 rows), which would read W once per band.
inline constexpr index_t quant_dense_rows = 17;

/// Whether the prefill path can hold W dequantized in dt: K·N elements of dt
/// in one storage buffer of the device, and (f16) every weight within f16's
/// range (quantized_tensor::max_abs; past it the decode kernel, f32 throughout).
inline bool quant_dense_fits(const quantized_tensor& w, dtype dt, const device_info& d) {
  const double bytes = static_cast<double>(w.rows()) * static_cast<double>(w.cols()) * static_cast<double>(size_of(dt));
  return bytes <= static_cast<double>(std::min<std::uint64_t>(d.max_storage_buffer_range, std::uint64_t{1} << 31)) &&
         (dt != dtype::f16 || w.max_abs() <= 65504.0f);
}

/// Records Y [M, N] = act(alpha·X [M, K]·Wᵀ + beta·Y + bias) for a quantized
/// W (N × K): x, y and the bias dense row-major of storage dtype dt. Decode
/// rows (M < quant_dense_rows) or explicit knobs (cfg): the decode kernel,
/// which reads W's packed bytes directly (record_gemm_quantized_rows).
/// Prefill rows: W dequantized into the stream's scratch buffer as B [K, N]
/// of dt (record_dequantize; each weight rounded once to dt, which
/// gemm_quantized_tolerance allows for) and the dense gemm of `dense`
/// (default: gemm_default_config — on f16/bf16 the tensor cores). The
/// scratch is one buffer per recording, as large as the largest W of the
/// recording (a model's prefill: its largest projection) — a transient copy,
/// not a second copy of the model.
inline void record_gemm_quantized(stream& s, const quantized_tensor& w, dtype dt, index_t m, buffer_ref x, buffer_ref y,
                                  const qgemv_config* cfg = nullptr, const quant_epilogue& ep = {},
                                  const gemm_config* dense = nullptr) {
  detail::check_quantized_call(s, w, m, ep);
  if (cfg || m < quant_dense_rows || !quant_dense_fits(w, dt, s.ctx().info())) {
    record_gemm_quantized_rows(s, w, dt, m, x, y, cfg, ep);
    return;
  }
  const index_t n = w.rows(), k = w.cols();
  const gemm_config g = dense ? *dense
                              : gemm_default_config(s.ctx().info(), dt, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n),
                                                    static_cast<std::uint64_t>(k));
  const buffer_ref b = s.scratch(static_cast<VkDeviceSize>(n) * static_cast<VkDeviceSize>(k) * size_of(dt));
  record_dequantize(s, w, dt, b);
  record_gemm(s, dt, g, m, n, k, ep.alpha, ep.beta, ep.act, ep.slope, x, b, ep.bias, y);
}

/// Y = X · Wᵀ on device tensors: x [M, K], y [M, N].
template <class T>
void gemm_quantized(stream& s, const quantized_tensor& w, const device_tensor<T>& x, device_tensor<T>& y,
                    const qgemv_config* cfg = nullptr) {
  static_assert(!std::is_same_v<T, std::int32_t>, "kforge::vulkan::gemm_quantized: X and Y are float, half or bfloat16");
  w.check_not_empty();
  if (x.rank() != 2 || x.dims()[1] != w.cols())
    throw shape_error("kforge::vulkan::gemm_quantized: X must be [M, " + std::to_string(w.cols()) + "], got " + x.dims().str());
  expect_shape("kforge::vulkan::gemm_quantized", "Y", kforge::shape{x.dims()[0], w.rows()}, y.dims());
  record_gemm_quantized(s, w, dtype_of<T>(), x.dims()[0], x.ref(), y.ref(), cfg);
}

/// Y = X · Wᵀ from host views (uploaded, run and downloaded in one call).
template <class T>
void gemm_quantized(const quantized_tensor& w, const tensor_view<const T>& x, const tensor_view<T>& y) {
  auto dx = device_tensor<T>::from_host(w.ctx(), x);
  device_tensor<T> dy(w.ctx(), y.dims);
  {
    stream s(w.ctx());
    gemm_quantized(s, w, dx, dy);
    s.run();
  }
  dy.download(y);
}

}  // namespace kforge::vulkan

namespace kforge::vulkan {

namespace detail {
/// The dense gemm config a policy picks for an m×n×k gemm (its knobs; another policy type: the default).
template <class Policy>
struct policy_gemm {
  static gemm_config of(const device_info& d, dtype dt, index_t m, index_t n, index_t k) {
    return gemm_default_config(d, dt, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(k));
  }
};
template <class... K>
struct policy_gemm<policy::vulkan<K...>> {
  static gemm_config of(const device_info& d, dtype dt, index_t m, index_t n, index_t k) {
    return knobs<K...>::gemm(d, dt, static_cast<std::uint64_t>(m), static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(k));
  }
};
}  // namespace detail

/// Records op::gemm with a quantized B on device tensors: C [M, N] =
/// act(alpha·A·Wᵀ + beta·C + bias) with A [M, K] and W [N, K] (vulkan/quant.hpp's
/// kernel). Policy: any, as vulkan::record takes it (the quantized kernel has
/// no policy knobs; its own are vulkan::qgemv_config's defaults).
template <class Policy = policy::vulkan<>, class T, class E, class A>
void record(stream& s, const op::gemm<T, E, A>& op, const device_tensor<T>& a, const quantized_tensor& w,
            const device_tensor<T>* bias, device_tensor<T>& c) {
  static_assert(std::is_same_v<A, float>, "kforge::vulkan: gemm accumulates in f32");
  w.check_not_empty();
  if (E::has_bias != (bias != nullptr)) throw argument_error("kforge::gemm: the epilogue and the bias operand disagree");
  if (a.rank() != 2 || a.dims()[1] != w.cols())
    throw shape_error("kforge::gemm: A has shape " + a.dims().str() + ", the quantized B (" + std::string(to_string(w.format())) +
                      ") stands for [" + std::to_string(w.cols()) + "," + std::to_string(w.rows()) + "]");
  expect_shape("gemm", "C", kforge::shape{a.dims()[0], w.rows()}, c.dims());
  if (bias) expect_shape("gemm", "bias", kforge::shape{w.rows()}, bias->dims());
  for (const context* x : {&a.ctx(), &c.ctx(), bias ? &bias->ctx() : &a.ctx()})
    if (x != &s.ctx()) throw argument_error("kforge::vulkan::gemm: tensors belong to another context than the stream");
  if (a.dims()[0] == 0) return;
  const buffer_ref b = bias ? bias->ref() : buffer_ref{};
  const gemm_config dense = detail::policy_gemm<Policy>::of(s.ctx().info(), dtype_of<T>(), a.dims()[0], w.rows(), w.cols());
  record_gemm_quantized(s, w, dtype_of<T>(), a.dims()[0], a.ref(), c.ref(), nullptr,
                        {op.alpha, op.beta, E::activation, op.epilogue.slope, bias ? &b : nullptr}, &dense);
}
template <class Policy = policy::vulkan<>, class T, class E, class A>
  requires(!E::has_bias)
void record(stream& s, const op::gemm<T, E, A>& op, const device_tensor<T>& a, const quantized_tensor& w, device_tensor<T>& c) {
  record(s, op, a, w, static_cast<const device_tensor<T>*>(nullptr), c);
}
template <class Policy = policy::vulkan<>, class T, class E, class A>
  requires(E::has_bias)
void record(stream& s, const op::gemm<T, E, A>& op, const device_tensor<T>& a, const quantized_tensor& w,
            const device_tensor<T>& bias, device_tensor<T>& c) {
  record(s, op, a, w, &bias, c);
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T, class E>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::gemm<T, E, float>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::gemm<T, E, float>>, op::gemm<T, E, float>, gemm_entry> {
  using base = vulkan::detail::impl_base<impl, op::gemm<T, E, float>, gemm_entry>;
  using base::run;
  /// Device tensors with a quantized B (uploaded once by the caller: vulkan::quantized_tensor).
  template <class... Ts>
    requires(sizeof...(Ts) == (E::has_bias ? 2 : 1))
  static void run(const op::gemm<T, E, float>& op, const vulkan::device_tensor<T>& a, const vulkan::quantized_tensor& w,
                  Ts&&... rest) {
    vulkan::stream s(a.ctx());
    vulkan::record(s, op, a, w, std::forward<Ts>(rest)...);
    s.run();
  }
  /// Host views with a quantized B: W uploaded for this call alone (a model
  /// uploads its weights once: vulkan::quantized_tensor and the device-tensor call).
  static void compute_quantized(const op::gemm<T, E, float>& op, const gemm_qargs<T>& g) {
    vulkan::detail::call<T> c({&g.a, E::has_bias ? &g.bias : nullptr}, g.c, op.beta != 0.0f);
    const vulkan::quantized_tensor w(c.ctx(), *g.w);
    if (g.m) {
      // The prefill path's dense gemm as the policy's knobs pick it.
      const auto dense = vulkan::detail::policy_gemm<policy::vulkan<Knobs...>>::of(c.ctx().info(), c.dt, g.m, g.n, g.k);
      vulkan::record_gemm_quantized(c.s(), w, c.dt, g.m, c.in(0), c.out(), nullptr,
                                    {op.alpha, op.beta, E::activation, op.epilogue.slope, c.in_opt(1)}, &dense);
    }
    c.finish();
  }
  static void compute(const op::gemm<T, E, float>& op, const gemm_args<T>& g) {
    using K = vulkan::knobs<Knobs...>;
    vulkan::detail::call<T> c({&g.a, &g.b, E::has_bias ? &g.bias : nullptr}, g.c, op.beta != 0.0f);
    if (g.m && g.n) {
      const auto cfg = K::gemm(c.ctx().info(), c.dt, static_cast<std::uint64_t>(g.m), static_cast<std::uint64_t>(g.n),
                               static_cast<std::uint64_t>(g.k));
      if (cfg.kernel == vulkan::gemm_kernel::generic) vulkan::detail::check_tiling(c.ctx(), K::tiling, "gemm");
      vulkan::record_gemm(c.s(), c.dt, cfg, g.m, g.n, g.k, op.alpha, op.beta, E::activation, op.epilogue.slope, c.in(0),
                          c.in(1), c.in_opt(2), c.out());
    }
    c.finish();
  }
};

}  // namespace kforge::detail
