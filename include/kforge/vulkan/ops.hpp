// kforge/vulkan/ops.hpp — policy::vulkan<Knobs...> for every op family.
//
// Each specialisation inherits its op family's entry (shape checks, then
// compute(op, args)) and adds overloads for device tensors:
//
//   run<policy::vulkan<>>(op, A, B, C)          host views: upload, run,
//                                               download in one submission;
//                                               last_call_seconds() is the GPU
//                                               time of its kernels
//   run<policy::vulkan<>>(op, dA, dB, dC)       device_tensor: no host copy
//   vulkan::record<policy::vulkan<>>(s, op, dA, dB, dC)   into a stream
//
// Device-tensor calls reuse the entry's checks verbatim: they pass views that
// carry only shapes (data == nullptr) and park the tensors' buffers in a
// thread-local device_call that compute() reads, so host and device paths can
// never disagree on shape rules.
//
// Element types: float and half (half needs 16-bit storage on the device);
// bfloat16 host data is widened to f32 on upload, computed in f32 and rounded
// back on download; device_tensor<bfloat16> does not exist. double is not
// implemented (compile-time refusal).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <array>
#include <deque>
#include <type_traits>
#include <vector>

#include "kforge/ops/ops.hpp"
#include "kforge/policy/policy.hpp"
#include "kforge/vulkan/kernels.hpp"
#include "kforge/vulkan/tensor.hpp"

namespace kforge::vulkan {

template <class T>
inline constexpr bool is_device_tensor_v = false;
template <class T>
inline constexpr bool is_device_tensor_v<device_tensor<T>> = true;

namespace detail {
/// Default of the coopmat knob: use cooperative matrices where the device has them.
struct coopmat_auto {
  using key = policy::coopmat_key;
  static constexpr int mode = -1;
};
template <class C>
inline constexpr int coopmat_mode_of = C::value ? 1 : 0;
template <>
inline constexpr int coopmat_mode_of<coopmat_auto> = -1;
}  // namespace detail

/// The compile-time knobs of policy::vulkan<K...> as run-time tiling.
template <class... K>
struct knobs {
  using tile = policy::knob_t<policy::tile_key, policy::tile<64, 64, 16>, K...>;
  using thread_tile = policy::knob_t<policy::thread_tile_key, policy::thread_tile<4, 4>, K...>;
  using wg = policy::knob_t<policy::wg_key, policy::wg<256>, K...>;
  static_assert(tile::m % thread_tile::m == 0 && tile::n % thread_tile::n == 0,
                "kforge::policy::vulkan: tile<M,N,K> must be a multiple of thread_tile<M,N>");
  static_assert(wg::y == 1, "kforge::policy::vulkan: wg<X, Y>: the kernels are 1-D, Y must be 1");
  static constexpr gemm_tiling tiling{tile::m, tile::n, tile::k, thread_tile::m, thread_tile::n};
  /// A tile or thread_tile knob fixes the gemm tiling; without one the gemm
  /// picks gemm_default_config() for its shape.
  static constexpr bool gemm_tile_given = policy::detail::count_knob<policy::tile_key, K...> +
                                              policy::detail::count_knob<policy::thread_tile_key, K...> > 0;
  using coopmat = policy::knob_t<policy::coopmat_key, detail::coopmat_auto, K...>;
  /// -1: automatic (f16 data on a device with NV cooperative matrices), 0: never, 1: required.
  static constexpr int coopmat_mode = detail::coopmat_mode_of<coopmat>;

