// kforge/vulkan/call.hpp — one call of an op on policy::vulkan<Knobs...>: the
// knobs as run-time values, and the operands as buffers, whether they came as
// host data or as device tensors. Every op's implementation (vulkan/<op>.hpp)
// is built from these:
//
//   run<policy::vulkan<>>(op, A, B, C)          host views: upload, run,
//                                               download in one submission;
//                                               last_call_seconds() is the GPU
//                                               time of its kernels
//   run<policy::vulkan<>>(op, dA, dB, dC)       device_tensor: no host copy
//   vulkan::record<policy::vulkan<>>(s, op, dA, dB, dC)   into a stream
//
// Device-tensor calls reuse the op's entry checks verbatim (ops/<op>.hpp):
// they pass views that carry only shapes (data == nullptr) and park the
// tensors' buffers in a thread-local device_call that the implementation's
// compute() reads through detail::call, so host and device paths can never
// disagree on shape rules.
//
// Element types: float, half and bfloat16, each stored on the device as it is
// (the 16-bit types need 16-bit storage there) and computed in f32. A device
// without 16-bit storage still runs host bfloat16 data: the call widens it to
// f32 on upload, runs the f32 kernels and rounds back on download
// (device_dtype; device_tensor<bfloat16> cannot exist there). half has no such
// fallback. double is not implemented (compile-time refusal). Integer
// operands (ids, indices) are std::int32_t on both sides, copied exactly.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <array>
#include <deque>
#include <functional>
#include <initializer_list>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kforge/ops/ops.hpp"
#include "kforge/policy/policy.hpp"
#include "kforge/vulkan/gemm_config.hpp"
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
  /// -1: automatic (f16 or bf16 data on a device with cooperative matrices for
  /// it), 0: never, 1: required.
  static constexpr int coopmat_mode = detail::coopmat_mode_of<coopmat>;

  /// The gemm config for an m×n×k problem of element type dt on device d.
  static gemm_config gemm(const device_info& d, dtype dt, std::uint64_t m, std::uint64_t n, std::uint64_t k) {
    // Tensor cores for dt: the NV subgroup-scope kernel (f16 only) or coopmat2 (f16, bf16).
    const bool tensor_cores = (dt == dtype::f16 && coopmat_f16_available(d)) || coopmat2_available(d, dt);
    if (coopmat_mode == 1 && !tensor_cores)
      throw unsupported_error("kforge::vulkan: policy::coopmat<true> asks for cooperative matrices, but " +
                              std::string(dt != dtype::f16 && dt != dtype::bf16
                                              ? "the data is neither f16 nor bf16"
                                              : "device '" + d.name + "' has no " + std::string(to_string(dt)) +
                                                    " cooperative matrices kforge's gemm runs on"));
    if (coopmat_mode != 0 && tensor_cores) {
      // coopmat<true> keeps decode shapes on the tensor cores too.
      const gemm_config c = coopmat_mode == 1 ? gemm_tile_default_config(d, dt, m, n, k, true)
                                              : gemm_default_config(d, dt, m, n, k, true);
      if (!gemm_tile_given) return c;
      const bool on_tensor_cores = c.kernel == gemm_kernel::coopmat_f16 || c.kernel == gemm_kernel::coopmat2;
      gemm_config t = on_tensor_cores ? c : gemm_tile_default_config(d, dt, m, n, k, true);
      t.bm = tile::m, t.bn = tile::n, t.bk = tile::k, t.splits = 1;
      return gemm_config_check(d, dt, t).empty() ? t : c;  // a tile the fragments cannot cover keeps the default
    }
    if (!gemm_tile_given) return gemm_default_config(d, dt, m, n, k, false);
    gemm_config c{gemm_kernel::tiled, tile::m, tile::n, tile::k, thread_tile::m, thread_tile::n, 8, 2, 8, 1};
    if (!gemm_config_check(d, dt, c).empty()) c.kernel = gemm_kernel::generic;
    return c;
  }
  /// Workgroup size of the element-wise, reduction, row and attention kernels.
  static constexpr std::uint32_t row_wg = wg::x;
  /// The row kernels' (softmax, norms): the wg knob where given, else 0 (each
  /// kernel picks its own by row length).
  static constexpr std::uint32_t rows_wg = policy::detail::count_knob<policy::wg_key, K...> > 0 ? wg::x : 0;
};

