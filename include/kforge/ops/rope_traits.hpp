// kforge/ops/rope_traits.hpp — rope's facts for the suite, problems, the
// generation module and the tool (core/op_traits.hpp). Its parameters live in
// problem::attrs: "base", "offset", "interleaved" (0/1).
#pragma once

#include <cmath>
#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/rope.hpp"

namespace kforge {

struct rope_traits : traits_base<rope_traits> {
  static constexpr std::string_view family = "rope";
  static constexpr std::string_view shape_syntax = "[...x]SxHxD";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"rope", "[...x]SxHxD (positions x heads x head dim, D even)"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 3 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) {
    if (p.dims.back() % 2) throw argument_error("kforge::rope: head dim D = " + std::to_string(p.dims.back()) + " must be even");
    return {operand("x", p.dims, true), operand("y", p.dims)};
  }
  static float base(const problem& p) { return static_cast<float>(p.attr("base", op::rope<float>{}.base)); }
  static index_t offset(const problem& p) { return static_cast<index_t>(p.attr("offset", 0)); }
  static bool interleaved(const problem& p) { return p.attr("interleaved", 0) != 0; }

  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"base", "B", "rope: θ base (default 10000; Llama 3 uses 500000)",
         [](problem& p, std::string_view v) {
           p.attrs["base"] = option_number("base", v, {1, 1e30, true, false});
         }},
        {"offset", "P", "rope: position of the first row (default 0)",
         [](problem& p, std::string_view v) {
           p.attrs["offset"] = option_number("offset", v, {0, 1 << 30, false, true});
         }},
        {"interleaved", "", "rope: rotate pairs (2i, 2i+1) instead of (i, i + D/2)",
         [](problem& p, std::string_view) { p.attrs["interleaved"] = 1; }},
    };
    return opts;
  }
  static std::string describe(const problem& p) {
    std::string s;
    if (offset(p)) s += " offset=" + std::to_string(offset(p));
    if (base(p) != op::rope<float>{}.base) s += " base=" + number_part(base(p));
    return s + (interleaved(p) ? " interleaved" : "");
  }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    op::rope<T> o;
    o.base = base(p);
    o.offset = offset(p);
    o.interleaved = interleaved(p);
    f(o);
  }
  template <class T, class... V>
  static problem problem_of(const op::rope<T>& o, const V&... v) {
    problem p;
    p.op = "rope";
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    if (o.base != op::rope<T>{}.base) p.attrs["base"] = o.base;
    if (o.offset) p.attrs["offset"] = static_cast<double>(o.offset);
    if (o.interleaved) p.attrs["interleaved"] = 1;
    return p;
  }

  static case_magnitudes magnitudes(const problem& p) {
    const double mx = max_finite(p.type);
    return {p.type == dtype::f16 ? 1e3 : 1e6, mx / 8, mx / 4};
  }
  /// |a| + |b| of each element's pair.
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                         const linear_scale_fn&) {
    const index_t d = p.dims.back(), half = d / 2;
    const bool il = interleaved(p);
    const std::vector<index_t> xo = in[0].offsets();
    std::vector<double> scale(static_cast<std::size_t>(ref.dims.numel()));
    for (std::size_t e = 0; e < scale.size(); ++e) {
      const index_t j = static_cast<index_t>(e) % d, row = static_cast<index_t>(e) - j;
      const index_t partner = il ? (j ^ 1) : (j < half ? j + half : j - half);
      scale[e] = std::fabs(in[0].get(xo[e])) + std::fabs(in[0].get(xo[static_cast<std::size_t>(row + partner)]));
    }
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return rope_tolerance(p.type, offset(p) + p.dims.back(2)); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"x", "y"};
    c.push = {{"rows", "uint", "product of all dims but the last two (the [..., S] rows)"},
              {"S", "uint", "positions per outer index (dim -3)"},
              {"H", "uint", "heads (dim -2)"},
              {"D", "uint", "head dim (even)"},
              {"offset", "uint", "position of row s = 0"},
              {"base", "float", "theta base"},
              {"interleaved", "uint", "1: pairs (2i, 2i+1); 0: pairs (i, i + D/2)"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "rotated pairs per workgroup (default: local_size_x)";
    c.grid_rule = "G = ceil(rows * H * D/2 / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const index_t d = p.dims.back(), h = p.dims.back(1), rows = p.dims.numel() / std::max<index_t>(1, h * d);
    launch l;
    l.put_u32(rows, "rows"), l.put_u32(p.dims.back(2), "S"), l.put_u32(h, "H"), l.put_u32(d, "D");
    l.put_u32(offset(p), "offset"), l.put(base(p)), l.put(std::uint32_t(interleaved(p) ? 1 : 0));
    l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(rows * h * (d / 2)), t.tile ? t.tile : t.local_size));
    return l;
  }
  static std::string semantics(const problem&) {
    return "rotary position embedding: x and y are [rows, H, D] with rows = outer * S; row r has position "
           "p = offset + r % S. For i < D/2, theta_i = p * base^(-2i/D) and the pair (a, b) becomes "
           "(a cos(theta_i) - b sin(theta_i), a sin(theta_i) + b cos(theta_i)); the pair is (x[2i], x[2i+1]) when "
           "interleaved, else (x[i], x[i + D/2]). Compute in f32; reduce large angles to [-pi, pi] before cos/sin "
           "(positions reach tens of thousands).";
  }
  static std::string source_spec(const problem& p) {
    return std::string("def rope(x, base=") + number_part(base(p)) + ", offset=" + std::to_string(offset(p)) +
           "):  # x [..., S, H, D]\n    S, D = x.shape[-3], x.shape[-1]\n"
           "    inv = base ** (-torch.arange(0, D, 2).float() / D)\n"
           "    ang = (offset + torch.arange(S).float())[:, None] * inv  # [S, D/2]\n"
           "    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]\n" +
           (interleaved(p) ? "    a, b = x[..., 0::2], x[..., 1::2]\n    return torch.stack((a*cos - b*sin, a*sin + b*cos), -1).flatten(-2)"
                           : "    a, b = x[..., :D//2], x[..., D//2:]\n    return torch.cat((a*cos - b*sin, a*sin + b*cos), -1)");
  }
  static std::string record_params(const problem& p) {
    std::string s;
    if (base(p) != op::rope<float>{}.base) s += "_b" + number_part(base(p));
    if (offset(p)) s += "_o" + std::to_string(offset(p));
    return s + (interleaved(p) ? "_il" : "");
  }
  /// The leading dims, S and H extents; D stays even, D/2 (the rotated
  /// pairs) a row (held_out_draw); for a loop limit, D/2 shrunk.
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
    p.dims = shape{2, 5, 3, 18};
    p.attrs["offset"] = 7;
    return p;
  }
};

}  // namespace kforge
