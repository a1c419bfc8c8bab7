// kforge/model/weights.hpp — a decoder's parameters, held in any kind of
// buffer (host vectors here, vulkan::device_tensors in model/vulkan.hpp), and
// random ones from the config's seed.
//
// Layouts are the ones the block's gemms read as B without a transpose:
// a projection from n to m features is W [n, m] row-major (x·W), the gated
// MLP's up projection is [D, 2F] with the gate's columns first (op::gated's
// packed layout), the LM head is [D, V]. A tied LM head holds the embedding
// table's transpose (its values, in the layout a gemm streams; twice the
// memory of sharing it, which a dense device tensor cannot do without a
// transposed gemm).
//
// Random weights: independent draws from U(-√3σ, √3σ) (variance σ², so the
// scale is that of N(0, σ²); one multiply per element, so llama3-8b's 1.3 G
// parameters take seconds, on every core), σ = 1/√fan_in for projections, so
// that activations stay O(1) through depth; norm gains 1 ± 0.1, biases and
// norm shifts 0.05, the embedding 1 (1/√D when it is also the LM head, so that
// logits stay O(1)). Each tensor is drawn from the seed and its own name in
// chunks, so the values do not depend on the thread count: one weight set,
// bit-identical, for the reference and every policy.
//
// Quantized weights (quantize_weights): every projection and the LM head
// replaced by its low-precision form (core/quant.hpp) — the buffer keeps its
// logical dims [in, out] and holds Wᵀ's rows [out, in] quantized along `in`
// (the gemm's K, as GGUF stores them) instead of its elements; the dense
// copy is freed as each tensor is converted; random_weights(c, f) quantizes
// each one as it is drawn (one dense projection in memory at a time, the
// same values). The embedding and the norms
// stay in T. The block passes such a weight to the gemm as a quantized B
// (block.hpp, quantized_weight).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kforge/core/quant.hpp"
#include "kforge/core/tensor.hpp"
#include "kforge/model/config.hpp"

namespace kforge::model {

/// An owning, dense, row-major host tensor. A buffer of rank 0 is absent (a
/// bias the config has not).
template <class T>
struct host_buffer {
  using value_type = T;
  /// The same kind of buffer of element type U (the program's int32 ids).
  template <class U>
  using rebind = host_buffer<U>;
  std::vector<T> data;
  shape dims;
  /// A quantized projection (quantize_weights): Wᵀ [dims[1], dims[0]]; data is then empty.
  std::shared_ptr<const quantized_matrix> q;

  host_buffer() = default;
  explicit host_buffer(shape d) : data(static_cast<std::size_t>(d.numel())), dims(d) {}
  bool present() const { return dims.rank() > 0; }
  bool quantized() const { return q != nullptr; }
  index_t numel() const { return present() ? dims.numel() : 0; }
  tensor_view<T> view() { return tensor_view<T>(data.data(), dims); }
  tensor_view<const T> view() const { return tensor_view<const T>(data.data(), dims); }
};

/// One block's parameters (absent buffers: the config has no such tensor).
template <class Buf>
struct layer_weights {
  Buf attn_norm_w, attn_norm_b;  ///< [D] (b: layer_norm only)
  Buf wq, wk, wv, wo;            ///< [D, H·hd], [D, Hkv·hd], [D, Hkv·hd], [H·hd, D]
  Buf bq, bk, bv, bo;            ///< biases of those (config.bias; q, k, v: config.qkv_bias too)
  Buf mlp_norm_w, mlp_norm_b;    ///< [D]
  Buf w_up, b_up;                ///< [D, 2F] ([gate | up]) or [D, F]; bias [2F] or [F]
  Buf w_down, b_down;            ///< [F, D], [D]

  /// f(name, buffer) for every tensor, present or not, in a fixed order.
  template <class Self, class F>
  static void each(Self& s, F&& f) {
    f("attn_norm.weight", s.attn_norm_w), f("attn_norm.bias", s.attn_norm_b);
    f("q_proj.weight", s.wq), f("k_proj.weight", s.wk), f("v_proj.weight", s.wv), f("o_proj.weight", s.wo);
    f("q_proj.bias", s.bq), f("k_proj.bias", s.bk), f("v_proj.bias", s.bv), f("o_proj.bias", s.bo);
    f("mlp_norm.weight", s.mlp_norm_w), f("mlp_norm.bias", s.mlp_norm_b);
    f("up_proj.weight", s.w_up), f("up_proj.bias", s.b_up), f("down_proj.weight", s.w_down), f("down_proj.bias", s.b_down);
  }
};

/// A decoder's parameters.
template <class Buf>
struct weights {
  Buf embed;      ///< [V, D]
  Buf positions;  ///< [P, D] (config.learned_positions)
  std::vector<layer_weights<Buf>> layers;
  Buf final_norm_w, final_norm_b;  ///< [D]
  Buf lm_head;                     ///< [D, V]

