// kforge/model/verify.hpp — the decoder on a policy against the same decoder
// on the Eigen reference, stage by stage, as the systems users know do it
// (a wrong kernel anywhere names the stage that diverged, its shape and the
// policy that ran it).
//
// The reference runs the program of model/block.hpp on policy::eigen. At
// every op call it also runs the candidate policy's op on the reference's own
// operands (a copy of the output where the op reads it too: kv_append's
// cache, the beta = 1 residual gemms) and compares the two outputs with the
// validation suite's compare_outputs: the op's own tolerance (ops/*.hpp) and
// error scale, element by element. That is the **isolated** check: errors of
// earlier stages cannot hide or excuse a wrong kernel, so it names the stage.
//
// The candidate then runs the whole step on its own (host views, or device
// tensors and one stream per step) and every op's output is captured. The
// **end-to-end** error of a stage is max|out − ref| / max|ref| (max-norm
// relative) of the candidate's run against the reference's. Its bound grows
// with depth: growth × the sum, over the step's op calls up to this one, of
// each op's tolerance as a relative error (atol + rtol + ulps · eps of the
// storage type), i.e. the suite's tolerances summed along the step. growth
// (default 8) allows for amplification between stages (softmax of scores,
// the norms' division); measured on every preset, dtype and CPU policy and on
// lavapipe, the end-to-end errors stay below a tenth of it (docs/bench/HISTORY.md,
// "transformer"), and an op gone wrong exceeds it by orders of magnitude.
// Decode steps attend to a cache the earlier steps wrote, whose errors have
// the same depth, so the sum is taken within a step.
//
// Quantized weights (weights.hpp): the reference runs on the same weights,
// policy::eigen computing each gemm with dequantize(W) — the format's
// meaning — so the check is of the kernels, not of the format's error; the
// isolated check's problem and error scale read a dense stand-in of W
// (dense_standins).
//
// Inputs are random token ids; both sides run them from the embedding
// (op::embedding, exact: its end-to-end bound is 0) to the sampled token
// (op::topk, k = 1). An op with several outputs is checked in isolation on
// all of them (topk: the largest logit and its index, both exactly) and
// followed end to end on its first; sample's is the largest logit, whose
// error is taken relative to the logits' magnitude (lm_head's, the stage
// before it): the maximum moves no more than the logits do, while the
// largest logit itself may be near zero. Which token each run picks is not
// compared end to end: near-ties may go either way within the tolerances.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kforge/core/json.hpp"
#include "kforge/model/host.hpp"
#include "kforge/ops/registry.hpp"
#include "kforge/validate/suite.hpp"

namespace kforge::model {

/// A dense view as a host_tensor (for the suite's comparison helpers).
template <class T>
host_tensor to_host_tensor(const tensor_view<T>& v) {
  using U = std::remove_const_t<T>;
  host_tensor h(dtype_of<U>(), v.dims, row_major_strides(v.dims));
  if (v.numel()) std::memcpy(h.storage.data(), v.data, static_cast<std::size_t>(v.numel()) * sizeof(U));
  return h;
}

/// The candidate's op on the reference's operands, against the reference.
struct stage_check {
  stage s;
  int layer;
  problem p;
  case_result r;
};

/// A dense view's copy (a candidate's output, starting from the reference's contents).
template <class T>
host_buffer<std::remove_const_t<T>> copy_of(const tensor_view<T>& v) {
  host_buffer<std::remove_const_t<T>> b(v.dims);
  std::copy(v.data, v.data + v.numel(), b.data.begin());
  return b;
}

/// Dense stand-ins of quantized weights, dequantize(W)ᵀ [K, N] in the op's
/// type, built once per weight and run: what the isolated check's problem
/// and error scale (the gemm on |A|·|B|) read. The ops themselves — the
/// reference's and the candidate's — are given the quantized weight.
struct dense_standins {
  std::map<const quantized_matrix*, std::shared_ptr<void>> made;
  template <class T>
  tensor_view<const T> of(const quantized_matrix& q) {
    const index_t n = q.rows(), k = q.cols();
    std::shared_ptr<void>& slot = made[&q];
    if (!slot) {
      auto b = std::make_shared<std::vector<T>>(static_cast<std::size_t>(k * n));
      std::vector<float> row(static_cast<std::size_t>(k));
      for (index_t r = 0; r < n; ++r) {
        q.dequantize_row(r, row.data());
        for (index_t j = 0; j < k; ++j) (*b)[static_cast<std::size_t>(j * n + r)] = static_cast<T>(row[static_cast<std::size_t>(j)]);
      }
      slot = b;
    }
    return tensor_view<const T>(static_cast<const std::vector<T>*>(slot.get())->data(), shape{k, n});
  }
};

/// The reference's executor: each op on policy::eigen, after the
/// candidate's op on the same operands — run by `iso(op, views...)`, the
/// candidate session's isolated() — checked in isolation, every output
/// (`checks`); the reference's first outputs go to `outputs`.
template <class Iso>
struct checking_executor {
  Iso iso;
  std::vector<stage_check>* checks = nullptr;
  std::vector<stage_output>* outputs = nullptr;
  dense_standins* standins = nullptr;
  template <class Op, class... A>
  void operator()(stage s, int layer, const Op& op, A&&... a) {
    call(s, layer, op, std::make_index_sequence<Op::arity>{}, std::make_index_sequence<op_outputs_v<Op>>{},
         view_of(arg_of(a))...);
  }

