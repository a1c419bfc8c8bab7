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
  static constexpr std::string_view shape_syntax = "BxHxSxD[,L]";
  static constexpr bool compute_bound = true;
  /// How ±Inf scores mix with masking is not something PyTorch defines: the
  /// NaN/Inf case gives attention NaN only.
  static constexpr bool inf_inputs = false;

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"attention", "BxHxSxD[,L]"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() == 4 && p.dims2.rank() <= 1; }
  /// Key length L.
  static index_t keys(const problem& p) { return p.dims2.rank() ? p.dims2[0] : p.dims[2]; }
  static std::vector<operand_spec> operands(const problem& p) {
    const index_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3], l = keys(p);
    return {operand("Q", shape{b, h, s, d}, true), operand("K", shape{b, h, l, d}), operand("V", shape{b, h, l, d}),
            operand("O", shape{b, h, s, d})};
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"causal", "", "causal mask: query i sees keys j <= i", [](problem& p, std::string_view) { p.causal = true; }},
        {"scale", "S", "score scale (default 1/sqrt(D))",
         [](problem& p, std::string_view v) { p.scale = static_cast<float>(parse_number("scale", v)); }},
    };
    return opts;
  }
  static std::string describe(const problem& p) { return p.causal ? " causal" : ""; }
  static double flops(const problem& p) {
    const double l = static_cast<double>(keys(p)), s = static_cast<double>(p.dims[2]);
    const double pairs = p.causal ? s * l - s * (s - 1) / 2.0 : s * l;
    return 4.0 * static_cast<double>(p.dims[0] * p.dims[1]) * pairs * static_cast<double>(p.dims[3]);
  }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    op::attention<T> o;
    o.causal = p.causal;
    o.scale = p.scale;
    f(o);
  }
  template <class T, class... V>
  static problem problem_of(const op::attention<T>& o, const V&... v) {
    const auto& q = std::get<0>(std::tie(v...));
    const auto& k = std::get<1>(std::tie(v...));
    problem p;
    p.op = "attention";
    p.type = dtype_of<T>();
    p.dims = q.dims;
    if (k.rank() == 4 && k.size(2) != q.size(2)) p.dims2 = shape{k.size(2)};
    p.causal = o.causal;
    p.scale = o.scale;
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) { return {p.type == dtype::f16 ? 2.0 : 3.0, 2.0, 4.0}; }
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
  static tolerance tolerance_of(const problem& p) { return attention_tolerance(p.type, p.dims[3], keys(p)); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"Q", "K", "V", "O"};
    c.push = {{"BH", "uint", "batch * heads"}, {"S", "uint", "query length"}, {"L", "uint", "key length"},
              {"D", "uint", "head dim of Q, K"}, {"DV", "uint", "head dim of V, O"},
              {"scale", "float", "score scale (1/sqrt(D) unless given)"}, {"causal", "uint", "1: query i sees keys j <= i"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "query rows (over B*H*S) per workgroup (default 1)";
    c.grid_rule = "G = ceil(BH * S / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const index_t bh = p.dims[0] * p.dims[1], s = p.dims[2], d = p.dims[3];
    const float scale = p.scale > 0 ? p.scale : 1.0f / std::sqrt(static_cast<float>(std::max<index_t>(1, d)));
    launch l;
    l.put_u32(bh, "B*H"), l.put_u32(s, "S"), l.put_u32(keys(p), "L"), l.put_u32(d, "D"), l.put_u32(d, "DV");
    l.put(scale), l.put(std::uint32_t(p.causal ? 1 : 0));
    l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(bh * s), t.tile ? t.tile : 1));
    return l;
  }
  static std::string semantics(const problem&) {
    return "scaled dot-product attention per (batch, head): O = softmax(Q·Kᵀ·scale [+ causal mask]) · V. Q is "
           "[B,H,S,D], K [B,H,L,D], V [B,H,L,DV], O [B,H,S,DV], flattened as [BH, rows, dim]. With causal, query i "
           "sees keys j <= i. NaN in a score row makes that output row NaN. Accumulate in f32.";
  }
  static std::string source_spec(const problem& p) {
    return std::string("def attention(q, k, v):\n    return F.scaled_dot_product_attention(q, k, v, is_causal=") +
           (p.causal ? "True" : "False") + ")";
  }
  static std::string record_params(const problem& p) {
    return (p.causal ? "_causal" : "") + (p.scale > 0 ? "_sc" + number_part(p.scale) : "");
  }
  /// S and L change independently of each other.
  static problem held_out(const problem& p) {
    problem q = p;
    q.dims[2] = odd_extent(p.dims[2]) == 1 ? 3 : odd_extent(p.dims[2]);
    const index_t l = keys(p);
    q.dims2 = shape{odd_extent(l) == 1 ? 5 : odd_extent(l)};
    return q;
  }
  /// S > L, so that with the causal mask the last queries see every key (a
  /// read of key L is visible, not masked).
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{1, 2, 13, 17};
    p.dims2 = shape{11};
    p.causal = true;
    return p;
  }
};

}  // namespace kforge
