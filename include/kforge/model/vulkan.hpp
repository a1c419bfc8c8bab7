// kforge/model/vulkan.hpp — the decoder on a Vulkan device: weights uploaded
// once as device tensors, activations and KV cache resident, every step
// recorded as ONE vulkan::stream (the upload of the step's token ids as an
// int32 device tensor, its ops from the embedding to the sampled token, the
// download of the logits and of that token), submitted in parts while it is
// recorded (below) and waited for once. The ids are
// checked on the host first (config_error); op::embedding checks them on the
// device as well, as it does any device-tensor ids.
//
//   vulkan::context ctx;
//   model::vulkan_session<half> s(ctx, c, w /*host weights*/, /*cache rows*/ 4096);
//   index_t next = s.step(prompt, logits);   // prefill: one stream
//   next = s.step({&next, 1}, logits);       // decode: one stream
//   s.times();                               // each op's GPU time (timestamps) of the last step
//
// The step's stream goes to the GPU in parts (vulkan::stream::flush): the
// first after 4 commands, then after 8, 16 and every 32, so the GPU runs the
// first ops while the host records the rest (submit_in_parts(false): one
// part, recorded whole before the GPU starts). profile(false) leaves the
// per-op timestamps out (times() then reports -1 s per op): a timestamp
// pair around every dispatch orders it after the one before, so
// independent dispatches (the K and V projections) no longer overlap.
// host() says where the step's time went: the host's recording, its wait
// for the GPU, and the GPU's span from its first command to its last.
//
// Policy: policy::vulkan<Knobs...> (default), or policy::autotune for its
// gemms and attention (the tuned config of the tensors' device); ops a policy
// lacks run on policy::vulkan<>. Weights and activations are held in the session's dtype
// on the device (vulkan::device_type_t: bf16 stays bf16, with f32 arithmetic
// in the kernels and bf16 tensor cores for the gemms where the device has
// them); f16 and bf16 sessions need 16-bit storage (vulkan::device_tensor
// refuses them with unsupported_error elsewhere). The stream times each
// dispatch (256 at most per recording: beyond that, stages report no time).
// A session is used from one thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kforge/model.hpp"
#include "kforge/vulkan.hpp"