namespace detail {

/// Buffers of a device-tensor call (inputs then outputs) and the stream to record on.
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

inline std::optional<double>& last_call_seconds_slot() {
  thread_local std::optional<double> s;
  return s;
}

/// GPU seconds of the dispatches of a completed submission, leaving out its
/// uploads and downloads; none when a dispatch was not timed.
inline std::optional<double> kernel_seconds(const std::vector<dispatch_timing>& ts) {
  double ms = 0;
  for (const auto& t : ts)
    if (!t.transfer) {
      if (!t.ms) return std::nullopt;
      ms += *t.ms;
    }
  return ms * 1e-3;
}

/// The operands of one call as buffers, in call order: the device call in
/// flight on this thread (device tensors), or host views uploaded into
/// temporaries on a stream of the call's own, downloaded again by finish().
///
/// Two ways to build one. Most ops have inputs of the op's element type and
/// one output: call(ins, out[, read_out]), then in(i) and out(). Ops whose
/// operands differ in element type (embedding's int32 ids) or that write
/// several outputs (topk's values and indices) name them one at a time, in
/// call order: call(by_operand), then input(view) and output(view) for each
/// operand, each returning its buffer.
template <class T>
class call {
 public:
  using D = device_type_t<T>;
  /// Storage dtype of the call's buffers of element type T, which the kernels
  /// are built for: D's, except host bf16 data on a device without 16-bit
  /// storage (f32 there, see device_dtype).
  dtype dt = dtype_of<D>();
  struct by_operand_t {};
  static constexpr by_operand_t by_operand{};

  /// `ins`: the op's inputs in call order, nullptr for one its variant leaves
  /// out (a bias the epilogue has not); `out`: the output; `read_out`: the
  /// kernel reads the output too (gemm with beta != 0).
  call(std::initializer_list<const tensor_view<const T>*> ins, const tensor_view<T>& out, bool read_out = false)
      : call(current_call, current_call ? nullptr : &default_context()) {
    add_legacy(ins, out, read_out);
  }
  /// A host call on context `ctx`, even inside a device call.
  call(context& ctx, std::initializer_list<const tensor_view<const T>*> ins, const tensor_view<T>& out,
       bool read_out = false)
      : call(nullptr, &ctx) {
    add_legacy(ins, out, read_out);
  }
  /// A call whose operands follow one by one (input(), output()).
  explicit call(by_operand_t) : call(current_call, current_call ? nullptr : &default_context()) { by_operand_ = true; }

  stream& s() { return dc_ ? *dc_->s : host_->s; }
  /// True for a device-tensor call (operands are the tensors as given), false
  /// for host views (operands are dense uploads of the views).
  bool device() const { return dc_ != nullptr; }
  context& ctx() { return s().ctx(); }
  buffer_ref in(std::size_t i) const { return refs_[i]; }
  /// Input i, or nullptr where it was left out.
  const buffer_ref* in_opt(std::size_t i) const { return present_[i] ? &refs_[i] : nullptr; }
  buffer_ref out() const { return out_; }

  /// The next operand, an input of any element type.
  template <class U>
  buffer_ref input(const tensor_view<const U>& v) {
    if (dc_) return next_device_ref();
    return host_->in(v);
  }
  /// The next operand, an output of any element type (`read`: the kernel reads it too).
  template <class U>
  buffer_ref output(const tensor_view<U>& v, bool read = false) {
    if (dc_) return next_device_ref();
    return host_->out(v, read);
  }

  /// Host calls: submits, waits, records the kernels' GPU time for
  /// last_call_seconds() and downloads the outputs. Device calls: nothing (the
  /// stream's owner submits).
  void finish() {
    if (dc_) {
      if (by_operand_ && next_ != dc_->n)
        throw error("kforge::vulkan: internal: " + std::to_string(dc_->n) + " device tensors for " +
                    std::to_string(next_) + " operands");
      return;
    }
    host_->finish();
  }

