// kforge/ops/elementwise_traits.hpp — the facts of unary and binary ops for
// the suite, problems, the generation module and the tool (core/op_traits.hpp).
#pragma once

#include <cmath>
#include <string>
#include <tuple>
#include <type_traits>

#include "kforge/ops/elementwise.hpp"
#include "kforge/ops/gemm_traits.hpp"

namespace kforge {

struct unary_traits : traits_base<unary_traits> {
  static constexpr std::string_view family = "unary";
  static constexpr std::string_view shape_syntax = "dims";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"relu", "dims, e.g. 64x1000"}, {"leaky_relu", "dims"}, {"gelu", "dims"},
                                        {"gelu_tanh", "dims"},         {"silu", "dims"},       {"exp", "dims"},
                                        {"tanh", "dims"},              {"sigmoid", "dims"},    {"abs", "dims"},
                                        {"neg", "dims"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) { return {operand("x", p.dims, true), operand("y", p.dims)}; }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {detail::slope_option};
    return opts;
  }

  /// Calls f(std::integral_constant<fn, F>) for a unary op's name.
  template <class F>
  static void with_fn(std::string_view name, F&& f) {
    const auto g = parse_fn(name);
    if (!g || *g == fn::identity) throw argument_error("kforge: unknown unary op '" + std::string(name) + "'");
    switch (*g) {
      case fn::relu: f(std::integral_constant<fn, fn::relu>{}); break;
      case fn::leaky_relu: f(std::integral_constant<fn, fn::leaky_relu>{}); break;
      case fn::gelu_tanh: f(std::integral_constant<fn, fn::gelu_tanh>{}); break;
      case fn::gelu_erf: f(std::integral_constant<fn, fn::gelu_erf>{}); break;
      case fn::silu: f(std::integral_constant<fn, fn::silu>{}); break;
      case fn::exp: f(std::integral_constant<fn, fn::exp>{}); break;
      case fn::tanh: f(std::integral_constant<fn, fn::tanh>{}); break;
      case fn::sigmoid: f(std::integral_constant<fn, fn::sigmoid>{}); break;
      case fn::abs: f(std::integral_constant<fn, fn::abs>{}); break;
      case fn::neg: f(std::integral_constant<fn, fn::neg>{}); break;
      case fn::identity: break;
    }
  }
  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    with_fn(p.op, [&](auto g) {
      op::unary<T, decltype(g)::value> o;
      o.slope = p.slope;
      f(o);
    });
  }
  template <class T, fn F, class... V>
  static problem problem_of(const op::unary<T, F>& o, const V&... v) {
    problem p;
    p.op = std::string(to_string(F));
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    p.slope = o.slope;
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) {
    const bool f16 = p.type == dtype::f16;
    const double mx = max_finite(p.type);
    // The overflow case: exp's argument just below where the result
    // overflows the storage type; the saturating functions' exp(-x) past
    // f32's range (x in [-100, -80]: a sigmoid built on exp(x) / (1 + exp(x))
    // gives Inf / Inf there).
    if (p.op == "exp") return {f16 ? 8.0 : 40.0, f16 ? 9.0 : 80.0, f16 ? 11.0 : 88.0, false, f16 ? 10.0 : 80.0, f16 ? 11.0 : 88.5};
    if (p.op == "relu" || p.op == "abs" || p.op == "neg" || p.op == "leaky_relu") return {f16 ? 1e4 : 1e30, mx / 4, mx / 2};
    return {f16 ? 100.0 : 1e3, 10.0, f16 ? 60.0 : 100.0, false, -100.0, -80.0};  // saturating functions
  }
  /// |f(x)|·(1 + |x|) (the function's relative error grows with its
  /// argument's), plus, for the gelus only, min(|x|, 1): they form 1 + tanh
  /// or 1 + erf, whose cancellation leaves an absolute error of a few f32
  /// ulps times |x| in every correct f32 kernel (the reference's too). The
  /// others are relative-accurate to their tails (exp(-20), sigmoid(-30),
  /// silu, tanh(1e-30)): no absolute term, so a kernel wrong by orders of
  /// magnitude below 1e-6 fails.
  /// The last term is underflow: below x ~ -87 exp(x) and sigmoid(x) leave
  /// f32's normal range, so a correct f32 kernel may lose them to flushing,
  /// or to exp(-x) overflowing in 1 / (1 + exp(-x)) (PyTorch's form); that
  /// costs (1 + |x|)·FLT_MIN absolute (written over atol's 1e-6), which
  /// matters only where a product carries it up (gated: silu(a)·b).
  static double unary_scale(fn f, double x, double y) {
    auto finite_or = [](double v, double alt) { return std::isfinite(v) ? v : alt; };
    const double ax = std::fabs(x);
    const double cancel = f == fn::gelu_tanh || f == fn::gelu_erf ? std::min(finite_or(ax, 1.0), 1.0) : 0.0;
    const double underflow = (1.0 + finite_or(ax, 0.0)) * (1.1754943508222875e-38 / 1e-6);
    return finite_or(std::fabs(y), 0.0) * (1.0 + finite_or(ax, 0.0)) + cancel + underflow;
  }
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                         const linear_scale_fn&) {
    const fn f = parse_fn(p.op).value_or(fn::identity);
    const std::vector<index_t> ro = ref.offsets(), xo = in[0].offsets();
    std::vector<double> scale(ro.size());
    for (std::size_t e = 0; e < ro.size(); ++e) scale[e] = unary_scale(f, in[0].get(xo[e]), ref.get(ro[e]));
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return elementwise_tolerance(p.type); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"x", "y"};
    c.push = {{"n", "uint", "element count"}, {"slope", "float", "leaky_relu negative slope"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "output elements per workgroup (default: local_size_x)";
    c.grid_rule = "G = ceil(n / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    launch l;
    const std::uint32_t n = launch::to_u32(p.dims.numel(), "elements");
    l.put(n), l.put(p.slope);
    l.grid = launch::flat_grid(launch::ceil_div(n, t.tile ? t.tile : t.local_size));
    return l;
  }
  static std::string semantics(const problem& p) {
    return "y[i] = " + p.op + "(x[i]) element-wise, computed in f32; NaN propagates. Definitions: relu(x)=x<0?0:x; "
           "leaky_relu(x)=x<0?slope*x:x; gelu(x)=0.5x(1+erf(x/sqrt2)); gelu_tanh(x)=0.5x(1+tanh(0.7978845608(x+0.044715x^3))); "
           "silu(x)=x*sigmoid(x); sigmoid(x)=1/(1+exp(-x)); tanh must not overflow for large |x|.";
  }
  static std::string source_spec(const problem& p) { return "def " + p.op + "(x):\n    return F." + p.op + "(x)"; }
  static std::string record_params(const problem& p) { return p.op == "leaky_relu" ? "_sl" + number_part(p.slope) : ""; }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{3, 7, 19};
    p.slope = 0.1f;
    return p;
  }
};