namespace kforge::model {

/// A device tensor with the shape the program sees it with by default.
template <class D>
struct device_buffer {
  using value_type = D;
  /// The same kind of buffer of element type U (the program's int32 ids).
  template <class U>
  using rebind = device_buffer<U>;
  vulkan::device_tensor<D> t;
  shape dims;
  /// A quantized projection (weights.hpp): Wᵀ on the device; t is then empty.
  std::shared_ptr<const vulkan::quantized_tensor> q;
  device_buffer() = default;
  device_buffer(vulkan::context& ctx, shape d) : t(ctx, d), dims(d) {}
  bool present() const { return dims.rank() > 0; }
  bool quantized() const { return q != nullptr; }
  index_t numel() const { return present() ? dims.numel() : 0; }
};

template <class D>
vulkan::device_tensor<D>& tensor_of(shaped<device_buffer<D>> a) {
  if (a.dims.numel() != a.buf->numel())
    throw shape_error("kforge::model: a device buffer of shape " + a.buf->dims.str() + " seen as " + a.dims.str());
  if (!(a.buf->t.dims() == a.dims)) a.buf->t.reshape(a.dims);
  return a.buf->t;
}
template <class D>
const vulkan::device_tensor<D>& tensor_of(shaped<const device_buffer<D>> a) {
  if (!(a.buf->t.dims() == a.dims))
    throw shape_error("kforge::model: a weight of shape " + a.buf->t.dims().str() + " seen as " + a.dims.str());
  return a.buf->t;
}

template <class D>
const vulkan::quantized_tensor& tensor_of(quantized_weight<device_buffer<D>> w) {
  return *w.buf->q;
}

namespace detail {
/// What ran an op on the device, where the policy's name does not say it:
/// the gemm config policy::vulkan<Knobs...> picks for the call's shape, the
/// attention kernel.
template <class Policy>
struct device_knobs {
  template <class Op, class... V>
  static std::string of(vulkan::context&, const Op&, const V&...) {
    return Policy::name();
  }
};
template <class... K>
struct device_knobs<policy::vulkan<K...>> {
  template <class Op, class... V>
  static std::string of(vulkan::context& ctx, const Op& op, const V&... v) {
    using T = typename Op::value_type;
    const auto all = std::tie(v...);
    if constexpr (Op::name == std::string_view("gemm") &&
                  std::is_same_v<std::remove_cvref_t<std::tuple_element_t<1, std::tuple<V...>>>, vulkan::quantized_tensor>) {
      const index_t m = std::get<0>(all).dims()[0];
      const vulkan::quantized_tensor& w = std::get<1>(all);
      const std::string f = "gemm_quantized " + std::string(to_string(w.format()));
      if (m >= vulkan::quant_dense_rows && vulkan::quant_dense_fits(w, dtype_of<T>(), ctx.info()))
        return f + " dequantized, gemm " + vulkan::detail::policy_gemm<policy::vulkan<K...>>::of(ctx.info(), dtype_of<T>(), m, w.rows(), w.cols()).str();
      const auto cfg = vulkan::default_qgemv_config(m);
      return f + " wg " + std::to_string(cfg.wg) + " rows " + std::to_string(cfg.rows) + " bm " + std::to_string(cfg.bm);
    } else if constexpr (Op::name == std::string_view("gemm")) {
      const auto& a = std::get<0>(all).dims();
      const auto& b = std::get<1>(all).dims();
      return "gemm " + vulkan::knobs<K...>::gemm(ctx.info(), dtype_of<T>(), static_cast<std::uint64_t>(a[0]),
                                                 static_cast<std::uint64_t>(b[1]), static_cast<std::uint64_t>(a[1]))
                           .str();
    } else if constexpr (Op::name == std::string_view("attention")) {
      const auto& q = std::get<0>(all).dims();
      const auto& k = std::get<1>(all).dims();  // [B, L, Hkv, D]: the layout the block uses
      const vulkan::attention_dims a{q[0], q[2], k[2], q[1], op.kv_len >= 0 ? op.kv_len : k[1], q[3], q[3], op.causal, true};
      return "attention " + std::string(vulkan::to_string(vulkan::attention_kernel_for(ctx.info(), dtype_of<T>(), a,
                                                                                         vulkan::knobs<K...>::coopmat_mode)));
    } else {
      return "vulkan wg " + std::to_string(vulkan::knobs<K...>::row_wg);
    }
  }
};
}  // namespace detail

/// Records each op on the step's stream (vulkan::record), remembering which
/// of the stream's timed commands it recorded, and where asked, a download
/// of its (first) output (a comparison's candidate).
template <class Policy, class D>
struct device_executor {
  struct span {
    stage s;
    int layer;
    std::size_t begin, end;  ///< the op's commands among the stream's timings
  };
  struct capture {
    stage s;
    int layer;
    shape dims;
    const void* data;
    std::string knobs;
  };
  vulkan::stream* s = nullptr;
  std::vector<span>* spans = nullptr;
  std::vector<capture>* captures = nullptr;
  /// Commands after which the stream's recorded part is submitted (flush);
  /// doubles after each flush up to 32. 0: never (one part).
  std::size_t chunk = 0;

  template <class Op, class... A>
  void operator()(stage st, int layer, const Op& op, A&&... a) {
    call(st, layer, op, tensor_of(arg_of(a))...);
  }