  /// f(name, buffer) for every tensor ("layers.3.q_proj.weight", ...).
  template <class Self, class F>
  static void each(Self& s, F&& f) {
    f(std::string("embed"), s.embed);
    f(std::string("positions"), s.positions);
    for (std::size_t l = 0; l < s.layers.size(); ++l)
      layer_weights<Buf>::each(s.layers[l], [&](const char* n, auto& b) { f("layers." + std::to_string(l) + "." + n, b); });
    f(std::string("final_norm.weight"), s.final_norm_w);
    f(std::string("final_norm.bias"), s.final_norm_b);
    f(std::string("lm_head"), s.lm_head);
  }
  template <class F>
  void for_each(F&& f) { each(*this, f); }
  template <class F>
  void for_each(F&& f) const { each(*this, f); }
};

/// The same parameters in other buffers: convert(name, const In&) -> Out for
/// each present tensor; absent ones stay absent (default-constructed Out).
template <class Out, class In, class Convert>
weights<Out> convert_weights(const weights<In>& w, Convert&& convert) {
  weights<Out> out;
  out.layers.resize(w.layers.size());
  std::vector<const In*> src;
  w.for_each([&](const std::string&, const In& b) { src.push_back(&b); });
  std::size_t i = 0;
  out.for_each([&](const std::string& name, Out& b) {
    const In& s = *src[i++];
    if (s.present()) b = convert(name, s);
  });
  return out;
}

/// Bytes of the present tensors of one block, of the embedding tables and of
/// the final norm and LM head, for element size `es`.
struct weight_bytes {
  double block = 0, embedding = 0, head = 0;
};
/// Bytes a buffer holds: its elements of size es, or a quantized weight's packed bytes.
template <class Buf>
double stored_bytes(const Buf& t, std::size_t es) {
  return t.quantized() ? static_cast<double>(t.q->bytes()) : static_cast<double>(t.numel()) * static_cast<double>(es);
}
template <class Buf>
weight_bytes bytes_of(const weights<Buf>& w, std::size_t es) {
  weight_bytes b;
  if (!w.layers.empty())
    layer_weights<Buf>::each(w.layers[0], [&](const char*, const Buf& t) { b.block += stored_bytes(t, es); });
  b.embedding = stored_bytes(w.embed, es) + stored_bytes(w.positions, es);
  b.head = stored_bytes(w.final_norm_w, es) + stored_bytes(w.final_norm_b, es) + stored_bytes(w.lm_head, es);
  return b;
}

namespace detail {
/// splitmix64 of a tensor's name and chunk: the stream a chunk is drawn from.
inline std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
inline std::uint64_t hash_name(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  return h;
}

/// Runs body(i) for every i in [0, n), each once, on every core — on the
/// calling thread alone when n < `threaded_from` (threads cost more than
/// small work). Callers make each i's result independent of the thread.
template <class F>
void parallel_chunks(std::size_t n, F&& body, std::size_t threaded_from = 2) {
  const unsigned workers = n < threaded_from ? 1u
                           : std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(n)));
  auto run = [&](unsigned w) {
    for (std::size_t i = w; i < n; i += workers) body(i);
  };
  std::vector<std::thread> ts;
  for (unsigned w = 1; w < workers; ++w) ts.emplace_back(run, w);
  run(0);
  for (auto& t : ts) t.join();
}

/// Fills `out` with mean + U(-√3σ, √3σ), chunk by chunk on every core.
template <class T>
void fill_uniform(std::vector<T>& out, std::uint64_t stream, double mean, double sigma) {
  constexpr std::size_t chunk = std::size_t{1} << 16;
  const std::size_t n = out.size(), chunks = (n + chunk - 1) / chunk;
  const double half_width = std::sqrt(3.0) * sigma;
  parallel_chunks(chunks, [&](std::size_t c) {
    std::uint64_t s = mix(stream ^ mix(c));
    for (std::size_t i = c * chunk, e = std::min(n, i + chunk); i < e; ++i) {
      s = mix(s);
      const double u = static_cast<double>(s >> 11) * 0x1.0p-53;  // [0, 1)
      out[i] = static_cast<T>(static_cast<float>(mean + (2.0 * u - 1.0) * half_width));
    }
  }, 4);
}
}  // namespace detail