struct binary_traits : traits_base<binary_traits> {
  static constexpr std::string_view family = "binary";
  static constexpr std::string_view shape_syntax = "A[,B]";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"add", "A[,B] e.g. 8x100,100 (NumPy broadcasting)"},
                                        {"sub", "A[,B]"},
                                        {"mul", "A[,B]"},
                                        {"div", "A[,B]"},
                                        {"max", "A[,B]"},
                                        {"min", "A[,B]"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1; }
  static std::vector<operand_spec> operands(const problem& p) {
    const shape b = p.dims2.rank() ? p.dims2 : p.dims;
    return {operand("a", p.dims, true), operand("b", b, true), operand("c", broadcast_shape(p.op, p.dims, b))};
  }

  template <class F>
  static void with_binop(std::string_view name, F&& f) {
    const auto g = parse_binop(name);
    if (!g) throw argument_error("kforge: unknown binary op '" + std::string(name) + "'");
    switch (*g) {
      case binop::add: f(std::integral_constant<binop, binop::add>{}); break;
      case binop::sub: f(std::integral_constant<binop, binop::sub>{}); break;
      case binop::mul: f(std::integral_constant<binop, binop::mul>{}); break;
      case binop::div: f(std::integral_constant<binop, binop::div>{}); break;
      case binop::max: f(std::integral_constant<binop, binop::max>{}); break;
      case binop::min: f(std::integral_constant<binop, binop::min>{}); break;
    }
  }
  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    with_binop(p.op, [&](auto g) { f(op::binary<T, decltype(g)::value>{}); });
  }
  template <class T, binop F, class... V>
  static problem problem_of(const op::binary<T, F>&, const V&... v) {
    problem p;
    p.op = std::string(to_string(F));
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    p.dims2 = std::get<1>(std::tie(v...)).dims;
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) {
    const double mx = max_finite(p.type);
    return {p.type == dtype::f16 ? 100.0 : 1e6, std::sqrt(mx) / 4, std::sqrt(mx) / 2};
  }
  /// div's subnormal case, by position along the last axis (so that a and a
  /// broadcast b line up): positions 0, 1 mod 4 divide ±[2^125, 2^127) by
  /// denominators past 2^126 (a·(1/b) gives a subnormal 1/b there, which a
  /// device that flushes turns into 0); 2 mod 4 divide numerators near
  /// 2^-123 by subnormal denominators (a / b ~ 2^15, but 1/b overflows to
  /// Inf); 3 mod 4 numbers near 1. f16 keeps the generic case (its range
  /// ends at 65504).
  static bool prepare_case(const problem& p, input_case c, std::vector<host_tensor>& ts, std::uint64_t seed) {
    if (c == input_case::overflow) return false;
    if (c != input_case::subnormal || p.op != "div" || p.type == dtype::f16) return true;
    std::uint64_t s = seed ^ 0x64697669646521ull;
    auto next = [&s] {  // splitmix64
      std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    };
    auto unit = [&] { return static_cast<double>(next() >> 11) * 0x1.0p-53; };
    auto sign = [&] { return (next() & 1) ? 1.0 : -1.0; };
    for (int t = 0; t < 2; ++t) {
      host_tensor& h = ts[static_cast<std::size_t>(t)];
      const std::vector<index_t> offs = h.offsets();
      const index_t cols = h.dims.rank() ? std::max<index_t>(1, h.dims.back()) : 1;
      for (std::size_t e = 0; e < offs.size(); ++e) {
        const index_t k = static_cast<index_t>(e) % cols % 4;
        const double v = t == 0 ? (k < 2 ? std::ldexp(1.0 + unit(), 125 + static_cast<int>(next() % 2))
                                   : k == 2 ? std::ldexp(1.0 + unit(), -124 + static_cast<int>(next() % 4))
                                            : 0.5 + unit())
                                : (k < 2 ? std::ldexp(1.0 + unit(), 126)
                                   : k == 2 ? std::ldexp(1.0 + unit(), -140 - static_cast<int>(next() % 4))
                                            : 0.5 + unit());
        h.set(offs[e], static_cast<float>(sign() * v));
      }
    }
    return true;
  }
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>&, const host_tensor& ref,
                                         const linear_scale_fn& linear) {
    if (p.op == "add" || p.op == "sub") {  // |a| + |b|
      problem q = p;
      q.op = "add";
      return linear(q);
    }
    const std::vector<index_t> ro = ref.offsets();
    std::vector<double> scale(ro.size());
    for (std::size_t e = 0; e < ro.size(); ++e) scale[e] = std::fabs(ref.get(ro[e]));
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return elementwise_tolerance(p.type); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"a", "b", "c"};
    c.push = {{"n", "uint", "output element count"}, {"rank", "uint", "output rank (<= 6)"},
              {"dims[6]", "uint", "output extents (first `rank` used)"},
              {"sa[6]", "uint", "element strides of a over the output dims (0 where broadcast)"},
              {"sb[6]", "uint", "element strides of b over the output dims (0 where broadcast)"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "output elements per workgroup (default: local_size_x)";
    c.grid_rule = "G = ceil(n / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const auto ops = operands(p);
    const shape out = ops.back().dims;
    const shape sa = broadcast_strides(tensor_view<const float>(nullptr, ops[0].dims), out);
    const shape sb = broadcast_strides(tensor_view<const float>(nullptr, ops[1].dims), out);
    launch l;
    const std::uint32_t n = launch::to_u32(out.numel(), "elements");
    l.put(n), l.put(static_cast<std::uint32_t>(out.rank()));
    for (const shape* s : {&out, &sa, &sb})
      for (int d = 0; d < 6; ++d) l.put(d < out.rank() ? launch::to_u32((*s)[d], "extent") : std::uint32_t(0));
    l.grid = launch::flat_grid(launch::ceil_div(n, t.tile ? t.tile : t.local_size));
    return l;
  }
  static std::string semantics(const problem& p) {
    return "c = " + p.op + "(a, b) element-wise with NumPy broadcasting (use the strides given; they are 0 along "
           "broadcast dims). max/min propagate NaN from either side.";
  }
  static std::string source_spec(const problem& p) {
    return "def " + p.op + "(a, b):\n    return torch." +
           (p.op == "max" ? std::string("maximum") : p.op == "min" ? std::string("minimum") : p.op) + "(a, b)";
  }
  /// Per output axis (aligned from the right): where a and b agree, both get
  /// the new extent (an axis of 1 in both grows on both sides); where one
  /// broadcasts (1, or no such axis) against the other, it keeps
  /// broadcasting and the other is redrawn. The last output axis is a row
  /// (held_out_draw::row), the others extents; for a loop limit, the last
  /// axis shrunk on both sides.
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    if (!p.dims2.rank()) {  // b has a's shape
      const int last = q.dims.rank() - 1;
      for (int i = 0; i <= last; ++i)
        q.dims[i] = d.loop_limit ? (i == last ? d.fit(p.dims[i]) : p.dims[i]) : i == last ? d.row(p.dims[i]) : d.extent(p.dims[i]);
      return q;
    }
    const int ra = p.dims.rank(), rb = p.dims2.rank(), ro = std::max(ra, rb);
    for (int o = 0; o < ro; ++o) {  // output axis o, counted from the left of the output
      const int ia = o - (ro - ra), ib = o - (ro - rb);
      const index_t ea = ia >= 0 ? p.dims[ia] : 1, eb = ib >= 0 ? p.dims2[ib] : 1;
      const index_t e = std::max(ea, eb);
      const bool last = o == ro - 1;
      const index_t v = d.loop_limit ? (last ? d.fit(e) : e) : last ? d.row(e) : d.extent(e);
      // A side that broadcast against a longer other side keeps its 1.
      if (ia >= 0) q.dims[ia] = ea == 1 && eb > 1 ? 1 : v;
      if (ib >= 0) q.dims2[ib] = eb == 1 && ea > 1 ? 1 : v;
    }
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{7, 33};
    p.dims2 = shape{33};
    return p;
  }
};

}  // namespace kforge