 private:
  call(device_call* dc, context* ctx) : dc_(dc) {
    if (!dc_) {
      host_.emplace(*ctx);
      dt = device_dtype(ctx->info(), dt);
    }
  }
  void add_legacy(std::initializer_list<const tensor_view<const T>*> ins, const tensor_view<T>& out, bool read_out) {
    for (const tensor_view<const T>* v : ins) {
      present_[n_] = v != nullptr;
      if (v) refs_[n_] = dc_ ? dc_->refs[static_cast<std::size_t>(next_++)] : host_->in(*v);
      ++n_;
    }
    if (dc_ && next_ + 1 != dc_->n)
      throw error("kforge::vulkan: internal: " + std::to_string(dc_->n) + " device tensors for " +
                  std::to_string(next_ + 1) + " operands");
    out_ = output(out, read_out);
  }
  buffer_ref next_device_ref() {
    if (next_ >= dc_->n)
      throw error("kforge::vulkan: internal: more operands than the " + std::to_string(dc_->n) + " device tensors");
    return dc_->refs[static_cast<std::size_t>(next_++)];
  }

  /// The temporaries of a host call: each operand as a device tensor of its
  /// element type's device type, or as float where bf16 is widened
  /// (device_dtype); the outputs' downloads, run by finish().
  struct host_side {
    context& ctx;
    stream s;
    std::tuple<std::deque<device_tensor<float>>, std::deque<device_tensor<half>>, std::deque<device_tensor<bfloat16>>,
               std::deque<device_tensor<std::int32_t>>>
        temps;
    /// An output: records its download, then unpacks it into the host view.
    struct pending_output {
      std::function<const void*(stream&)> record;
      std::function<void(const void*)> unpack;
    };
    std::vector<pending_output> outs;
    explicit host_side(context& c) : ctx(c), s(c) { s.time_dispatches(true); }  // for last_call_seconds()
    /// f(a new temporary of `dims` for host elements U).
    template <class U, class F>
    buffer_ref with_temp(const shape& dims, F&& f) {
      using E = device_type_t<U>;
      if constexpr (std::is_same_v<E, bfloat16>)
        if (device_dtype(ctx.info(), dtype::bf16) == dtype::f32)
          return f(std::get<std::deque<device_tensor<float>>>(temps).emplace_back(ctx, dims));
      return f(std::get<std::deque<device_tensor<E>>>(temps).emplace_back(ctx, dims));
    }
    template <class U>
    buffer_ref in(const tensor_view<const U>& v) {
      return with_temp<U>(v.dims, [&](auto& t) {
        t.record_upload(s, v);
        return t.ref();
      });
    }
    template <class U>
    buffer_ref out(const tensor_view<U>& v, bool read) {
      return with_temp<U>(v.dims, [&](auto& t) {
        using X = typename std::remove_cvref_t<decltype(t)>::value_type;
        if (read) t.record_upload(s, tensor_view<const U>(v));
        outs.push_back({[&t](stream& st) { return t.record_download(st); },
                        [v](const void* p) { unpack(static_cast<const X*>(p), v); }});
        return t.ref();
      });
    }
    void finish() {
      std::vector<const void*> ptrs;
      for (auto& o : outs) ptrs.push_back(o.record(s));
      s.run();
      last_call_seconds_slot() = kernel_seconds(s.timings());
      for (std::size_t i = 0; i < outs.size(); ++i)
        if (ptrs[i]) outs[i].unpack(ptrs[i]);
    }
  };
  device_call* dc_;
  std::optional<host_side> host_;
  bool by_operand_ = false;
  int next_ = 0;  ///< device tensors taken so far
  std::array<buffer_ref, 6> refs_{};
  std::array<bool, 6> present_{};
  std::size_t n_ = 0;
  buffer_ref out_{};
};

/// Operand I of a device-tensor call as the op's entry sees it: its shape,
/// no data (const for an input, mutable for an output).
template <class Op, std::size_t I, class E>
auto device_view(const device_tensor<E>& t) {
  if constexpr (I < static_cast<std::size_t>(Op::arity)) return tensor_view<const E>(nullptr, t.dims());
  else return tensor_view<E>(nullptr, t.dims());
}

/// Runs the entry's checks and compute() with device tensors (inputs, then
/// outputs) recorded on `s`.
template <class Impl, class Op, class... Ts, std::size_t... I>
void record_split(stream& s, const Op& op, std::tuple<Ts&...> ts, std::index_sequence<I...>) {
  for (const context* c : {&std::get<I>(ts).ctx()...})
    if (c != &s.ctx()) throw argument_error("kforge::vulkan::" + std::string(Op::name) + ": tensors belong to another context than the stream");
  device_call dc{&s, {std::get<I>(ts).ref()...}, static_cast<int>(sizeof...(I))};
  call_guard g(&dc);
  Impl::run(op, device_view<Op, I>(std::get<I>(ts))...);
}

/// True when Ts are device tensors of Op's operand types, in order.
template <class Op, class... Ts>
constexpr bool device_operands() {
  if constexpr (sizeof...(Ts) != static_cast<std::size_t>(Op::arity + op_outputs_v<Op>)) {
    return false;
  } else {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return (std::is_same_v<std::remove_cvref_t<std::tuple_element_t<I, std::tuple<Ts...>>>,
                             device_tensor<op_operand_t<Op, I>>> && ...);
    }(std::index_sequence_for<Ts...>{});
  }
}

}  // namespace detail

