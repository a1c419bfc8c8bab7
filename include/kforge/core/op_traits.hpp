// kforge/core/op_traits.hpp — the vocabulary an op family uses to declare
// its facts once, next to its descriptor (ops/<family>_traits.hpp), so that
// kforge::problem, the validation suite, the generation module and the tool
// read every op the same way and none of them names an op.
//
// A family's traits are a struct deriving from traits_base<Self> with these
// static members (traits_base supplies the ones marked "default"):
//
//   family                         its name ("norm"), for messages
//   ops()                          the op names it answers to, each with its SHAPE syntax
//   shape_ok(p)                    whether p.dims / p.dims2 have the ranks SHAPE needs
//   operands(p)                    operand roles, shapes and element types: inputs in call order,
//                                  then the output (or the outputs, each marked is_output)
//   options()                      the tool's options that set its parameters (default: none)
//   describe(p)                    its parameters in words for reports (default: "")
//   flops(p), compute_bound        work of one call (default: one per input element; memory-bound)
//   bytes(p)                       memory a call must move (default: every operand once)
//   with_op<T>(p, f)               calls f with the typed descriptor p stands for
//   problem_of(op, views...)       the inverse: the problem a typed call stands for
//   magnitudes(p), inf_inputs      the validation inputs' large and extreme magnitudes; whether
//                                  the NaN/Inf case may use ±Inf (default: yes)
//   error_scale(p, in, ref, lin)   per output element, the magnitude rounding errors scale with
//   tolerance_of(p)                the tolerance (the numbers live next to the descriptor)
//   contract(p), launch_of(p, t)   the kernel contract row: bindings, push constants, grid
//   semantics(p), source_spec(p)   the op in words and as PyTorch, for prompts and records
//   record_params(p)               its parameters in a record's file name (default: "")
//   held_out(p, draw)              a shape the generation gate validates on besides p's, drawn
//                                  from its secret stream (default: every extent > 1 redrawn
//                                  independently, odd and different; docs/GENERATION.md)
//   mutation_problem(op)           a small problem with every feature the mutants of its kernel touch
//
// A family whose outputs are copies of its inputs' elements derives from
// copy_traits_base<Self> instead, which also supplies magnitudes and
// error_scale. detail::rows_contract / rows_launch are the contract and
// launch of kernels that work through rows of the last axis.
//
// ops/registry.hpp lists the families; adding an op means its descriptor,
// its traits and that list entry, its Eigen reference, and one
// implementation per backend (docs/DESIGN.md, "Adding an op").
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/input.hpp"
#include "kforge/core/problem.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {

/// An op name and the SHAPE syntax the tool shows for it.
struct op_name {
  std::string_view name;
  std::string_view shape_help;
};

/// An option of the kforge tool that sets a parameter of a family's problems.
struct cli_option {
  std::string_view name;         ///< without the leading "--"
  std::string_view placeholder;  ///< the value's name in help ("E"); empty for a flag
  std::string_view help;
  /// Sets the parameter from the option's text (flags get ""); throws
  /// argument_error for a value outside what the op accepts.
  void (*apply)(problem&, std::string_view value);
};

/// Input magnitudes of the validation suite's large-magnitude and extremes
/// cases: as large as the op and dtype allow without the reference itself
/// overflowing, so that these cases test range handling, not overflow luck.
struct case_magnitudes {
  double large;                   ///< large-magnitude case: |x| in [large/2, large]
  double extreme_lo, extreme_hi;  ///< extremes case: |x| in [lo, hi]
  bool extreme_positive_only = false;
};

/// The error scale of a linear op: the reference applied to |inputs| in f32
/// (for the problem given, e.g. with the activation dropped), one value per
/// output element in row-major order. The suite supplies it.
using linear_scale_fn = std::function<std::vector<double>(const problem&)>;

/// One push-constant field: name and GLSL type (uint, int or float; 4 bytes
/// each; "name[6]" is an array of six).
struct push_field {
  std::string name, type, meaning;
};

