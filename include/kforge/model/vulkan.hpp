// kforge/model/vulkan.hpp — the decoder on a Vulkan device: weights uploaded
// once as device tensors, activations and KV cache resident, every step
// recorded as ONE vulkan::stream (its ops, the upload of the step's hidden
// states and the download of the logits) and submitted once.
//
//   vulkan::context ctx;
//   model::vulkan_session<half> s(ctx, c, w /*host weights*/, /*cache rows*/ 4096);
//   s.step(prompt, logits);     // prefill: one submission
//   s.step(next, logits);       // decode: one submission
//   s.times();                  // each op's GPU time (timestamps) of the last step
//
// Policy: policy::vulkan<Knobs...> (default), or policy::autotune for its
// gemms (the tuned config of the tensors' device); ops a policy lacks run on
// policy::vulkan<>. Weights and activations are held in the session's dtype
// on the device (vulkan::device_type_t: bf16 stays bf16, with f32
// arithmetic in the kernels and bf16 tensor cores for the gemms where the
// device has them; a device without 16-bit storage refuses bf16 and f16
// device tensors with unsupported_error). The stream times each dispatch (256 at most per
// recording: beyond that, stages report no time). A session is used from one
// thread.
#pragma once

#include <bit>
#include <chrono>
#include <map>
#include <tuple>
#include <type_traits>
#include <string>
#include <vector>

#include "kforge/model.hpp"
#include "kforge/vulkan.hpp"

namespace kforge::model {

/// A device tensor with the shape the program sees it with by default.
template <class D>
struct device_buffer {
  using value_type = D;
  vulkan::device_tensor<D> t;
  shape dims;
  device_buffer() = default;
  device_buffer(vulkan::context& ctx, shape d) : t(ctx, d), dims(d) {}
  bool present() const { return dims.rank() > 0; }
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
    if constexpr (Op::name == std::string_view("gemm")) {
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
/// of its output (a comparison's candidate).
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
      const auto& out = std::get<sizeof...(V) - 1>(std::tie(v...));
      captures->push_back({st, layer, out.dims(), out.record_download(*s),
                           detail::device_knobs<op_policy_t<Policy, Op, policy::vulkan<>>>::of(s->ctx(), op, v...)});
    }
  }
};

namespace detail {
/// Op<T, R...> as Op<D, R...> (a bf16 call's descriptor for f32 device tensors).
template <class Op, class D>
struct rebind_op;
template <template <class, class...> class O, class T, class... R, class D>
struct rebind_op<O<T, R...>, D> {
  using type = O<D, R...>;
};
}  // namespace detail

/// How a vulkan_session runs one op in isolation (model::verify's isolated
/// check), as its steps do: the operands uploaded as device tensors, the op
/// recorded with the session's policy (vulkan::record) on a stream of its
/// own, the output downloaded.
template <class Policy, class D>
struct device_isolated {
  vulkan::context* ctx;
  template <class Op, class... V>
  void operator()(const Op& op, const V&... v) const {
    using DOp = typename detail::rebind_op<Op, D>::type;
    // Descriptors hold no T-dependent data (their members are parameters), so
    // the bf16 call's descriptor is the f32 one's bit for bit.
    static_assert(sizeof(DOp) == sizeof(Op) && std::is_trivially_copyable_v<Op>);
    const DOp dop = std::bit_cast<DOp>(op);
    auto ts = std::make_tuple(vulkan::device_tensor<D>::from_host(*ctx, v)...);
    vulkan::stream s(*ctx);
    std::apply([&](auto&... t) { vulkan::record<op_policy_t<Policy, DOp, policy::vulkan<>>>(s, dop, t...); }, ts);
    s.run();
    std::get<sizeof...(V) - 1>(ts).download(std::get<sizeof...(V) - 1>(std::tie(v...)));
  }
};

/// The decoder on a Vulkan device (see the file's comment).
template <class T, class Policy = policy::vulkan<>>
class vulkan_session {
 public:
  using D = vulkan::device_type_t<T>;
  using buffer = device_buffer<D>;