 private:
  template <class Op, std::size_t... I, std::size_t... O, class... V>
  void call(stage s, int layer, const Op& op, std::index_sequence<I...>, std::index_sequence<O...>, const V&... v) {
    constexpr std::size_t n_in = Op::arity;
    const auto all = std::tie(v...);
    auto dense = [&](const auto& x) -> decltype(auto) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, quantized_matrix>)
        return standins->template of<typename Op::value_type>(x);
      else
        return (x);
    };
    stage_check chk{s, layer, traits_of_t<Op>::problem_of(op, dense(v)...), {}};
    // A quantized weight's stand-in: the problem says so (its tolerance: gemm_quantized_tolerance).
    auto mark = [&](const auto& x) {
      if constexpr (std::is_same_v<std::remove_cvref_t<decltype(x)>, quantized_matrix>)
        chk.p.attrs["weights"] = static_cast<double>(static_cast<int>(x.format()));
    };
    (mark(v), ...);
    const std::vector<host_tensor> before{to_host_tensor(dense(v))...};  // outputs as they were before the call
    auto cand = std::make_tuple(copy_of(std::get<n_in + O>(all))...);
    try {
      iso(op, std::get<I>(all)..., std::get<O>(cand).view()...);
    } catch (const std::exception& e) {
      chk.r.error = e.what();
    }
    run<policy::eigen>(op, v...);
    if (chk.r.error.empty()) {
      std::vector<host_tensor> got = before, ref = before;
      ((got[n_in + O] = to_host_tensor(std::get<O>(cand).view())), ...);
      ((ref[n_in + O] = to_host_tensor(std::get<n_in + O>(all))), ...);
      chk.r = compare_all_outputs(chk.p, got, ref, before);
    }
    checks->push_back(std::move(chk));
    const auto& out = std::get<n_in>(all);
    outputs->push_back({s, layer, out.dims, to_floats(out), {}});
  }
};

/// One op of the program (a stage of one layer, or of the head) over a run:
/// the prefill's call, or the decode steps' calls merged (largest errors).
struct stage_report {
  std::string step;  ///< "prefill" or "decode"
  stage s{};
  int layer = -1;  ///< -1: the head
  std::string op;  ///< the call as a problem, e.g. "gemm [7x64x72] f32" (the first call's shape)
  shape dims;      ///< its output
  int calls = 0;
  tolerance tol;
  std::string knobs;  ///< what ran it (the policy's knobs, or the kernel an executor chose)
  // isolated: the candidate's op on the reference's operands
  bool iso_passed = true;
  double iso_max_abs = 0, iso_max_rel = 0;
  index_t iso_mismatches = 0, elements = 0;
  std::string iso_detail;  ///< the first failure: first bad element, or the exception
  // end to end: the candidate's run against the reference's
  bool e2e_passed = true;
  double e2e_max_abs = 0, e2e_rel = 0, e2e_bound = 0;

  std::string where() const {
    return std::string(to_string(s)) +
           (layer >= 0 ? " (layer " + std::to_string(layer) + ")" : in_embedding(s) ? " (embedding)" : " (head)") + ", " + step;
  }
};

struct verify_options {
  double growth = 2;  ///< end-to-end bound = growth × tolerances summed along the step (see the file's comment)
  std::uint64_t input_seed = 0x6b666f7267651301ull;
};

