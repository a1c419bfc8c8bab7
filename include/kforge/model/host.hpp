// kforge/model/host.hpp — the decoder on host data: every op through
// kforge::run<Policy> on views of buffers allocated once.
//
//   auto c = model::preset("tiny");
//   auto w = model::random_weights<float>(c);
//   model::host_session<float, policy::threaded<>> s(c, w, /*cache rows*/ 64);
//   index_t next = s.step(prompt /*T token ids*/, logits /*[1, V]*/);   // prefill: T tokens from an empty cache
//   next = s.step({&next, 1}, logits);                                  // decode: one token against the cache
//
// A step takes token ids and returns the greedy next token: the embedding
// (op::embedding) and the argmax of the logits (op::topk, k = 1) are stages
// of the program like every other op. A policy that lacks an op
// (policy::autotune has gemm and attention only) runs that op on policy::threaded<>, what
// autotune itself falls back to on the CPU (op_policy_t). Buffers —
// activations per step length, the KV cache — are allocated on first use and
// kept: a step allocates nothing, and the CPU kernels keep their scratch per
// thread. Every op's wall time is recorded per step (times()). bf16 runs in
// bf16 storage like every CPU op (f32 arithmetic).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kforge/core/dispatch.hpp"
#include "kforge/model/block.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::model {

/// The policy an op runs on under P: P where it implements the op, else Fallback.
template <class P, class Op, class Fallback>
using op_policy_t = std::conditional_t<supports<P, Op>, P, Fallback>;

/// One op call of a step and its time: host wall time, or the GPU time of
/// its dispatches (none where the device did not time them: an unprofiled
/// step, no timestamps, or a recording past the stream's timestamps).
struct stage_time {
  stage s;
  int layer;
  std::optional<double> seconds;
};

/// One op call's output after the call, as float, for comparisons (an op
/// with several outputs: its first, topk's values); `knobs` says what ran it
/// where the executor knows more than the policy's name (the Vulkan gemm's
/// config).
struct stage_output {
  stage s;
  int layer;
  shape dims;
  std::vector<float> values;
  std::string knobs;
};

template <class T>
tensor_view<T> view_of(shaped<host_buffer<T>> a) {
  if (a.dims.numel() != a.buf->numel())
    throw shape_error("kforge::model: a buffer of shape " + a.buf->dims.str() + " seen as " + a.dims.str());
  return tensor_view<T>(a.buf->data.data(), a.dims);
}
template <class T>
tensor_view<const T> view_of(shaped<const host_buffer<T>> a) {
  if (a.dims.numel() != a.buf->numel())
    throw shape_error("kforge::model: a buffer of shape " + a.buf->dims.str() + " seen as " + a.dims.str());
  return tensor_view<const T>(a.buf->data.data(), a.dims);
}

template <class T>
const quantized_matrix& view_of(quantized_weight<host_buffer<T>> q) {
  return *q.buf->q;
}

