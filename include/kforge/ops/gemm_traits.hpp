// kforge/ops/gemm_traits.hpp — gemm's facts for the suite, problems, the
// generation module and the tool (core/op_traits.hpp), and the run-time names
// of the fused epilogues, which conv2d shares.
#pragma once

#include <cmath>
#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/gemm.hpp"

namespace kforge {
namespace detail {
inline bool epilogue_has_bias(std::string_view e) { return e == "bias" || e.starts_with("bias_"); }

/// Calls f(epilogue-type{}) for an epilogue name.
template <class F>
void with_epilogue(std::string_view e, F&& f) {
  if (e == "none") f(epilogue::none{});
  else if (e == "bias") f(epilogue::bias{});
  else if (e == "relu") f(epilogue::relu{});
  else if (e == "bias_relu") f(epilogue::bias_relu{});
  else if (e == "leaky_relu") f(epilogue::leaky_relu{});
  else if (e == "bias_leaky_relu") f(epilogue::bias_leaky_relu{});
  else if (e == "gelu_tanh") f(epilogue::gelu_tanh{});
  else if (e == "bias_gelu_tanh") f(epilogue::bias_gelu_tanh{});
  else if (e == "gelu" || e == "gelu_erf") f(epilogue::gelu{});
  else if (e == "bias_gelu" || e == "bias_gelu_erf") f(epilogue::bias_gelu{});
  else if (e == "silu") f(epilogue::silu{});
  else if (e == "bias_silu") f(epilogue::bias_silu{});
  else
    throw argument_error("kforge: unknown epilogue '" + std::string(e) +
                         "' (expected none, bias, relu, leaky_relu, gelu, gelu_tanh, silu, or bias_<activation>)");
}

/// The epilogue's activation in PyTorch words ("relu"), or "" for none.
inline std::string epilogue_activation(const std::string& e) {
  std::string a = e.starts_with("bias_") ? e.substr(5) : (e == "bias" ? "none" : e);
  return a == "none" ? "" : a;
}

inline float finite_option(std::string_view option, std::string_view v) {
  return static_cast<float>(option_number(option, v, number_ranges::finite_f32));
}

/// --epilogue and --slope: gemm's and conv2d's fused epilogue.
inline constexpr cli_option epilogue_option{
    "epilogue", "E", "none, bias, relu, leaky_relu, gelu, gelu_tanh, silu, or bias_<activation> (e.g. bias_gelu)",
    [](problem& p, std::string_view v) {
      with_epilogue(v, [](auto) {});
      p.epilogue = std::string(v);
    }};
inline constexpr cli_option slope_option{"slope", "S", "leaky_relu negative slope (default 0.01)",
                                          [](problem& p, std::string_view v) { p.slope = finite_option("slope", v); }};
}  // namespace detail

struct gemm_traits : traits_base<gemm_traits> {
  static constexpr std::string_view family = "gemm";
  static constexpr std::string_view shape_syntax = "MxNxK";
  static constexpr bool compute_bound = true;

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"gemm", "MxNxK"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() == 3 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) {
    const index_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
    auto col_major = [](shape d) { return shape{1, d[0]}; };
    std::vector<operand_spec> ops{operand("A", shape{m, k}, true), operand("B", shape{k, n})};
    if (p.a_col_major) ops[0].strides = col_major(shape{m, k});
    if (p.b_col_major) ops[1].strides = col_major(shape{k, n});
    if (detail::epilogue_has_bias(p.epilogue)) ops.push_back(operand("bias", shape{n}));
    ops.push_back(operand("C", shape{m, n}));
    ops.back().also_input = p.beta != 0.0f;
    return ops;
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        detail::epilogue_option,
        {"alpha", "A", "scale of A*B (C = act(alpha*A*B + beta*C + bias))",
         [](problem& p, std::string_view v) { p.alpha = detail::finite_option("alpha", v); }},
        {"beta", "B", "scale of the old C (read only when beta != 0)",
         [](problem& p, std::string_view v) { p.beta = detail::finite_option("beta", v); }},
        detail::slope_option,
        {"col-major-a", "", "A is column-major", [](problem& p, std::string_view) { p.a_col_major = true; }},
        {"col-major-b", "", "B is column-major", [](problem& p, std::string_view) { p.b_col_major = true; }},
    };
    return opts;
  }
  static std::string describe(const problem& p) {
    std::string d = p.epilogue != "none" ? " epilogue=" + p.epilogue : "";
    if (const double w = p.attr("weights", -1); w >= 0) d += " weights=" + std::string(to_string(static_cast<qformat>(static_cast<int>(w))));
    return d;
  }
  static double flops(const problem& p) { return 2.0 * p.dims[0] * p.dims[1] * p.dims[2]; }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    detail::with_epilogue(p.epilogue, [&](auto e) {
      op::gemm<T, decltype(e)> o;
      o.epilogue.slope = p.slope;
      o.alpha = p.alpha;
      o.beta = p.beta;
      f(o);
    });
  }
  template <class T, class E, class A, class... V>
  static problem problem_of(const op::gemm<T, E, A>& o, const V&... v) {
    const auto& a = std::get<0>(std::tie(v...));
    const auto& b = std::get<1>(std::tie(v...));
    problem p;
    p.op = "gemm";
    p.type = dtype_of<T>();
    p.dims = shape{a.size(0), b.size(1), a.size(1)};
    p.epilogue = epilogue::epilogue_name<E>();
    p.alpha = o.alpha, p.beta = o.beta, p.slope = o.epilogue.slope;
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) { return product_magnitudes(p.type, static_cast<double>(p.dims[2])); }
  /// Inputs of a product summing k terms: large as the dtype allows without the sum overflowing.
  static case_magnitudes product_magnitudes(dtype t, double k) {
    const double m = std::sqrt(max_finite(t) / (8.0 * std::max(1.0, k)));
    return {std::min(t == dtype::f16 ? 100.0 : 1e3, m), m / 2, m};
  }
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>&, const host_tensor&,
                                         const linear_scale_fn& linear) {
    // The same gemm on |inputs|, activation dropped, |alpha|, |beta|.
    problem q = p;
    q.epilogue = detail::epilogue_has_bias(p.epilogue) ? "bias" : "none";
    q.alpha = std::fabs(p.alpha);
    q.beta = std::fabs(p.beta);
    return linear(q);
  }
  /// A problem whose B stands for a quantized weight (attrs "weights" = its
  /// qformat's code, as model::verify marks its stand-ins) gets the quantized
  /// gemm's tolerance.
  static tolerance tolerance_of(const problem& p) {
    return p.attr("weights", -1) >= 0 ? gemm_quantized_tolerance(p.type, p.dims[2]) : gemm_tolerance(p.type, p.dims[2]);
  }

  static kernel_contract contract(const problem& p) {
    kernel_contract c;
    c.bindings = {"A", "B"};
    if (detail::epilogue_has_bias(p.epilogue)) c.bindings.push_back("bias");
    c.bindings.push_back("C");
    c.push = {{"M", "uint", "rows of A and C"}, {"N", "uint", "columns of B and C"},
              {"K", "uint", "columns of A, rows of B"}, {"alpha", "float", "scale of A*B"},
              {"beta", "float", "scale of the old C (C is read only when beta != 0)"},
              {"slope", "float", "leaky_relu negative slope"}};
    c.tile_2d = true;
    c.tile_meaning = "TILE_M x TILE_N outputs of C";
    c.grid_rule = "(ceil(N / TILE_N), ceil(M / TILE_M), 1)";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    launch l;
    const std::uint32_t m = launch::to_u32(p.dims[0], "M"), n = launch::to_u32(p.dims[1], "N");
    l.put(m), l.put(n), l.put_u32(p.dims[2], "K"), l.put(p.alpha), l.put(p.beta), l.put(p.slope);
    l.grid = {static_cast<std::uint32_t>(launch::ceil_div(n, t.tile_n)), static_cast<std::uint32_t>(launch::ceil_div(m, t.tile_m)), 1};
    return l;
  }
  static std::string semantics(const problem& p) {
    std::string e = p.epilogue == "none" ? "" : " then the epilogue '" + p.epilogue + "'";
    return "C = alpha * A·B + beta * C" +
           std::string(detail::epilogue_has_bias(p.epilogue) ? " + bias[n] (per column)" : "") + e +
           ". A is [M,K], B is [K,N], C is [M,N], all row-major. When beta == 0, C must not be read." +
           " Accumulate in f32. Activations: relu(x)=max(x,0) with NaN passing through; leaky_relu(x)=x<0?slope*x:x;"
           " gelu(x)=0.5x(1+erf(x/sqrt2)); gelu_tanh(x)=0.5x(1+tanh(0.7978845608(x+0.044715x^3))); silu(x)=x/(1+exp(-x)).";
  }
  static std::string source_spec(const problem& p) {
    std::string e = "alpha * (A @ B)";
    if (p.beta != 0) e += " + beta * C";
    if (detail::epilogue_has_bias(p.epilogue)) e += " + bias";
    const std::string act = detail::epilogue_activation(p.epilogue);
    if (!act.empty()) e = "F." + act + "(" + e + ")";
    return "def gemm(A, B, C, bias, alpha=" + std::to_string(p.alpha) + ", beta=" + std::to_string(p.beta) +
           "):\n    return " + e;
  }
  static std::string record_params(const problem& p) {
    std::string s;
    if (p.epilogue != "none") s += "_e" + p.epilogue;
    if (p.alpha != 1.0f) s += "_a" + number_part(p.alpha);
    if (p.beta != 0.0f) s += "_b" + number_part(p.beta);
    if (p.epilogue.find("leaky") != std::string::npos) s += "_sl" + number_part(p.slope);
    return s;
  }
  /// M and N each cross the kernel's output tile (read back by reflection;
  /// 64 where none): odd, in (tile, 3·tile], never a multiple of it. K odd,
  /// small on draw 0 (1..23: a wrong epilogue constant cannot hide in a
  /// tolerance that grows with K) and past both K's bucket and 64 on draw 1
  /// (in (F, 2F], F = max(64, the bucket's top)), so that it crosses every K
  /// tile up to 64 (the K tile is the kernel's own knob, which the contract
  /// does not expose). In the residue sweep N and K are rows (held_out_draw)
  /// and M a small extent. For a loop limit, K shrunk (one K step costs a
  /// pass over an invocation's share of the output tile).
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    if (d.loop_limit) {
      const double share = d.tiles.local_size ? double(d.tiles.tile_m) * d.tiles.tile_n / d.tiles.local_size : 1.0;
      q.dims[2] = d.fit(p.dims[2], share);
      return q;
    }
    if (d.sweep()) {
      q.dims[0] = d.extent(p.dims[0]);
      q.dims[1] = d.row(p.dims[1]);
      q.dims[2] = d.row(p.dims[2]);
      return q;
    }
    auto cross = [&](index_t e, std::uint32_t tile) {
      const index_t t = tile ? tile : 64;
      index_t v = d.odd(t + 1, 3 * t, e);
      while (v % t == 0 || v == e) v += 2;
      return v;
    };
    q.dims[0] = cross(p.dims[0], d.tiles.tile_m);
    q.dims[1] = cross(p.dims[1], d.tiles.tile_n);
    const index_t f = std::max<index_t>(64, held_out_draw::bucket_top(p.dims[2]));
    q.dims[2] = d.index % 2 == 0 ? d.odd(1, 23, p.dims[2]) : d.odd(f + 1, 2 * f, p.dims[2]);
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{37, 29, 35};
    p.alpha = 0.5f;
    p.epilogue = "bias";
    return p;
  }
};

}  // namespace kforge
