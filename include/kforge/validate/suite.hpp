// kforge/validate/suite.hpp — the validation suite: the gate every kernel
// passes (blocked CPU code, GLSL shaders, tuned variants, generated kernels).
//
// For one problem it runs ten cases — five random distributions (uniform,
// normal, sparse, large magnitude, small magnitude) and five edge cases
// (zeros, ones, alternating signs, values near the op's extremes, NaN/Inf) —
// from a seed, runs the Eigen reference and the candidate on identical inputs,
// and compares every output element by element with the op's tolerance
// (ops/*.hpp) scaled per element (see error_scale); integer outputs (indices)
// must match exactly, and integer inputs (ids) are drawn in the range their
// operand_spec gives. The candidate's outputs are poisoned before it runs
// (NaN, or a finite sentinel in the NaN/Inf case; -1 for indices) so that an
// element it never writes cannot match by luck; reference outputs that are
// all zero or constant are flagged `degenerate`, and a suite whose every case
// is degenerate does not pass.
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

enum class input_case : std::uint8_t { uniform, normal, sparse, large, small, zeros, ones, alternating, extremes, nan_inf };

inline constexpr std::array<input_case, 10> all_cases = {
    input_case::uniform, input_case::normal,      input_case::sparse,   input_case::large,  input_case::small,
    input_case::zeros,   input_case::ones,        input_case::alternating, input_case::extremes, input_case::nan_inf};

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
  }
  return "?";
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
/// last rows). An i32 input without a bound is an error of its traits.
inline void generate_ids(const problem& p, const operand_spec& spec, input_case c, rng& r, host_tensor& h) {
  if (spec.id_bound <= 0 || spec.id_bound > (index_t{1} << 31))
    throw error("kforge: internal: " + p.op + "'s i32 input " + spec.name + " has no id bound in [1, 2^31]");
  const auto bound = static_cast<std::uint64_t>(spec.id_bound);
  for (index_t off : h.offsets()) {
    const std::uint64_t id = c == input_case::extremes ? ((r.next() & 1) ? bound - 1 : 0) : r.next() % bound;
    h.set_i32(off, static_cast<std::int32_t>(id));
  }
}

/// Fills every input operand (and an output that is also read) for one case.
inline void generate_inputs(const problem& p, input_case c, std::uint64_t seed, std::vector<host_tensor>& ts) {
  const auto specs = operands(p);
  const case_magnitudes mag = magnitudes_for(p);
  for (std::size_t t = 0; t < ts.size(); ++t) {
    const operand_spec& spec = specs[t];
    host_tensor& h = ts[t];
    if (spec.is_output && !spec.also_input) continue;
    rng r(seed ^ (0x51ed2701u * (t + 1)) ^ (static_cast<std::uint64_t>(c) << 48));
    if (h.type == dtype::i32) {
      generate_ids(p, spec, c, r, h);
      continue;
    }
    const std::vector<index_t> offs = h.offsets();
    index_t i = 0;
    for (index_t off : offs) {
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
      }
      h.set(off, static_cast<float>(v));
      ++i;
    }
    if (c == input_case::nan_inf && spec.gets_specials && !spec.is_output && !offs.empty()) {
      // A few specials (about 1 in 300, at least two) so that most outputs stay
      // finite and the finite part is still checked; ±Inf where the op's
      // traits allow them (attention's do not).
      const bool inf_ok = family_of(p).inf_inputs;
      const std::size_t count = std::max<std::size_t>(2, offs.size() / 300);
      for (std::size_t k = 0; k < count; ++k) {
        const index_t off = offs[static_cast<std::size_t>(r.next() % offs.size())];
        const double special = !inf_ok || k % 3 == 0 ? std::numeric_limits<double>::quiet_NaN()
                               : k % 3 == 1         ? std::numeric_limits<double>::infinity()
                                                    : -std::numeric_limits<double>::infinity();
        h.set(off, static_cast<float>(special));
      }
    }
  }
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

