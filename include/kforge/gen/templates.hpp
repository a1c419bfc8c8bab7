// kforge/gen/templates.hpp — kforge's own Vulkan kernels, rewritten as
// self-contained sources that follow the kernel contract (contract.hpp), with
// their knobs baked in; and the mutants of those kernels that the gate must
// reject (mutation testing, `kforge mutate`).
//
// The sources are the backend's GLSL (kforge/vulkan/shaders/*.hpp) with three
// textual edits: the defines the backend passes as a glslang preamble are
// written after #version; a literal default local size follows
// `local_size_x_id = 0`; and bindings the backend binds to a dummy (gemm
// without bias, rms_norm's beta) are removed so the contract's binding list
// holds. Every edit is checked: a pattern that no longer matches the backend's
// source throws, so a change there shows up as a failing test, not as a
// template that silently stopped meaning what it says.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/gen/contract.hpp"
#include "kforge/vulkan/shaders/attention.hpp"
#include "kforge/vulkan/shaders/common.hpp"
#include "kforge/vulkan/shaders/elementwise.hpp"
#include "kforge/vulkan/shaders/gemm.hpp"
#include "kforge/vulkan/shaders/reduce.hpp"
#include "kforge/vulkan/shaders/rows.hpp"

namespace kforge::gen {

/// The knobs of a template kernel. gemm/conv2d: tile bm×bn×bk with thread
/// tile tm×tn (workgroup = (bm/tm)·(bn/tn)); the others: wg invocations.
struct template_knobs {
  std::uint32_t bm = 64, bn = 64, bk = 16, tm = 4, tn = 4;
  std::uint32_t wg = 256;
  /// Overrides the declared local size (0: the knobs' natural size). Only the
  /// deliberately broken variants use it.
  std::uint32_t local_size_override = 0;
  std::string label() const {
    return "bm" + std::to_string(bm) + "_bn" + std::to_string(bn) + "_bk" + std::to_string(bk) + "_tm" +
           std::to_string(tm) + "_tn" + std::to_string(tn) + "_wg" + std::to_string(wg);
  }
};

namespace detail {

/// Replaces every occurrence of `from` (at least one must exist).
inline std::string replace_all(std::string s, const std::string& from, const std::string& to, const std::string& what) {
  std::size_t at = s.find(from);
  if (at == std::string::npos)
    throw error("kforge::gen: the backend's shader source changed: pattern for '" + what + "' not found: " + from);
  for (; at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

/// kforge::fn code of an epilogue's activation (parse_fn knows "gelu" and "gelu_erf").
inline int act_code(const std::string& epilogue) {
  std::string a = epilogue;
  if (a.starts_with("bias_")) a = a.substr(5);
  else if (a == "bias" || a == "none") return 0;
  const auto f = parse_fn(a);
  if (!f || !is_activation(*f)) throw argument_error("kforge::gen: unknown epilogue '" + epilogue + "'");
  return static_cast<int>(*f);
}

}  // namespace detail

/// kforge's own kernel for problem p as a contract-conforming GLSL source.
inline std::string template_source(const problem& p, const template_knobs& k = {}) {
  using detail::replace_all;
  const op_family fam = find_op(p.op).family;
  const bool bias = kforge::detail::epilogue_has_bias(p.epilogue);
  std::vector<std::pair<std::string, std::string>> defs = {{"KF_F16", is_f16_device(p.type) ? "1" : "0"}};
  std::string body;
  std::uint32_t wg = k.wg;
  switch (fam) {
    case op_family::gemm:
    case op_family::conv2d: {
      defs.push_back({"KF_CONV", fam == op_family::conv2d ? "1" : "0"});
      defs.push_back({"KF_BIAS", bias ? "1" : "0"});
      defs.push_back({"KF_ACT", std::to_string(detail::act_code(p.epilogue))});
      body = vulkan::shaders::gemm;
      const char* names[] = {"BM", "BN", "BK", "TM", "TN"};
      const std::uint32_t vals[] = {k.bm, k.bn, k.bk, k.tm, k.tn};
      const char* dflt[] = {"64", "64", "16", "4", "4"};
      for (int i = 0; i < 5; ++i)
        body = replace_all(body, "const uint " + std::string(names[i]) + " = " + dflt[i] + ";",
                           "const uint " + std::string(names[i]) + " = " + std::to_string(vals[i]) + ";", "tile knob");
      if (!bias) {
        body = replace_all(body, "layout(std430, set = 0, binding = 2) readonly buffer BufBias { T bias_[]; };\n", "",
                           "drop the bias binding");
        body = replace_all(body, "binding = 3) buffer BufC", "binding = 2) buffer BufC", "renumber C");
      }
      if (!k.tm || !k.tn || k.bm % k.tm || k.bn % k.tn) throw argument_error("kforge::gen: tile not a multiple of the thread tile");
      wg = (k.bm / k.tm) * (k.bn / k.tn);
      break;
    }
    case op_family::unary: {
      const auto f = parse_fn(p.op);
      defs.push_back({"KF_FN", std::to_string(static_cast<int>(*f))});
      body = vulkan::shaders::unary;
      break;
    }
    case op_family::binary:
      defs.push_back({"KF_OP", std::to_string(static_cast<int>(*parse_binop(p.op)))});
      body = vulkan::shaders::binary;
      break;
    case op_family::reduce:
      defs.push_back({"KF_RED", std::to_string(static_cast<int>(*parse_reduce_fn(p.op.substr(7))))});
      body = vulkan::shaders::reduce;
      break;
    case op_family::softmax: body = vulkan::shaders::softmax; break;
    case op_family::layer_norm:
    case op_family::rms_norm: {
      const bool rms = fam == op_family::rms_norm;
      defs.push_back({"KF_RMS", rms ? "1" : "0"});
      body = vulkan::shaders::norm;
      if (rms) {
        body = replace_all(body, "layout(std430, set = 0, binding = 2) readonly buffer BufB { T beta_[]; };\n", "",
                           "drop rms_norm's beta binding");
        body = replace_all(body, "binding = 3) writeonly buffer BufY", "binding = 2) writeonly buffer BufY", "renumber y");
      }
      break;
    }
    case op_family::attention: {
      // MAXD is a literal here (the host of generated kernels sets no
      // specialization constant): max(D, Dv) rounded up to 32, as the backend's host does.
      const index_t d = p.dims[3];
      const index_t maxd = std::max<index_t>(32, (d + 31) / 32 * 32);
      body = replace_all(vulkan::shaders::attention, "layout(constant_id = 1) const uint MAXD = 64;",
                         "const uint MAXD = " + std::to_string(maxd) + ";", "MAXD");
      break;
    }
  }
  if (k.local_size_override) wg = k.local_size_override;
  std::string pre = "#version 450\n";
  for (const auto& [n, v] : defs) pre += "#define " + n + " " + v + "\n";
  std::string common = replace_all(vulkan::shaders::common, "#version 450\n", pre, "#version");
  common = replace_all(common, "layout(local_size_x_id = 0) in;",
                       "layout(local_size_x_id = 0) in;\nlayout(local_size_x = " + std::to_string(wg) + ") in;",
                       "local size");
  return "// kforge template kernel: " + p.op + " " + std::string(to_string(p.type)) + " " + k.label() + "\n" +
         common.substr(common.find("#version")) + body;
}

// ---- mutants ------------------------------------------------------------------
//
// f16_accumulation mutants round with a bit mask (11 significant bits), not
// with unpackHalf2x16(packHalf2x16(x)): NVIDIA's compiler folds that round
// trip away, and the mutants survived on the H100 as the original kernel.

/// A plausible-but-wrong edit of a correct kernel.
struct mutant {
  std::string name;   ///< e.g. "gemm.off_by_one_store"
  std::string kind;   ///< off_by_one, missing_tail, missing_barrier, dropped_scale, wrong_init,
                      ///< read_past_end, partial_output, returns_input, f16_accumulation
  std::string description;
  std::string source;  ///< the mutated kernel
};

namespace detail {
struct edit {
  const char* kind;
  const char* label;
  const char* description;
  const char* from;
  const char* to;
  std::function<bool(const problem&)> applies = [](const problem&) { return true; };
};

inline const char* k_barrier_sum =
    "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  barrier();\n  float r = 0.0;";
inline const char* k_barrier_sum_mut = "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  float r = 0.0;";
inline const char* k_barrier_max =
    "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  barrier();\n  float r = -KF_INF;";
inline const char* k_barrier_max_mut = "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  float r = -KF_INF;";
inline const char* k_row_guard = "if (row >= pc.rows) return;";
inline const char* k_row_guard_mut = "if (row + 1u >= pc.rows) return;";

inline std::vector<edit> edits_for(op_family fam) {
  auto is = [](std::string op) { return [op](const problem& p) { return p.op == op; }; };
  switch (fam) {
    case op_family::gemm:
    case op_family::conv2d: {
      std::vector<edit> e = {
          {"off_by_one", "store_bound", "the store bound test is `>` instead of `>=`, writing one row past C",
           "    if (gm >= pc.M) continue;", "    if (gm > pc.M) continue;"},
          {"missing_tail", "k_tail", "the A tile load drops its K bound, reading the next row for the K tail",
           "(gm < pc.M && gk < pc.K) ? load_a", "(gm < pc.M) ? load_a"},
          {"missing_barrier", "barrier_after_compute", "no barrier between using a shared tile and loading the next",
           "    barrier();\n  }\n  for (uint i = 0; i < TM; ++i) {", "  }\n  for (uint i = 0; i < TM; ++i) {"},
          {"wrong_init", "acc_init", "accumulators start at 1 instead of 0", "acc[i] = 0.0;", "acc[i] = 1.0;"},
          {"read_past_end", "b_bound", "the B tile load tests k <= K, reading one row past the end of B",
           "(gk < pc.K && gn < pc.N) ? load_b", "(gk <= pc.K && gn < pc.N) ? load_b"},
          {"partial_output", "skip_first_thread_column", "the store loop starts at the second column of each thread tile",
           "for (uint j = 0; j < TN; ++j) {\n      uint gn", "for (uint j = 1; j < TN; ++j) {\n      uint gn"},
          {"f16_accumulation", "acc_f16", "the accumulator is rounded to f16 after every multiply-add",
           "acc[i * TN + j] = fma(av[i], bv[j], acc[i * TN + j]);",
           "acc[i * TN + j] = uintBitsToFloat((floatBitsToUint(fma(av[i], bv[j], acc[i * TN + j])) + 0x1000u) & 0xffffe000u);"},
      };
      if (fam == op_family::gemm) {
        e.push_back({"dropped_scale", "alpha", "alpha is not applied", "      v *= pc.alpha;\n", "",
                     [](const problem& p) { return p.alpha != 1.0f; }});
        e.push_back({"returns_input", "copy_a", "C receives A's elements", "c_[idx] = T(kf_apply(KF_ACT, v, pc.slope));",
                     "c_[idx] = a_[idx];"});
      } else {
        e.push_back({"off_by_one", "pad_bound", "the padding test is `>` instead of `>=` at the bottom edge",
                     "ih >= int(pc.H)", "ih > int(pc.H)",
                     [](const problem& p) { return p.pad[0] > 0; }});
        e.push_back({"dropped_scale", "bias", "the bias is not added", "      v += float(bias_[g * pc.M + gm]);\n", "",
                     [](const problem& p) { return kforge::detail::epilogue_has_bias(p.epilogue); }});
        e.push_back({"returns_input", "copy_x", "y receives x's elements",
                     "c_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq] = T(kf_apply(KF_ACT, v, pc.slope));",
                     "c_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq] = a_[(img * pc.KT + g * pc.M + gm) * pq + gn % pq];"});
      }
      return e;
    }
    case op_family::unary:
      return {
          {"off_by_one", "loop_bound", "the loop runs to i <= n, writing one element past y", "i < pc.n; i += stride)",
           "i <= pc.n; i += stride)"},
          {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are written",
           "i < pc.n; i += stride)", "i < pc.n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; i += stride)"},
          {"returns_input", "copy_x", "y = x", "y_[i] = T(kf_apply(KF_FN, float(x_[i]), pc.slope));", "y_[i] = x_[i];"},
          {"dropped_scale", "slope", "leaky_relu ignores its slope", "x < 0.0 ? slope * x : x",
           "x < 0.0 ? 0.01 * x : x", [](const problem& p) { return p.op == "leaky_relu" && p.slope != 0.01f; }},
      };
    case op_family::binary:
      return {
          {"off_by_one", "loop_bound", "the loop runs to i <= n", "i < pc.n; i += stride)", "i <= pc.n; i += stride)"},
          {"missing_tail", "whole_groups_only", "only whole workgroups' worth of elements are written",
           "i < pc.n; i += stride)", "i < pc.n / gl_WorkGroupSize.x * gl_WorkGroupSize.x; i += stride)"},
          {"read_past_end", "ignore_broadcast", "b is indexed with a's strides, reading past its end when it broadcasts",
           "ib += idx * pc.sb[d];", "ib += idx * pc.sa[d];"},
          {"returns_input", "copy_a", "c = a", "c_[i] = T(op(float(a_[ia]), float(b_[ib])));", "c_[i] = a_[ia];"},
      };
    case op_family::reduce:
      return {
          {"off_by_one", "loop_bound", "the loop over the axis runs to j <= n", "j < pc.n; j += gl_WorkGroupSize.x)",
           "j <= pc.n; j += gl_WorkGroupSize.x)"},
          {"wrong_init", "sum_init", "the sum starts at 1", "  float s = 0.0;\n  for", "  float s = 1.0;\n  for",
           [](const problem& p) { return p.op == "reduce_sum" || p.op == "reduce_mean"; }},
          {"wrong_init", "extreme_init", "max starts at +inf (min at -inf)", "float s = KF_RED == 2 ? -KF_INF : KF_INF;",
           "float s = KF_RED == 2 ? KF_INF : -KF_INF;", [](const problem& p) { return p.op == "reduce_max" || p.op == "reduce_min"; }},
          {"dropped_scale", "mean_divide", "the mean is not divided by n", "  if (KF_RED == 1) s /= float(pc.n);\n", "",
           is("reduce_mean")},
          {"missing_barrier", "wg_sum_barrier", "no barrier between writing and reading the per-subgroup partials",
           k_barrier_sum, k_barrier_sum_mut, [](const problem& p) { return p.op == "reduce_sum" || p.op == "reduce_mean"; }},
          {"missing_barrier", "wg_max_barrier", "no barrier between writing and reading the per-subgroup partials",
           k_barrier_max, k_barrier_max_mut, [](const problem& p) { return p.op == "reduce_max" || p.op == "reduce_min"; }},
          {"partial_output", "skip_last", "the last output element is never written",
           "if (gl_LocalInvocationID.x == 0) y_[id] = T(s);",
           "if (gl_LocalInvocationID.x == 0 && id + 1u < pc.outer * pc.inner) y_[id] = T(s);"},
          {"returns_input", "copy_x", "y receives x's elements", "y_[id] = T(s);", "y_[id] = x_[id];"},
          {"f16_accumulation", "sum_f16", "the partial sum is rounded to f16 after every addition",
           "s += float(x_[base + j * pc.inner]);",
           "s = uintBitsToFloat((floatBitsToUint(s + float(x_[base + j * pc.inner])) + 0x1000u) & 0xffffe000u);",
           [](const problem& p) { return p.op == "reduce_sum" || p.op == "reduce_mean"; }},
      };
    case op_family::softmax:
      return {
          // (The per-invocation running sum's init is overwritten by its first
          // element, so that mutant would be equivalent; the workgroup sum's is not.)
          {"wrong_init", "wg_sum_init", "the workgroup sum starts at 1", "  float r = 0.0;\n", "  float r = 1.0;\n"},
          {"dropped_scale", "no_max_shift", "exp is taken without subtracting the row max",
           "exp(float(x_[base + j]) - M) / S", "exp(float(x_[base + j])) / S"},
          {"off_by_one", "write_bound", "the write loop runs to j <= cols",
           "j < pc.cols; j += gl_WorkGroupSize.x)\n    y_[base + j]", "j <= pc.cols; j += gl_WorkGroupSize.x)\n    y_[base + j]"},
          {"missing_barrier", "wg_max_barrier", "no barrier in the workgroup max", k_barrier_max, k_barrier_max_mut},
          {"missing_tail", "last_row", "the last row is skipped", k_row_guard, k_row_guard_mut},
          {"returns_input", "copy_x", "y = x", "y_[base + j] = T(bad ? KF_NAN : exp(float(x_[base + j]) - M) / S);",
           "y_[base + j] = x_[base + j];"},
      };
    case op_family::layer_norm:
    case op_family::rms_norm:
      return {
          {"dropped_scale", "unbiased_variance", "the variance divides by cols - 1 (unbiased) instead of cols",
           "sqrt(kf_wg_sum(q) / n + pc.eps)", "sqrt(kf_wg_sum(q) / (n - 1.0) + pc.eps)"},
          {"dropped_scale", "no_gamma", "gamma is not applied", " * inv * float(gamma_[j]);", " * inv;"},
          {"wrong_init", "sq_init", "the sum of squares starts at 1", "float q = 0.0;", "float q = 1.0;"},
          {"missing_barrier", "wg_sum_barrier", "no barrier in the workgroup sum", k_barrier_sum, k_barrier_sum_mut},
          {"missing_tail", "last_row", "the last row is skipped", k_row_guard, k_row_guard_mut},
          {"off_by_one", "write_bound", "the write loop runs to j <= cols",
           "for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {\n    float v = (float(x_[base + j]) - mean)",
           "for (uint j = gl_LocalInvocationID.x; j <= pc.cols; j += gl_WorkGroupSize.x) {\n    float v = (float(x_[base + j]) - mean)"},
          {"returns_input", "copy_x", "y = x", "    y_[base + j] = T(v);", "    y_[base + j] = x_[base + j];"},
      };
    case op_family::attention:
      return {
          {"dropped_scale", "no_scale", "scores are not multiplied by 1/sqrt(D)", "s = dot * pc.scale;", "s = dot;"},
          {"off_by_one", "causal_diagonal", "the causal mask also hides the diagonal", "j > row) s = -KF_INF;",
           "j >= row) s = -KF_INF;", [](const problem& p) { return p.causal; }},
          {"missing_tail", "no_causal_mask", "the causal mask is ignored", "      if (pc.causal != 0u && j > row) s = -KF_INF;\n",
           "", [](const problem& p) { return p.causal; }},
          // (l's and acc's inits are scaled by 0 on the first key block, so
          // mutating them would be equivalent; the workgroup sum's init is not.)
          {"wrong_init", "wg_sum_init", "the workgroup sum of probabilities starts at 1", "  float r = 0.0;\n",
           "  float r = 1.0;\n"},
          {"missing_barrier", "q_barrier", "no barrier after staging the query row in shared memory",
           "for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;\n  barrier();", "for (uint d = t; d < pc.DV; d += WG) acc[d] = 0.0;"},
          {"read_past_end", "key_bound", "keys are valid up to j <= L, reading one key past the end",
           "bool valid = j < pc.L;", "bool valid = j <= pc.L;"},
          {"partial_output", "last_column", "the last output column is never written",
           "for (uint d = t; d < pc.DV; d += WG)\n    o_[id * pc.DV + d]", "for (uint d = t; d + 1u < pc.DV; d += WG)\n    o_[id * pc.DV + d]"},
          {"returns_input", "copy_q", "O receives Q's elements",
           "o_[id * pc.DV + d] = T(pc.L == 0u ? 0.0 : (undefined ? KF_NAN : acc[d] / l));", "o_[id * pc.DV + d] = q_[id * pc.D + d];"},
          {"f16_accumulation", "score_f16", "the q·k dot product is accumulated in f16",
           "dot = fma(qs[d], float(k_[(bh * pc.L + j) * pc.D + d]), dot);",
           "dot = uintBitsToFloat((floatBitsToUint(fma(qs[d], float(k_[(bh * pc.L + j) * pc.D + d]), dot)) + 0x1000u) & 0xffffe000u);"},
      };
  }
  return {};
}
}  // namespace detail

/// The mutants of kforge's kernel for problem p (those that apply to it).
inline std::vector<mutant> mutants_for(const problem& p, const template_knobs& k = {}) {
  const std::string original = template_source(p, k);
  const op_family fam = find_op(p.op).family;
  std::vector<mutant> out;
  for (const auto& e : detail::edits_for(fam)) {
    if (!e.applies(p)) continue;
    const std::string name = std::string(find_op(p.op).name) + "." + e.kind + "." + e.label;
    out.push_back({name, e.kind, e.description, detail::replace_all(original, e.from, e.to, name)});
  }
  return out;
}

/// The problem each op's mutants are judged on: small (lavapipe is slow),
/// with tails in every dimension and the features the mutants touch
/// (alpha != 1, bias, padding, broadcasting, causal masking).
inline problem mutation_problem(const std::string& op) {
  problem p;
  p.op = op;
  switch (find_op(op).family) {
    case op_family::gemm:
      set_shape(p, "37x29x35");
      p.alpha = 0.5f;
      p.epilogue = "bias";
      break;
    case op_family::conv2d:
      set_shape(p, "1x4x9x9,6x2x3x3");
      p.groups = 2;
      p.stride[0] = p.stride[1] = 2;
      p.pad[0] = p.pad[1] = 1;
      p.epilogue = "bias_relu";
      break;
    case op_family::unary:
      set_shape(p, "3x7x19");
      p.slope = 0.1f;
      break;
    case op_family::binary: set_shape(p, "7x33,33"); break;
    case op_family::reduce:
      set_shape(p, "5x33x3");
      p.axis = 1;
      break;
    case op_family::softmax:
    case op_family::layer_norm:
    case op_family::rms_norm: set_shape(p, "9x37"); break;
    case op_family::attention:
      // S > L, so that with the causal mask the last queries see every key
      // (a read of key L is visible, not masked).
      set_shape(p, "1x2x13x17,11");
      p.causal = true;
      break;
  }
  return p;
}

}  // namespace kforge::gen
