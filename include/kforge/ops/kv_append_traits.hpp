// kforge/ops/kv_append_traits.hpp — kv_append's facts for the suite,
// problems, the generation module and the tool (core/op_traits.hpp). Its
// parameter lives in problem::attrs: "pos". The cache operand is the output
// and is also read (operand_spec::also_input), so the suite fills it before
// the call and checks every row of it afterwards.
#pragma once

#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/kv_append.hpp"

namespace kforge {

struct kv_append_traits : copy_traits_base<kv_append_traits> {
  static constexpr std::string_view family = "kv_append";
  static constexpr std::string_view shape_syntax = "BxTxHxD,Lmax";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {
        {"kv_append", "BxTxHxD,Lmax (new rows x [B,T,H,D] written into cache [B,Lmax,H,D] at --pos)"}};
    return names;
  }
  static bool shape_ok(const problem& p) { return p.dims.rank() == 4 && p.dims2.rank() == 1; }
  static index_t pos(const problem& p) { return static_cast<index_t>(p.attr("pos", 0)); }
  static std::vector<operand_spec> operands(const problem& p) {
    if (pos(p) + p.dims[1] > p.dims2[0])
      throw argument_error("kforge::kv_append: pos " + std::to_string(pos(p)) + " + T " + std::to_string(p.dims[1]) +
                           " exceeds the cache length Lmax " + std::to_string(p.dims2[0]));
    operand_spec cache = operand("cache", shape{p.dims[0], p.dims2[0], p.dims[2], p.dims[3]});
    cache.also_input = true;
    return {operand("x", p.dims, true), cache};
  }
  static std::span<const cli_option> options() {
    static constexpr cli_option opts[] = {
        {"pos", "P", "kv_append: cache row of the first new token (default 0)",
         [](problem& p, std::string_view v) {
           p.attrs["pos"] = option_number("pos", v, {0, 1 << 30, false, true});
         }},
    };
    return opts;
  }
  static std::string describe(const problem& p) { return " pos=" + std::to_string(pos(p)); }
  static double flops(const problem&) { return 0; }

  template <class T, class F>
  static void with_op(const problem& p, F&& f) {
    f(op::kv_append<T>{pos(p)});
  }
  template <class T, class... V>
  static problem problem_of(const op::kv_append<T>& o, const V&... v) {
    problem p;
    p.op = "kv_append";
    p.type = dtype_of<T>();
    const auto& views = std::tie(v...);
    p.dims = std::get<0>(views).dims;
    p.dims2 = shape{std::get<1>(views).dims[1]};
    if (o.pos) p.attrs["pos"] = static_cast<double>(o.pos);
    return p;
  }

  static tolerance tolerance_of(const problem&) { return kv_append_tolerance(); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"x", "cache"};
    c.push = {{"B", "uint", "batch (dim 0)"},
              {"N", "uint", "new rows per batch (T, dim 1 of x)"},
              {"HD", "uint", "elements per row: H * D"},
              {"Lmax", "uint", "cache rows per batch (dim 1 of cache)"},
              {"pos", "uint", "cache row of x's row 0"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "copied elements per workgroup (default: local_size_x)";
    c.grid_rule = "G = ceil(B * N * HD / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const index_t hd = p.dims[2] * p.dims[3];
    launch l;
    l.put_u32(p.dims[0], "B"), l.put_u32(p.dims[1], "N"), l.put_u32(hd, "HD"), l.put_u32(p.dims2[0], "Lmax");
    l.put_u32(pos(p), "pos");
    l.grid = launch::flat_grid(
        launch::ceil_div(static_cast<std::uint64_t>(p.dims[0] * p.dims[1] * hd), t.tile ? t.tile : t.local_size));
    return l;
  }
  static std::string semantics(const problem&) {
    return "KV-cache append, in place: x is [B, N, HD] and cache is [B, Lmax, HD] (HD = H * D); for every b, t < N and "
           "e, cache[b, pos + t, e] = x[b, t, e]. The cache is the output and keeps its contents everywhere else: "
           "rows outside [pos, pos + N) must not be written. A plain copy (NaN and Inf copied as they are).";
  }
  static std::string source_spec(const problem& p) {
    return "def kv_append(x, cache, pos=" + std::to_string(pos(p)) +
           "):  # x [B, T, H, D], cache [B, Lmax, H, D]\n    cache[:, pos:pos + x.shape[1]] = x\n    return cache";
  }
  static std::string record_params(const problem& p) { return "_p" + std::to_string(pos(p)); }
  /// B, T and H are extents, D a row (held_out_draw). The cache always has
  /// rows after the new ones (an extent of the prompt's, at least 1: none
  /// grows), so a kernel that writes past pos + T is seen; pos stays in a
  /// full draw 0 and is new and > 0 in draw 1 and in the residue sweep (rows
  /// before pos). For a loop limit, D shrunk (a row of H·D per invocation).
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    if (d.loop_limit) {
      q.dims[3] = d.fit(p.dims[3], static_cast<double>(p.dims[2]));
      return q;
    }
    for (int i = 0; i < 3; ++i) q.dims[i] = d.extent(p.dims[i]);
    q.dims[3] = d.row(p.dims[3]);
    const index_t at = pos(p), after = std::max<index_t>(1, p.dims2[0] - at - p.dims[1]);
    const index_t at2 = !d.sweep() && d.index % 2 == 0 ? at : d.extent(std::max<index_t>(1, at));
    q.dims2[0] = at2 + q.dims[1] + d.extent(after);
    if (at2) q.attrs["pos"] = static_cast<double>(at2);
    else q.attrs.erase("pos");
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{2, 3, 3, 10};
    p.dims2 = shape{11};
    p.attrs["pos"] = 5;
    return p;
  }
};

}  // namespace kforge
