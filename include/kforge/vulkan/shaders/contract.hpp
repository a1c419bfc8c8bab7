// kforge/vulkan/shaders/contract.hpp — kforge's own kernels in the form of
// the generation module's kernel contract (docs/KERNEL_CONTRACT.md), and the
// plausible-but-wrong edits of them that the generation gate must reject.
//
// Each shader header specialises contract_form<Traits> for the op families
// its kernels serve (Traits: ops/*_traits.hpp), giving
//   kernel(p, knobs)  the kernel body, its defines and its workgroup size
//                     for problem p, with the knobs baked in;
//   edits(p)          the mutants' textual edits of that kernel.
// gen/templates.hpp turns these into complete sources: the common prelude
// with the defines written after #version, a literal default local size after
// `local_size_x_id = 0`, then the body. Bindings the backend binds to a
// dummy (gemm without bias, rms_norm's beta) are removed by kernel() so the
// contract's binding list holds. Every edit is checked: a pattern that no
// longer matches the backend's source throws, so a change there shows up as a
// failing test, not as a template that silently stopped meaning what it says.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/core/problem.hpp"
#include "kforge/ops/functions.hpp"

namespace kforge::vulkan::shaders {

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

/// One kernel in contract form (before the prelude is added).
struct contract_kernel {
  std::string body;
  std::vector<std::pair<std::string, std::string>> defines;  ///< written after KF_F16 (KF_BF16 defaults to 0)
  std::uint32_t local_size = 256;
};

/// A plausible-but-wrong edit of a correct kernel (a mutant).
struct edit {
  const char* kind;  ///< off_by_one, missing_tail, missing_barrier, dropped_scale, wrong_init,
                     ///< read_past_end, partial_output, returns_input, f16_accumulation,
                     ///< wrong_index
  const char* label;
  const char* description;
  const char* from;
  const char* to;
  std::function<bool(const problem&)> applies = [](const problem&) { return true; };
};

/// Specialised next to each kernel for the families it serves.
template <class Traits>
struct contract_form;

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

// The workgroup reductions of the common prelude, with and without the
// barrier between writing and reading the per-subgroup partials.
inline const char* k_barrier_sum = "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  barrier();\n  float r = 0.0;";
inline const char* k_barrier_sum_mut = "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  float r = 0.0;";
inline const char* k_barrier_max = "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  barrier();\n  float r = -KF_INF;";
inline const char* k_barrier_max_mut = "  if (subgroupElect()) kf_red[gl_SubgroupID] = v;\n  float r = -KF_INF;";
// The row kernels' guard, and one that skips the last row.
inline const char* k_row_guard = "if (row >= pc.rows) return;";
inline const char* k_row_guard_mut = "if (row + 1u >= pc.rows) return;";

}  // namespace kforge::vulkan::shaders
