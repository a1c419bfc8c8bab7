// kforge/validate/suite.hpp — the validation suite: the gate every kernel
// passes (blocked CPU code, GLSL shaders, tuned variants, generated kernels).
//
// For one problem it runs sixteen cases from a seed — five random
// distributions (uniform, normal, sparse, large magnitude, small magnitude),
// five edge cases (zeros, ones, alternating signs, values near the op's
// extremes, NaN/Inf) and six adversarial ones, each aimed at a class of
// plausible wrong kernel: rows that are all negative (a max or top-k started
// at 0), rows whose mean dwarfs their spread or whose halves cancel (a
// one-pass variance, f16 accumulation), values near the op's overflow
// threshold (exp without the max shift; where the op has one), exact zeros in
// every input meeting NaN/Inf in the others (a kernel that skips zero
// weights), -0 beside +0, NaN with its sign bit set and rows of -Inf (orders
// built on raw bits, a max started at -FLT_MAX), and subnormals with
// denominators past 2^126 (a*(1/b)). It runs the Eigen reference and the
// candidate on identical inputs and compares every output element by element
// with the op's tolerance (ops/*.hpp) scaled per element (see error_scale);
// integer outputs (indices) must match exactly, and so must the bits of an
// exact op's outputs (copies: -0 is not +0; any NaN matches NaN). Integer
// inputs (ids) are drawn in the range their operand_spec gives. A device may
// flush subnormals (Vulkan leaves it to the implementation): a reference
// output below f32's smallest normal may come out as zero, and in the
// subnormal case an output may instead match the reference computed with
// every subnormal input flushed to zero (never for exact ops; only where the
// device flushes, for the generation gate: suite_options::allow_flushed_inputs). The
// candidate's outputs are poisoned before it runs (NaN, or a finite sentinel
// in the cases that feed NaN in; -1 for indices) so that an element it never
// writes cannot match by luck; reference outputs that are all zero or
// constant are flagged `degenerate`, and a suite whose every case is
// degenerate does not pass.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "kforge/core/json.hpp"
#include "kforge/eigen/eigen.hpp"
#include "kforge/validate/execute.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge {

inline constexpr std::array<input_case, 16> all_cases = {
    input_case::uniform,       input_case::normal,      input_case::sparse,   input_case::large,
    input_case::small,         input_case::zeros,       input_case::ones,     input_case::alternating,
    input_case::extremes,      input_case::nan_inf,     input_case::negative_rows, input_case::offset_rows,
    input_case::overflow,      input_case::zeros_meet_specials, input_case::signed_specials, input_case::subnormal};

constexpr std::string_view to_string(input_case c) {
  switch (c) {
    case input_case::uniform: return "uniform";
    case input_case::normal: return "normal";
    case input_case::sparse: return "sparse";
    case input_case::large: return "large_magnitude";
    case input_case::small: return "small_magnitude";
    case input_case::zeros: return "zeros";
    case input_case::ones: return "ones";
    case input_case::alternating: return "alternating_signs";
    case input_case::extremes: return "extremes";
    case input_case::nan_inf: return "nan_inf";
    case input_case::negative_rows: return "negative_rows";
    case input_case::offset_rows: return "offset_rows";
    case input_case::overflow: return "overflow";
    case input_case::zeros_meet_specials: return "zeros_meet_specials";
    case input_case::signed_specials: return "signed_specials";
    case input_case::subnormal: return "subnormal";
  }
  return "?";
}

/// Whether case c feeds NaN into the inputs (the poison is then finite).
constexpr bool feeds_nan(input_case c) {
  return c == input_case::nan_inf || c == input_case::zeros_meet_specials || c == input_case::signed_specials;
}

