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
//                                  from its secret stream (held_out_draw says which kind; default:
//                                  the last axis a row, the others extents; docs/GENERATION.md)
//   mutation_problem(op)           a small problem with every feature the mutants of its kernel touch
//   prepare_case(p, c, ts, seed)   adjusts one case's inputs to the family's structure, or says the case
//                                  does not apply (default: the overflow case where magnitudes give a range)
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

/// The validation suite's input cases (validate/suite.hpp): five random
/// distributions, five edge cases, and six adversarial ones, each aimed at a
/// class of plausible wrong kernel (docs/GENERATION.md, "The suite's cases").
enum class input_case : std::uint8_t {
  uniform, normal, sparse, large, small, zeros, ones, alternating, extremes, nan_inf,
  negative_rows,        ///< every row negative, some very negative (a max or top-k started at 0)
  offset_rows,          ///< rows whose mean dwarfs their spread, or that cancel (one-pass variance, f16 sums)
  overflow,             ///< values near the op's overflow threshold (exp without the max shift)
  zeros_meet_specials,  ///< exact zeros in every input where another input holds NaN/Inf (skipped zeros)
  signed_specials,      ///< -0 beside +0, NaN with its sign bit set, rows of -Inf (orders on raw bits)
  subnormal             ///< subnormal values, denominators past 2^126 (flushes, a*(1/b))
};

/// Input magnitudes of the validation suite's large-magnitude and extremes
/// cases: as large as the op and dtype allow without the reference itself
/// overflowing, so that these cases test range handling, not overflow luck.
/// The overflow case draws in [overflow_lo, overflow_hi] (signs as given)
/// where the op has a threshold inside its range (exp-based ops); both 0:
/// the op has none and the case is not run.
struct case_magnitudes {
  double large;                   ///< large-magnitude case: |x| in [large/2, large]
  double extreme_lo, extreme_hi;  ///< extremes case: |x| in [lo, hi]
  bool extreme_positive_only = false;
  double overflow_lo = 0, overflow_hi = 0;
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
/// kernel's tiles as reflection read them (gemm's M and N cross them, row
/// lengths leave several local sizes behind). docs/GENERATION.md, "Held-out
/// shapes", states the rules these helpers apply.
///
/// Three kinds of shape come from a family's held_out(p, d):
///  - a full draw (residue < 0, loop_limit == 0): every axis redrawn,
///    `extent` for the axes kernels spread over workgroups (batch, rows,
///    heads), `row` for the axes they loop or vectorise along (the last
///    axis, gemm's K and N, attention's D and L, ...);
///  - one of the residue sweep's 32 small shapes (residue in [0, 32)):
///    every `row` axis is congruent to `residue` modulo 32 (so the sweep hits
///    every class modulo 2, 4, 8, 16 and 32 on each of them), and every
///    `extent` axis is small, odd and drawn from `shared`, the same stream in
///    all 32 shapes, so that a flat element count (odd extents times a row
///    axis) runs through every class too;
///  - loop_limit > 0: no draw but p itself, shrunk along the axes one
///    invocation may loop over (`fit`), for a device that stops an
///    invocation after that many loop iterations (lavapipe: 65535); p
///    unchanged where it fits already.
struct held_out_draw {
  std::uint64_t state = 0;
  int index = 0;
  launch_tiles tiles;
  int residue = -1;           ///< >= 0: a residue-sweep shape (above)
  std::uint64_t shared = 0;   ///< the sweep's common stream
  std::uint64_t loop_limit = 0;  ///< > 0: shrink p for this loop limit (above)

