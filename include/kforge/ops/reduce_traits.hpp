// kforge/ops/reduce_traits.hpp — the facts of the reductions for the suite,
// problems, the generation module and the tool (core/op_traits.hpp).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/reduce.hpp"

namespace kforge {

struct reduce_traits : traits_base<reduce_traits> {
  static constexpr std::string_view family = "reduce";
  static constexpr std::string_view shape_syntax = "dims";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"reduce_sum", "dims (with --axis)"},
                                        {"reduce_mean", "dims (with --axis)"},
                                        {"reduce_max", "dims (with --axis)"},
                                        {"reduce_min", "dims (with --axis)"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1 && p.dims2.rank() == 0; }
  /// The reduced axis, counted from the front; argument_error when out of range.
  static int axis_of(const problem& p) {
    const int axis = p.axis < 0 ? p.axis + p.dims.rank() : p.axis;
    if (axis < 0 || axis >= p.dims.rank())
      throw argument_error("kforge::" + p.op + ": axis " + std::to_string(p.axis) + " is out of range for " + p.dims.str());
    return axis;
  }
  static std::vector<operand_spec> operands(const problem& p) {
    const int axis = axis_of(p);
    shape out;
    for (int i = 0; i < p.dims.rank(); ++i)
      if (i != axis) out.push_back(p.dims[i]);
    return {operand("x", p.dims, true), operand("y", out)};
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"axis", "N", "the reduced axis (default -1; negative counts from the back)",
         [](problem& p, std::string_view v) { p.axis = static_cast<int>(parse_integer("axis", v)); }}};
    return opts;
  }
  static std::string describe(const problem& p) { return " axis=" + std::to_string(p.axis); }

  template <class F>
  static void with_fn(std::string_view name, F&& f) {
    const auto g = name.starts_with("reduce_") ? parse_reduce_fn(name.substr(7)) : std::nullopt;
    if (!g) throw argument_error("kforge: unknown reduction '" + std::string(name) + "'");
    switch (*g) {
      case reduce_fn::sum: f(std::integral_constant<reduce_fn, reduce_fn::sum>{}); break;
      case reduce_fn::mean: f(std::integral_constant<reduce_fn, reduce_fn::mean>{}); break;
      case reduce_fn::max: f(std::integral_constant<reduce_fn, reduce_fn::max>{}); break;
      case reduce_fn::min: f(std::integral_constant<reduce_fn, reduce_fn::min>{}); break;
    }
  }
  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    with_fn(p.op, [&](auto g) {
      op::reduce<T, decltype(g)::value> o;
      o.axis = p.axis;
      f(o);
    });
  }
  template <class T, reduce_fn F, class... V>
  static problem problem_of(const op::reduce<T, F>& o, const V&... v) {
    problem p;
    p.op = "reduce_" + std::string(to_string(F));
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    p.axis = o.axis;
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) {
    const double mx = max_finite(p.type);
    const double n = static_cast<double>(std::max<index_t>(1, p.dims[axis_of(p)]));
    return {std::min(p.type == dtype::f16 ? 100.0 : 1e4, mx / (4 * n)), mx / (8 * n), mx / (4 * n)};
  }
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>&, const host_tensor& ref,
                                         const linear_scale_fn& linear) {
    if (p.op == "reduce_sum" || p.op == "reduce_mean") return linear(p);
    const std::vector<index_t> ro = ref.offsets();
    std::vector<double> scale(ro.size());
    for (std::size_t e = 0; e < ro.size(); ++e) scale[e] = std::fabs(ref.get(ro[e]));
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return reduce_tolerance(p.type, p.dims[axis_of(p)]); }
  /// The signed_specials case along the reduced axis (the suite's rows run
  /// along the last one): every fourth output's whole line -Inf (max) or
  /// +Inf (min), so a max started at -FLT_MAX gives -FLT_MAX there.
  static bool prepare_case(const problem& p, input_case c, std::vector<host_tensor>& ts, std::uint64_t) {
    if (c == input_case::overflow) return false;
    if (c != input_case::signed_specials || (p.op != "reduce_max" && p.op != "reduce_min")) return true;
    const int axis = axis_of(p);
    index_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= p.dims[d];
    for (int d = axis + 1; d < p.dims.rank(); ++d) inner *= p.dims[d];
    const index_t n = p.dims[axis];
    const float inf = p.op == "reduce_max" ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    const std::vector<index_t> xo = ts[0].offsets();
    for (index_t o = 0; o < outer; ++o)
      for (index_t i = 0; i < inner; ++i)
        if ((o * inner + i) % 4 == 2)
          for (index_t j = 0; j < n; ++j) ts[0].set(xo[static_cast<std::size_t>((o * n + j) * inner + i)], inf);
    return true;
  }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"x", "y"};
    c.push = {{"outer", "uint", "product of dims before the axis"}, {"n", "uint", "extent of the reduced axis"},
              {"inner", "uint", "product of dims after the axis"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "output elements per workgroup (default 1)";
    c.grid_rule = "G = ceil(outer * inner / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const int axis = axis_of(p);
    index_t outer = 1, inner = 1;
    for (int d = 0; d < axis; ++d) outer *= p.dims[d];
    for (int d = axis + 1; d < p.dims.rank(); ++d) inner *= p.dims[d];
    launch l;
    l.put_u32(outer, "outer"), l.put_u32(p.dims[axis], "n"), l.put_u32(inner, "inner");
    l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(outer * inner), t.tile ? t.tile : 1));
    return l;
  }
  static std::string semantics(const problem& p) {
    return p.op + " over axis " + std::to_string(p.axis) + ": the input is seen as dense [outer, n, inner] and "
           "y[o, i] = reduce over j of x[(o*n + j)*inner + i]. Sums accumulate in f32; max/min propagate NaN.";
  }
  static std::string source_spec(const problem& p) {
    return "def " + p.op + "(x):\n    return torch." + p.op.substr(7) + "(x, dim=" + std::to_string(p.axis) + ")" +
           (p.op == "reduce_max" || p.op == "reduce_min" ? ".values" : "");
  }
  static std::string record_params(const problem& p) { return "_ax" + std::to_string(p.axis); }
  /// The reduced axis and the last axis are rows (held_out_draw), the others
  /// extents; for a loop limit, the reduced axis shrunk.
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    const int axis = axis_of(p), last = p.dims.rank() - 1;
    if (d.loop_limit) {
      q.dims[axis] = d.fit(p.dims[axis]);
      return q;
    }
    for (int i = 0; i <= last; ++i) q.dims[i] = i == axis || i == last ? d.row(p.dims[i]) : d.extent(p.dims[i]);
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{5, 33, 3};
    p.axis = 1;
    return p;
  }
};

}  // namespace kforge