/// The outcome: every stage, and the first failure in words.
struct verification {
  bool passed = true;
  std::string candidate;  ///< policy and knobs
  dtype type = dtype::f32;
  index_t prefill = 0, decode = 0;
  double growth = 0;
  std::vector<stage_report> stages;
  std::string first_failure;
};

/// Random token ids in [0, vocab).
inline std::vector<index_t> random_tokens(const config& c, index_t n, std::uint64_t seed) {
  rng r(seed);
  std::vector<index_t> ids(static_cast<std::size_t>(n));
  for (auto& id : ids) id = static_cast<index_t>(r.next() % static_cast<std::uint64_t>(c.vocab));
  return ids;
}

/// An op's tolerance as one relative error: atol + rtol + ulps · eps of d.
inline double tolerance_unit(const tolerance& t, dtype d) { return t.atol + t.rtol + t.ulps * epsilon_of(d); }

namespace detail {

/// Folds one step's checks and the candidate's outputs into the reports.
inline void fold_step(const std::string& step, const std::vector<stage_check>& checks, const std::vector<stage_output>& ref,
                      const std::vector<stage_output>& cand, double growth, dtype type, const std::string& knobs,
                      std::vector<stage_report>& reports, std::map<std::string, std::size_t>& index) {
  if (ref.size() != cand.size() || checks.size() != ref.size())
    throw error("kforge::model::verify: the candidate ran " + std::to_string(cand.size()) + " ops, the reference " +
                std::to_string(ref.size()));
  double depth = 0, prev_mag = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const stage_check& c = checks[i];
    const stage_output &r = ref[i], &o = cand[i];
    if (r.s != o.s || r.layer != o.layer || r.values.size() != o.values.size())
      throw error("kforge::model::verify: op " + std::to_string(i) + " is " + std::string(to_string(o.s)) + " in the candidate's run, " +
                  std::string(to_string(r.s)) + " in the reference's");
    const tolerance tol = tolerance_for(c.p);
    depth += tolerance_unit(tol, type);
    double err = 0, mag = 0;
    for (std::size_t e = 0; e < r.values.size(); ++e) {
      const double a = o.values[e], b = r.values[e];
      if (std::isnan(b) && std::isnan(a)) continue;
      err = std::max(err, std::isfinite(a) && std::isfinite(b) ? std::fabs(a - b) : std::numeric_limits<double>::infinity());
      if (std::isfinite(b)) mag = std::max(mag, std::fabs(b));
    }
    const double own_mag = mag;
    if (c.s == stage::sample) mag = std::max(mag, prev_mag);  // the largest logit, relative to the logits (file's comment)
    prev_mag = own_mag;
    const double rel = mag > 0 ? err / mag : (err == 0 ? 0 : std::numeric_limits<double>::infinity());
    const std::string key = step + "/" + std::to_string(static_cast<int>(c.s)) + "/" + std::to_string(c.layer);
    auto it = index.find(key);
    if (it == index.end()) {
      stage_report s;
      s.step = step, s.s = c.s, s.layer = c.layer, s.op = describe(c.p), s.dims = r.dims, s.tol = tol;
      s.knobs = o.knobs.empty() ? knobs : o.knobs;
      it = index.emplace(key, reports.size()).first;
      reports.push_back(std::move(s));
    }
    stage_report& s = reports[it->second];
    ++s.calls;
    s.elements = std::max(s.elements, c.r.elements);
    s.iso_max_abs = std::max(s.iso_max_abs, c.r.max_abs_err);
    s.iso_max_rel = std::max(s.iso_max_rel, c.r.max_rel_err);
    s.iso_mismatches += c.r.mismatches;
    if ((!c.r.passed || !c.r.error.empty()) && s.iso_passed) {
      s.iso_passed = false;
      s.iso_detail = !c.r.error.empty() ? "threw: " + c.r.error
                                        : std::to_string(c.r.mismatches) + " of " + std::to_string(c.r.elements) +
                                              " elements outside the op's tolerance, first at " + std::to_string(c.r.first_bad) +
                                              ": got " + std::to_string(c.r.first_bad_out) + ", expected " +
                                              std::to_string(c.r.first_bad_ref) + " (" + describe(c.p) + ")";
    }
    s.e2e_max_abs = std::max(s.e2e_max_abs, err);
    s.e2e_bound = std::max(s.e2e_bound, growth * depth);
    if (!(rel <= growth * depth)) s.e2e_passed = false;
    s.e2e_rel = std::max(s.e2e_rel, rel);
  }
}

}  // namespace detail