/// A deterministic generator (splitmix64): the same seed gives the same
/// inputs on every platform and standard library.
class rng {
 public:
  explicit rng(std::uint64_t seed) : s_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {
    const double u1 = std::max(uniform(), 1e-300), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  double sign() { return (next() & 1) ? 1.0 : -1.0; }

 private:
  std::uint64_t s_;
};

/// Input magnitudes of the large-magnitude and extremes cases (the op's traits).
inline case_magnitudes magnitudes_for(const problem& p) { return family_of(p).magnitudes(p); }

/// Fills an i32 operand with ids in [0, spec.id_bound): uniform in every
/// case but extremes, where each is 0 or id_bound - 1 (the table's first and
/// last rows). With `bad_ids` (contract kernels, the signed_specials case,
/// an operand whose contract writes zero rows for them) about one id in six
/// is out of range instead: -1, id_bound, INT_MIN or INT_MAX. An i32 input
/// without a bound is an error of its traits.
inline void generate_ids(const problem& p, const operand_spec& spec, input_case c, rng& r, host_tensor& h,
                         bool bad_ids = false) {
  if (spec.id_bound <= 0 || spec.id_bound > (index_t{1} << 31))
    throw error("kforge: internal: " + p.op + "'s i32 input " + spec.name + " has no id bound in [1, 2^31]");
  const auto bound = static_cast<std::uint64_t>(spec.id_bound);
  const bool bad = bad_ids && spec.bad_ids_zero_rows && c == input_case::signed_specials;
  constexpr std::int64_t outside[] = {-1, 0, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  for (index_t off : h.offsets()) {
    std::int64_t id = c == input_case::extremes ? ((r.next() & 1) ? bound - 1 : 0) : r.next() % bound;
    if (bad && r.next() % 6 == 0) {
      const std::size_t k = r.next() % 4;
      id = k == 1 ? static_cast<std::int64_t>(bound) : outside[k];
      if (id > std::numeric_limits<std::int32_t>::max()) id = std::numeric_limits<std::int32_t>::max();
    }
    h.set_i32(off, static_cast<std::int32_t>(id));
  }
}

/// Whether p has an ids operand that contract kernels answer with zero rows.
inline bool has_zero_row_ids(const problem& p) {
  for (const operand_spec& o : operands(p))
    if (o.bad_ids_zero_rows) return true;
  return false;
}

/// The contract's reference for inputs with bad ids: the reference on the
/// ids with every bad one replaced by 0, then those ids' output rows zeroed.
inline void reference_with_bad_ids(const problem& p, std::vector<host_tensor>& ts) {
  const auto specs = operands(p);
  std::vector<bool> bad_row;
  for (std::size_t t = 0; t < specs.size(); ++t) {
    if (!specs[t].bad_ids_zero_rows) continue;
    for (index_t off : ts[t].offsets()) {
      const std::int32_t id = ts[t].get_i32(off);
      const bool bad = id < 0 || id >= specs[t].id_bound;
      bad_row.push_back(bad);
      if (bad) ts[t].set_i32(off, 0);
    }
  }
  execute<policy::eigen>(p, ts);
  host_tensor& out = ts.back();
  const index_t row = out.dims.rank() ? out.dims.back() : 1;
  const std::vector<index_t> oo = out.offsets();
  for (std::size_t e = 0; e < oo.size(); ++e)
    if (e / static_cast<std::size_t>(row) < bad_row.size() && bad_row[e / static_cast<std::size_t>(row)]) out.set(oo[e], 0.0f);
}

/// The offset_rows case's offset for storage type t (at most the op's large
/// magnitude) and the ratio of offset to spread: as wide as the type's
/// mantissa leaves a few distinct values of spread (f32: 4096 ± 1).
inline std::pair<double, double> row_offset(dtype t, double large) {
  const double c = t == dtype::f16 ? 1024.0 : t == dtype::bf16 ? 256.0 : 4096.0;
  const double ratio = t == dtype::f16 ? 256.0 : t == dtype::bf16 ? 32.0 : 4096.0;
  const double off = std::min(c, large);
  return {off, off / ratio};
}

/// A subnormal of storage type t (f16's own; f32's for f32 and bf16), random sign.
inline double subnormal_value(dtype t, rng& r) {
  const double lo = t == dtype::f16 ? 0x1.0p-24 : t == dtype::bf16 ? 0x1.0p-133 : 0x1.0p-149;
  const double hi = t == dtype::f16 ? 0x1.0p-15 : 0x1.0p-127;
  return r.sign() * std::exp2(r.uniform(std::log2(lo), std::log2(hi)));
}

/// Fills every input operand (and an output that is also read) for one case.
/// Returns false where the case says nothing about the op (the suite does
/// not run it: the overflow case of an op without a threshold).
inline bool generate_inputs(const problem& p, input_case c, std::uint64_t seed, std::vector<host_tensor>& ts,
                            bool bad_ids = false) {
  const auto specs = operands(p);
  const case_magnitudes mag = magnitudes_for(p);
  const bool inf_ok = family_of(p).inf_inputs;
  constexpr double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (std::size_t t = 0; t < ts.size(); ++t) {
    const operand_spec& spec = specs[t];
    host_tensor& h = ts[t];
    if (spec.is_output && !spec.also_input) continue;
    rng r(seed ^ (0x51ed2701u * (t + 1)) ^ (static_cast<std::uint64_t>(c) << 48));
    if (h.type == dtype::i32) {
      generate_ids(p, spec, c, r, h, bad_ids);
      continue;
    }
    const std::vector<index_t> offs = h.offsets();
    const index_t cols = h.dims.rank() ? std::max<index_t>(1, h.dims.back()) : 1;
    const auto [off, spread] = row_offset(h.type, mag.large);
    double row_sign = 1, row_special = 0;
    index_t i = 0;
    for (index_t o : offs) {
      const index_t row = i / cols, j = i % cols;
      if (j == 0) {
        row_sign = r.sign();
        row_special = static_cast<double>(r.next() % cols);  // where a row's lone -NaN goes
      }
      double v = 0;
      switch (c) {
        case input_case::uniform: v = r.uniform(-1, 1); break;
        case input_case::normal: v = r.normal(); break;
        case input_case::sparse: v = r.uniform() < 0.9 ? 0.0 : r.normal(); break;
        case input_case::large: v = r.sign() * r.uniform(mag.large / 2, mag.large); break;
        case input_case::small: v = r.sign() * r.uniform(1e-4, 1e-3); break;
        case input_case::zeros: v = 0; break;
        case input_case::ones: v = 1; break;
        case input_case::alternating: v = (i % 2 ? -1.0 : 1.0) * (0.5 + r.uniform()); break;
        case input_case::extremes:
          v = (mag.extreme_positive_only ? 1.0 : r.sign()) * r.uniform(mag.extreme_lo, mag.extreme_hi);
          break;
        case input_case::nan_inf: v = r.uniform(-1, 1); break;
        case input_case::negative_rows:
          // Every third row very negative (log-probabilities of a long tail,
          // masked logits), the others in [-1, -1e-3].
          v = row % 3 == 2 ? -r.uniform(mag.large / 2, mag.large) : -r.uniform(1e-3, 1);
          break;
        case input_case::offset_rows:
          // Even rows: ±offset + spread (mean >> spread); odd rows: +offset on
          // the first half, -offset on the second (sums that cancel).
          v = (row % 2 == 0 ? row_sign : (j < cols / 2 ? 1.0 : -1.0)) * off + r.uniform(-spread, spread);
          break;
        case input_case::overflow: v = r.uniform(mag.overflow_lo, mag.overflow_hi); break;
        case input_case::zeros_meet_specials: v = r.uniform() < 0.34 ? r.sign() * 0.0 : r.uniform(-1, 1); break;
        case input_case::signed_specials:
          // The first input's rows: a ±0 tie for the max, a lone -NaN, all
          // -Inf, zeros of both signs among numbers; the other inputs only
          // the zeros and numbers (a product stays informative).
          switch (t == 0 ? row % 4 : 3) {
            case 0: v = r.uniform() < 0.5 ? r.sign() * 0.0 : -r.uniform(1e-3, 1); break;  // max is a ±0 tie
            case 1: v = static_cast<double>(j) == row_special ? -nan : r.uniform(-1, 1); break;  // one -NaN
            case 2: v = inf_ok ? -inf : -r.uniform(mag.large / 2, mag.large); break;  // all -Inf
            default: v = r.uniform() < 0.3 ? r.sign() * 0.0 : r.uniform(-1, 1); break;
          }
          break;
        case input_case::subnormal: v = r.uniform() < 0.5 ? subnormal_value(h.type, r) : r.uniform(-1, 1); break;
      }
      h.set(o, static_cast<float>(v));
      ++i;
    }
    const bool specials = c == input_case::nan_inf ? spec.gets_specials : c == input_case::zeros_meet_specials;
    if (specials && !spec.is_output && !offs.empty()) {
      // A few specials (about 1 in 300, at least two; 1 in 100 where zeros
      // wait for them) so that most outputs stay finite and the finite part
      // is still checked; ±Inf where the op's traits allow them (attention's
      // do not).
      const std::size_t count = std::max<std::size_t>(2, offs.size() / (c == input_case::nan_inf ? 300 : 100));
      for (std::size_t k = 0; k < count; ++k) {
        const index_t at = offs[static_cast<std::size_t>(r.next() % offs.size())];
        const double special = !inf_ok || k % 3 == 0 ? nan : k % 3 == 1 ? inf : -inf;
        h.set(at, static_cast<float>(special));
      }
    }
  }
  return family_of(p).prepare_case(p, c, ts, seed);
}

/// Per-element error scale: the magnitude that rounding errors of a correct
/// kernel are proportional to (the op's traits). For linear ops (gemm,
/// conv2d, sum, mean, add/sub) it is the op applied to |inputs| — large where
/// cancellation makes |ref| small; for the others it is derived from |ref|
/// and the inputs. `ref` is the reference of output `output` (an index into
/// the operands; default: the last), asked once per floating-point output.
inline std::vector<double> error_scale(const problem& p, const std::vector<host_tensor>& in, const host_tensor& ref,
                                       std::size_t output = static_cast<std::size_t>(-1)) {
  const linear_scale_fn linear = [&](const problem& q_in) {
    // q_in on |inputs| in f32 (integer operands as they are).
    problem q = q_in;
    q.type = dtype::f32;
    std::vector<host_tensor> a;
    for (const host_tensor& h : in) {
      if (!is_float(h.type)) {
        a.push_back(h);
        continue;
      }
      host_tensor abs(dtype::f32, h.dims, h.strides);
      for (index_t i = 0; i < h.span(); ++i) abs.set(i, std::fabs(h.get(i)));
      a.push_back(std::move(abs));
    }
    execute<policy::eigen>(q, a);
    const host_tensor& o = output < a.size() ? a[output] : a.back();
    const std::vector<index_t> ao = o.offsets();
    std::vector<double> scale(ao.size());
    for (std::size_t e = 0; e < ao.size(); ++e) scale[e] = o.get(ao[e]);
    return scale;
  };
  return family_of(p).error_scale(p, in, ref, linear);
}

/// The tolerance of a problem, from the numbers next to its op.
inline tolerance tolerance_for(const problem& p) { return family_of(p).tolerance_of(p); }

struct case_result {
  std::string name;
  bool passed = false;
  bool degenerate = false;  ///< the reference output is all zero or constant
  double max_abs_err = 0, max_rel_err = 0;
  index_t mismatches = 0, elements = 0;
  index_t first_bad = -1;   ///< logical index of the first failing element (within first_bad_output)
  double first_bad_out = 0, first_bad_ref = 0;
  std::string first_bad_output;  ///< ops with several outputs: the output it is in
  std::string error;        ///< the candidate threw: its message
};

struct report {
  std::string problem;
  bool all_passed = false;
  int num_passed = 0, num_total = 0;
  double max_abs_err = 0, max_rel_err = 0;
  std::vector<case_result> cases;
  std::string note;

  std::string to_json() const {
    json_writer w;
    w.begin_object().field("problem", problem).field("all_passed", all_passed).field("num_passed", num_passed);
    w.field("num_total", num_total).field("max_abs_err", max_abs_err).field("max_rel_err", max_rel_err);
    if (!note.empty()) w.field("note", note);
    w.key("cases").begin_array();
    for (const auto& c : cases) {
      w.begin_object().field("name", c.name).field("passed", c.passed).field("degenerate", c.degenerate);
      w.field("max_abs_err", c.max_abs_err).field("max_rel_err", c.max_rel_err).field("mismatches", c.mismatches);
      w.field("elements", c.elements);
      if (c.first_bad >= 0)
        w.field("first_bad_index", c.first_bad).field("first_bad_out", c.first_bad_out).field("first_bad_ref", c.first_bad_ref);
      if (!c.first_bad_output.empty()) w.field("first_bad_output", c.first_bad_output);
      if (!c.error.empty()) w.field("error", c.error);
      w.end_object();
    }
    w.end_array().end_object();
    return w.str();
  }
};

/// Whether p's outputs are copies of its inputs' elements (the tolerance is
/// exact): their bits are compared, not their values.
inline bool exact_op(const problem& p) {
  const tolerance t = tolerance_for(p);
  return t.atol == 0 && t.rtol == 0 && t.ulps == 0;
}

/// f32's smallest normal: a reference output below it may come out as zero
/// on a device that flushes subnormals.
inline constexpr double flush_floor = 1.1754943508222875e-38;

/// Compares a candidate output with the reference element by element
/// (integer outputs exactly; `scale` is not read for them). `flushed`, where
/// given, is the reference on inputs with every subnormal flushed to zero:
/// an element matching it passes too (a device that flushes subnormals).
inline case_result compare_outputs(const problem& p, const host_tensor& out, const host_tensor& ref,
                                   const std::vector<double>& scale, const host_tensor* flushed = nullptr) {
  case_result r;
  const tolerance tol = tolerance_for(p);
  const bool bitwise = exact_op(p);
  const std::vector<index_t> oo = out.offsets(), ro = ref.offsets();
  r.elements = static_cast<index_t>(ro.size());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool all_zero = true;
  // Non-finite reference values count too: a reference of -Inf, +Inf and
  // NaN lines (a reduction's signed_specials) tells kernels apart; one that
  // is NaN everywhere, or a constant and NaN, does not.
  int nan_refs = 0, pos_inf = 0, neg_inf = 0, finite = 0;
  const bool exact = ref.type == dtype::i32;
  auto close = [&](double o, double f, double sc) {
    if (std::isnan(f)) return std::isnan(o);
    if (std::isinf(f)) return o == f;
    const double bound = tol.atol * sc + tol.rtol * std::fabs(f) + tol.ulps * ulp_at(p.type, f) +
                         (std::fabs(f) < flush_floor && !bitwise ? flush_floor : 0.0);
    return std::isfinite(o) && std::fabs(o - f) <= bound;
  };
  for (std::size_t e = 0; e < ro.size(); ++e) {
    const double o = exact ? out.get_i32(oo[e]) : out.get(oo[e]), f = exact ? ref.get_i32(ro[e]) : ref.get(ro[e]);
    bool ok;
    if (exact) {
      ok = o == f;
      lo = std::min(lo, f);
      hi = std::max(hi, f);
      all_zero = all_zero && f == 0.0;
    } else if (bitwise) {
      // A copy: the same bits (any NaN for a NaN: payloads are the device's).
      ok = std::isnan(f) ? std::isnan(o) : out.bits(oo[e]) == ref.bits(ro[e]);
      if (std::isfinite(f)) {
        lo = std::min(lo, f);
        hi = std::max(hi, f);
        all_zero = all_zero && f == 0.0;
      }
    } else {
      if (std::isfinite(f)) {
        lo = std::min(lo, f);
        hi = std::max(hi, f);
        all_zero = all_zero && f == 0.0;
      }
      ok = close(o, f, scale[e]);
      if (!ok && flushed) {
        const std::vector<index_t> fo = flushed->offsets();
        ok = close(o, flushed->get(fo[e]), scale[e]);
      }
      if (std::isfinite(f)) {
        const double err = std::fabs(o - f);
        if (std::isfinite(o)) {
          r.max_abs_err = std::max(r.max_abs_err, err);
          const double denom = std::max(std::fabs(f), scale[e]);
          if (denom > 0) r.max_rel_err = std::max(r.max_rel_err, err / denom);
        } else {
          r.max_abs_err = std::numeric_limits<double>::infinity();
        }
      }
    }
    if (!exact) {
      if (std::isnan(f)) ++nan_refs;
      else if (std::isinf(f)) ++(f > 0 ? pos_inf : neg_inf);
      else ++finite;
    }
    if (!ok) {
      if (r.first_bad < 0) {
        r.first_bad = static_cast<index_t>(e);
        r.first_bad_out = o;
        r.first_bad_ref = f;
      }
      ++r.mismatches;
    }
  }
  const bool finite_degenerate = all_zero || (ro.size() > 1 && (hi - lo) <= 1e-12 * std::max(1.0, std::fabs(hi)));
  // Informative: finite values that vary, or two kinds of non-finite value
  // (NaN, +Inf, -Inf). A constant beside NaN is what a kernel writing that
  // constant and propagating NaN also gives: still degenerate.
  const int nonfinite_kinds = (nan_refs > 0) + (pos_inf > 0) + (neg_inf > 0);
  r.degenerate = ro.empty() || (exact ? finite_degenerate : (finite == 0 || finite_degenerate) && nonfinite_kinds <= 1);
  r.passed = r.mismatches == 0;
  return r;
}

/// Compares every output of one call (operands(p)'s outputs, in order) with
/// the reference's: one case_result whose counts add up over the outputs,
/// whose first failure is the first output's that fails, and which is
/// degenerate only when every output's reference is. `inputs` are the
/// operands as they were before the call (for the error scale); `flushed`,
/// where given, the reference's operands after a run on inputs with their
/// subnormals flushed (compare_outputs).
inline case_result compare_all_outputs(const problem& p, const std::vector<host_tensor>& out,
                                       const std::vector<host_tensor>& ref, const std::vector<host_tensor>& inputs,
                                       const std::vector<host_tensor>* flushed = nullptr) {
  const auto specs = operands(p);
  const std::size_t outputs = output_count(specs), first = specs.size() - outputs;
  case_result all;
  all.passed = all.degenerate = true;
  for (std::size_t i = first; i < specs.size(); ++i) {
    const std::vector<double> scale = is_float(ref[i].type) ? error_scale(p, inputs, ref[i], i) : std::vector<double>{};
    const case_result r = compare_outputs(p, out[i], ref[i], scale, flushed ? &(*flushed)[i] : nullptr);
    all.elements += r.elements;
    all.mismatches += r.mismatches;
    all.max_abs_err = std::max(all.max_abs_err, r.max_abs_err);
    all.max_rel_err = std::max(all.max_rel_err, r.max_rel_err);
    all.degenerate = all.degenerate && r.degenerate;
    if (!r.passed && all.passed) {
      all.first_bad = r.first_bad;
      all.first_bad_out = r.first_bad_out;
      all.first_bad_ref = r.first_bad_ref;
      if (outputs > 1) all.first_bad_output = specs[i].name;
    }
    all.passed = all.passed && r.passed;
  }
  return all;
}

/// The operands with every f32 subnormal input element flushed to a zero of
/// its sign (what a device that flushes subnormals computes on); false when
/// there was none.
inline bool flush_subnormals(const problem& p, std::vector<host_tensor>& ts) {
  const auto specs = operands(p);
  bool any = false;
  for (std::size_t t = 0; t < ts.size(); ++t) {
    if ((specs[t].is_output && !specs[t].also_input) || !is_float(ts[t].type)) continue;
    for (index_t i = 0; i < ts[t].span(); ++i) {
      const float v = ts[t].get(i);
      if (v != 0 && std::fabs(v) < static_cast<float>(flush_floor)) {
        ts[t].set(i, std::signbit(v) ? -0.0f : 0.0f);
        any = true;
      }
    }
  }
  return any;
}

/// Fills every output that is not also read with a value a correct kernel
/// never leaves there: NaN (a finite sentinel in the NaN/Inf case, where NaN
/// is a plausible result) for floats, -1 for indices.
inline void poison_outputs(const problem& p, input_case c, std::vector<host_tensor>& ts) {
  const auto specs = operands(p);
  for (std::size_t t = 0; t < specs.size(); ++t) {
    if (!specs[t].is_output || specs[t].also_input) continue;
    host_tensor& o = ts[t];
    if (o.type == dtype::i32) {
      for (index_t i = 0; i < o.span(); ++i) o.set_i32(i, -1);
      continue;
    }
    const float poison = feeds_nan(c) ? -12345.0f : std::numeric_limits<float>::quiet_NaN();
    for (index_t i = 0; i < o.span(); ++i) o.set(i, poison);
  }
}

/// Runs a problem on host tensors; the candidate of the suite.
using executor = std::function<void(const problem&, std::vector<host_tensor>&)>;

struct suite_options {
  std::uint64_t seed = 0x6b666f7267650001ull;
  std::vector<input_case> cases{all_cases.begin(), all_cases.end()};
  bool skip_degenerate = false;  ///< drop cases whose reference is degenerate (the generation gate)
  /// The candidate is a kernel of the generation contract (the gate): it is
  /// held to the contract's device semantics too — embedding's bad ids
  /// (operand_spec::bad_ids_zero_rows) arrive in the signed_specials case and
  /// their rows must be zeros. Library policies check ids on the host
  /// (argument_error) and are not fed them.
  bool contract = false;
  /// Stop at the first case that fails (the generation gate: a verdict on a
  /// wrong kernel costs one failing case, not sixteen); the report then holds
  /// the cases run so far and says so in its note.
  bool stop_at_first_failure = false;
  /// In the subnormal case, an output may match the reference on inputs
  /// with every subnormal flushed to zero (a device that flushes). The gate
  /// turns this off on a device that keeps subnormals
  /// (vulkan::flushes_subnormals): there a kernel that flushes them on
  /// purpose is wrong.
  bool allow_flushed_inputs = true;
};

/// Validates `candidate` on problem p against the Eigen reference.
inline report validate(const problem& p, const executor& candidate, const suite_options& opt = {}) {
  report rep;
  rep.problem = describe(p);
  for (input_case c : opt.cases) {
    std::vector<host_tensor> ref_ts = allocate(p);
    const bool bad_ids = opt.contract && c == input_case::signed_specials && has_zero_row_ids(p);
    if (!generate_inputs(p, c, opt.seed, ref_ts, bad_ids)) continue;  // the case says nothing about this op
    std::vector<host_tensor> cand_ts = ref_ts;  // identical inputs (and initial C)
    const std::vector<host_tensor> inputs(ref_ts.begin(), ref_ts.end());  // inputs as given, before the call
    // A device may flush subnormal inputs: the reference on flushed inputs
    // is an answer too (not for copies, whose bits must survive).
    std::vector<host_tensor> flushed = ref_ts;
    const bool flush = opt.allow_flushed_inputs && c == input_case::subnormal && !exact_op(p) && flush_subnormals(p, flushed);
    if (bad_ids) reference_with_bad_ids(p, ref_ts);
    else execute<policy::eigen>(p, ref_ts);
    if (flush) execute<policy::eigen>(p, flushed);
    poison_outputs(p, c, cand_ts);
    case_result r;
    try {
      candidate(p, cand_ts);
      r = compare_all_outputs(p, cand_ts, ref_ts, inputs, flush ? &flushed : nullptr);
    } catch (const std::exception& e) {
      r.error = e.what();
      r.passed = false;
    }
    r.name = std::string(to_string(c));
    if (opt.skip_degenerate && r.degenerate && r.error.empty()) continue;
    rep.max_abs_err = std::max(rep.max_abs_err, r.max_abs_err);
    rep.max_rel_err = std::max(rep.max_rel_err, r.max_rel_err);
    rep.num_passed += r.passed ? 1 : 0;
    const bool failed = !rep.cases.emplace_back(std::move(r)).passed;
    if (failed && opt.stop_at_first_failure) {
      rep.note = "stopped at the first failing case (" + rep.cases.back().name + ")";
      break;
    }
  }
  rep.num_total = static_cast<int>(rep.cases.size());
  const bool informative = std::any_of(rep.cases.begin(), rep.cases.end(), [](const case_result& r) { return !r.degenerate; });
  rep.all_passed = rep.num_total > 0 && rep.num_passed == rep.num_total && informative;
  if (!informative && rep.note.empty()) rep.note = "every reference output was degenerate (all zero or constant): nothing was tested";
  return rep;
}

/// Validates Policy on problem p.
template <class Policy>
report validate(const problem& p, const suite_options& opt = {}) {
  return validate(p, executor(&execute<Policy>), opt);
}

}  // namespace kforge