  /// The gemm config for an m×n problem of element type dt on device d.
  static gemm_config gemm(const device_info& d, dtype dt, std::uint64_t m, std::uint64_t n) {
    if (coopmat_mode == 1 && (dt != dtype::f16 || !coopmat_f16_available(d)))
      throw unsupported_error("kforge::vulkan: policy::coopmat<true> asks for cooperative matrices, but " +
                              std::string(dt != dtype::f16 ? "the data is not f16"
                                                           : "device '" + d.name + "' has no 16x16x16 f16 NV cooperative matrices"));
    if (coopmat_mode != 0 && dt == dtype::f16 && coopmat_f16_available(d)) {
      gemm_config c = gemm_default_config(d, dt, m, n, true), t = c;
      if (gemm_tile_given) t.bm = tile::m, t.bn = tile::n, t.bk = tile::k;
      return gemm_config_check(d, dt, t).empty() ? t : c;  // a tile the fragments cannot cover keeps the default
    }
    if (!gemm_tile_given) return gemm_default_config(d, dt, m, n, false);
    gemm_config c{gemm_kernel::tiled, tile::m, tile::n, tile::k, thread_tile::m, thread_tile::n, 8, 2, 8};
    if (!gemm_config_check(d, dt, c).empty()) c.kernel = gemm_kernel::generic;
    return c;
  }
  /// Workgroup size of the element-wise, reduction, row and attention kernels.
  static constexpr std::uint32_t row_wg = wg::x;
};

namespace detail {

/// Buffers of a device-tensor call (inputs then output) and the stream to record on.
struct device_call {
  stream* s = nullptr;
  std::array<buffer_ref, 6> refs{};
  int n = 0;
};
inline thread_local device_call* current_call = nullptr;

struct call_guard {
  explicit call_guard(device_call* c) : prev(current_call) { current_call = c; }
  ~call_guard() { current_call = prev; }
  device_call* prev;
};

template <class T>
tensor_view<const T> shape_view(const device_tensor<T>& t) {
  return tensor_view<const T>(nullptr, t.dims());
}
template <class T>
tensor_view<T> shape_view_out(device_tensor<T>& t) {
  return tensor_view<T>(nullptr, t.dims());
}

/// Runs the entry's checks and compute() with device tensors recorded on `s`.
template <class Impl, class Op, class... In, class Out>
void record_device(stream& s, const Op& op, const device_tensor<Out>& out_ro, const In&... in) {
  auto& out = const_cast<device_tensor<Out>&>(out_ro);
  for (const context* c : {&in.ctx()..., &out.ctx()})
    if (c != &s.ctx()) throw argument_error("kforge::vulkan::" + std::string(Op::name) + ": tensors belong to another context than the stream");
  device_call call{&s, {in.ref()..., out.ref()}, static_cast<int>(sizeof...(In)) + 1};
  call_guard g(&call);
  Impl::run(op, shape_view(in)..., shape_view_out(out));
}

template <class Impl, class Op, class... Ts, std::size_t... I>
void record_split(stream& s, const Op& op, std::tuple<Ts&...> ts, std::index_sequence<I...>) {
  record_device<Impl>(s, op, std::get<sizeof...(Ts) - 1>(ts), std::get<I>(ts)...);
}

inline double& last_call_seconds_slot() {
  thread_local double s = -1;
  return s;
}

/// GPU seconds of the dispatches of a completed submission, leaving out its
/// uploads and downloads; -1 when a dispatch was not timed.
inline double kernel_seconds(const std::vector<dispatch_timing>& ts) {
  double ms = 0;
  for (const auto& t : ts)
    if (!t.transfer) {
      if (t.ms < 0) return -1;
      ms += t.ms;
    }
  return ms * 1e-3;
}

/// Host-view calls: one stream, temporaries for every operand, one submission.
template <class T>
struct host_call {
  using D = device_type_t<T>;
  static constexpr dtype dt = dtype_of<D>();
  context& ctx;
  stream s;
  std::deque<device_tensor<D>> temps;
  host_call() : ctx(default_context()), s(ctx) {}
  buffer_ref in(const tensor_view<const T>& v) {
    temps.emplace_back(ctx, v.dims);
    temps.back().record_upload(s, v);
    return temps.back().ref();
  }
  /// Output tensor (uploaded first when the kernel reads it, e.g. gemm beta != 0).
  device_tensor<D>& out(const tensor_view<T>& v, bool read) {
    temps.emplace_back(ctx, v.dims);
    if (read) temps.back().record_upload(s, tensor_view<const T>(v));
    return temps.back();
  }
  void finish(const device_tensor<D>& o, const tensor_view<T>& dst) {
    const void* p = o.record_download(s);
    s.run();
    last_call_seconds_slot() = kernel_seconds(s.timings());
    if (p) vulkan::detail::unpack(static_cast<const D*>(p), dst);
  }
};

/// Either the device call in flight or a host call; gives the buffers in order.
template <class T>
struct operands {
  device_call* dc = current_call;
  std::optional<host_call<T>> host;
  stream& s() { return dc ? *dc->s : host->s; }
  operands() {
    if (!dc) host.emplace();
  }
};

}  // namespace detail

/// GPU time (timestamps) of the kernels of the last host-view
/// run<policy::vulkan<...>>(op, host data...) on this thread: its dispatches
/// only, not the uploads and downloads around them; -1 when the device has no
/// timestamps (or before the first call). What `kforge bench` reports as GPU time.
inline double last_call_seconds() { return detail::last_call_seconds_slot(); }

/// Records op on device tensors (inputs..., output) into stream s; nothing
/// runs until s.submit(). Policy defaults to policy::vulkan<>.
template <class Policy = policy::vulkan<>, class Op, class... Ts>
  requires(sizeof...(Ts) >= 2 && (is_device_tensor_v<std::remove_cvref_t<Ts>> && ...))
void record(stream& s, const Op& op, Ts&&... ts) {
  static_assert(supports<Policy, Op>, "kforge::vulkan::record: this op has no implementation for this policy");
  detail::record_split<kforge::detail::impl<Policy, Op>>(s, op, std::tuple<Ts&...>(ts...),
                                                         std::make_index_sequence<sizeof...(Ts) - 1>{});
}

namespace detail {
/// Adds the device-tensor overload of run() to an impl.
template <class Impl, class Op>
struct device_run {
  template <class... Ts>
    requires(sizeof...(Ts) == Op::arity + 1 &&
             (std::is_same_v<std::remove_cvref_t<Ts>, device_tensor<typename Op::value_type>> && ...))
  static void run(const Op& op, Ts&&... ts) {
    context& ctx = std::get<sizeof...(Ts) - 1>(std::tuple<Ts&...>(ts...)).ctx();
    stream s(ctx);
    record_split<Impl>(s, op, std::tuple<Ts&...>(ts...), std::make_index_sequence<sizeof...(Ts) - 1>{});
    s.run();
  }
};

template <class T>
inline constexpr bool vk_type = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

template <class T>
shape dense_strides_of(const shape& d) {
  shape st = row_major_strides(d);
  for (int i = 0; i < d.rank(); ++i)
    if (d[i] == 1) st[i] = 0;
  return st;
}
}  // namespace detail
}  // namespace kforge::vulkan

