// kforge/ops/norm_traits.hpp — the facts of the last-axis row ops (softmax,
// layer_norm, rms_norm) for the suite, problems, the generation module and
// the tool (core/op_traits.hpp).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/norm.hpp"
#include "kforge/ops/softmax.hpp"

namespace kforge {

struct softmax_traits : traits_base<softmax_traits> {
  static constexpr std::string_view family = "softmax";
  static constexpr std::string_view shape_syntax = "RxC";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"softmax", "RxC (last axis)"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) { return {operand("x", p.dims, true), operand("y", p.dims)}; }
  template <class T, class F>
  static void with_op(const problem&, F&& f) {
    f(op::softmax<T>{});
  }
  template <class T, class... V>
  static problem problem_of(const op::softmax<T>&, const V&... v) {
    problem p;
    p.op = "softmax";
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    return p;
  }
  /// The overflow case: rows in [85, 100], past exp's f32 range (a softmax
  /// without the max shift gives Inf / Inf).
  static case_magnitudes magnitudes(const problem& p) {
    const double mx = max_finite(p.type);
    return {p.type == dtype::f16 ? 1e3 : 1e4, mx / 8, mx / 4, false, 85.0, 100.0};
  }
  /// Relative to each output: y = exp(x - m) / S carries exp's relative
  /// error, which grows with its argument x - m (the row max m), and S's, a
  /// sum of cols terms (the tolerance's sqrt(cols)). So |y|·(1 + |x - m|):
  /// an output of a long row (~1/cols) is held to its own magnitude, and a
  /// normaliser missing a few terms fails.
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                         const linear_scale_fn&) {
    const index_t cols = std::max<index_t>(1, p.dims.back());
    const std::vector<index_t> ro = ref.offsets(), xo = in[0].offsets();
    std::vector<double> scale(ro.size());
    for (std::size_t row = 0; row * cols < ro.size(); ++row) {
      double m = -std::numeric_limits<double>::infinity();
      for (index_t j = 0; j < cols; ++j) m = std::max(m, static_cast<double>(in[0].get(xo[row * cols + j])));
      for (index_t j = 0; j < cols; ++j) {
        const std::size_t e = row * cols + j;
        const double d = std::fabs(in[0].get(xo[e]) - m), y = std::fabs(ref.get(ro[e]));
        scale[e] = (std::isfinite(y) ? y : 0.0) * (1.0 + (std::isfinite(d) ? d : 0.0));
      }
    }
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return softmax_tolerance(p.type, p.dims.back()); }
  static kernel_contract contract(const problem&) { return detail::rows_contract({"x", "y"}); }
  static launch launch_of(const problem& p, const launch_tiles& t) { return detail::rows_launch(p, t); }
  static std::string semantics(const problem&) {
    return "softmax over the last axis, numerically stable (subtract the row max before exp). A NaN or +Inf in a row,"
           " or a row of all -Inf, makes that whole row NaN.";
  }
  static std::string source_spec(const problem&) { return "def softmax(x):\n    return torch.softmax(x, dim=-1)"; }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{9, 37};
    return p;
  }
};