 private:
  template <class Op, class... V>
  void call(stage st, int layer, const Op& op, V&... v) {
    const std::size_t b = s->dispatch_count() + s->copy_count();
    vulkan::record<op_policy_t<Policy, Op, policy::vulkan<>>>(*s, op, v...);
    if (spans) spans->push_back({st, layer, b, s->dispatch_count() + s->copy_count()});
    if (captures) {
      static_assert(std::is_same_v<op_operand_t<Op, Op::arity>, D>, "kforge::model: a captured output holds D");
      const auto& out = std::get<Op::arity>(std::tie(v...));
      captures->push_back({st, layer, out.dims(), out.record_download(*s),
                           detail::device_knobs<op_policy_t<Policy, Op, policy::vulkan<>>>::of(s->ctx(), op, v...)});
    }
    if (chunk && s->part_commands() >= chunk) {
      s->flush();
      chunk = std::min<std::size_t>(2 * chunk, 32);
    }
  }
};

/// How a vulkan_session runs one op in isolation (model::verify's isolated
/// check), as its steps do: the operands uploaded as device tensors of their
/// own element types, the op recorded with the session's policy
/// (vulkan::record) on a stream of its own, the outputs downloaded.
template <class Policy>
struct device_isolated {
  vulkan::context* ctx;
  template <class Op, class... V>
  void operator()(const Op& op, const V&... v) const {
    auto upload = [&](const auto& x) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, quantized_matrix>)
        return vulkan::quantized_tensor(*ctx, x);
      else
        return vulkan::device_tensor<typename std::remove_cvref_t<decltype(x)>::value_type>::from_host(*ctx, x);
    };
    auto ts = std::make_tuple(upload(v)...);
    vulkan::stream s(*ctx);
    std::apply([&](auto&... t) { vulkan::record<op_policy_t<Policy, Op, policy::vulkan<>>>(s, op, t...); }, ts);
    s.run();
    const auto views = std::tie(v...);
    [&]<std::size_t... O>(std::index_sequence<O...>) {
      (std::get<Op::arity + O>(ts).download(std::get<Op::arity + O>(views)), ...);
    }(std::make_index_sequence<op_outputs_v<Op>>{});
  }
};

/// The decoder on a Vulkan device (see the file's comment).
template <class T, class Policy = policy::vulkan<>>
class vulkan_session {
 public:
  using D = vulkan::device_type_t<T>;
  using buffer = device_buffer<D>;

  /// The weights are uploaded here; `w` is not read afterwards.
  vulkan_session(vulkan::context& ctx, const config& c, const weights<host_buffer<T>>& w, index_t cache_rows)
      : ctx_(&ctx), c_(c), s_(ctx) {
    c_.validate();
    check_rows(cache_rows);
    w_ = convert_weights<buffer>(w, [&](const std::string& name, const host_buffer<T>& b) { return upload(name, b); });
    start(cache_rows);
  }

  /// A checkpoint's weights (model/checkpoint.hpp), loaded one at a time and
  /// uploaded: the host holds one weight in T at a time, never the model.
  vulkan_session(vulkan::context& ctx, const checkpoint& ck, index_t cache_rows,
                 const memory_limit& limit = host_memory_limit())
      : ctx_(&ctx), c_(ck.cfg), s_(ctx) {
    c_.validate();
    check_rows(cache_rows);
    w_ = load_weights_as<T, buffer>(
        ck, [&](const std::string& name, host_buffer<T>&& b) { return upload(name, b); }, true, limit);
    start(cache_rows);
  }

  /// Forgets the cached tokens; the caches are zeroed (rows past the
  /// position are never read; zeroes keep whole-cache comparisons defined).
  /// Zeroed on the device (vkCmdFillBuffer, one submission): uploading
  /// zeros through staging cost ~20 ms of host time per reset on the H100 at
  /// llama3-8b's cache, which idled the GPU between timed prefills.
  void reset() {
    pos_ = 0;
    vulkan::stream z(*ctx_);
    std::vector<buffer*> odd;  // a size the fill cannot take (not a multiple of 4 bytes)
    for (auto* side : {&kv_.k, &kv_.v})
      for (auto& b : *side) {
        if (b.t.bytes() % 4 == 0) z.fill(b.t.ref(), b.t.bytes());
        else odd.push_back(&b);
      }
    z.run();
    if (odd.empty()) return;
    const std::vector<float> zeros(static_cast<std::size_t>(odd.front()->numel()), 0.0f);
    for (buffer* b : odd) b->t.upload(tensor_view<const float>(zeros.data(), b->dims));
  }