namespace kforge::detail {

// Shared head of every specialisation: both run() overload sets and the knobs.
#define KFORGE_VK_IMPL_HEAD(ENTRY)                         \
  using entry = ENTRY<impl, op_t>;                          \
  using entry::run;                                         \
  using vulkan::detail::device_run<impl, op_t>::run;        \
  using K = vulkan::knobs<Knobs...>;

// ---- gemm -------------------------------------------------------------------
template <class... Knobs, class T, class E>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::gemm<T, E, float>>
    : gemm_entry<impl<policy::vulkan<Knobs...>, op::gemm<T, E, float>>, op::gemm<T, E, float>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::gemm<T, E, float>>, op::gemm<T, E, float>> {
  using op_t = op::gemm<T, E, float>;
  KFORGE_VK_IMPL_HEAD(gemm_entry)
  static constexpr bool available = true;
  static void compute(const op::gemm<T, E, float>& op, const gemm_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref a, b, bias, c;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      a = o.dc->refs[0], b = o.dc->refs[1];
      if (E::has_bias) bias = o.dc->refs[2];
      c = o.dc->refs[o.dc->n - 1];
    } else {
      a = o.host->in(g.a), b = o.host->in(g.b);
      if (E::has_bias) bias = o.host->in(g.bias);
      out = &o.host->out(g.c, op.beta != 0.0f);
      c = out->ref();
    }
    if (g.m && g.n) {
      const auto cfg = K::gemm(o.s().ctx().info(), dtype_of<D>(), static_cast<std::uint64_t>(g.m),
                               static_cast<std::uint64_t>(g.n));
      if (cfg.kernel == vulkan::gemm_kernel::generic) vulkan::detail::check_tiling(o.s().ctx(), K::tiling, "gemm");
      vulkan::record_gemm(o.s(), dtype_of<D>(), cfg, g.m, g.n, g.k, op.alpha, op.beta, E::activation,
                          op.epilogue.slope, a, b, E::has_bias ? &bias : nullptr, c);
    }
    if (out) o.host->finish(*out, g.c);
  }
};