/// What a generated kernel for one problem must declare so that the host can
/// bind, size and dispatch it without knowing anything else about it
/// (docs/KERNEL_CONTRACT.md is the prose version).
struct kernel_contract {
  std::vector<std::string> bindings;  ///< names in binding order: operands(p)'s, inputs then outputs
  std::vector<push_field> push;       ///< in declaration order
  std::uint32_t push_bytes = 0;       ///< filled by the registry from `push`
  bool tile_2d = false;               ///< ids 1 (TILE_M) and 2 (TILE_N) required
  bool tile_1d_optional = false;      ///< id 1 optional: work items per workgroup
  std::string tile_meaning;           ///< what one work item is
  std::string grid_rule;              ///< human-readable grid formula
};

/// The tile constants a contract kernel declares (read back with SPIRV-Cross).
struct launch_tiles {
  std::uint32_t local_size = 1, tile_m = 0, tile_n = 0, tile = 0;
};

/// The push-constant bytes and dispatch grid of one contract kernel launch.
struct launch {
  std::vector<std::uint8_t> push;
  std::array<std::uint32_t, 3> grid{0, 1, 1};

  template <class V>
  void put(V v) {
    static_assert(sizeof(V) == 4, "kforge::launch: push-constant fields are 4 bytes");
    std::uint8_t b[4];
    std::memcpy(b, &v, 4);
    push.insert(push.end(), b, b + 4);
  }
  /// `v` as a uint field; unsupported_error when it does not fit 32 bits.
  void put_u32(index_t v, const char* what) { put(to_u32(v, what)); }

  static std::uint32_t to_u32(index_t v, const char* what) {
    if (v < 0 || v > 0xffffffffll)
      throw unsupported_error(std::string("kforge::gen: ") + what + " = " + std::to_string(v) + " does not fit 32 bits");
    return static_cast<std::uint32_t>(v);
  }
  static std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return b ? (a + b - 1) / b : 0; }
  /// G workgroups on a 2-D grid (x <= 65535); kernels use the flat id
  /// gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x and ignore ids >= G.
  static std::array<std::uint32_t, 3> flat_grid(std::uint64_t groups) {
    if (groups == 0) return {0, 1, 1};
    const std::uint64_t x = std::min<std::uint64_t>(groups, 65535);
    const std::uint64_t y = (groups + x - 1) / x;
    if (y > 65535) throw unsupported_error("kforge::gen: " + std::to_string(groups) + " workgroups exceed the 2-D grid");
    return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1};
  }
};

/// One held-out shape's randomness (the generation gate, gen/gate.hpp): a
/// stream from the gate's secret seed, which draw this is (families tie
/// relations to it: attention's draw 0 has S < L, draw 1 S > L; conv2d's
/// draw 0 ends H's last window on the padded edge, draw 1 W's), and the
/// kernel's tiles as reflection read them (gemm's M and N cross them).
struct held_out_draw {
  std::uint64_t state = 0;
  int index = 0;
  launch_tiles tiles;