/// Compares a candidate output with the reference element by element
/// (integer outputs exactly; `scale` is not read for them).
inline case_result compare_outputs(const problem& p, const host_tensor& out, const host_tensor& ref,
                                   const std::vector<double>& scale) {
  case_result r;
  const tolerance tol = tolerance_for(p);
  const std::vector<index_t> oo = out.offsets(), ro = ref.offsets();
  r.elements = static_cast<index_t>(ro.size());
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  bool all_zero = true;
  const bool exact = ref.type == dtype::i32;
  for (std::size_t e = 0; e < ro.size(); ++e) {
    const double o = exact ? out.get_i32(oo[e]) : out.get(oo[e]), f = exact ? ref.get_i32(ro[e]) : ref.get(ro[e]);
    bool ok;
    if (exact) {
      ok = o == f;
      lo = std::min(lo, f);
      hi = std::max(hi, f);
      all_zero = all_zero && f == 0.0;
    } else if (std::isnan(f)) {
      ok = std::isnan(o);
    } else if (std::isinf(f)) {
      ok = o == f;
    } else {
      lo = std::min(lo, f);
      hi = std::max(hi, f);
      all_zero = all_zero && f == 0.0;
      const double err = std::fabs(o - f);
      const double bound = tol.atol * scale[e] + tol.rtol * std::fabs(f) + tol.ulps * ulp_at(p.type, f);
      ok = std::isfinite(o) && err <= bound;
      if (std::isfinite(o)) {
        r.max_abs_err = std::max(r.max_abs_err, err);
        const double denom = std::max(std::fabs(f), scale[e]);
        if (denom > 0) r.max_rel_err = std::max(r.max_rel_err, err / denom);
      } else {
        r.max_abs_err = std::numeric_limits<double>::infinity();
      }
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
  r.degenerate = ro.empty() || all_zero || (ro.size() > 1 && (hi - lo) <= 1e-12 * std::max(1.0, std::fabs(hi)));
  r.passed = r.mismatches == 0;
  return r;
}

/// Compares every output of one call (operands(p)'s outputs, in order) with
/// the reference's: one case_result whose counts add up over the outputs,
/// whose first failure is the first output's that fails, and which is
/// degenerate only when every output's reference is. `inputs` are the
/// operands as they were before the call (for the error scale).
inline case_result compare_all_outputs(const problem& p, const std::vector<host_tensor>& out,
                                       const std::vector<host_tensor>& ref, const std::vector<host_tensor>& inputs) {
  const auto specs = operands(p);
  const std::size_t outputs = output_count(specs), first = specs.size() - outputs;
  case_result all;
  all.passed = all.degenerate = true;
  for (std::size_t i = first; i < specs.size(); ++i) {
    const std::vector<double> scale = is_float(ref[i].type) ? error_scale(p, inputs, ref[i], i) : std::vector<double>{};
    const case_result r = compare_outputs(p, out[i], ref[i], scale);
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
    const float poison = c == input_case::nan_inf ? -12345.0f : std::numeric_limits<float>::quiet_NaN();
    for (index_t i = 0; i < o.span(); ++i) o.set(i, poison);
  }
}

/// Runs a problem on host tensors; the candidate of the suite.
using executor = std::function<void(const problem&, std::vector<host_tensor>&)>;

struct suite_options {
  std::uint64_t seed = 0x6b666f7267650001ull;
  std::vector<input_case> cases{all_cases.begin(), all_cases.end()};
  bool skip_degenerate = false;  ///< drop cases whose reference is degenerate (the generation gate)
};

/// Validates `candidate` on problem p against the Eigen reference.
inline report validate(const problem& p, const executor& candidate, const suite_options& opt = {}) {
  report rep;
  rep.problem = describe(p);
  for (input_case c : opt.cases) {
    std::vector<host_tensor> ref_ts = allocate(p);
    generate_inputs(p, c, opt.seed, ref_ts);
    std::vector<host_tensor> cand_ts = ref_ts;  // identical inputs (and initial C)
    const std::vector<host_tensor> inputs(ref_ts.begin(), ref_ts.end());  // inputs as given, before the call
    execute<policy::eigen>(p, ref_ts);
    poison_outputs(p, c, cand_ts);
    case_result r;
    try {
      candidate(p, cand_ts);
      r = compare_all_outputs(p, cand_ts, ref_ts, inputs);
    } catch (const std::exception& e) {
      r.error = e.what();
      r.passed = false;
    }
    r.name = std::string(to_string(c));
    if (opt.skip_degenerate && r.degenerate && r.error.empty()) continue;
    rep.max_abs_err = std::max(rep.max_abs_err, r.max_abs_err);
    rep.max_rel_err = std::max(rep.max_rel_err, r.max_rel_err);
    rep.num_passed += r.passed ? 1 : 0;
    rep.cases.push_back(std::move(r));
  }
  rep.num_total = static_cast<int>(rep.cases.size());
  const bool informative = std::any_of(rep.cases.begin(), rep.cases.end(), [](const case_result& r) { return !r.degenerate; });
  rep.all_passed = rep.num_total > 0 && rep.num_passed == rep.num_total && informative;
  if (!informative) rep.note = "every reference output was degenerate (all zero or constant): nothing was tested";
  return rep;
}

/// Validates Policy on problem p.
template <class Policy>
report validate(const problem& p, const suite_options& opt = {}) {
  return validate(p, executor(&execute<Policy>), opt);
}

}  // namespace kforge
