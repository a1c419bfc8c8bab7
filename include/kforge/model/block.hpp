// kforge/model/block.hpp — the decoder as one program of kforge ops, written
// once for every kind of buffer and every policy.
//
// forward<T>(config, weights, workspace, cache, pos, ex) runs the `t` tokens
// whose ids are in workspace.ids, at positions [pos, pos + t), from their
// embedding through every block and the head to the greedy choice of the
// next token, calling
//
//     ex(stage, layer, op, operands...)           inputs first, then the output(s)
//
// once per op. The executor decides what a call is: kforge::run<Policy> on
// host views (model/host.hpp), vulkan::record<Policy> on device tensors into
// the step's one stream (model/vulkan.hpp), or the reference plus a candidate
// and a comparison (model/verify.hpp). There are no other kernels: every
// number the model computes comes from one of these calls. Operands are
// buffers (`Buf&`, seen with their own dims) or shaped<Buf> (the same storage
// with another shape of equal size: a [t, H·hd] projection read as attention's
// [1, t, H, hd]); ids and the chosen token are buffers of std::int32_t
// (id_buffer_t<Buf>).
//
// One step (stage names as reports print them; layer -1 for the stages
// outside the blocks). The embedding:
//   embed             op::embedding: the ids' rows of the embedding table     → x [t, D]
//                     (with learned positions: → xn, then)
//   pos_embed         op::embedding: rows pos .. pos + t - 1 of the position table (ids in workspace.positions) → pos_rows
//   embed+pos         op::binary add: xn + pos_rows                           → x
// per layer:
//   attn_norm         rms_norm / layer_norm of x                    → xn
//   q_proj, k_proj, v_proj   xn·W (+ b)                              → q [t, H·hd], k, v [t, Hkv·hd]
//   rope_q, rope_k    op::rope at offset pos (config.rope)           → qr, kr
//   k_append, v_append   op::kv_append at pos into the layer's cache [1, Lmax, Hkv, hd]
//   attention         op::attention over the cache's first pos + t keys (kv_len), [B,S,H,D] layout:
//                     causal when t > 1 (prefill from an empty cache), all keys when t = 1 (decode)
//   o_proj+residual   x += attn·Wo (+ b): the gemm's beta = 1, the residual add in its write-back
//                     (every projection and the LM head: a quantized B where the weights are quantized)
//   mlp_norm          → xn
//   up_proj           gated: xn·[Wg | Wu] → [t, 2F];  plain: act(xn·W1 + b1) in the epilogue → [t, F]
//   gated             act(gate) · up → [t, F] (op::gated; gated MLPs only)
//   down_proj+residual   x += h·W2 (+ b), beta = 1
// then the head:
//   select_last       the last token's row of x, as the gemm e_lastᵀ·x with a one-hot row (t > 1 only; exact:
//                     one product by 1, the rest by 0); a dense device tensor has no row views, and the head
//                     runs on one row, not t (2·t·D·V flops saved: the LM head of 2048 tokens of Llama 3 is 2 TFLOP)
//   final_norm, lm_head   → logits [1, V]
//   sample            op::topk with k = 1 (argmax: the first of equal logits, NaN above every number)
//                     → top [1, 1] (the largest logit) and token [1, 1] (its index, the greedy next token)
//
// Prefill with tokens already cached (t > 1 at pos > 0) would need
// bottom-right causal masking, which op::attention does not have: sessions
// refuse it (config_error).
#pragma once

#include <cstdint>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kforge/model/weights.hpp"
#include "kforge/ops/ops.hpp"