// ---- conv2d -------------------------------------------------------------------
template <class... Knobs, class T, class E>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::conv2d<T, E>>
    : conv2d_entry<impl<policy::vulkan<Knobs...>, op::conv2d<T, E>>, op::conv2d<T, E>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::conv2d<T, E>>, op::conv2d<T, E>> {
  using op_t = op::conv2d<T, E>;
  KFORGE_VK_IMPL_HEAD(conv2d_entry)
  static constexpr bool available = true;
  static void compute(const op::conv2d<T, E>& op, const conv2d_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref x, w, bias, y;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      x = o.dc->refs[0], w = o.dc->refs[1];
      if (E::has_bias) bias = o.dc->refs[2];
      y = o.dc->refs[o.dc->n - 1];
    } else {
      x = o.host->in(g.x), w = o.host->in(g.w);
      if (E::has_bias) bias = o.host->in(g.bias);
      out = &o.host->out(g.y, false);
      y = out->ref();
    }
    const conv2d_dims& d = g.d;
    if (d.n * d.k * d.p * d.q != 0)
      vulkan::record_conv2d(o.s(), dtype_of<D>(), K::tiling, d.n, d.c, d.h, d.w, d.k, d.r, d.s, d.p, d.q, d.sh, d.sw,
                            d.ph, d.pw, d.dh, d.dw, d.groups, E::activation, op.epilogue.slope, x, w,
                            E::has_bias ? &bias : nullptr, y);
    if (out) o.host->finish(*out, g.y);
  }
};

// ---- unary / binary -------------------------------------------------------------
template <class... Knobs, class T, fn F>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::unary<T, F>>
    : unary_entry<impl<policy::vulkan<Knobs...>, op::unary<T, F>>, op::unary<T, F>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::unary<T, F>>, op::unary<T, F>> {
  using op_t = op::unary<T, F>;
  KFORGE_VK_IMPL_HEAD(unary_entry)
  static constexpr bool available = true;
  static void compute(const op::unary<T, F>& op, const unary_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref x, y;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      x = o.dc->refs[0], y = o.dc->refs[1];
    } else {
      x = o.host->in(g.x);
      out = &o.host->out(g.y, false);
      y = out->ref();
    }
    if (g.x.numel()) vulkan::record_unary(o.s(), dtype_of<D>(), K::row_wg, F, op.slope, g.x.numel(), x, y);
    if (out) o.host->finish(*out, g.y);
  }
};

template <class... Knobs, class T, binop F>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::binary<T, F>>
    : binary_entry<impl<policy::vulkan<Knobs...>, op::binary<T, F>>, op::binary<T, F>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::binary<T, F>>, op::binary<T, F>> {
  using op_t = op::binary<T, F>;
  KFORGE_VK_IMPL_HEAD(binary_entry)
  static constexpr bool available = true;
  // An operand re-viewed with the output's shape: its own extents are those
  // with a non-zero stride (1 where broadcast); on the device it is dense
  // over those extents.
  static shape own_dims(const tensor_view<const T>& v) {
    shape d = v.dims;
    for (int i = 0; i < d.rank(); ++i)
      if (v.stride(i) == 0) d[i] = 1;
    return d;
  }
  static void compute(const op::binary<T, F>&, const binary_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    if (g.c.rank() > 6) throw unsupported_error("kforge::vulkan::binary: rank above 6");
    const shape da = own_dims(g.a), db = own_dims(g.b);
    vulkan::buffer_ref a, b, c;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      a = o.dc->refs[0], b = o.dc->refs[1], c = o.dc->refs[2];
    } else {
      a = o.host->in(tensor_view<const T>(g.a.data, da, g.a.strides));
      b = o.host->in(tensor_view<const T>(g.b.data, db, g.b.strides));
      out = &o.host->out(g.c, false);
      c = out->ref();
    }
    if (g.c.numel())
      vulkan::record_binary(o.s(), dtype_of<D>(), K::row_wg, F, g.c.dims, vulkan::detail::dense_strides_of<T>(da),
                            vulkan::detail::dense_strides_of<T>(db), a, b, c);
    if (out) o.host->finish(*out, g.c);
  }
};

// ---- reduce -----------------------------------------------------------------------
template <class... Knobs, class T, reduce_fn F>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::reduce<T, F>>
    : reduce_entry<impl<policy::vulkan<Knobs...>, op::reduce<T, F>>, op::reduce<T, F>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::reduce<T, F>>, op::reduce<T, F>> {
  using op_t = op::reduce<T, F>;
  KFORGE_VK_IMPL_HEAD(reduce_entry)
  static constexpr bool available = true;
  static void compute(const op::reduce<T, F>&, const reduce_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref x, y;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      x = o.dc->refs[0], y = o.dc->refs[1];
    } else {
      x = o.host->in(g.x);
      out = &o.host->out(g.y, false);
      y = out->ref();
    }
    if (g.outer * g.inner != 0)
      vulkan::record_reduce(o.s(), dtype_of<D>(), K::row_wg, F, g.outer, g.n, g.inner, x, y);
    if (out) o.host->finish(*out, g.y);
  }
};

