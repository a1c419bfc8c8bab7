// tests/empty_checks.hpp — empty tensors on one policy (docs/OPS.md "Empty
// tensors"): one problem of every op of the catalog with each of its extents
// set to 0 in turn, plus conv2d with no channels on both sides (attention
// with kv_len = 0 is tests/transformer_ops_checks.hpp's). A call whose outputs hold no
// element must run and write nothing; one whose outputs are not empty (a sum
// over nothing) must give what the rule says, checked here from the rule and
// not from any backend; one the rule refuses must throw kforge's typed error
// naming the op. A case none of these covers fails: a new op or extent needs
// its rule here.
#pragma once

#include <doctest/doctest.h>

#include <kforge/kforge.hpp>
#include <kforge/validate.hpp>

#include <cmath>
#include <set>
#include <string>
#include <vector>

namespace kft_empty {

using namespace kforge;

/// The value every element of the non-empty outputs must hold, or a refusal.
struct rule {
  enum { refused, value, unchanged } kind = refused;
  float v = 0;  ///< value: the element (NaN: any NaN)
};

/// Inputs are 1 (ids 0), the outputs start at 2, gemm's beta is 0.5, biases
/// are 1: a gemm over K = 0 writes act(0.5 * 2 + 1) = 2.
inline constexpr float input_value = 1.0f, output_start = 2.0f;

/// What the docs say a call with a non-empty output and an empty operand gives.
inline rule rule_of(const problem& p, const std::vector<operand_spec>& specs) {
  if (p.op == "gemm") return p.dims[2] == 0 ? rule{rule::value, 2.0f} : rule{};  // MxNxK
  if (p.op == "conv2d") {
    // Every window reads nothing but zeros (no channels, or padding only):
    // the bias and the activation. A filter of extent 0, channels that
    // disagree, or a filter larger than the padded input are refused.
    const bool filter_empty = p.dims2[2] == 0 || p.dims2[3] == 0, agree = p.dims[1] == p.dims2[1] * p.groups;
    if (specs.empty() || filter_empty || !agree) return {};
    return {rule::value, p.epilogue.find("bias") == 0 ? (p.epilogue == "bias_gelu" ? 0.8413447f : 1.0f) : 0.0f};
  }
  if (p.op == "reduce_sum") return {rule::value, 0.0f};
  if (p.op == "reduce_mean") return {rule::value, std::nanf("")};
  if (p.op == "attention") return {rule::value, 0.0f};  // no key: the empty weighted sum
  if (p.op == "kv_append") return !specs.empty() && p.dims[1] == 0 ? rule{rule::unchanged} : rule{};  // BxTxHxD,Lmax
  return {};  // reduce_max/min over nothing (no identity), embedding's V = 0, topk's N = 0
}

/// The cases: the first problem of each op in the catalog (gemm with a bias,
/// an activation and beta; conv2d with one of each epilogue), each extent of
/// its shapes set to 0, and the extents that must change together.
inline std::vector<problem> empty_cases() {
  std::vector<problem> base;
  std::set<std::string> seen;
  for (problem p : test_problems(dtype::f32, true)) {
    if (p.op == "gemm" && p.epilogue != "bias_relu") continue;
    if (!seen.insert(p.op + p.epilogue).second) continue;
    if (p.op == "gemm") p.beta = 0.5f;
    base.push_back(p);
  }
  std::vector<problem> cases;
  for (const problem& p : base) {
    for (int which = 0; which < 2; ++which)
      for (int i = 0; i < (which ? p.dims2 : p.dims).rank(); ++i) {
        problem q = p;
        (which ? q.dims2 : q.dims)[i] = 0;
        cases.push_back(q);
      }
    if (p.op == "conv2d" && p.groups == 1) {
      problem q = p;
      q.dims[1] = q.dims2[1] = 0;
      cases.push_back(q);
    }
  }
  return cases;
}

inline std::string name_of(const problem& p) {
  std::string s = p.op + (p.epilogue.empty() ? "" : "/" + p.epilogue) + " " + p.dims.str() + (p.dims2.rank() ? "," + p.dims2.str() : "");
  for (const auto& [k, v] : p.attrs) s += " " + k + "=" + std::to_string(v);
  return s;
}

/// Runs every case under Policy; returns how many ran (the rest were refused).
template <class Policy>
int check_empty_tensors() {
  int ran = 0;
  for (const problem& p : empty_cases()) {
    CAPTURE(name_of(p));
    std::vector<operand_spec> specs;
    try {
      specs = family_of(p).operands(p);  // the family's operands: kforge::operands() refuses empty problems
    } catch (const error& e) {
      // The problem's own rules refuse it before any tensor exists (a KV
      // length past the keys, heads that do not divide): that is the library's check too.
      CHECK(std::string(e.what()).find("kforge::" + p.op) == 0);
      CHECK(rule_of(p, {}).kind == rule::refused);
      continue;
    }
    if (std::none_of(specs.begin(), specs.end(), [](const operand_spec& o) { return o.is_output; })) specs.back().is_output = true;
    std::vector<host_tensor> ts;
    bool outputs_empty = true;
    for (const operand_spec& o : specs) {
      ts.emplace_back(operand_type(p, o), o.dims, o.strides);
      const float fill = o.is_output ? output_start : (o.type ? 0.0f : input_value);
      for (index_t i = 0; i < ts.back().span(); ++i) ts.back().set(i, fill);
      if (o.is_output && o.dims.numel() != 0) outputs_empty = false;
    }
    const rule r = outputs_empty ? rule{rule::unchanged} : rule_of(p, specs);
    try {
      execute<Policy>(p, ts);
    } catch (const error& e) {
      INFO("threw: " << e.what());
      CHECK(r.kind == rule::refused);
      const std::string what = e.what();
      // The message names the op (reduce's name its function: kforge::sum).
      CHECK(what.rfind("kforge::", 0) == 0);
      CHECK((dynamic_cast<const shape_error*>(&e) || dynamic_cast<const argument_error*>(&e)));
      continue;
    }
    if (r.kind == rule::refused) {
      FAIL_CHECK("it ran, but the rule refuses it");
      continue;
    }
    ++ran;
    for (std::size_t i = 0; i < specs.size(); ++i) {
      const float want = !specs[i].is_output ? (specs[i].type ? 0.0f : input_value)
                         : r.kind == rule::unchanged ? output_start
                                                     : r.v;
      index_t wrong = 0;
      for (index_t j = 0; j < ts[i].span(); ++j) {
        const float got = ts[i].get(j);
        if (std::isnan(want) ? !std::isnan(got) : got != doctest::Approx(want).epsilon(1e-6)) ++wrong;
      }
      INFO(specs[i].name << " should hold " << want << " everywhere");
      CHECK(wrong == 0);
    }
  }
  return ran;
}

}  // namespace kft_empty
