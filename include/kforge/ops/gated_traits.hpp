// kforge/ops/gated_traits.hpp — the gated activations' facts for the suite,
// problems, the generation module and the tool (core/op_traits.hpp). The op
// name picks the activation: swiglu (silu), geglu (gelu, erf), geglu_tanh.
#pragma once

#include <cmath>
#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/elementwise_traits.hpp"
#include "kforge/ops/gated.hpp"

namespace kforge {

struct gated_traits : traits_base<gated_traits> {
  static constexpr std::string_view family = "gated";
  static constexpr std::string_view shape_syntax = "[...x]2F";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"swiglu", "[...x]2F (x = [gate | up]; y = silu(gate) * up, [...x]F)"},
                                        {"geglu", "[...x]2F (y = gelu(gate) * up, erf form)"},
                                        {"geglu_tanh", "[...x]2F (y = gelu_tanh(gate) * up)"}};
    return names;
  }
  static fn activation(const problem& p) {
    for (fn f : {fn::silu, fn::gelu_erf, fn::gelu_tanh})
      if (gated_op_name(f) == p.op) return f;
    throw argument_error("kforge: unknown gated op '" + p.op + "'");
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) {
    if (p.dims.back() % 2)
      throw argument_error("kforge::" + p.op + ": last dim 2F = " + std::to_string(p.dims.back()) + " must be even");
    shape y = p.dims;
    y[y.rank() - 1] = p.dims.back() / 2;
    return {operand("x", p.dims, true), operand("y", y)};
  }
  static double flops(const problem& p) { return 8.0 * static_cast<double>(p.dims.numel() / 2); }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    f(op::gated<T>{activation(p)});
  }
  template <class T, class... V>
  static problem problem_of(const op::gated<T>& o, const V&... v) {
    problem p;
    p.op = std::string(gated_op_name(o.activation));
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    return p;
  }

  /// The saturating functions' magnitudes of unary_traits; the product of two
  /// such values stays far from f16's 65504.
  static case_magnitudes magnitudes(const problem& p) {
    const bool f16 = p.type == dtype::f16;
    return {f16 ? 100.0 : 1e3, 10.0, f16 ? 60.0 : 100.0, false, -100.0, -80.0};
  }
  /// |b| · the activation's unary scale at a (unary_traits::unary_scale:
  /// relative for silu, with the gelus' cancellation term).
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                         const linear_scale_fn&) {
    auto finite_or = [](double v, double alt) { return std::isfinite(v) ? v : alt; };
    const fn act = activation(p);
    const index_t f = ref.dims.back();
    const std::vector<index_t> xo = in[0].offsets();
    std::vector<double> scale(static_cast<std::size_t>(ref.dims.numel()));
    for (std::size_t e = 0; e < scale.size(); ++e) {
      const index_t row = static_cast<index_t>(e) / f, j = static_cast<index_t>(e) % f;
      const float a = in[0].get(xo[static_cast<std::size_t>(row * 2 * f + j)]);
      const float b = in[0].get(xo[static_cast<std::size_t>(row * 2 * f + f + j)]);
      const float y = act == fn::silu ? math::silu(a) : act == fn::gelu_erf ? math::gelu_erf(a) : math::gelu_tanh(a);
      scale[e] = finite_or(std::fabs(b), 0.0) * unary_traits::unary_scale(act, a, y);
    }
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return gated_tolerance(p.type); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"x", "y"};
    c.push = {{"rows", "uint", "product of all dims but the last"},
              {"F", "uint", "output columns (half the input's last dim)"},
              {"act", "uint", "activation as a kforge::fn code: 5 silu, 4 gelu (erf), 3 gelu_tanh"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "output elements per workgroup (default: local_size_x)";
    c.grid_rule = "G = ceil(rows * F / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const index_t f = p.dims.back() / 2, rows = f ? p.dims.numel() / (2 * f) : 0;
    launch l;
    l.put_u32(rows, "rows"), l.put_u32(f, "F"), l.put(static_cast<std::uint32_t>(activation(p)));
    l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(rows * f), t.tile ? t.tile : t.local_size));
    return l;
  }
  static std::string semantics(const problem& p) {
    return "gated activation " + p.op + ": x is [rows, 2F], y is [rows, F]; y[r, j] = act(x[r, j]) * x[r, F + j] "
           "computed in f32, with act = " + std::string(to_string(activation(p))) +
           "; silu(x)=x*sigmoid(x); gelu(x)=0.5x(1+erf(x/sqrt2)); gelu_tanh(x)=0.5x(1+tanh(0.7978845608(x+0.044715x^3))). "
           "NaN propagates; tanh and sigmoid must not overflow for large |x|.";
  }
  static std::string source_spec(const problem& p) {
    const fn a = activation(p);
    const std::string act = a == fn::silu ? "F.silu(a)" : a == fn::gelu_erf ? "F.gelu(a)" : "F.gelu(a, approximate='tanh')";
    return "def " + p.op + "(x):  # x [..., 2F]\n    a, b = x.chunk(2, dim=-1)\n    return " + act + " * b";
  }
  /// The leading dims extents, F a row (held_out_draw); for a loop limit, F shrunk.
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    const int last = q.dims.rank() - 1;
    if (d.loop_limit) {
      q.dims[last] = 2 * d.fit(p.dims.back() / 2);
      return q;
    }
    for (int i = 0; i < last; ++i) q.dims[i] = d.extent(p.dims[i]);
    q.dims[last] = 2 * d.row(p.dims.back() / 2);
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{3, 7, 38};
    return p;
  }
};

}  // namespace kforge
