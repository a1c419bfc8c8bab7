// kforge/ops/topk_traits.hpp — topk's facts for the suite, problems, the
// generation module and the tool (core/op_traits.hpp). Two op names: topk
// (k from problem::attrs "k", the tool's --k) and argmax (k = 1). Two
// outputs, both marked is_output: values (the problem's type) and indices
// (i32), compared exactly.
#pragma once

#include <algorithm>
#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/topk.hpp"

namespace kforge {

struct topk_traits : copy_traits_base<topk_traits> {
  static constexpr std::string_view family = "topk";
  static constexpr std::string_view shape_syntax = "[...x]N";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {
        {"topk", "[...x]N (rows of N; --k K: values and int32 indices [...x]K, largest first, NaN largest)"},
        {"argmax", "[...x]N (topk with k = 1: each row's largest and its index)"}};
    return names;
  }
  static index_t k(const problem& p) { return p.op == "argmax" ? 1 : static_cast<index_t>(p.attr("k", 1)); }
  static bool shape_ok(const problem& p) { return p.dims.rank() >= 1 && p.dims2.rank() == 0; }
  static std::vector<operand_spec> operands(const problem& p) {
    if (p.op == "argmax" && p.attr("k", 1) != 1)
      throw argument_error("kforge::argmax: argmax is topk with k = 1 (use --op topk for --k " +
                           number_part(p.attr("k", 1)) + ")");
    const index_t n = p.dims.back(), kk = k(p);
    if (kk < 1 || kk > n)
      throw argument_error("kforge::" + p.op + ": k must be in [1, N] for rows of N = " + std::to_string(n) +
                           ", got k = " + std::to_string(kk));
    shape out = p.dims;
    out[out.rank() - 1] = kk;
    return {operand("x", p.dims, true), output("values", out), output("indices", out, dtype::i32)};
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"k", "K", "topk: how many of each row's largest to return, 1 <= K <= N (default 1)",
         [](problem& p, std::string_view v) {
           p.attrs["k"] = parse_integer("k", v);  // [1, N] is checked with the shape
         }},
    };
    return opts;
  }
  static std::string describe(const problem& p) { return p.op == "argmax" ? "" : " k=" + std::to_string(k(p)); }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    f(op::topk<T>{k(p)});
  }
  template <class T, class... V>
  static problem problem_of(const op::topk<T>& o, const V&... v) {
    problem p;
    p.op = "topk";
    p.type = dtype_of<T>();
    p.dims = std::get<0>(std::tie(v...)).dims;
    p.attrs["k"] = static_cast<double>(o.k);
    return p;
  }

  static tolerance tolerance_of(const problem&) { return topk_tolerance(); }

  static kernel_contract contract(const problem&) {
    kernel_contract c = detail::rows_contract({"x", "values", "indices"}, {"N", "uint", "row length (last dim of x)"});
    c.push.push_back({"k", "uint", "outputs per row, 1 <= k <= N"});
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    launch l = detail::rows_launch(p, t);
    l.put_u32(k(p), "k");
    return l;
  }
  static std::string semantics(const problem& p) {
    return "top-k over the last axis, k = " + std::to_string(k(p)) +
           ": x is [rows, N]; for each row, values [rows, k] holds the row's k largest elements in descending order "
           "and indices [rows, k] (int) their positions in the row. NaN counts as larger than every number (+Inf "
           "included); equal values (-0 and +0 are equal, all NaNs are equal) are ordered by position, lower first, so "
           "the result is the first k of the row stably sorted in descending order. values are exact copies of x's "
           "elements.";
  }
  static std::string source_spec(const problem& p) {
    return "def topk(x, k=" + std::to_string(k(p)) +
           "):  # x [..., N]\n    # sorted, largest first; NaN largest; ties: lower index first\n"
           "    v, i = torch.topk(x, k, dim=-1, largest=True, sorted=True)\n    return v, i.int()";
  }
  static std::string record_params(const problem& p) { return "_k" + std::to_string(k(p)); }
  /// The leading dims extents, N a row of at least k (held_out_draw); for a
  /// loop limit, N shrunk (k passes over it).
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    const int last = q.dims.rank() - 1;
    if (d.loop_limit) {
      q.dims[last] = std::max(k(p), d.fit(p.dims.back(), static_cast<double>(k(p))));
      return q;
    }
    for (int i = 0; i < last; ++i) q.dims[i] = d.extent(p.dims[i]);
    q.dims[last] = d.row(p.dims.back(), k(p));
    return q;
  }
  /// topk: k = 5 of rows of 300 (the zeros and ones cases are all ties and
  /// not degenerate: their indices differ). argmax: those cases are
  /// degenerate (every index 0) and the gate drops them, so its rows are bf16
  /// and long enough that most rows of every random case tie at their largest.
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    if (op == "argmax") {
      p.dims = shape{5, 1000};
      p.type = dtype::bf16;
    } else {
      p.dims = shape{7, 300};
      p.attrs["k"] = 5;
    }
    return p;
  }
};

}  // namespace kforge