  std::uint64_t next() {  // splitmix64
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [lo, hi] (lo when hi < lo).
  index_t uniform(index_t lo, index_t hi) {
    if (hi <= lo) return lo;
    return lo + static_cast<index_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
  /// An odd number in [lo, hi] other than `avoid` (odd: not a multiple of any
  /// power-of-two tile); hi grows when the range holds no other odd number.
  index_t odd(index_t lo, index_t hi, index_t avoid = -1) {
    lo |= 1;
    hi = std::max(hi, lo + 2);
    index_t v = lo + 2 * uniform(0, (hi - lo) / 2);
    if (v == avoid) v = v + 2 <= hi ? v + 2 : v - 2;
    return v;
  }
  /// A new extent for d, drawn on its own: 1 stays 1 (a broadcast axis or a
  /// batch of one); otherwise odd, in [(d + 1) / 2, 3d/2 + 9], never d.
  index_t extent(index_t d) {
    if (d <= 1) return d;
    return odd(std::max<index_t>(3, (d + 1) / 2), d + d / 2 + 9, d);
  }
};

/// An op option's number: finite (core/input.hpp's rule; option_number with
/// a narrower range where the option has one).
inline double parse_number(std::string_view option, std::string_view text) {
  return option_number(option, text, number_ranges::finite);
}
/// An op option's whole number that fits an int (a narrower range is checked after, where it depends on the shape).
inline int parse_integer(std::string_view option, std::string_view text) {
  return static_cast<int>(option_integer(option, text, number_range{-2147483647.0, 2147483647.0, false, true}));
}

/// "%g" of v, for record file names.
inline std::string number_part(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

/// The defaults of a family's traits (see the header comment).
template <class Self>
struct traits_base {
  static constexpr bool compute_bound = false;
  static constexpr bool inf_inputs = true;
  static std::span<const cli_option> options() { return {}; }
  static std::string describe(const problem&) { return ""; }
  static std::string record_params(const problem&) { return ""; }
  static double flops(const problem& p) { return static_cast<double>(Self::operands(p).front().dims.numel()); }
  static double bytes(const problem& p) {
    double b = 0;
    for (const operand_spec& o : Self::operands(p))
      b += static_cast<double>(o.dims.numel()) * static_cast<double>(size_of(operand_type(p, o)));
    return b;
  }

  /// Every extent of dims redrawn on its own (held_out_draw::extent).
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    for (int i = 0; i < q.dims.rank(); ++i) q.dims[i] = d.extent(p.dims[i]);
    return q;
  }

  /// operand_spec helpers for operands(): a dense row-major operand.
  static operand_spec operand(std::string name, shape dims, bool gets_specials = false) {
    operand_spec o;
    o.name = std::move(name);
    o.dims = dims;
    o.strides = row_major_strides(dims);
    o.gets_specials = gets_specials;
    return o;
  }
  /// An i32 input of row ids into a table of `rows` rows (the suite draws them in [0, rows)).
  static operand_spec ids_input(std::string name, shape dims, index_t rows) {
    operand_spec o = operand(std::move(name), dims);
    o.type = dtype::i32;
    o.id_bound = rows;
    return o;
  }
  /// An output; `type` where it is not the problem's (dtype::i32 for indices).
  static operand_spec output(std::string name, shape dims, std::optional<dtype> type = std::nullopt) {
    operand_spec o = operand(std::move(name), dims);
    o.is_output = true;
    o.type = type;
    return o;
  }
};

/// The defaults of a family whose outputs are copies of input elements
/// (kv_append, embedding, topk; their tolerances are exact): inputs of any
/// finite value, up to the type's largest, and an error scale of 1 for every
/// output element.
template <class Self>
struct copy_traits_base : traits_base<Self> {
  static case_magnitudes magnitudes(const problem& p) {
    const double mx = max_finite(p.type);
    return {p.type == dtype::f16 ? 1e4 : 1e30, mx / 4, mx / 2};
  }
  static std::vector<double> error_scale(const problem&, const std::vector<host_tensor>&, const host_tensor& ref,
                                         const linear_scale_fn&) {
    return std::vector<double>(static_cast<std::size_t>(ref.dims.numel()), 1.0);
  }
};

namespace detail {
/// The contract row of kernels that give each workgroup TILE rows of the
/// last axis (softmax, the norms, topk): push `rows` (all dims but the last),
/// then the row length (`cols` unless the op names it), then the op's own
/// fields, which it appends.
inline kernel_contract rows_contract(std::vector<std::string> bindings, push_field cols = {"cols", "uint", "last dim"}) {
  kernel_contract c;
  c.bindings = std::move(bindings);
  c.push = {{"rows", "uint", "rows (all dims but the last)"}, std::move(cols)};
  c.tile_1d_optional = true;
  c.tile_meaning = "rows per workgroup (default 1)";
  c.grid_rule = "G = ceil(rows / TILE) workgroups";
  return c;
}
/// Their launch: rows and the row length pushed; the op puts its own fields after.
inline launch rows_launch(const problem& p, const launch_tiles& t) {
  const index_t cols = p.dims.back(), rows = cols ? p.dims.numel() / cols : 0;
  launch l;
  l.put_u32(rows, "rows"), l.put_u32(cols, "cols");
  l.grid = launch::flat_grid(launch::ceil_div(static_cast<std::uint64_t>(rows), t.tile ? t.tile : 1));
  return l;
}
}  // namespace detail

}  // namespace kforge