namespace kforge::model {

enum class stage : std::uint8_t {
  embed,
  pos_embed,
  embed_pos,
  attn_norm,
  q_proj,
  k_proj,
  v_proj,
  rope_q,
  rope_k,
  k_append,
  v_append,
  attention,
  o_proj,
  mlp_norm,
  up_proj,
  gated,
  down_proj,
  select_last,
  final_norm,
  lm_head,
  sample,
};

constexpr std::string_view to_string(stage s) {
  switch (s) {
    case stage::embed: return "embed";
    case stage::pos_embed: return "pos_embed";
    case stage::embed_pos: return "embed+pos";
    case stage::attn_norm: return "attn_norm";
    case stage::q_proj: return "q_proj";
    case stage::k_proj: return "k_proj";
    case stage::v_proj: return "v_proj";
    case stage::rope_q: return "rope_q";
    case stage::rope_k: return "rope_k";
    case stage::k_append: return "k_append";
    case stage::v_append: return "v_append";
    case stage::attention: return "attention";
    case stage::o_proj: return "o_proj+residual";
    case stage::mlp_norm: return "mlp_norm";
    case stage::up_proj: return "up_proj";
    case stage::gated: return "gated";
    case stage::down_proj: return "down_proj+residual";
    case stage::select_last: return "select_last";
    case stage::final_norm: return "final_norm";
    case stage::lm_head: return "lm_head";
    case stage::sample: return "sample";
  }
  return "?";
}

/// Whether a stage (of layer -1) comes before the blocks (the embedding)
/// rather than after them (the head).
constexpr bool in_embedding(stage s) { return s == stage::embed || s == stage::pos_embed || s == stage::embed_pos; }

/// A buffer seen with another shape of the same number of elements.
template <class Buf>
struct shaped {
  Buf* buf;
  shape dims;
};
template <class B>
inline constexpr bool is_shaped_v = false;
template <class B>
inline constexpr bool is_shaped_v<shaped<B>> = true;
/// A quantized weight (weights.hpp: quantize_weights) as a gemm's B: the
/// executors pass the buffer's quantized form (host: the quantized_matrix;
/// device: the vulkan::quantized_tensor) where a dense B would go.
template <class Buf>
struct quantized_weight {
  const Buf* buf;
};
template <class B>
inline constexpr bool is_quantized_weight_v = false;
template <class B>
inline constexpr bool is_quantized_weight_v<quantized_weight<B>> = true;

template <class Buf>
  requires(!is_shaped_v<std::remove_const_t<Buf>> && !is_quantized_weight_v<std::remove_const_t<Buf>>)
shaped<Buf> arg_of(Buf& b) {
  return {&b, b.dims};
}
template <class Buf>
shaped<Buf> arg_of(shaped<Buf> s) {
  return s;
}
template <class Buf>
quantized_weight<Buf> arg_of(quantized_weight<Buf> q) {
  return q;
}

/// The kind of buffer Buf is, holding std::int32_t: the program's ids.
template <class Buf>
using id_buffer_t = typename Buf::template rebind<std::int32_t>;

/// The activations of a step of `tokens` tokens (allocated once per length
/// and reused: a step allocates nothing).
template <class Buf>
struct workspace {
  using ids_type = id_buffer_t<Buf>;
  index_t tokens = 0;
  ids_type ids;        ///< [t]: the tokens (the session writes them; embed)
  ids_type positions;  ///< [t]: pos .. pos + t - 1 (learned positions only; the session writes them)
  Buf pos_rows;        ///< [t, D] (learned positions only)
  Buf x, xn, q, k, v, qr, kr, attn, up, act;
  Buf sel;            ///< [1, t]: one-hot on the last row (select_last)
  Buf last, lastn;    ///< [1, D]
  Buf logits;         ///< [1, V]
  Buf top;            ///< [1, 1]: the largest logit (sample)
  ids_type token;     ///< [1, 1]: its index, the greedy next token (sample)
};

/// Each layer's K and V cache, [1, rows, Hkv, hd].
template <class Buf>
struct kv_cache {
  index_t rows = 0;
  std::vector<Buf> k, v;
};

/// The one-hot row select_last multiplies by.
inline std::vector<float> select_last_row(index_t t) {
  std::vector<float> s(static_cast<std::size_t>(t), 0.0f);
  if (t > 0) s.back() = 1.0f;
  return s;
}

/// Allocates a step's buffers; make(shape) -> Buf, make_ids(shape) ->
/// id_buffer_t<Buf>. `sel` is left to the caller to fill with
/// select_last_row(t), the ids to each step.
template <class Buf, class Make, class MakeIds>
workspace<Buf> make_workspace(const config& c, index_t t, Make&& make, MakeIds&& make_ids) {
  workspace<Buf> w;
  w.tokens = t;
  w.ids = make_ids(shape{t});
  if (c.learned_positions > 0) {
    w.positions = make_ids(shape{t});
    w.pos_rows = make(shape{t, c.hidden});
  }
  w.x = make(shape{t, c.hidden});
  w.xn = make(shape{t, c.hidden});
  w.q = make(shape{t, c.q_dim()});
  w.k = make(shape{t, c.kv_dim()});
  w.v = make(shape{t, c.kv_dim()});
  if (c.rope) {
    w.qr = make(shape{t, c.q_dim()});
    w.kr = make(shape{t, c.kv_dim()});
  }
  w.attn = make(shape{t, c.q_dim()});
  w.up = make(shape{t, c.up_dim()});
  if (c.mlp_type == mlp_kind::gated) w.act = make(shape{t, c.mlp});
  w.sel = make(shape{1, t});
  w.last = make(shape{1, c.hidden});
  w.lastn = make(shape{1, c.hidden});
  w.logits = make(shape{1, c.vocab});
  w.top = make(shape{1, 1});
  w.token = make_ids(shape{1, 1});
  return w;
}

/// An empty cache of `rows` positions per layer; make(shape) -> Buf, which the
/// caller zeroes (so that a comparison of whole caches compares defined rows).
template <class Buf, class Make>
kv_cache<Buf> make_cache(const config& c, index_t rows, Make&& make) {
  kv_cache<Buf> kv;
  kv.rows = rows;
  for (index_t l = 0; l < c.layers; ++l) {
    kv.k.push_back(make(shape{1, rows, c.kv_heads, c.head_dim}));
    kv.v.push_back(make(shape{1, rows, c.kv_heads, c.head_dim}));
  }
  return kv;
}

namespace detail {

/// f(w as a gemm's B): the buffer, or its quantized form.
template <class W, class F>
void with_weight(const W& w, F&& f) {
  if (w.quantized()) f(quantized_weight<W>{&w});
  else f(w);
}

/// x·W (+ b) into out; beta = 1 adds out's contents (the residual).
template <class T, class Ex, class A, class W, class Out>
void linear(Ex& ex, stage s, int layer, A&& a, const W& w, const W& b, Out&& out, float beta) {
  with_weight(w, [&](const auto& wb) {
    if (b.present()) {
      op::gemm<T, epilogue::bias> g;
      g.beta = beta;
      ex(s, layer, g, a, wb, b, out);
    } else {
      op::gemm<T> g;
      g.beta = beta;
      ex(s, layer, g, a, wb, out);
    }
  });
}

/// act(x·W + b) into out, the activation (and bias) in the gemm's epilogue.
template <class T, fn Act, class Ex, class A, class W, class Out>
void linear_act(Ex& ex, stage s, int layer, A&& a, const W& w, const W& b, Out&& out) {
  with_weight(w, [&](const auto& wb) {
    if (b.present()) ex(s, layer, op::gemm<T, epilogue::fused<Act, true>>{}, a, wb, b, out);
    else ex(s, layer, op::gemm<T, epilogue::fused<Act, false>>{}, a, wb, out);
  });
}

template <class T, class Ex, class A, class W, class Out>
void norm(Ex& ex, stage s, int layer, const config& c, A&& x, const W& g, const W& b, Out&& y) {
  if (c.norm == norm_kind::rms_norm) ex(s, layer, op::rms_norm<T>{c.norm_eps}, x, g, y);
  else ex(s, layer, op::layer_norm<T>{c.norm_eps}, x, g, b, y);
}

}  // namespace detail

/// One step of the ws.tokens tokens in ws.ids at positions [pos, pos + t)
/// (see the file's comment); the next token is left in ws.token. T is the
/// element type the ops are instantiated for: the buffers' own.
template <class T, class Buf, class Ex>
void forward(const config& c, const weights<Buf>& w, workspace<Buf>& ws, kv_cache<Buf>& kv, index_t pos, Ex& ex) {
  const index_t t = ws.tokens, h = c.heads, hk = c.kv_heads, hd = c.head_dim;
  auto as = [](Buf& b, shape s) { return shaped<Buf>{&b, s}; };
  if (c.learned_positions > 0) {
    ex(stage::embed, -1, op::embedding<T>{}, w.embed, ws.ids, ws.xn);
    ex(stage::pos_embed, -1, op::embedding<T>{}, w.positions, ws.positions, ws.pos_rows);
    ex(stage::embed_pos, -1, op::binary<T, binop::add>{}, ws.xn, ws.pos_rows, ws.x);
  } else {
    ex(stage::embed, -1, op::embedding<T>{}, w.embed, ws.ids, ws.x);
  }
  for (index_t l = 0; l < c.layers; ++l) {
    const auto& p = w.layers[static_cast<std::size_t>(l)];
    const int li = static_cast<int>(l);
    detail::norm<T>(ex, stage::attn_norm, li, c, ws.x, p.attn_norm_w, p.attn_norm_b, ws.xn);
    detail::linear<T>(ex, stage::q_proj, li, ws.xn, p.wq, p.bq, ws.q, 0.0f);
    detail::linear<T>(ex, stage::k_proj, li, ws.xn, p.wk, p.bk, ws.k, 0.0f);
    detail::linear<T>(ex, stage::v_proj, li, ws.xn, p.wv, p.bv, ws.v, 0.0f);
    Buf* q = &ws.q;
    Buf* k = &ws.k;
    if (c.rope) {
      op::rope<T> r;
      r.base = c.rope_base;
      r.offset = pos;
      r.interleaved = c.rope_interleaved;
      ex(stage::rope_q, li, r, as(ws.q, shape{t, h, hd}), as(ws.qr, shape{t, h, hd}));
      ex(stage::rope_k, li, r, as(ws.k, shape{t, hk, hd}), as(ws.kr, shape{t, hk, hd}));
      q = &ws.qr;
      k = &ws.kr;
    }
    ex(stage::k_append, li, op::kv_append<T>{pos}, as(*k, shape{1, t, hk, hd}), kv.k[static_cast<std::size_t>(l)]);
    ex(stage::v_append, li, op::kv_append<T>{pos}, as(ws.v, shape{1, t, hk, hd}), kv.v[static_cast<std::size_t>(l)]);
    op::attention<T> a;
    a.causal = t > 1;
    a.layout = attention_layout::bshd;
    a.kv_len = pos + t;
    ex(stage::attention, li, a, as(*q, shape{1, t, h, hd}), kv.k[static_cast<std::size_t>(l)],
       kv.v[static_cast<std::size_t>(l)], as(ws.attn, shape{1, t, h, hd}));
    detail::linear<T>(ex, stage::o_proj, li, ws.attn, p.wo, p.bo, ws.x, 1.0f);
    detail::norm<T>(ex, stage::mlp_norm, li, c, ws.x, p.mlp_norm_w, p.mlp_norm_b, ws.xn);
    if (c.mlp_type == mlp_kind::gated) {
      detail::linear<T>(ex, stage::up_proj, li, ws.xn, p.w_up, p.b_up, ws.up, 0.0f);
      ex(stage::gated, li, op::gated<T>{c.activation}, ws.up, ws.act);
      detail::linear<T>(ex, stage::down_proj, li, ws.act, p.w_down, p.b_down, ws.x, 1.0f);
    } else {
      switch (c.activation) {
        case fn::gelu_tanh: detail::linear_act<T, fn::gelu_tanh>(ex, stage::up_proj, li, ws.xn, p.w_up, p.b_up, ws.up); break;
        case fn::gelu_erf: detail::linear_act<T, fn::gelu_erf>(ex, stage::up_proj, li, ws.xn, p.w_up, p.b_up, ws.up); break;
        case fn::relu: detail::linear_act<T, fn::relu>(ex, stage::up_proj, li, ws.xn, p.w_up, p.b_up, ws.up); break;
        default: detail::linear_act<T, fn::silu>(ex, stage::up_proj, li, ws.xn, p.w_up, p.b_up, ws.up); break;
      }
      detail::linear<T>(ex, stage::down_proj, li, ws.up, p.w_down, p.b_down, ws.x, 1.0f);
    }
  }
  Buf* last = &ws.x;
  if (t > 1) {
    ex(stage::select_last, -1, op::gemm<T>{}, ws.sel, ws.x, ws.last);
    last = &ws.last;
  }
  detail::norm<T>(ex, stage::final_norm, -1, c, *last, w.final_norm_w, w.final_norm_b, ws.lastn);
  detail::with_weight(w.lm_head, [&](const auto& wb) { ex(stage::lm_head, -1, op::gemm<T>{}, ws.lastn, wb, ws.logits); });
  ex(stage::sample, -1, op::topk<T>{1}, ws.logits, ws.top, ws.token);
}

}  // namespace kforge::model
