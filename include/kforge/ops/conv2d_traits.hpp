// kforge/ops/conv2d_traits.hpp — conv2d's facts for the suite, problems, the
// generation module and the tool (core/op_traits.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "kforge/ops/conv2d.hpp"
#include "kforge/ops/gemm_traits.hpp"

namespace kforge {

struct conv2d_traits : traits_base<conv2d_traits> {
  static constexpr std::string_view family = "conv2d";
  static constexpr std::string_view shape_syntax = "NxCxHxW,KxCxRxS";
  static constexpr bool compute_bound = true;

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"conv2d", "NxCxHxW,KxCxRxS (C of the filter = C/groups)"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() == 4 && p.dims2.rank() == 4; }
  static conv2d_dims dims_of(const problem& p) {
    return make_conv2d_dims(p.stride[0], p.stride[1], p.pad[0], p.pad[1], p.dilation[0], p.dilation[1], p.groups,
                            p.dims, p.dims2);
  }
  static std::vector<operand_spec> operands(const problem& p) {
    const conv2d_dims d = dims_of(p);  // the op's own check: fit, groups and the filter's shape
    std::vector<operand_spec> ops{operand("x", p.dims, true), operand("w", p.dims2)};
    if (detail::epilogue_has_bias(p.epilogue)) ops.push_back(operand("bias", shape{p.dims2[0]}));
    ops.push_back(operand("y", shape{d.n, d.k, d.p, d.q}));
    return ops;
  }
  /// "S" or "SxS" into a pair, each a whole number in [lo, 2^30].
  static void pair(std::string_view option, std::string_view v, int (&out)[2], double lo) {
    const number_range r{lo, 1 << 30, false, true};
    const auto x = v.find('x');
    double a = 0, b = 0;
    if (!detail::parse_in_range(v.substr(0, x), r, a) ||
        (x != std::string_view::npos && !detail::parse_in_range(v.substr(x + 1), r, b)))
      throw argument_error("kforge: --" + std::string(option) + " must be N or NxN, each " + r.text() + ", got '" +
                           std::string(v) + "'");
    out[0] = static_cast<int>(a);
    out[1] = x == std::string_view::npos ? out[0] : static_cast<int>(b);
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        detail::epilogue_option,
        detail::slope_option,
        {"stride", "S[xS]", "stride (default 1)", [](problem& p, std::string_view v) { pair("stride", v, p.stride, 1); }},
        {"pad", "P[xP]", "zero padding (default 0)", [](problem& p, std::string_view v) { pair("pad", v, p.pad, 0); }},
        {"dilation", "D[xD]", "dilation (default 1)", [](problem& p, std::string_view v) { pair("dilation", v, p.dilation, 1); }},
        {"groups", "G", "groups (default 1)",
         [](problem& p, std::string_view v) { p.groups = static_cast<int>(option_integer("groups", v, {1, 1 << 30, false, true})); }},
    };
    return opts;
  }
  static std::string describe(const problem& p) { return p.epilogue != "none" ? " epilogue=" + p.epilogue : ""; }
  static double flops(const problem& p) {
    const conv2d_dims d = dims_of(p);
    return 2.0 * static_cast<double>(d.n * d.k * d.p * d.q) * static_cast<double>(p.dims2[1] * p.dims2[2] * p.dims2[3]);
  }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    detail::with_epilogue(p.epilogue, [&](auto e) {
      op::conv2d<T, decltype(e)> o;
      o.epilogue.slope = p.slope;
      o.stride_h = p.stride[0], o.stride_w = p.stride[1];
      o.pad_h = p.pad[0], o.pad_w = p.pad[1];
      o.dilation_h = p.dilation[0], o.dilation_w = p.dilation[1];
      o.groups = p.groups;
      f(o);
    });
  }
  template <class T, class E, class... V>
  static problem problem_of(const op::conv2d<T, E>& o, const V&... v) {
    problem p;
    p.op = "conv2d";
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    p.dims2 = std::get<1>(std::tie(v...)).dims;
    p.epilogue = epilogue::epilogue_name<E>();
    p.slope = o.epilogue.slope;
    p.stride[0] = o.stride_h, p.stride[1] = o.stride_w, p.pad[0] = o.pad_h, p.pad[1] = o.pad_w;
    p.dilation[0] = o.dilation_h, p.dilation[1] = o.dilation_w, p.groups = o.groups;
    return p;
  }

  /// What a padded tap adds against a non-finite weight is left open by the
  /// contract: 0·Inf is NaN where padding is multiplied as zeros (im2col,
  /// implicit GEMM: kforge's kernels, cuDNN's) and nothing where a direct
  /// convolution skips the tap; with finite weights both give the same sum.
  /// So in the cases that feed NaN/Inf (nan_inf, zeros_meet_specials), a
  /// non-finite weight at a tap (r, s) that meets padding for some output
  /// moves to a tap of the same filter and channel that never does (a zero
  /// takes its place), or becomes a zero where no such tap exists: zeros
  /// still meet NaN/Inf at every unpadded tap, and either kernel passes.
  static bool prepare_case(const problem& p, input_case c, std::vector<host_tensor>& ts, std::uint64_t seed) {
    if (!traits_base<conv2d_traits>::prepare_case(p, c, ts, seed)) return false;
    if ((c != input_case::nan_inf && c != input_case::zeros_meet_specials) || (p.pad[0] == 0 && p.pad[1] == 0)) return true;
    const conv2d_dims d = dims_of(p);
    // A tap along one axis meets padding when some output's input index falls outside [0, extent).
    auto clear = [](index_t t, int dil, int pad, int stride, index_t out, index_t extent) {
      const index_t first = t * dil - pad, last = (out - 1) * stride - pad + t * dil;
      return first >= 0 && last < extent;
    };
    std::vector<index_t> safe;  // the taps r·S + s that never meet padding
    for (index_t r = 0; r < d.r; ++r)
      for (index_t s = 0; s < d.s; ++s)
        if (clear(r, d.dh, d.ph, d.sh, d.p, d.h) && clear(s, d.dw, d.pw, d.sw, d.q, d.w)) safe.push_back(r * d.s + s);
    host_tensor& w = ts[1];
    const std::vector<index_t> wo = w.offsets();  // [K][C/G][R][S], logical order
    const index_t taps = d.r * d.s;
    for (std::size_t f = 0; f * static_cast<std::size_t>(taps) < wo.size(); ++f) {  // one filter and channel
      std::size_t next = 0;
      for (index_t t = 0; t < taps; ++t) {
        const index_t at = wo[f * static_cast<std::size_t>(taps) + static_cast<std::size_t>(t)];
        const float v = w.get(at);
        if (std::isfinite(v) || std::find(safe.begin(), safe.end(), t) != safe.end()) continue;
        w.set(at, 0.0f);
        if (next < safe.size()) w.set(wo[f * static_cast<std::size_t>(taps) + static_cast<std::size_t>(safe[next++])], v);
      }
    }
    return true;
  }
  static case_magnitudes magnitudes(const problem& p) {
    return gemm_traits::product_magnitudes(p.type, static_cast<double>(p.dims2[1] * p.dims2[2] * p.dims2[3]));
  }
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>&, const host_tensor&,
                                         const linear_scale_fn& linear) {
    problem q = p;
    q.epilogue = detail::epilogue_has_bias(p.epilogue) ? "bias" : "none";
    return linear(q);
  }
  static tolerance tolerance_of(const problem& p) { return conv2d_tolerance(p.type, p.dims2[1] * p.dims2[2] * p.dims2[3]); }

  static kernel_contract contract(const problem& p) {
    kernel_contract c;
    c.bindings = {"x", "w"};
    if (detail::epilogue_has_bias(p.epilogue)) c.bindings.push_back("bias");
    c.bindings.push_back("y");
    auto u = [](const char* n, const char* m) { return push_field{n, "uint", m}; };
    auto i = [](const char* n, const char* m) { return push_field{n, "int", m}; };
    c.push = {u("M", "filters per group = K / groups"), u("N", "images * P * Q"),
              u("K", "reduction length per group = C / groups * R * S"), u("C", "input channels"),
              u("H", "input height"), u("W", "input width"), u("P", "output height"), u("Q", "output width"),
              u("R", "filter height"), u("S", "filter width"), u("KT", "total filters K"), i("sh", "stride h"),
              i("sw", "stride w"), i("ph", "padding h"), i("pw", "padding w"), i("dh", "dilation h"),
              i("dw", "dilation w"), {"slope", "float", "leaky_relu negative slope"}};
    c.tile_2d = true;
    c.tile_meaning = "TILE_M filters x TILE_N output pixels (implicit GEMM) of one group";
    c.grid_rule = "(ceil(N / TILE_N), ceil(M / TILE_M), groups); group = gl_WorkGroupID.z";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const shape& x = p.dims;
    const shape& w = p.dims2;
    const conv2d_dims d = dims_of(p);
    const index_t g = p.groups;
    launch l;
    const std::uint32_t m = launch::to_u32(w[0] / g, "K/groups"), n = launch::to_u32(x[0] * d.p * d.q, "N*P*Q");
    l.put(m), l.put(n), l.put_u32(x[1] / g * w[2] * w[3], "C/groups*R*S");
    l.put_u32(x[1], "C"), l.put_u32(x[2], "H"), l.put_u32(x[3], "W"), l.put_u32(d.p, "P"), l.put_u32(d.q, "Q");
    l.put_u32(w[2], "R"), l.put_u32(w[3], "S"), l.put_u32(w[0], "K");
    for (int v : {p.stride[0], p.stride[1], p.pad[0], p.pad[1], p.dilation[0], p.dilation[1]}) l.put(std::int32_t(v));
    l.put(p.slope);
    l.grid = {static_cast<std::uint32_t>(launch::ceil_div(n, t.tile_n)),
              static_cast<std::uint32_t>(launch::ceil_div(m, t.tile_m)), static_cast<std::uint32_t>(g)};
    return l;
  }
  static std::string semantics(const problem&) {
    return "2-D convolution (cross-correlation, as PyTorch), NCHW: y[n,k,p,q] = act(bias[k] + sum over c,r,s of "
           "x[n, g*C/G + c, p*sh - ph + r*dh, q*sw - pw + s*dw] * w[k, c, r, s]) with g = k / (K/G); taps outside "
           "the image read 0 (a kernel may skip them instead: the validation never puts a NaN or Inf weight on a "
           "padded tap, where 0*Inf and skipping differ). x is [N,C,H,W], w is [K,C/groups,R,S], y is [N,K,P,Q]. "
           "Accumulate in f32.";
  }
  static std::string source_spec(const problem& p) {
    return "def conv2d(x, w, bias):\n    return F.conv2d(x, w, bias, stride=(" + std::to_string(p.stride[0]) + "," +
           std::to_string(p.stride[1]) + "), padding=(" + std::to_string(p.pad[0]) + "," + std::to_string(p.pad[1]) +
           "), dilation=(" + std::to_string(p.dilation[0]) + "," + std::to_string(p.dilation[1]) +
           "), groups=" + std::to_string(p.groups) + ")  # then epilogue " + p.epilogue;
  }
  static std::string record_params(const problem& p) {
    std::string s;
    if (p.epilogue != "none") s += "_e" + p.epilogue;
    if (p.epilogue.find("leaky") != std::string::npos) s += "_sl" + number_part(p.slope);
    s += "_s" + std::to_string(p.stride[0]) + "x" + std::to_string(p.stride[1]) + "_p" + std::to_string(p.pad[0]) +
         "x" + std::to_string(p.pad[1]) + "_d" + std::to_string(p.dilation[0]) + "x" + std::to_string(p.dilation[1]) +
         "_g" + std::to_string(p.groups);
    return s;
  }
  /// Images, channels per group and filters per group are extents (a batch
  /// of one grows); the filter taps, stride, padding, dilation and groups
  /// are the op's parameters and stay. H != W, both new; on draw 0 the last
  /// window along H ends exactly on the padded edge ((H + 2·pad - taps) is a
  /// multiple of the stride) and along W it does not, on draw 1 the other way
  /// round (with stride 1 every window ends on an edge). In the residue sweep
  /// W and the channels per group are rows (below 64 + what the filter
  /// needs), the rest small. For a loop limit, the channels per group shrunk
  /// (one channel costs the taps times an invocation's share of the tile).
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    const index_t g = p.groups > 0 ? p.groups : 1;
    if (d.loop_limit) {
      const double share = d.tiles.local_size ? double(d.tiles.tile_m) * d.tiles.tile_n / d.tiles.local_size : 1.0;
      const index_t c = d.fit(p.dims[1] / g, std::max(1.0, share) * double(p.dims2[2] * p.dims2[3]));
      q.dims[1] = g * c;
      q.dims2[1] = c;
      return q;
    }
    auto need = [&](int a) {
      const index_t taps = p.dilation[a] * (p.dims2[2 + a] - 1) + 1;
      return std::max<index_t>(1, taps - 2 * p.pad[a]);
    };
    q.dims[0] = d.extent(p.dims[0]);
    q.dims2[1] = d.sweep() ? d.row(p.dims[1] / g, 1, 64) : d.extent(p.dims[1] / g);
    q.dims[1] = g * q.dims2[1];
    q.dims2[0] = g * d.extent(p.dims2[0] / g);
    if (d.sweep()) {
      q.dims[2] = std::max(need(0), d.extent(p.dims[2]));
      q.dims[3] = d.row(p.dims[3], need(1), 64 + need(1));
      return q;
    }
    auto axis = [&](int a, bool on_edge, index_t avoid) {
      const index_t taps = p.dilation[a] * (p.dims2[2 + a] - 1) + 1, s = std::max(1, p.stride[a]);
      const index_t need_a = need(a);
      index_t e = std::max(d.extent(p.dims[2 + a]), need_a);
      const index_t r = (e + 2 * p.pad[a] - taps) % s;
      if (on_edge) e = e - r >= need_a ? e - r : e + (s - r) % s;
      else if (s > 1 && r == 0) e += 1;
      while (e == p.dims[2 + a] || e == avoid) e += s;
      return e;
    };
    q.dims[2] = axis(0, d.index % 2 == 0, -1);
    q.dims[3] = axis(1, d.index % 2 == 1, q.dims[2]);
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{1, 4, 9, 9};
    p.dims2 = shape{6, 2, 3, 3};
    p.groups = 2;
    p.stride[0] = p.stride[1] = 2;
    p.pad[0] = p.pad[1] = 1;
    p.epilogue = "bias_relu";
    return p;
  }
};

}  // namespace kforge