namespace detail {
/// random_weights with `done(b)` called on each projection and the LM head once drawn.
template <class T, class Done>
weights<host_buffer<T>> random_weights_impl(const config& c, Done&& done) {
  c.validate();
  using B = host_buffer<T>;
  weights<B> w;
  const index_t d = c.hidden;
  auto make = [&](const std::string& name, shape dims, double mean, double sigma) {
    B b(dims);
    detail::fill_uniform(b.data, detail::mix(c.seed ^ detail::hash_name(name)), mean, sigma);
    return b;
  };
  const double inv_d = 1.0 / std::sqrt(static_cast<double>(d));
  const double embed_sigma = c.tied_embeddings ? inv_d : 1.0;
  w.embed = make("embed", shape{c.vocab, d}, 0.0, embed_sigma);
  if (c.learned_positions > 0) w.positions = make("positions", shape{c.learned_positions, d}, 0.0, embed_sigma);
  const bool ln = c.norm == norm_kind::layer_norm;
  for (index_t l = 0; l < c.layers; ++l) {
    const std::string p = "layers." + std::to_string(l) + ".";
    layer_weights<B> L;
    auto proj = [&](const char* n, index_t in, index_t out) {
      B b = make(p + n, shape{in, out}, 0.0, 1.0 / std::sqrt(static_cast<double>(in)));
      done(b);
      return b;
    };
    L.attn_norm_w = make(p + "attn_norm.weight", shape{d}, 1.0, 0.1);
    if (ln) L.attn_norm_b = make(p + "attn_norm.bias", shape{d}, 0.0, 0.05);
    L.wq = proj("q_proj.weight", d, c.q_dim());
    L.wk = proj("k_proj.weight", d, c.kv_dim());
    L.wv = proj("v_proj.weight", d, c.kv_dim());
    L.wo = proj("o_proj.weight", c.q_dim(), d);
    L.mlp_norm_w = make(p + "mlp_norm.weight", shape{d}, 1.0, 0.1);
    if (ln) L.mlp_norm_b = make(p + "mlp_norm.bias", shape{d}, 0.0, 0.05);
    L.w_up = proj("up_proj.weight", d, c.up_dim());
    L.w_down = proj("down_proj.weight", c.mlp, d);
    if (c.bias || c.qkv_bias) {
      L.bq = make(p + "q_proj.bias", shape{c.q_dim()}, 0.0, 0.05);
      L.bk = make(p + "k_proj.bias", shape{c.kv_dim()}, 0.0, 0.05);
      L.bv = make(p + "v_proj.bias", shape{c.kv_dim()}, 0.0, 0.05);
    }
    if (c.bias) {
      L.bo = make(p + "o_proj.bias", shape{d}, 0.0, 0.05);
      L.b_up = make(p + "up_proj.bias", shape{c.up_dim()}, 0.0, 0.05);
      L.b_down = make(p + "down_proj.bias", shape{d}, 0.0, 0.05);
    }
    w.layers.push_back(std::move(L));
  }
  w.final_norm_w = make("final_norm.weight", shape{d}, 1.0, 0.1);
  if (ln) w.final_norm_b = make("final_norm.bias", shape{d}, 0.0, 0.05);
  if (c.tied_embeddings) {
    w.lm_head = B(shape{d, c.vocab});
    for (index_t v = 0; v < c.vocab; ++v)
      for (index_t i = 0; i < d; ++i)
        w.lm_head.data[static_cast<std::size_t>(i * c.vocab + v)] = w.embed.data[static_cast<std::size_t>(v * d + i)];
  } else {
    w.lm_head = make("lm_head", shape{d, c.vocab}, 0.0, inv_d);
  }
  done(w.lm_head);
  return w;
}
}  // namespace detail

/// Random parameters of config c in storage type T (see the file's comment).
template <class T>
weights<host_buffer<T>> random_weights(const config& c) {
  return detail::random_weights_impl<T>(c, [](host_buffer<T>&) {});
}

/// Throws config_error unless every projection's input width (hidden, the
/// heads' q_dim, the MLP width) fits format f's blocks.
inline void check_quantizable(const config& c, qformat f) {
  const index_t block = info_of(f).block;
  for (auto [what, v] : {std::pair<const char*, index_t>{"hidden", c.hidden}, {"heads x head_dim", c.q_dim()}, {"mlp", c.mlp}})
    if (v % block != 0)
      throw config_error("kforge::model: config '" + c.name + "': " + what + " = " + std::to_string(v) + " is not a multiple of " +
                         std::to_string(block) + ", the blocks " + std::string(to_string(f)) + " weights are quantized in along it");
}