  /// One step (as host_model::step) of tokens `ids` (prefill: the prompt;
  /// decode: one token), recorded as one stream and submitted once: the ids
  /// (and positions) uploaded as int32 device tensors, the last token's
  /// logits and the greedy next token downloaded; returns that token.
  index_t step(std::span<const index_t> ids, tensor_view<T> logits, std::vector<stage_output>* captures = nullptr) {
    const index_t t = check_step(c_, pos_, ids, logits, kv_.rows);
    workspace<buffer>& ws = workspace_for(t);
    ids_.resize(static_cast<std::size_t>(2 * t));
    put_ids(c_, ids, pos_, ids_.data(), ids_.data() + t);
    s_.reset();
    const auto t0 = std::chrono::steady_clock::now();
    s_.time_dispatches(profile_);
    ws.ids.t.record_upload(s_, tensor_view<const std::int32_t>(ids_.data(), shape{t}));
    if (c_.learned_positions > 0) ws.positions.t.record_upload(s_, tensor_view<const std::int32_t>(ids_.data() + t, shape{t}));
    std::vector<typename device_executor<Policy, D>::span> spans;
    std::vector<typename device_executor<Policy, D>::capture> caps;
    device_executor<Policy, D> ex{&s_, &spans, captures ? &caps : nullptr, in_parts_ ? std::size_t{4} : 0};
    forward<D>(c_, w_, ws, kv_, pos_, ex);
    const void* out = ws.logits.t.record_download(s_);
    const void* token = ws.token.t.record_download(s_);
    const std::size_t submits = s_.submit_count();
    s_.submit();
    const auto t1 = std::chrono::steady_clock::now();
    s_.wait();
    const auto t2 = std::chrono::steady_clock::now();
    submissions_ = s_.submit_count() - submits;
    const std::optional<double> span_ms = s_.gpu_span_ms();
    host_ = {std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count(),
             span_ms ? std::optional<double>(*span_ms * 1e-3) : std::nullopt, s_.part_count()};
    vulkan::detail::unpack(static_cast<const D*>(out), logits.reshaped(shape{1, c_.vocab}));
    std::int32_t next = 0;
    std::memcpy(&next, token, sizeof next);
    const auto timed = s_.timings();
    times_.clear();
    for (const auto& sp : spans) {
      std::optional<double> ms = 0.0;
      for (std::size_t i = sp.begin; i < sp.end && ms; ++i) ms = timed[i].ms ? std::optional<double>(*ms + *timed[i].ms) : std::nullopt;
      times_.push_back({sp.s, sp.layer, ms ? std::optional<double>(*ms * 1e-3) : std::nullopt});
    }
    if (captures)
      for (const auto& c : caps) {
        std::vector<float> v(static_cast<std::size_t>(c.dims.numel()));
        const D* p = static_cast<const D*>(c.data);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(p[i]);
        captures->push_back({c.s, c.layer, c.dims, std::move(v), c.knobs});
      }
    pos_ += t;
    return next;
  }

  index_t position() const { return pos_; }
  const config& cfg() const { return c_; }
  vulkan::context& ctx() const { return *ctx_; }
  /// Runs one op on device tensors as this session's steps do (model::verify).
  device_isolated<Policy> isolated() const { return {ctx_}; }
  /// Each op call of the last step and the GPU time of its dispatches.
  const std::vector<stage_time>& times() const { return times_; }
  /// The last step's stream: its dispatches, barriers and copies.
  const vulkan::stream& stream() const { return s_; }
  /// Submissions of the last step (one; its parts: host().parts).
  std::size_t submissions() const { return submissions_; }

  /// Whether steps time each op with GPU timestamps (default: yes).
  void profile(bool on) { profile_ = on; }
  bool profiling() const { return profile_; }
  /// Whether a step's stream is submitted in parts while it is recorded
  /// (default: yes) or once, recorded whole.
  void submit_in_parts(bool on) { in_parts_ = on; }

  /// The host's side of the last step.
  struct host_time {
    double record_s = 0;  ///< from the step's start to its last part submitted (ids, recording, submits)
    double wait_s = 0;    ///< from then until the GPU finished
    std::optional<double> gpu_s;  ///< the GPU's span, first command to last (vulkan::stream::gpu_span_ms); none: no timestamps
    std::size_t parts = 0;
  };
  const host_time& host() const { return host_; }

