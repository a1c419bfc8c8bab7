// kforge/ops/embedding_traits.hpp — embedding's facts for the suite,
// problems, the generation module and the tool (core/op_traits.hpp). The
// problem's dims are the table's [V, D] and dims2 the ids' shape; the ids
// operand is i32 with id_bound V, so the suite draws them in [0, V) (the
// extremes case: only rows 0 and V - 1).
#pragma once

#include <string>
#include <tuple>

#include "kforge/core/op_traits.hpp"
#include "kforge/ops/embedding.hpp"

namespace kforge {

struct embedding_traits : copy_traits_base<embedding_traits> {
  static constexpr std::string_view family = "embedding";
  static constexpr std::string_view shape_syntax = "VxD,[...x]T";

  static std::span<const op_name> ops() {
    static constexpr op_name names[] = {
        {"embedding", "VxD,[...x]T (table [V,D]; int32 ids of shape [...,T], each in [0,V); out [...,T,D])"}};
    return names;
  }
  static bool shape_ok(const problem& p) {
    return p.dims.rank() == 2 && p.dims2.rank() >= 1 && p.dims2.rank() < max_rank;
  }
  static std::vector<operand_spec> operands(const problem& p) {
    if (p.dims[0] < 1) throw argument_error("kforge::embedding: the table needs at least one row (V >= 1)");
    if (p.dims[0] > 0x7fffffffll)
      throw argument_error("kforge::embedding: V = " + std::to_string(p.dims[0]) + " rows exceed int32 ids");
    shape out = p.dims2;
    out.push_back(p.dims[1]);
    operand_spec ids = ids_input("ids", p.dims2, p.dims[0]);
    ids.bad_ids_zero_rows = true;  // the contract's device semantics (semantics())
    return {operand("table", p.dims, true), ids, operand("out", out)};
  }
  static double flops(const problem&) { return 0; }
  /// The ids, the rows they name and the output: n·D read and written, not the whole table.
  static double bytes(const problem& p) {
    const double n = static_cast<double>(p.dims2.numel()), d = static_cast<double>(p.dims[1]);
    return n * 4 + 2 * n * d * static_cast<double>(size_of(p.type));
  }

  template <class T, class F>
  static void with_op(const problem&, F&& f) {
    f(op::embedding<T>{});
  }
  template <class T, class... V>
  static problem problem_of(const op::embedding<T>&, const V&... v) {
    problem p;
    p.op = "embedding";
    p.type = dtype_of<T>();
    const auto& views = std::tie(v...);
    p.dims = std::get<0>(views).dims;
    p.dims2 = std::get<1>(views).dims;
    return p;
  }

  static tolerance tolerance_of(const problem&) { return embedding_tolerance(); }

  static kernel_contract contract(const problem&) {
    kernel_contract c;
    c.bindings = {"table", "ids", "out"};
    c.push = {{"V", "uint", "table rows"},
              {"D", "uint", "table columns (the embedding width)"},
              {"n", "uint", "number of ids (out is [n, D])"}};
    c.tile_1d_optional = true;
    c.tile_meaning = "output elements per workgroup (default: local_size_x)";
    c.grid_rule = "G = ceil(n * D / TILE) workgroups";
    return c;
  }
  static launch launch_of(const problem& p, const launch_tiles& t) {
    const index_t n = p.dims2.numel();
    launch l;
    l.put_u32(p.dims[0], "V"), l.put_u32(p.dims[1], "D"), l.put_u32(n, "n");
    l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(n * p.dims[1]), t.tile ? t.tile : t.local_size));
    return l;
  }
  static std::string semantics(const problem&) {
    return "embedding lookup: table is [V, D], ids is [n] of int (each in [0, V)), out is [n, D]; for every i < n and "
           "d < D, out[i, d] = table[ids[i], d]. A plain copy (NaN and Inf copied as they are, -0 stays -0). An id outside "
           "[0, V) must not be read through: write that row of out as zeros (the host reports the bad id).";
  }
  static std::string source_spec(const problem&) {
    return "def embedding(table, ids):  # table [V, D], ids [...] int\n    return F.embedding(ids, table)  # table[ids]";
  }
  /// V and the ids' extents are extents, D a row (held_out_draw); for a
  /// loop limit, D shrunk.
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    if (d.loop_limit) {
      q.dims[1] = d.fit(p.dims[1]);
      return q;
    }
    q.dims[0] = d.extent(p.dims[0]);
    q.dims[1] = d.row(p.dims[1]);
    for (int i = 0; i < q.dims2.rank(); ++i) q.dims2[i] = d.extent(p.dims2[i]);
    return q;
  }
  static problem mutation_problem(const std::string& op) {
    problem p;
    p.op = op;
    p.dims = shape{37, 19};
    p.dims2 = shape{3, 11};
    return p;
  }
};

}  // namespace kforge