/// GPU time (timestamps) of the kernels of the last host-view
/// run<policy::vulkan<...>>(op, host data...) on this thread: its dispatches
/// only, not the uploads and downloads around them; none when the device has
/// no timestamps (or before the first call). What `kforge bench` reports as GPU time.
inline std::optional<double> last_call_seconds() { return detail::last_call_seconds_slot(); }

/// Records op on device tensors (inputs..., outputs...) into stream s;
/// nothing runs until s.submit(). Policy defaults to policy::vulkan<>.
/// Checks an op can only make on the device (embedding's ids in range) run
/// when the submission completes, and throw from s.wait() (stream::check_after_wait).
template <class Policy = policy::vulkan<>, class Op, class... Ts>
  requires(sizeof...(Ts) >= 2 && (is_device_tensor_v<std::remove_cvref_t<Ts>> && ...))
void record(stream& s, const Op& op, Ts&&... ts) {
  static_assert(supports<Policy, Op>, "kforge::vulkan::record: this op has no implementation for this policy");
  detail::record_split<kforge::detail::impl<Policy, Op>>(s, op, std::tuple<Ts&...>(ts...), std::index_sequence_for<Ts...>{});
}

namespace detail {
/// Adds the device-tensor overload of run() to an impl.
template <class Impl, class Op>
struct device_run {
  template <class... Ts>
    requires(device_operands<Op, Ts...>())
  static void run(const Op& op, Ts&&... ts) {
    context& ctx = std::get<0>(std::tuple<Ts&...>(ts...)).ctx();
    stream s(ctx);
    record_split<Impl>(s, op, std::tuple<Ts&...>(ts...), std::index_sequence_for<Ts...>{});
    s.run();
  }
};

/// What every policy::vulkan implementation derives from: its op family's
/// entry (shape checks, then Self::compute(op, args)) with both run()
/// overload sets, host views and device tensors.
template <class Self, class Op, template <class, class> class Entry>
struct impl_base : Entry<Self, Op>, device_run<Self, Op> {
  using Entry<Self, Op>::run;
  using device_run<Self, Op>::run;
  static constexpr bool available = true;
};

template <class T>
inline constexpr bool vk_type = std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

/// Element strides of a dense tensor of dims d, 0 along extents of 1 (broadcast).
inline shape dense_strides_of(const shape& d) {
  shape st = row_major_strides(d);
  for (int i = 0; i < d.rank(); ++i)
    if (d[i] == 1) st[i] = 0;
  return st;
}
}  // namespace detail
}  // namespace kforge::vulkan