 private:
  static void check_rows(index_t cache_rows) {
    if (cache_rows < 1) throw config_error("kforge::model: the KV cache needs at least one row, got " + std::to_string(cache_rows));
  }
  /// One weight on the device: dense in D, or a quantized tensor.
  buffer upload(const std::string& name, const host_buffer<T>& b) {
    vulkan::context& ctx = *ctx_;
    if (b.quantized()) {
      buffer d;
      d.dims = b.dims;
      d.q = std::make_shared<const vulkan::quantized_tensor>(ctx, *b.q);
      return d;
    }
    const std::uint64_t bytes = static_cast<std::uint64_t>(b.numel()) * sizeof(D);
    if (bytes > ctx.info().max_storage_buffer_range)
      throw unsupported_error("kforge::model: " + name + " " + b.dims.str() + " is " + std::to_string(bytes) + " bytes as " +
                              std::string(to_string(dtype_of<D>())) + "; device '" + ctx.info().name + "' binds at most " +
                              std::to_string(ctx.info().max_storage_buffer_range) +
                              " bytes (maxStorageBufferRange): a smaller dtype or vocabulary, or another device");
    buffer d(ctx, b.dims);
    d.t.upload(b.view());
    return d;
  }
  void start(index_t cache_rows) {
    kv_ = make_cache<buffer>(c_, cache_rows, [&](shape s) { return buffer(*ctx_, s); });
    reset();
  }
  workspace<buffer>& workspace_for(index_t t) {
    auto it = ws_.find(t);
    if (it == ws_.end()) {
      it = ws_.emplace(t, make_workspace<buffer>(c_, t, [&](shape s) { return buffer(*ctx_, s); },
                                                 [&](shape s) { return device_buffer<std::int32_t>(*ctx_, s); }))
               .first;
      const std::vector<float> sel = select_last_row(t);
      it->second.sel.t.upload(tensor_view<const float>(sel.data(), shape{1, t}));
    }
    return it->second;
  }

  vulkan::context* ctx_;
  config c_;
  weights<buffer> w_;
  std::map<index_t, workspace<buffer>> ws_;
  kv_cache<buffer> kv_;
  index_t pos_ = 0;
  vulkan::stream s_;
  std::vector<std::int32_t> ids_;  ///< the step's token ids, then its positions
  std::vector<stage_time> times_;
  std::size_t submissions_ = 0;
  bool profile_ = true, in_parts_ = true;
  host_time host_;
};

}  // namespace kforge::model

// A Vulkan session's step and model::verify of it for each dtype under
// policy P, compiled once for kforge's own executables (kforge_instances; see
// kforge/validate/execute.hpp).
#define KFORGE_MODEL_VULKAN_INSTANCE(EXTERN, P, T)                                                                 \
  EXTERN template void forward<vulkan::device_type_t<T>, device_buffer<vulkan::device_type_t<T>>,                 \
                               device_executor<P, vulkan::device_type_t<T>>>(                                      \
      const config&, const weights<device_buffer<vulkan::device_type_t<T>>>&,                                      \
      workspace<device_buffer<vulkan::device_type_t<T>>>&, kv_cache<device_buffer<vulkan::device_type_t<T>>>&,     \
      index_t, device_executor<P, vulkan::device_type_t<T>>&);                                                     \
  EXTERN template verification verify<T, vulkan_session<T, P>>(const config&, const weights<host_buffer<T>>&,     \
                                                              vulkan_session<T, P>&, index_t, index_t,             \
                                                              const std::string&, const verify_options&);
#define KFORGE_MODEL_VULKAN_INSTANCES(EXTERN, P) \
  KFORGE_MODEL_VULKAN_INSTANCE(EXTERN, P, float) \
  KFORGE_MODEL_VULKAN_INSTANCE(EXTERN, P, half)  \
  KFORGE_MODEL_VULKAN_INSTANCE(EXTERN, P, bfloat16)
#if defined(KFORGE_EXTERN_INSTANCES)
namespace kforge::model {
KFORGE_MODEL_VULKAN_INSTANCES(extern, policy::vulkan<>)
}  // namespace kforge::model
#endif