  static std::uint64_t mix(std::uint64_t& s) {  // splitmix64
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  std::uint64_t next() { return mix(state); }
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
  bool sweep() const { return residue >= 0; }
  /// The smallest power of two >= e (1 for e <= 1): the top of e's tuning bucket (B/2, B].
  static index_t bucket_top(index_t e) {
    index_t b = 1;
    while (b < e) b *= 2;
    return b;
  }
  /// How far a `row` axis goes in a full draw 1: past the prompt's bucket
  /// and past four local sizes of the kernel.
  index_t row_floor(index_t e) const {
    return std::max<index_t>(bucket_top(e), 4 * static_cast<index_t>(std::max<std::uint32_t>(1, tiles.local_size)));
  }
  /// A new extent for an axis spread over workgroups (batch, rows, heads):
  /// in a full draw an extent of 1 grows (odd, in [3, 7]) and e > 1 becomes
  /// odd, in [(e + 1) / 2, 3e/2 + 9], never e (0 stays 0); in the residue
  /// sweep one small odd extent (1, 3 or 5) from the shared stream.
  index_t extent(index_t e) {
    if (e <= 0) return e;
    if (sweep()) return 1 + 2 * static_cast<index_t>(mix(shared) % 3);
    if (e == 1) return odd(3, 7);
    return odd(std::max<index_t>(3, (e + 1) / 2), e + e / 2 + 9, e);
  }
  /// A new length for an axis kernels loop or vectorise along, at least lo
  /// (and at most hi where hi > 0: a bound the contract lets kernels size
  /// shared memory by). Full draw 0: odd and below the prompt's bucket (in
  /// [max(lo, 3), B/2], B = bucket_top(e)), or as draw 1 where that is empty;
  /// full draw 1: odd and above both the bucket and four local sizes (in
  /// (F, 2F], F = row_floor(e)). Residue sweep: residue + 32·j, j uniform in
  /// [0, J] with 32·J about max(64, 2 × the local size), the smallest such
  /// value >= lo when that is larger.
  /// `side` 0 or 1 asks for draw 0's or draw 1's rule in any full draw (-1: this draw's).
  index_t row(index_t e, index_t lo = 1, index_t hi = 0, int side = -1) {
    lo = std::max<index_t>(lo, 1);
    if (sweep()) {
      const index_t r = residue == 0 ? 32 : residue;
      const index_t span = std::max<index_t>(64, 2 * static_cast<index_t>(tiles.local_size));
      index_t v = r + 32 * uniform(0, span / 32);
      if (hi > 0 && v > hi) v = r + 32 * ((std::max<index_t>(hi, r) - r) / 32);
      while (v < lo) v += 32;
      return v;
    }
    // Below starts at 3 (rows of 1 or 2 make a softmax or a norm constant:
    // the suite drops such cases; the residue sweep has them).
    const index_t below = bucket_top(e) / 2, lo3 = std::max<index_t>(lo, 3);
    if ((side < 0 ? index % 2 : side) == 0 && below >= lo3 && (hi <= 0 || lo3 <= hi)) {
      const index_t top = hi > 0 ? std::min(below, hi) : below;
      index_t v = lo3 + 2 * uniform(0, (top - lo3) / 2);  // odd where lo3 is
      if ((v & 1) == 0 && v + 1 <= top) ++v;
      return v;
    }
    const index_t f = std::max(row_floor(e), lo - 1);
    if (hi > 0 && f >= hi) return std::min(hi, odd(std::max(lo, (hi + 1) / 2), hi, e));  // no room above: the top half
    const index_t v = odd(f + 1, 2 * f, e);
    return hi > 0 ? std::min(v, hi) : v;
  }
  /// The axis e shrunk for loop_limit: unchanged where four passes of e
  /// iterations of `per` each fit it, else the largest length that does,
  /// congruent to e modulo 32 where that is at least 1.
  index_t fit(index_t e, double per = 1) const {
    if (loop_limit == 0 || e <= 1) return e;
    const double cap = static_cast<double>(loop_limit) / (4.0 * std::max(1.0, per));
    if (static_cast<double>(e) <= cap) return e;
    const index_t c = std::max<index_t>(1, static_cast<index_t>(cap));
    const index_t same = c - ((c - e % 32) % 32 + 32) % 32;
    return same >= 1 ? same : c;
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
  /// Adjusts the inputs of one case after the suite's generic fill (the
  /// family's structure: attention's scores grown along the keys, div's
  /// denominators past 2^126); false where the case says nothing about the
  /// op, which is then not run (default: the overflow case only where the
  /// op's magnitudes give an overflow range).
  static bool prepare_case(const problem& p, input_case c, std::vector<host_tensor>&, std::uint64_t) {
    return c != input_case::overflow || Self::magnitudes(p).overflow_hi != 0;
  }
  static double flops(const problem& p) { return static_cast<double>(Self::operands(p).front().dims.numel()); }
  static double bytes(const problem& p) {
    double b = 0;
    for (const operand_spec& o : Self::operands(p))
      b += static_cast<double>(o.dims.numel()) * static_cast<double>(size_of(operand_type(p, o)));
    return b;
  }

  /// Every extent of dims redrawn on its own: the last axis (the row kernels
  /// loop or vectorise along) with held_out_draw::row, the others with
  /// held_out_draw::extent; for a loop limit, the last axis shrunk.
  static problem held_out(const problem& p, held_out_draw& d) {
    problem q = p;
    const int last = q.dims.rank() - 1;
    if (last < 0) return q;
    if (d.loop_limit) {
      q.dims[last] = d.fit(p.dims[last]);
      return q;
    }
    for (int i = 0; i < last; ++i) q.dims[i] = d.extent(p.dims[i]);
    q.dims[last] = d.row(p.dims[last]);
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
