// kforge/ops/attention.hpp — scaled dot-product attention, with grouped KV heads.
//
//   O[b,h] = softmax(Q[b,h] · K[b,h/G]ᵀ · scale + mask) · V[b,h/G]
// Layout bhsd (the default): Q [B,H,S,D], K [B,Hkv,L,D], V [B,Hkv,L,Dv],
// O [B,H,S,Dv]. Layout bshd: Q [B,S,H,D], K [B,L,Hkv,D], V [B,L,Hkv,Dv],
// O [B,S,H,Dv] (FlashAttention's layout: what a projection of S tokens to
// H·D columns gives, so a decoder block never transposes). Grouped-query
// attention: H % Hkv == 0, and query head h reads KV head h / (H / Hkv)
// (Hkv = H is multi-head attention, Hkv = 1 multi-query). scale defaults to
// 1/sqrt(D). With `causal`, query i sees keys j <= i (PyTorch's is_causal,
// aligned at the top left). Masked key positions are excluded: their scores,
// probabilities and V rows are never used, so an Inf in a masked V row does
// not reach the output (PyTorch's flash and memory-efficient kernels); a row
// that sees no key (only when L == 0) is zero.
//
// A KV cache: `kv_len` >= 0 attends to keys [0, kv_len) of K and V, which may
// hold more rows (a cache of Lmax rows of which kv_len are filled); the rows
// past kv_len are never read, whatever they hold. That is the prefix a
// decoder's attention sees after op::kv_append (FlashAttention's
// cache_seqlens, llama.cpp's n_kv), taken on every backend and for any batch
// without a copy of the cache or a view of it: decode is S = 1, kv_len =
// tokens so far, not causal; prefill from an empty cache is S = kv_len,
// causal. Causal stays top-left within the kv_len keys. -1 (the default):
// all L rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {

/// Where heads and positions sit in attention's tensors.
enum class attention_layout : std::uint8_t {
  bhsd,  ///< [B, H, S, D]: a head's rows are contiguous (PyTorch's SDPA)
  bshd,  ///< [B, S, H, D]: a position's heads are contiguous (FlashAttention's)
};

constexpr std::string_view to_string(attention_layout l) { return l == attention_layout::bshd ? "bshd" : "bhsd"; }

namespace op {

template <class T>
struct attention {
  using value_type = T;
  static constexpr std::string_view name = "attention";
  static constexpr int arity = 3;  // q, k, v
  bool causal = false;
  float scale = 0.0f;  ///< 0 means 1/sqrt(D)
  attention_layout layout = attention_layout::bhsd;
  index_t kv_len = -1;  ///< keys [0, kv_len) of K and V are attended; -1: all L rows
};

}  // namespace op

template <class T>
struct attention_args {
  tensor_view<const T> q, k, v;
  tensor_view<T> o;
  index_t b, h, hkv, s, l, d, dv;
  float scale;
  bool causal;
  attention_layout layout;
  /// Rows K and V hold along their sequence axis: l, or more when op.kv_len
  /// cut them (k and v above are then the views of their first l rows).
  index_t kv_rows = 0;

  /// Query heads per KV head.
  index_t group() const { return h / hkv; }
  /// Axis of heads and of positions in the 4-d views.
  int head_axis() const { return layout == attention_layout::bhsd ? 1 : 2; }
  int seq_axis() const { return layout == attention_layout::bhsd ? 2 : 1; }
  /// Head `head` of batch `batch` of a 4-d view as a [positions, dim] matrix.
  template <class U>
  tensor_view<U> head(const tensor_view<U>& t, index_t batch, index_t head) const {
    const int ha = head_axis(), sa = seq_axis();
    return tensor_view<U>(t.data + batch * t.stride(0) + head * t.stride(ha), shape{t.size(sa), t.size(3)},
                          shape{t.stride(sa), t.stride(3)});
  }
  /// Keys query row i sees: [0, visible(i)).
  index_t visible(index_t i) const { return causal ? std::min(l, i + 1) : l; }
};