/// layer_norm and rms_norm: one family, beta or not.
struct norm_traits : traits_base<norm_traits> {
  static constexpr std::string_view family = "norm";
  static constexpr std::string_view shape_syntax = "RxC";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {{"layer_norm", "RxC (last axis)"}, {"rms_norm", "RxC (last axis)"}};
    return names;
  }
  static bool layer(const problem& p) { return p.op == "layer_norm"; }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) {
    std::vector<operand_spec> ops{operand("x", p.dims, true), operand("gamma", shape{p.dims.back()})};
    if (layer(p)) ops.push_back(operand("beta", shape{p.dims.back()}));
    ops.push_back(operand("y", p.dims));
    return ops;
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"eps", "E", "layer_norm/rms_norm epsilon (default 1e-5 / 1e-6)",
         [](problem& p, std::string_view v) { p.epsilon = static_cast<float>(option_number("eps", v, number_ranges::positive_f32)); }}};
    return opts;
  }
  /// The epsilon a problem runs with.
  static float epsilon(const problem& p) {
    return p.epsilon >= 0 ? p.epsilon : layer(p) ? op::layer_norm<float>{}.epsilon : op::rms_norm<float>{}.epsilon;
  }
  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    if (layer(p)) {
      op::layer_norm<T> o;
      if (p.epsilon >= 0) o.epsilon = p.epsilon;
      f(o);
    } else {
      op::rms_norm<T> o;
      if (p.epsilon >= 0) o.epsilon = p.epsilon;
      f(o);
    }
  }
  template <class Op, class... V>
    requires(std::is_same_v<Op, op::layer_norm<typename Op::value_type>> ||
             std::is_same_v<Op, op::rms_norm<typename Op::value_type>>)
  static problem problem_of(const Op& o, const V&... v) {
    problem p;
    p.op = std::string(Op::name);
    p.type = dtype_of<typename Op::value_type>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    if (o.epsilon != Op{}.epsilon) p.epsilon = o.epsilon;
    return p;
  }
  static case_magnitudes magnitudes(const problem& p) {
    const bool f16 = p.type == dtype::f16;
    return {f16 ? 100.0 : 1e4, f16 ? 1e4 : 1e14, f16 ? 6e4 : 1e15};
  }
  /// |y| + |gamma|·(1 + |mean| / std) + |beta| per element (rms_norm: no
  /// mean). A correct f32 layer_norm rounds the row's mean to f32 (error
  /// ~eps·|mean|), and every x - mean carries that error, divided by the
  /// row's std: a row whose mean dwarfs its spread is that ill-conditioned.
  /// A one-pass variance E[x²] - E[x]² loses (mean / std)² ulps instead, and
  /// still fails.
  static std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                         const linear_scale_fn&) {
    const index_t cols = std::max<index_t>(1, p.dims.back());
    const std::vector<index_t> ro = ref.offsets(), go = in[1].offsets(), xo = in[0].offsets();
    const bool ln = layer(p);
    const std::vector<index_t> bo = ln ? in[2].offsets() : std::vector<index_t>{};
    std::vector<double> scale(ro.size());
    for (std::size_t row = 0; row * cols < ro.size(); ++row) {
      double cond = 0;
      if (ln) {
        double mean = 0, var = 0;
        for (index_t j = 0; j < cols; ++j) mean += in[0].get(xo[row * cols + j]);
        mean /= static_cast<double>(cols);
        for (index_t j = 0; j < cols; ++j) var += std::pow(in[0].get(xo[row * cols + j]) - mean, 2);
        const double sd = std::sqrt(var / static_cast<double>(cols) + epsilon(p));
        cond = std::isfinite(mean) && sd > 0 ? std::fabs(mean) / sd : 0.0;
      }
      for (index_t j = 0; j < cols; ++j) {
        const std::size_t e = row * cols + j;
        const double gamma = std::fabs(in[1].get(go[j])), beta = ln ? std::fabs(in[2].get(bo[j])) : 0.0;
        scale[e] = std::fabs(ref.get(ro[e])) + gamma * (1.0 + (std::isfinite(cond) ? cond : 0.0)) + beta;
      }
    }
    return scale;
  }
  static tolerance tolerance_of(const problem& p) { return norm_tolerance(p.type, p.dims.back()); }
  static kernel_contract contract(const problem& p) {
    kernel_contract c = layer(p) ? detail::rows_contract({"x", "gamma", "beta", "y"}) : detail::rows_contract({"x", "gamma", "y"});
    c.push.push_back({"eps", "float", "epsilon"});
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    launch l = detail::rows_launch(p, t);
    l.put(epsilon(p));
    return l;
  }
  static std::string semantics(const problem& p) {
    if (layer(p))
      return "layer_norm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma[j] + beta[j] with the biased "
             "variance (divide by cols), computed in f32 (two passes: mean, then mean of squared deviations).";
    return "rms_norm over the last axis: y = x / sqrt(mean(x^2) + eps) * gamma[j], computed in f32.";
  }
  static std::string source_spec(const problem& p) {
    if (layer(p)) return "def layer_norm(x, gamma, beta):\n    return F.layer_norm(x, x.shape[-1:], gamma, beta)";
    return "def rms_norm(x, gamma):\n    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * gamma";
  }
  static std::string record_params(const problem& p) { return p.epsilon >= 0 ? "_eps" + number_part(p.epsilon) : ""; }
  static problem mutation_problem(const std::string& op) { return softmax_traits::mutation_problem(op); }
};

}  // namespace kforge