namespace detail {
/// Throws config_error unless b's input width (dims[0]) fits format f's blocks, naming the tensor.
template <class T>
void check_quantizable_buffer(const std::string& name, const host_buffer<T>& b, qformat f) {
  const qformat_info info = info_of(f);
  if (b.dims[0] % info.block != 0)
    throw config_error("kforge::model: " + name + " " + b.dims.str() + ": " + std::string(info.name) + " needs its input width (" +
                       std::to_string(b.dims[0]) + ") to be a multiple of " + std::to_string(info.block));
}

/// Replaces the dense [in, out] elements of b by Wᵀ quantized in format f,
/// 64 output rows at a time on every core, and frees them.
template <class T>
void quantize_buffer(host_buffer<T>& b, qformat f) {
  const qformat_info info = info_of(f);
  const index_t in = b.dims[0], out = b.dims[1];
  const auto rb = static_cast<std::size_t>(in / info.block * info.block_bytes);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(out) * rb);
  std::vector<float> scales(info.row_scale ? static_cast<std::size_t>(out) : 0);
  constexpr index_t rows = 64;
  parallel_chunks(static_cast<std::size_t>((out + rows - 1) / rows), [&](std::size_t c) {
    const index_t r0 = static_cast<index_t>(c) * rows, nr = std::min(rows, out - r0);
    std::vector<float> t(static_cast<std::size_t>(nr * in));  // Wᵀ's rows r0 .. r0 + nr
    for (index_t i = 0; i < in; ++i) {
      const T* src = b.data.data() + i * out + r0;
      for (index_t r = 0; r < nr; ++r) t[static_cast<std::size_t>(r * in + i)] = static_cast<float>(src[r]);
    }
    const quantized_matrix part = quantize(f, t.data(), nr, in);
    std::copy(part.data(), part.data() + static_cast<std::size_t>(nr) * rb, bytes.begin() + static_cast<std::ptrdiff_t>(r0) * static_cast<std::ptrdiff_t>(rb));
    if (info.row_scale) std::copy(part.scales().begin(), part.scales().end(), scales.begin() + r0);
  });
  b.q = std::make_shared<const quantized_matrix>(f, out, in, std::move(bytes), std::move(scales));
  std::vector<T>().swap(b.data);
}

/// Calls f(name, buffer) for every projection and the LM head: what quantized weights replace.
template <class W, class F>
void for_each_projection(W& w, F&& f) {
  for (std::size_t l = 0; l < w.layers.size(); ++l) {
    auto& L = w.layers[l];
    const std::string p = "layers." + std::to_string(l) + ".";
    f(p + "q_proj.weight", L.wq), f(p + "k_proj.weight", L.wk), f(p + "v_proj.weight", L.wv);
    f(p + "o_proj.weight", L.wo), f(p + "up_proj.weight", L.w_up), f(p + "down_proj.weight", L.w_down);
  }
  f(std::string("lm_head"), w.lm_head);
}
}  // namespace detail

/// Replaces each projection [in, out] and the LM head of w by Wᵀ quantized
/// in format f (see the file's comment), 64 output rows at a time on every
/// core; the dense elements are freed tensor by tensor. config_error where
/// `in` does not fit the format's blocks (a multiple of 32), naming the
/// tensor, before any tensor changes.
template <class T>
void quantize_weights(weights<host_buffer<T>>& w, qformat f) {
  detail::for_each_projection(w, [&](const std::string& name, host_buffer<T>& b) {
    if (b.present() && !b.quantized()) detail::check_quantizable_buffer(name, b, f);
  });
  detail::for_each_projection(w, [&](const std::string&, host_buffer<T>& b) {
    if (b.present() && !b.quantized()) detail::quantize_buffer(b, f);
  });
}

/// random_weights(c) with every projection and the LM head quantized in
/// format f as it is drawn: the same values as quantize_weights(random_weights(c), f),
/// with one dense projection (the LM head where it is the largest) in memory at
/// a time instead of the whole dense model. config_error (check_quantizable) first.
template <class T>
weights<host_buffer<T>> random_weights(const config& c, qformat f) {
  check_quantizable(c, f);
  return detail::random_weights_impl<T>(c, [f](host_buffer<T>& b) { detail::quantize_buffer(b, f); });
}

}  // namespace kforge::model