/// A dense view's elements as float.
template <class T>
std::vector<float> to_floats(const tensor_view<T>& v) {
  std::vector<float> out(static_cast<std::size_t>(v.numel()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(v.data[i]);
  return out;
}

/// Runs each op with kforge::run on Policy (or the fallback), timing it.
template <class Policy, class T, class Fallback = policy::threaded<>>
struct host_executor {
  std::vector<stage_time>* times = nullptr;
  std::vector<stage_output>* captures = nullptr;
  template <class Op, class... A>
  void operator()(stage s, int layer, const Op& op, A&&... a) {
    call(s, layer, op, view_of(arg_of(a))...);
  }

 private:
  template <class Op, class... V>
  void call(stage s, int layer, const Op& op, const V&... v) {
    const auto t0 = std::chrono::steady_clock::now();
    run<op_policy_t<Policy, Op, Fallback>>(op, v...);
    if (times) times->push_back({s, layer, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
    if (captures) {
      const auto& out = std::get<Op::arity>(std::tie(v...));
      captures->push_back({s, layer, out.dims, to_floats(out), {}});
    }
  }
};

/// How a host session's candidate runs one op in isolation: kforge::run on
/// the views (host_session::isolated(),
/// model::verify's isolated check).
template <class Policy, class Fallback = policy::threaded<>>
struct host_isolated {
  template <class Op, class... V>
  void operator()(const Op& op, const V&... v) const {
    run<op_policy_t<Policy, Op, Fallback>>(op, v...);
  }
};

/// Throws config_error unless a step of t tokens can follow `pos` cached
/// ones in a cache of `rows` (see block.hpp on prefill after decode).
inline void check_step(const config& c, index_t pos, index_t t, index_t rows) {
  if (t < 1) throw config_error("kforge::model: a step needs at least one token, got " + std::to_string(t));
  if (pos + t > rows)
    throw config_error("kforge::model: " + std::to_string(pos) + " cached + " + std::to_string(t) + " new tokens exceed the KV cache of " +
                       std::to_string(rows) + " rows");
  if (t > 1 && pos > 0)
    throw config_error("kforge::model: a prefill of " + std::to_string(t) + " tokens after " + std::to_string(pos) +
                       " cached ones needs bottom-right causal attention, which op::attention does not have; "
                       "prefill from an empty cache (reset()), then decode one token per step");
  if (c.window > 0 && pos + t > c.window)
    throw config_error("kforge::model: position " + std::to_string(pos + t - 1) + " is past the sliding window of " +
                       std::to_string(c.window) + " positions, within which kforge's dense attention is the model's own");
  if (c.learned_positions > 0 && pos + t > c.learned_positions)
    throw config_error("kforge::model: position " + std::to_string(pos + t - 1) + " is past the learned table of " +
                       std::to_string(c.learned_positions) + " positions");
}

/// check_step for a step's tokens and logits [1, V] (or [V]), shape_error
/// where the logits do not fit; returns t.
template <class L>
index_t check_step(const config& c, index_t pos, std::span<const index_t> ids, const tensor_view<L>& logits, index_t rows) {
  if (logits.numel() != c.vocab)
    throw shape_error("kforge::model: logits have shape " + logits.dims.str() + ", expected [1, " + std::to_string(c.vocab) + "]");
  const index_t t = static_cast<index_t>(ids.size());
  check_step(c, pos, t, rows);
  return t;
}

/// Writes a step's tokens as op::embedding's int32 ids to `tokens` and, for
/// a model with learned positions, their positions pos .. pos + t - 1 (the
/// position table's rows) to `positions`; config_error for a token outside
/// [0, vocab), before any op runs.
inline void put_ids(const config& c, std::span<const index_t> ids, index_t pos, std::int32_t* tokens, std::int32_t* positions) {
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= c.vocab)
      throw config_error("kforge::model: token id " + std::to_string(ids[i]) + " is outside [0, " + std::to_string(c.vocab) + ")");
    tokens[i] = static_cast<std::int32_t>(ids[i]);
    if (c.learned_positions > 0) positions[i] = static_cast<std::int32_t>(pos + static_cast<index_t>(i));
  }
}

/// The model's state on host buffers: the weights it reads (not owned), the
/// activations per step length, the KV cache and the position. step() takes
/// any executor; host_session binds one.
template <class T>
class host_model {
 public:
  using buffer = host_buffer<T>;

  host_model(const config& c, const weights<buffer>& w, index_t cache_rows) : c_(c), w_(&w) {
    c_.validate();
    if (cache_rows < 1) throw config_error("kforge::model: the KV cache needs at least one row, got " + std::to_string(cache_rows));
    if (static_cast<index_t>(w.layers.size()) != c_.layers || w.embed.dims != shape{c_.vocab, c_.hidden})
      throw config_error("kforge::model: the weights have " + std::to_string(w.layers.size()) + " layers and an embedding of " +
                         w.embed.dims.str() + "; config '" + c_.name + "' needs " + std::to_string(c_.layers) + " and [" +
                         std::to_string(c_.vocab) + "x" + std::to_string(c_.hidden) + "]");
    kv_ = make_cache<buffer>(c_, cache_rows, [](shape s) { return buffer(s); });
  }

  const config& cfg() const { return c_; }
  index_t position() const { return pos_; }
  index_t cache_rows() const { return kv_.rows; }
  const kv_cache<buffer>& cache() const { return kv_; }

  /// Forgets the cached tokens (the next step is a prefill at position 0).
  void reset() {
    pos_ = 0;
    for (auto* side : {&kv_.k, &kv_.v})
      for (auto& b : *side) std::fill(b.data.begin(), b.data.end(), T(0.0f));
  }

  /// Runs tokens `ids` at the next positions; writes the last token's
  /// logits [1, V] (or [V]) and returns the greedy next token (their argmax).
  template <class Ex>
  index_t step(std::span<const index_t> ids, tensor_view<T> logits, Ex& ex) {
    const index_t t = check_step(c_, pos_, ids, logits, kv_.rows);
    workspace<buffer>& ws = workspace_for(t);
    put_ids(c_, ids, pos_, ws.ids.data.data(), ws.positions.data.data());
    forward<T>(c_, *w_, ws, kv_, pos_, ex);
    const T* src = ws.logits.data.data();
    if (logits.rank() == 1)
      for (index_t v = 0; v < c_.vocab; ++v) logits(v) = src[v];
    else
      for (index_t v = 0; v < c_.vocab; ++v) logits(0, v) = src[v];
    pos_ += t;
    return ws.token.data[0];
  }

  /// The weights the model reads.
  const weights<buffer>& params() const { return *w_; }

  /// The buffers of a step of t tokens (allocated on first use).
  workspace<buffer>& workspace_for(index_t t) {
    auto it = ws_.find(t);
    if (it == ws_.end()) {
      it = ws_.emplace(t, make_workspace<buffer>(c_, t, [](shape s) { return buffer(s); },
                                                 [](shape s) { return host_buffer<std::int32_t>(s); }))
               .first;
      const std::vector<float> sel = select_last_row(t);
      for (std::size_t i = 0; i < sel.size(); ++i) it->second.sel.data[i] = T(sel[i]);
    }
    return it->second;
  }

 private:
  config c_;
  const weights<buffer>* w_;
  std::map<index_t, workspace<buffer>> ws_;
  kv_cache<buffer> kv_;
  index_t pos_ = 0;
};

/// host_model run on Policy: step() records each op's wall time (times()),
/// and its outputs where asked (a comparison's candidate).
template <class T, class Policy>
class host_session {
 public:
  host_session(const config& c, const weights<host_buffer<T>>& w, index_t cache_rows) : m_(c, w, cache_rows) {}

  /// A step of tokens `ids` (prefill: the prompt; decode: one token):
  /// writes the last one's logits, returns the greedy next token.
  index_t step(std::span<const index_t> ids, tensor_view<T> logits, std::vector<stage_output>* captures = nullptr) {
    times_.clear();
    host_executor<Policy, T> ex{&times_, captures};
    return m_.step(ids, logits, ex);
  }
  void reset() { m_.reset(); }
  /// Runs one op as this session does (model::verify's isolated check).
  auto isolated() const { return host_isolated<Policy>{}; }
  index_t position() const { return m_.position(); }
  const config& cfg() const { return m_.cfg(); }
  /// Each op call of the last step, in order.
  const std::vector<stage_time>& times() const { return times_; }
  host_model<T>& model() { return m_; }

 private:
  host_model<T> m_;
  std::vector<stage_time> times_;
};

}  // namespace kforge::model

// A host session's step for each dtype under policy P, compiled once for
// kforge's own executables (kforge_instances; see kforge/validate/execute.hpp).
#define KFORGE_MODEL_FORWARD_INSTANCE(EXTERN, P, T)                                                                 \
  EXTERN template void forward<T, host_buffer<T>, host_executor<P, T>>(                                             \
      const config&, const weights<host_buffer<T>>&, workspace<host_buffer<T>>&, kv_cache<host_buffer<T>>&, index_t, \
      host_executor<P, T>&);
#define KFORGE_MODEL_FORWARD_INSTANCES(EXTERN, P) \
  KFORGE_MODEL_FORWARD_INSTANCE(EXTERN, P, float) \
  KFORGE_MODEL_FORWARD_INSTANCE(EXTERN, P, half)  \
  KFORGE_MODEL_FORWARD_INSTANCE(EXTERN, P, bfloat16)
#if defined(KFORGE_EXTERN_INSTANCES)
namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(extern, policy::eigen)
KFORGE_MODEL_FORWARD_INSTANCES(extern, policy::blocked<>)
KFORGE_MODEL_FORWARD_INSTANCES(extern, policy::threaded<>)
#if defined(KFORGE_HAS_TUNE)
KFORGE_MODEL_FORWARD_INSTANCES(extern, policy::autotune)
#endif
}  // namespace kforge::model
#endif