namespace detail {
template <class Derived, class Op>
struct attention_entry;
template <class Derived, class T>
struct attention_entry<Derived, op::attention<T>> {
  static constexpr bool available = true;
  static void run(const op::attention<T>& op, tensor_view<const T> q, tensor_view<const T> k, tensor_view<const T> v,
                  tensor_view<T> o) {
    const bool bshd = op.layout == attention_layout::bshd;
    const char* qs = bshd ? "[B,S,H,D]" : "[B,H,S,D]";
    if (q.rank() != 4) throw shape_error("kforge::attention: Q has shape " + q.dims.str() + ", expected rank 4 " + qs);
    if (k.rank() != 4)
      throw shape_error("kforge::attention: K has shape " + k.dims.str() + ", expected rank 4 " +
                        (bshd ? "[B,L,Hkv,D]" : "[B,Hkv,L,D]"));
    if (v.rank() != 4)
      throw shape_error("kforge::attention: V has shape " + v.dims.str() + ", expected rank 4 " +
                        (bshd ? "[B,L,Hkv,Dv]" : "[B,Hkv,L,Dv]"));
    const int ha = bshd ? 2 : 1, sa = bshd ? 1 : 2;
    attention_args<T> g{q,          k,          v,          o,        q.size(0), q.size(ha), k.size(ha),
                        q.size(sa), k.size(sa), q.size(3),  v.size(3), op.scale, op.causal,  op.layout, k.size(sa)};
    if (g.hkv == 0 ? g.h != 0 : g.h % g.hkv != 0)
      throw shape_error("kforge::attention: Q has " + std::to_string(g.h) + " heads and K " + std::to_string(g.hkv) +
                        ": grouped-query attention needs the query heads to be a multiple of the KV heads");
    auto dims = [&](index_t heads, index_t rows, index_t dim) {
      return bshd ? shape{g.b, rows, heads, dim} : shape{g.b, heads, rows, dim};
    };
    expect_shape("attention", "K", dims(g.hkv, g.l, g.d), k.dims);
    expect_shape("attention", "V", dims(g.hkv, g.l, g.dv), v.dims);
    expect_shape("attention", "O", dims(g.h, g.s, g.dv), o.dims);
    if (!(op.scale >= 0.0f)) throw argument_error("kforge::attention: scale must be >= 0 (0 means 1/sqrt(D))");
    if (op.kv_len < -1 || op.kv_len > g.l)
      throw argument_error("kforge::attention: kv_len " + std::to_string(op.kv_len) + " is outside [0, L = " +
                           std::to_string(g.l) + "] (the rows K and V hold), or -1 for all of them");
    if (op.kv_len >= 0 && op.kv_len < g.l) {
      // The first kv_len rows, same strides: every backend reads only those.
      g.l = op.kv_len;
      g.k.dims[sa] = g.l;
      g.v.dims[sa] = g.l;
    }
    if (g.scale == 0.0f) g.scale = g.d > 0 ? 1.0f / std::sqrt(static_cast<float>(g.d)) : 1.0f;
    Derived::compute(op, g);
  }
};
}  // namespace detail

/// Error scale (traits' error_scale): max |V| times (1 + scale·max|Q|·max|K|·D)
/// — outputs are convex combinations of V rows, and the scores carry the
/// dot-product error of length D.
///
/// f16 probabilities: a kernel may round P to f16 before P·V, as PyTorch's
/// SDPA does for f16 inputs (FlashAttention, and kforge's tensor-core
/// kernel). Rounding p to nearest changes it by at most 2^-11·p (p <= 256
/// there, inside f16's normal range; below it the change is under 2^-25
/// absolute), and with the row sum l taken over the unrounded p (as those
/// kernels do) an output moves by |Σ (p̂_j − p_j)·v_j| / l <= 2^-11·max|V|.
/// So f16 adds eps_f16 / 2 = 2^-11 to atol (max|V| <= the error scale): about
/// 5e-4·max|V| against the f32-level 1e-5 or so. bf16 adds the same: its
/// tensor-core kernel (Vulkan, shaders/attention.hpp) stages bf16 tiles as
/// f16 and rounds P to f16 as the f16 kernel does (PyTorch's bf16 SDPA
/// rounds P to bf16, 8 times coarser); the CPU backends compute bf16 in f32.
/// f32 keeps its numbers.
/// tests/validate_suite.cpp checks that a kernel rounding P to f16 passes the
/// f16 and bf16 suites and that a dropped scale, a causal mask off by one, a missing
/// key and a missing row still fail it.
inline tolerance attention_tolerance(dtype d, index_t dim, index_t keys) {
  const double t = dot_error(dim) + 4 * epsilon_of(dtype::f32) * std::sqrt(static_cast<double>(keys));
  if (d == dtype::f32) return tolerance{t, 1e-5, 0};
  return tolerance{t + 0.5 * epsilon_of(dtype::f16), 1e-5, 2};  // f16 and bf16: P may be rounded to f16
}

}  // namespace kforge

KFORGE_REFUSE(attention, (class T), (T))
