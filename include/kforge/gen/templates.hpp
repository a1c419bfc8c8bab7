// kforge/gen/templates.hpp — kforge's own Vulkan kernels as self-contained
// sources that follow the kernel contract (contract.hpp), with their knobs
// baked in; and the mutants of those kernels that the gate must reject
// (mutation testing, `kforge mutate`).
//
// Each op family's kernel in contract form, and its mutants' edits, live
// next to the kernel's shader (vulkan/shaders/contract.hpp says how); this
// file assembles them: the defines the backend passes as a glslang preamble
// are written after #version, and a literal default local size follows
// `local_size_x_id = 0`. A family whose kernel has no contract form has no
// template (unsupported_error) and no mutants.
#pragma once

#include <string>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/gen/contract.hpp"
#include "kforge/vulkan/shaders/shaders.hpp"

namespace kforge::gen {

using vulkan::shaders::template_knobs;

namespace detail {
using vulkan::shaders::replace_all;

template <class F>
concept has_contract_form = requires(const problem& p, const template_knobs& k) {
  vulkan::shaders::contract_form<F>::kernel(p, k);
  vulkan::shaders::contract_form<F>::edits(p);
};

/// Calls f(contract_form<F>{}) for p's family, or throws unsupported_error when it has none.
template <class Fn>
void with_contract_form(const problem& p, Fn&& f) {
  bool found = false;
  visit_family(p, [&]<class F>() {
    if constexpr (has_contract_form<F>) {
      found = true;
      f(vulkan::shaders::contract_form<F>{});
    }
  });
  if (!found) throw unsupported_error("kforge::gen: kforge's kernel for " + p.op + " has no contract form (no template)");
}
}  // namespace detail

/// kforge's own kernel for problem p as a contract-conforming GLSL source.
inline std::string template_source(const problem& p, const template_knobs& k = {}) {
  using detail::replace_all;
  vulkan::shaders::contract_kernel c;
  detail::with_contract_form(p, [&](auto form) { c = form.kernel(p, k); });
  const std::uint32_t wg = k.local_size_override ? k.local_size_override : c.local_size;
  std::string pre = "#version 450\n#define KF_F16 " + std::string(is_f16_device(p.type) ? "1" : "0") + "\n";
  for (const auto& [n, v] : c.defines) pre += "#define " + n + " " + v + "\n";
  std::string common = replace_all(vulkan::shaders::common, "#version 450\n", pre, "#version");
  common = replace_all(common, "layout(local_size_x_id = 0) in;",
                       "layout(local_size_x_id = 0) in;\nlayout(local_size_x = " + std::to_string(wg) + ") in;",
                       "local size");
  return "// kforge template kernel: " + p.op + " " + std::string(to_string(p.type)) + " " + k.label() + "\n" +
         common.substr(common.find("#version")) + c.body;
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
                      ///< read_past_end, partial_output, returns_input, f16_accumulation,
                      ///< wrong_index
  std::string description;
  std::string source;  ///< the mutated kernel
};

/// The mutants of kforge's kernel for problem p (those that apply to it).
inline std::vector<mutant> mutants_for(const problem& p, const template_knobs& k = {}) {
  const std::string original = template_source(p, k);
  std::vector<vulkan::shaders::edit> edits;
  detail::with_contract_form(p, [&](auto form) { edits = form.edits(p); });
  std::vector<mutant> out;
  for (const auto& e : edits) {
    if (!e.applies(p)) continue;
    const std::string name = p.op + "." + e.kind + "." + e.label;
    out.push_back({name, e.kind, e.description, detail::replace_all(original, e.from, e.to, name)});
  }
  return out;
}

/// The problem each op's mutants are judged on (its traits'): small (lavapipe
/// is slow), with tails in every dimension and the features the mutants
/// touch (alpha != 1, bias, padding, broadcasting, causal masking).
inline problem mutation_problem(const std::string& op) {
  const op_info& info = find_op(op);
  problem p = info.family->mutation_problem(op);
  (void)operands(p);
  return p;
}

}  // namespace kforge::gen