  /// `w` must outlive the session: step_tokens() gathers embedding rows
  /// from it (model::embed_rows) until op::embedding runs on the device.
  vulkan_session(vulkan::context& ctx, const config& c, const weights<host_buffer<T>>& w, index_t cache_rows)
      : ctx_(&ctx), c_(c), host_w_(&w), s_(ctx) {
    c_.validate();
    if (cache_rows < 1) throw config_error("kforge::model: the KV cache needs at least one row, got " + std::to_string(cache_rows));
    w_ = convert_weights<buffer>(w, [&](const std::string& name, const host_buffer<T>& b) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(b.numel()) * sizeof(D);
      if (bytes > ctx.info().max_storage_buffer_range)
        throw unsupported_error("kforge::model: " + name + " " + b.dims.str() + " is " + std::to_string(bytes) + " bytes as " +
                                std::string(to_string(dtype_of<D>())) + "; device '" + ctx.info().name + "' binds at most " +
                                std::to_string(ctx.info().max_storage_buffer_range) +
                                " bytes (maxStorageBufferRange): a smaller dtype or vocabulary, or another device");
      buffer d(ctx, b.dims);
      d.t.upload(b.view());
      return d;
    });
    kv_ = make_cache<buffer>(c_, cache_rows, [&](shape s) { return buffer(ctx, s); });
    reset();
  }

  /// Forgets the cached tokens; the caches are zeroed (rows past the
  /// position are never read; zeroes keep whole-cache comparisons defined).
  void reset() {
    pos_ = 0;
    const std::vector<float> zeros(static_cast<std::size_t>(kv_.k.empty() ? 0 : kv_.k[0].numel()), 0.0f);
    for (auto* side : {&kv_.k, &kv_.v})
      for (auto& b : *side) b.t.upload(tensor_view<const float>(zeros.data(), b.dims));
  }

  /// One step (as host_model::step): x [t, D] → the last token's logits,
  /// recorded as one stream and submitted once.
  void step(tensor_view<const T> x, tensor_view<T> logits, std::vector<stage_output>* captures = nullptr) {
    const index_t t = check_step(c_, pos_, x, logits, kv_.rows);
    workspace<buffer>& ws = workspace_for(t);
    s_.reset();
    ws.x.t.record_upload(s_, x);
    std::vector<typename device_executor<Policy, D>::span> spans;
    std::vector<typename device_executor<Policy, D>::capture> caps;
    device_executor<Policy, D> ex{&s_, &spans, captures ? &caps : nullptr};
    forward<D>(c_, w_, ws, kv_, pos_, ex);
    const void* out = ws.logits.t.record_download(s_);
    const std::size_t submits = s_.submit_count();
    s_.run();
    submissions_ = s_.submit_count() - submits;
    vulkan::detail::unpack(static_cast<const D*>(out), logits.reshaped(shape{1, c_.vocab}));
    const auto timed = s_.timings();
    times_.clear();
    for (const auto& sp : spans) {
      double ms = 0;
      for (std::size_t i = sp.begin; i < sp.end && ms >= 0; ++i) ms = timed[i].ms < 0 ? -1 : ms + timed[i].ms;
      times_.push_back({sp.s, sp.layer, ms < 0 ? -1.0 : ms * 1e-3});
    }
    if (captures)
      for (const auto& c : caps) {
        std::vector<float> v(static_cast<std::size_t>(c.dims.numel()));
        const D* p = static_cast<const D*>(c.data);
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(p[i]);
        captures->push_back({c.s, c.layer, c.dims, std::move(v), c.knobs});
      }
    pos_ += t;
  }

  /// A step of tokens `ids` (prefill: the prompt; decode: one token); their
  /// hidden states are uploaded in the step's stream.
  void step_tokens(std::span<const index_t> ids, tensor_view<T> logits, std::vector<stage_output>* captures = nullptr) {
    const host_buffer<T> x = embed_rows(c_, *host_w_, ids, pos_);
    step(x.view(), logits, captures);
  }

  index_t position() const { return pos_; }
  const config& cfg() const { return c_; }
  vulkan::context& ctx() const { return *ctx_; }
  /// Runs one op on device tensors as this session's steps do (model::verify).
  device_isolated<Policy, D> isolated() const { return {ctx_}; }
  /// Each op call of the last step and the GPU time of its dispatches.
  const std::vector<stage_time>& times() const { return times_; }
  /// The last step's stream: its dispatches, barriers and copies.
  const vulkan::stream& stream() const { return s_; }
  /// Submissions of the last step (one).
  std::size_t submissions() const { return submissions_; }

 private:
  workspace<buffer>& workspace_for(index_t t) {
    auto it = ws_.find(t);
    if (it == ws_.end()) {
      it = ws_.emplace(t, make_workspace<buffer>(c_, t, [&](shape s) { return buffer(*ctx_, s); })).first;
      const std::vector<float> sel = select_last_row(t);
      it->second.sel.t.upload(tensor_view<const float>(sel.data(), shape{1, t}));
    }
    return it->second;
  }

  vulkan::context* ctx_;
  config c_;
  const weights<host_buffer<T>>* host_w_;
  weights<buffer> w_;
  std::map<index_t, workspace<buffer>> ws_;
  kv_cache<buffer> kv_;
  index_t pos_ = 0;
  vulkan::stream s_;
  std::vector<stage_time> times_;
  std::size_t submissions_ = 0;
};

}  // namespace kforge::model