/// The failures of a verification, one line each ("" when it passed).
inline std::string failure_lines(const verification& v) {
  std::string out;
  for (const stage_report& s : v.stages) {
    if (!s.iso_passed)
      out += "stage " + s.where() + " on " + v.candidate + (s.knobs.empty() || s.knobs == v.candidate ? "" : " [" + s.knobs + "]") +
             ": given the reference's inputs, " + s.iso_detail + "\n";
    if (!s.e2e_passed)
      out += "stage " + s.where() + " (" + s.op + ") on " + v.candidate + ": end-to-end error " + std::to_string(s.e2e_rel) +
             " (max-norm relative) exceeds the depth-scaled bound " + std::to_string(s.e2e_bound) + "\n";
  }
  return out;
}

/// Runs `prefill` random tokens then `decode` single-token steps on the
/// reference and on `cand` (a session: step(ids, logits, captures*), reset(),
/// and isolated(), what runs one op on the reference's operands the way the
/// session runs it — host_session, or vulkan_session from model/vulkan.hpp,
/// whose ops run on device tensors), and compares them stage by stage. `cand`
/// is reset first. `candidate_name` names the policy and its knobs.
template <class T, class Session>
verification verify(const config& c, const weights<host_buffer<T>>& w, Session& cand, index_t prefill, index_t decode,
                    const std::string& candidate_name, const verify_options& o = {}) {
  c.validate_run(prefill, decode, prefill + decode);
  verification v;
  v.candidate = candidate_name;
  v.type = dtype_of<T>();
  v.prefill = prefill, v.decode = decode, v.growth = o.growth;
  host_model<T> ref(c, w, prefill + decode);
  cand.reset();
  std::map<std::string, std::size_t> index;
  const std::vector<index_t> ids = random_tokens(c, prefill + decode, o.input_seed);
  host_buffer<T> ref_logits(shape{1, c.vocab}), cand_logits(shape{1, c.vocab});
  dense_standins standins;
  index_t pos = 0;
  for (index_t step = 0; step <= decode; ++step) {
    const index_t t = step == 0 ? prefill : 1;
    const std::vector<index_t> step_ids(ids.begin() + pos, ids.begin() + pos + t);
    std::vector<stage_check> checks;
    std::vector<stage_output> ref_out, cand_out;
    checking_executor<decltype(cand.isolated())> ex{cand.isolated(), &checks, &ref_out, &standins};
    ref.step(step_ids, ref_logits.view(), ex);
    cand.step(step_ids, cand_logits.view(), &cand_out);
    detail::fold_step(step == 0 ? "prefill" : "decode", checks, ref_out, cand_out, o.growth, v.type, candidate_name, v.stages, index);
    pos += t;
  }
  for (const stage_report& s : v.stages) v.passed = v.passed && s.iso_passed && s.e2e_passed;
  const std::string lines = failure_lines(v);
  v.first_failure = lines.substr(0, lines.find('\n'));
  return v;
}

}  // namespace kforge::model

// model::verify of a host session for each dtype under policy P, compiled
// once for kforge's own executables (kforge_instances; see
// kforge/validate/execute.hpp).
#define KFORGE_MODEL_VERIFY_INSTANCE(EXTERN, P, T)                                                           \
  EXTERN template verification verify<T, host_session<T, P>>(const config&, const weights<host_buffer<T>>&, \
                                                            host_session<T, P>&, index_t, index_t,           \
                                                            const std::string&, const verify_options&);
#define KFORGE_MODEL_VERIFY_INSTANCES(EXTERN, P) \
  KFORGE_MODEL_VERIFY_INSTANCE(EXTERN, P, float) \
  KFORGE_MODEL_VERIFY_INSTANCE(EXTERN, P, half)  \
  KFORGE_MODEL_VERIFY_INSTANCE(EXTERN, P, bfloat16)
#if defined(KFORGE_EXTERN_INSTANCES)
namespace kforge::model {
KFORGE_MODEL_VERIFY_INSTANCES(extern, policy::eigen)
KFORGE_MODEL_VERIFY_INSTANCES(extern, policy::blocked<>)
KFORGE_MODEL_VERIFY_INSTANCES(extern, policy::threaded<>)
#if defined(KFORGE_HAS_TUNE)
KFORGE_MODEL_VERIFY_INSTANCES(extern, policy::autotune)
#endif
}  // namespace kforge::model
#endif
