// kforge/ops/attention_traits.hpp — attention's facts for the suite,
// problems, the generation module and the tool (core/op_traits.hpp).
#pragma once

#include <cmath>
#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/attention.hpp"

namespace kforge {

struct attention_traits : traits_base<attention_traits> {
  static constexpr std::string_view family = "attention";
  static constexpr std::string_view shape_syntax = "BxHxSxD[,L[xHkv]]";
  static constexpr bool compute_bound = true;
  /// How ±Inf scores mix with masking is not something PyTorch defines: the
  /// NaN/Inf case gives attention NaN only.
  static constexpr bool inf_inputs = false;

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {
        {"attention", "BxHxSxD[,L[xHkv]] (batch x query heads x queries x head dim; keys, KV heads)"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() == 4 && p.dims2.rank() <= 2; }
  /// Key length L.
  static index_t keys(const problem& p) { return p.dims2.rank() ? p.dims2[0] : p.dims[2]; }
  /// KV heads Hkv (grouped-query attention when < H).
  static index_t kv_heads(const problem& p) { return p.dims2.rank() == 2 ? p.dims2[1] : p.dims[1]; }
  /// Keys attended: attrs["kv_len"] (a KV cache holding more rows), else L.
  static index_t attended(const problem& p) {
    const double kv = p.attr("kv_len", -1);
    return kv >= 0 ? static_cast<index_t>(kv) : keys(p);
  }
  static bool cut(const problem& p) { return p.attr("kv_len", -1) >= 0 && attended(p) < keys(p); }
  static attention_layout layout(const problem& p) {
    return p.attr("bshd", 0) != 0 ? attention_layout::bshd : attention_layout::bhsd;
  }
  static std::vector<operand_spec> operands(const problem& p) {
    const index_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3], l = keys(p), hk = kv_heads(p);
    if (hk == 0 ? h != 0 : h % hk != 0)
      throw argument_error("kforge::attention: " + std::to_string(h) + " query heads are not a multiple of " +
                           std::to_string(hk) + " KV heads");
    if (attended(p) < 0 || attended(p) > l)
      throw argument_error("kforge::attention: --kv-len " + std::to_string(attended(p)) + " is outside [0, L = " +
                           std::to_string(l) + "]");
    if (p.attr("kv_len", -1) == 0 && l > 0)
      throw argument_error("kforge::attention: --kv-len 0 attends to no key (the op writes zeros there): a problem "
                           "needs at least one key to validate, time or tune");
    const bool bshd = layout(p) == attention_layout::bshd;
    auto dims = [&](index_t heads, index_t rows) { return bshd ? shape{b, rows, heads, d} : shape{b, heads, rows, d}; };
    return {operand("Q", dims(h, s), true), operand("K", dims(hk, l)), operand("V", dims(hk, l)), operand("O", dims(h, s))};
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"causal", "", "causal mask: query i sees keys j <= i", [](problem& p, std::string_view) { p.causal = true; }},
        {"scale", "S", "score scale (default 1/sqrt(D))",
         [](problem& p, std::string_view v) { p.scale = static_cast<float>(option_number("scale", v, number_range{0, 3.4e38, false, false, true})); }},
        {"layout", "bhsd|bshd", "attention: Q, K, V, O as [B,H,S,D] (default) or [B,S,H,D]",
         [](problem& p, std::string_view v) {
           if (v != "bhsd" && v != "bshd")
             throw argument_error("kforge: --layout expects bhsd or bshd, got '" + std::string(v) + "'");
           if (v == "bshd") p.attrs["bshd"] = 1;
           else p.attrs.erase("bshd");
         }},
        {"kv-len", "N", "attention: attend to keys [0, N) of the L rows K and V hold (a KV cache)",
         [](problem& p, std::string_view v) {
           p.attrs["kv_len"] = option_number("kv-len", v, number_ranges::whole_non_negative);
         }},
    };
    return opts;
  }
  static std::string describe(const problem& p) {
    std::string s = p.causal ? " causal" : "";
    if (kv_heads(p) != p.dims[1]) s += " kv_heads=" + std::to_string(kv_heads(p));
    if (p.attr("kv_len", -1) >= 0) s += " kv_len=" + std::to_string(attended(p));
    return s + (layout(p) == attention_layout::bshd ? " bshd" : "");
  }
  /// Query-key pairs a row sees, top-left causal: sum over i < S of min(i + 1, L).
  static double flops(const problem& p) {
    const double l = static_cast<double>(attended(p)), s = static_cast<double>(p.dims[2]);
    const double pairs = !p.causal ? s * l : s <= l ? s * (s + 1) / 2 : l * (l + 1) / 2 + (s - l) * l;
    return 4.0 * static_cast<double>(p.dims[0] * p.dims[1]) * pairs * static_cast<double>(p.dims[3]);
  }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    op::attention<T> o;
    o.causal = p.causal;
    o.scale = p.scale;
    o.layout = layout(p);
    o.kv_len = p.attr("kv_len", -1) >= 0 ? attended(p) : -1;
    f(o);
  }
  template <class T, class... V>
  static problem problem_of(const op::attention<T>& o, const V&... v) {
    const auto& q = std::get<0>(std::tie(v...));
    const auto& k = std::get<1>(std::tie(v...));
    problem p;
    p.op = "attention";
    p.type = dtype_of<T>();
    const bool bshd = o.layout == attention_layout::bshd;
    const int ha = bshd ? 2 : 1, sa = bshd ? 1 : 2;
    p.dims = q.rank() == 4 ? shape{q.size(0), q.size(ha), q.size(sa), q.size(3)} : q.dims;
    if (q.rank() == 4 && k.rank() == 4) {
      if (k.size(ha) != q.size(ha)) p.dims2 = shape{k.size(sa), k.size(ha)};
      else if (k.size(sa) != q.size(sa)) p.dims2 = shape{k.size(sa)};
    }
    p.causal = o.causal;
    p.scale = o.scale;
    if (bshd) p.attrs["bshd"] = 1;
    if (o.kv_len >= 0) p.attrs["kv_len"] = static_cast<double>(o.kv_len);
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) { return {p.type == dtype::f16 ? 2.0 : 3.0, 2.0, 4.0}; }
  /// The overflow case: Q positive, K's rows positive and growing with their
  /// position, so that scores rise along the keys to ~200 (past exp's 88: a
  /// kernel without the max shift overflows) and the causal mask hides keys
  /// scoring far above every visible one (a row max taken over masked keys
  /// underflows the visible terms to 0); V in [-1, 1].
  ///
  /// The negative_rows case is the other end: every score of every row far
  /// below exp's underflow at the problem's scale (Q in a·[0.8, 1], K in
  /// -a·[0.8, 1], scores in [-234, -150]); V in [-1, 1]. A running max
  /// started at 0 instead of -Inf underflows every term to 0 (0/0, or 0 where
  /// the kernel guards it); the max shift keeps the row's best key at exp(0).
  static bool prepare_case(const problem& p, input_case c, std::vector<host_tensor>& ts, std::uint64_t seed) {
    if (c != input_case::overflow && c != input_case::negative_rows) return true;
    const index_t d = std::max<index_t>(1, p.dims[3]), l = std::max<index_t>(1, keys(p)), hk = kv_heads(p);
    const double scale = p.scale > 0 ? p.scale : 1.0 / std::sqrt(static_cast<double>(d));
    std::uint64_t s = seed ^ 0x6f766572666c6f77ull;
    auto unit = [&s] {  // splitmix64 in [0, 1)
      std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
    };
    if (c == input_case::negative_rows) {
      // The smallest score magnitude, scale·d·(0.8a)², is 150.
      const double a = std::sqrt(150.0 / (0.64 * scale * static_cast<double>(d)));
      for (index_t o : ts[0].offsets()) ts[0].set(o, static_cast<float>(a * (0.8 + 0.2 * unit())));
      for (index_t o : ts[1].offsets()) ts[1].set(o, static_cast<float>(-a * (0.8 + 0.2 * unit())));
      for (index_t o : ts[2].offsets()) ts[2].set(o, static_cast<float>(2.0 * unit() - 1.0));
      return true;
    }
    // Score of the last key ~ scale·d·(3a/4)² = 200.
    const double a = std::sqrt(200.0 / (0.5625 * scale * static_cast<double>(d)));
    const bool bshd = layout(p) == attention_layout::bshd;
    const std::vector<index_t> qo = ts[0].offsets(), ko = ts[1].offsets(), vo = ts[2].offsets();
    for (index_t o : qo) ts[0].set(o, static_cast<float>(a * (0.5 + 0.5 * unit())));
    for (std::size_t e = 0; e < ko.size(); ++e) {
      const index_t row = static_cast<index_t>(e) / d;  // [B,Hk,L] or [B,L,Hk] rows of D
      const index_t j = bshd ? (row / std::max<index_t>(1, hk)) % l : row % l;
      ts[1].set(ko[e], static_cast<float>(a * static_cast<double>(j + 1) / static_cast<double>(l) * (0.5 + 0.5 * unit())));
    }
    for (index_t o : vo) ts[2].set(o, static_cast<float>(2.0 * unit() - 1.0));
    return true;
  }
  /// Outputs are convex combinations of V rows; scores carry Q·K's error.
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                         const linear_scale_fn&) {
    auto maxabs = [](const host_tensor& h) {
      double m = 0;
      for (index_t i = 0; i < h.span(); ++i) {
        const double v = std::fabs(h.get(i));
        if (std::isfinite(v)) m = std::max(m, v);
      }
      return m;
    };
    const double d = static_cast<double>(p.dims[3]);
    const double s = p.scale > 0 ? p.scale : 1.0 / std::sqrt(std::max(1.0, d));
    const double v = maxabs(in[2]) * (1.0 + s * maxabs(in[0]) * maxabs(in[1]) * d);
    return std::vector<double>(static_cast<std::size_t>(ref.dims.numel()), v);
  }
  static tolerance tolerance_of(const problem& p) { return attention_tolerance(p.type, p.dims[3], attended(p)); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"Q", "K", "V", "O"};
    c.push = {{"BH", "uint", "batch * query heads"}, {"S", "uint", "query length"}, {"L", "uint", "key length"},
              {"D", "uint", "head dim of Q, K"}, {"DV", "uint", "head dim of V, O"},
              {"scale", "float", "score scale (1/sqrt(D) unless given)"}, {"causal", "uint", "1: query i sees keys j <= i"},
              {"H", "uint", "query heads"}, {"G", "uint", "query heads per KV head: query head h reads KV head h / G"},
              {"bshd", "uint", "0: tensors are [B,H,rows,dim]; 1: [B,rows,H,dim] (H or H/G heads)"},
              {"KV", "uint", "keys attended: the first KV of the L rows K and V hold (a KV cache); KV = L without one"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "query rows (over B*H*S) per workgroup (default 1)";
    c.grid_rule = "G = ceil(BH * S / TILE) workgroups";
    return c;
  }
  /// K and V hold L rows each; the kernel attends to the first KV of them.
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const index_t bh = p.dims[0] * p.dims[1], s = p.dims[2], d = p.dims[3], hk = kv_heads(p);
    const float scale = p.scale > 0 ? p.scale : 1.0f / std::sqrt(static_cast<float>(std::max<index_t>(1, d)));
    launch l;
    l.put_u32(bh, "B*H"), l.put_u32(s, "S"), l.put_u32(keys(p), "L"), l.put_u32(d, "D"), l.put_u32(d, "DV");
    l.put(scale), l.put(std::uint32_t(p.causal ? 1 : 0));
    l.put_u32(p.dims[1], "H"), l.put_u32(hk ? p.dims[1] / hk : 1, "G");
    l.put(std::uint32_t(layout(p) == attention_layout::bshd ? 1 : 0));
    l.put_u32(attended(p), "KV");
    l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(bh * s), t.tile ? t.tile : 1));
    return l;
  }
  static std::string semantics(const problem&) {
    return "scaled dot-product attention per (batch, query head) with grouped KV heads: O = softmax(Q·Kᵀ·scale "
           "[+ causal mask]) · V, where query head h uses KV head h / G (H query heads, H/G KV heads). With bshd = 0, Q "
           "is [B,H,S,D], K [B,H/G,L,D], V [B,H/G,L,DV], O [B,H,S,DV]; with bshd = 1 they are [B,S,H,D], "
           "[B,L,H/G,D], [B,L,H/G,DV], [B,S,H,DV]. Only the first KV keys of the L rows K and V hold are attended (a KV "
           "cache; KV = L without one); rows KV..L-1 are masked. With causal, query i sees keys j <= i (and j < KV). "
           "Masked keys are excluded: never read their V rows (an Inf there must not reach the output). NaN in a "
           "score row makes that output row NaN; a row with no key (KV = 0) is 0. Accumulate in f32.";
  }
  static std::string source_spec(const problem& p) {
    const bool bshd = layout(p) == attention_layout::bshd;
    std::string s = "def attention(q, k, v):\n";
    if (bshd) s += "    q, k, v = (x.transpose(1, 2) for x in (q, k, v))  # [B,S,H,D] -> [B,H,S,D]\n";
    if (kv_heads(p) != p.dims[1])
      s += "    g = q.shape[1] // k.shape[1]\n    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)\n";
    if (cut(p)) s += "    k, v = k[:, :, :" + std::to_string(attended(p)) + "], v[:, :, :" + std::to_string(attended(p)) + "]\n";
    s += std::string("    o = F.scaled_dot_product_attention(q, k, v, is_causal=") + (p.causal ? "True" : "False") + ")\n";
    return s + (bshd ? "    return o.transpose(1, 2)" : "    return o");
  }
  static std::string record_params(const problem& p) {
    std::string s = (p.causal ? "_causal" : "") + (p.scale > 0 ? "_sc" + number_part(p.scale) : "");
    if (kv_heads(p) != p.dims[1]) s += "_kv" + std::to_string(kv_heads(p));
    if (p.attr("kv_len", -1) >= 0) s += "_kvlen" + std::to_string(attended(p));
    return s + (layout(p) == attention_layout::bshd ? "_bshd" : "");
  }
  /// Every axis redrawn on its own: B (1..3), the KV heads (1..3) and the
  /// heads per KV head (2..3; grouped stays grouped), all different from the
  /// prompt's; D a row within [1, the next multiple of 32] (kernels may size
  /// shared memory by that, as kforge's stages the query row in max(32, D
  /// rounded up to 32)); S and L both new, with S < L on draw 0 (L a row past
  /// its bucket and four local sizes) and S > L on draw 1 (L a row below its
  /// bucket) — the causal mask is top-left aligned (query i sees keys j <= i),
  /// so only S != L tells it from a bottom-right one. In the residue sweep D
  /// and L are rows, B, S and the KV heads small extents. For a loop limit, L
  /// shrunk (one key costs a pass over D).
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    const index_t s = p.dims[2], l = keys(p), hk = kv_heads(p);
    const bool grouped = p.dims2.rank() == 2 && hk != p.dims[1];
    const index_t d_hi = std::max<index_t>(32, (p.dims[3] + 31) / 32 * 32);
    if (d.loop_limit) {
      const index_t l2 = d.fit(l, static_cast<double>(p.dims[3] + 1));
      if (l2 == l) return q;
      q.dims2 = p.dims2.rank() == 2 ? shape{l2, p.dims2[1]} : shape{l2};
      if (p.attr("kv_len", -1) >= 0) q.attrs["kv_len"] = static_cast<double>(std::min(attended(p), l2));
      return q;
    }
    auto other = [&](index_t lo, index_t hi, index_t avoid) {
      index_t v = d.uniform(lo, hi);
      return v == avoid ? (v + 1 <= hi ? v + 1 : v - 1) : v;
    };
    index_t hk2 = 1, g2 = 1, s2 = s, l2 = l;
    if (d.sweep()) {
      q.dims[0] = d.extent(p.dims[0]);
      hk2 = d.extent(hk);
      g2 = grouped ? 2 : 1;
      s2 = d.extent(s);
      l2 = d.row(l);
      q.dims[3] = d.row(p.dims[3], 1, d_hi);
    } else {
      q.dims[0] = other(1, 3, p.dims[0]);
      hk2 = other(1, 3, hk);
      g2 = grouped ? other(2, 3, hk ? p.dims[1] / hk : 1) : 1;
      q.dims[3] = d.row(p.dims[3], 1, d_hi);
      if (d.index % 2 == 0) {  // S < L, L long
        l2 = d.row(l, 2, 0, 1);
        s2 = d.extent(s);
        if (s2 >= l2) s2 = l2 - 2 >= 1 ? l2 - 2 : 1;
        if (s2 == s) s2 = s2 > 2 ? s2 - 2 : s2 + 2 < l2 ? s2 + 2 : s2;
      } else {  // S > L, L short
        l2 = d.row(l, 1, 0, 0);
        s2 = d.extent(s);
        if (s2 <= l2) s2 = l2 + 2 * d.uniform(1, 4);
        if (s2 == s) s2 += 2;
      }
    }
    q.dims[1] = hk2 * g2;
    q.dims[2] = s2;
    q.dims2 = grouped ? shape{l2, hk2} : p.dims2.rank() == 2 ? shape{l2, q.dims[1]} : shape{l2};
    // A cache stays a cache: a new cut inside the new L (at least one key
    // masked past it), never the prompt's.
    if (p.attr("kv_len", -1) >= 0)
      q.attrs["kv_len"] = static_cast<double>(l2 > 1 ? d.uniform(1, l2 - 1) : l2);
    return q;
  }
  /// S > L, so that with the causal mask the last queries see every key (a
  /// read of key L is visible, not masked); two batches of four query heads
  /// over two KV heads in [B,S,H,D], so a wrong KV head, batch offset or
  /// row stride changes the output; a KV cache of 11 rows holding 9, so a
  /// kernel that reads past KV changes it too.
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{2, 4, 13, 17};
    p.dims2 = shape{11, 2};
    p.causal = true;
    p.attrs["bshd"] = 1;
    p.attrs["kv_len"] = 9;
    return p;
  }
};

}  // namespace kforge