// ---- softmax, layer_norm, rms_norm ------------------------------------------------------
template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::softmax<T>>
    : softmax_entry<impl<policy::vulkan<Knobs...>, op::softmax<T>>, op::softmax<T>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::softmax<T>>, op::softmax<T>> {
  using op_t = op::softmax<T>;
  KFORGE_VK_IMPL_HEAD(softmax_entry)
  static constexpr bool available = true;
  static void compute(const op::softmax<T>&, const rows_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref x, y;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      x = o.dc->refs[0], y = o.dc->refs[1];
    } else {
      x = o.host->in(g.x);
      out = &o.host->out(g.y, false);
      y = out->ref();
    }
    if (g.rows * g.cols != 0) vulkan::record_softmax(o.s(), dtype_of<D>(), K::row_wg, g.rows, g.cols, x, y);
    if (out) o.host->finish(*out, g.y);
  }
};

template <class Derived, class T, bool LayerNorm>
struct vk_norm_compute {
  template <class Op, class KK>
  static void go(const Op& op, const norm_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref x, gamma, beta, y;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      x = o.dc->refs[0], gamma = o.dc->refs[1];
      if (LayerNorm) beta = o.dc->refs[2];
      y = o.dc->refs[o.dc->n - 1];
    } else {
      x = o.host->in(g.x), gamma = o.host->in(g.gamma);
      if (LayerNorm) beta = o.host->in(g.beta);
      out = &o.host->out(g.y, false);
      y = out->ref();
    }
    if (g.rows * g.cols != 0)
      vulkan::record_norm(o.s(), dtype_of<D>(), KK::row_wg, g.rows, g.cols, op.epsilon, x, gamma,
                          LayerNorm ? &beta : nullptr, y);
    if (out) o.host->finish(*out, g.y);
  }
};

template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::layer_norm<T>>
    : norm_entry<impl<policy::vulkan<Knobs...>, op::layer_norm<T>>, op::layer_norm<T>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::layer_norm<T>>, op::layer_norm<T>> {
  using op_t = op::layer_norm<T>;
  KFORGE_VK_IMPL_HEAD(norm_entry)
  static constexpr bool available = true;
  static void compute(const op::layer_norm<T>& op, const norm_args<T>& g) {
    vk_norm_compute<impl, T, true>::template go<op::layer_norm<T>, K>(op, g);
  }
};
template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::rms_norm<T>>
    : norm_entry<impl<policy::vulkan<Knobs...>, op::rms_norm<T>>, op::rms_norm<T>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::rms_norm<T>>, op::rms_norm<T>> {
  using op_t = op::rms_norm<T>;
  KFORGE_VK_IMPL_HEAD(norm_entry)
  static constexpr bool available = true;
  static void compute(const op::rms_norm<T>& op, const norm_args<T>& g) {
    vk_norm_compute<impl, T, false>::template go<op::rms_norm<T>, K>(op, g);
  }
};

// ---- attention ---------------------------------------------------------------------
template <class... Knobs, class T>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::attention<T>>
    : attention_entry<impl<policy::vulkan<Knobs...>, op::attention<T>>, op::attention<T>>,
      vulkan::detail::device_run<impl<policy::vulkan<Knobs...>, op::attention<T>>, op::attention<T>> {
  using op_t = op::attention<T>;
  KFORGE_VK_IMPL_HEAD(attention_entry)
  static constexpr bool available = true;
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    vulkan::detail::operands<T> o;
    using D = vulkan::device_type_t<T>;
    vulkan::buffer_ref q, k, v, out_ref;
    vulkan::device_tensor<D>* out = nullptr;
    if (o.dc) {
      q = o.dc->refs[0], k = o.dc->refs[1], v = o.dc->refs[2], out_ref = o.dc->refs[3];
    } else {
      q = o.host->in(g.q), k = o.host->in(g.k), v = o.host->in(g.v);
      out = &o.host->out(g.o, false);
      out_ref = out->ref();
    }
    if (g.b * g.h * g.s * g.dv != 0)
      vulkan::record_attention(o.s(), dtype_of<D>(), std::min<std::uint32_t>(K::row_wg, 128), g.b * g.h, g.s, g.l,
                               g.d, g.dv, g.scale, g.causal, q, k, v, out_ref, K::coopmat_mode);
    if (out) o.host->finish(*out, g.o);
  }
};

#undef KFORGE_VK_IMPL_HEAD

}  // namespace kforge::detail
