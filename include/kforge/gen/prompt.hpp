// kforge/gen/prompt.hpp — what the model is asked, and how its answer is
// turned back into GLSL.
//
// Messages: a system prompt (role and hard constraints), a user prompt (op
// semantics, shapes, dtype, the kernel contract, the device's limits and
// features), one worked example (a complete kernel for relu following the
// contract, as an earlier user/assistant turn), and on retries the previous
// attempt's failure: compiler log, contract mismatch, or which validation
// cases failed and by how much. The held-out validation shape is never shown.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <optional>
#include <string>
#include <vector>

#include "kforge/gen/contract.hpp"
#include "kforge/gen/templates.hpp"

namespace kforge::gen {

struct chat_message {
  std::string role;  ///< system, user or assistant
  std::string content;
};

/// The device facts a prompt states (filled from vulkan::device_info by the caller).
struct device_facts {
  std::string name = "unknown";
  std::uint32_t max_workgroup_invocations = 128, max_shared_memory = 16384, subgroup_size = 0;
  bool fp16_arithmetic = false, storage_16bit = false, subgroup_arithmetic = false;
};

/// What went wrong with the previous attempt, fed into the next prompt.
struct feedback {
  std::string stage;   ///< compile, interface, validation, timeout, crash, extraction
  std::string detail;  ///< compiler log, mismatch, failing cases
  std::string previous_glsl;
};

inline std::string system_prompt() {
  return "You are an expert GPU programmer who writes Vulkan GLSL compute shaders (GLSL 450, compiled by glslang to "
         "SPIR-V 1.3 for Vulkan 1.1). You write one complete, self-contained compute shader per answer, in a single "
         "```glsl code block, and nothing that is not needed. Your kernels must be numerically faithful to the "
         "reference (f32 accumulation), must never read or write outside the buffers, must write every output "
         "element, must be deterministic, and must follow the kernel contract you are given exactly: bindings, "
         "push-constant layout, local size declaration and tile specialization constants. Kernels that break the "
         "contract or fail validation are rejected.";
}

/// The worked example: kforge's own relu kernel, which follows the contract.
inline std::vector<chat_message> worked_example() {
  problem ex;
  ex.op = "relu";
  set_shape(ex, "1000");
  const std::string user = "Write the kernel for relu on f32 data, shape [1000].\n\n" + contract_text(ex);
  const std::string answer = "```glsl\n" + template_source(ex) + "```\n";
  return {{"user", user}, {"assistant", answer}};
}

inline std::string user_prompt(const problem& p, const device_facts& d, const std::string& source_spec) {
  std::string s = "Write a Vulkan GLSL compute kernel for this op.\n\n";
  s += "Op: " + describe(p) + "\n";
  s += "Semantics: " + semantics(p) + "\n";
  if (!source_spec.empty()) s += "Reference definition (PyTorch style):\n```python\n" + source_spec + "\n```\n";
  s += "Operand shapes:";
  for (const auto& o : operands(p))
    s += " " + o.name + " " + o.dims.str() + (operand_type(p, o) == dtype::i32 ? " (int)" : "");
  s += "\nElement type: " + std::string(to_string(p.type)) + " (buffers hold " + glsl_storage_type(p.type) + ")\n";
  s += "The kernel will also be run on other shapes of the same op (sizes that are not multiples of any tile), with "
       "sizes given only by the push constants: do not hard-code the shapes above.\n\n";
  s += contract_text(p) + "\n";
  s += "Device: " + d.name + "; maxComputeWorkGroupInvocations " + std::to_string(d.max_workgroup_invocations) +
       ", shared memory " + std::to_string(d.max_shared_memory) + " bytes, subgroup size " +
       std::to_string(d.subgroup_size) + ", subgroup arithmetic " + (d.subgroup_arithmetic ? "yes" : "no") +
       ", shaderFloat16 " + (d.fp16_arithmetic ? "yes" : "no") + ", 16-bit storage " + (d.storage_16bit ? "yes" : "no") +
       ".\n\nAnswer with the complete kernel in one ```glsl block.";
  return s;
}

inline std::string feedback_prompt(const feedback& f) {
  std::string s = "Your previous kernel was rejected at the " + f.stage + " stage.\n";
  if (f.stage == "compile") s += "glslang reported:\n" + f.detail.substr(0, 4000) + "\n";
  else if (f.stage == "interface") s += "It does not follow the contract: " + f.detail + "\n";
  else if (f.stage == "validation") s += "Its results differ from the reference: " + f.detail + "\n";
  else if (f.stage == "timeout") s += "It did not finish in time (infinite loop or far too slow): " + f.detail + "\n";
  else s += f.detail + "\n";
  s += "Fix the problem and answer with the complete corrected kernel in one ```glsl block.";
  return s;
}

/// The whole conversation for one attempt.
inline std::vector<chat_message> build_messages(const problem& p, const device_facts& d, const std::string& source_spec,
                                                const std::optional<feedback>& previous) {
  std::vector<chat_message> m{{"system", system_prompt()}};
  for (auto& e : worked_example()) m.push_back(std::move(e));
  m.push_back({"user", user_prompt(p, d, source_spec)});
  if (previous) {
    m.push_back({"assistant", "```glsl\n" + previous->previous_glsl + "\n```"});
    m.push_back({"user", feedback_prompt(*previous)});
  }
  return m;
}

/// A PyTorch-style description of the op (the record's source spec when the
/// caller gives none).
inline std::string default_source_spec(const problem& p) { return family_of(p).source_spec(p); }

// ---- extraction -----------------------------------------------------------------

/// How the GLSL was found in a response.
struct extraction {
  std::string glsl;
  std::string method;  ///< "fence:glsl", "fence", "version-directive" or "" (nothing found)
};

/// Finds the kernel in a model's answer: the first fenced block tagged glsl/comp/c
/// that contains main(), else any fenced block with main(), else the text from
/// a `#version` line to the end (answers that forgot the fence).
inline extraction extract_glsl(const std::string& text) {
  struct block {
    std::string tag, body;
  };
  std::vector<block> blocks;
  for (std::size_t at = text.find("```"); at != std::string::npos;) {
    const std::size_t eol = text.find('\n', at + 3);
    if (eol == std::string::npos) break;
    std::string tag = text.substr(at + 3, eol - at - 3);
    while (!tag.empty() && (tag.back() == ' ' || tag.back() == '\r')) tag.pop_back();
    const std::size_t end = text.find("```", eol + 1);
    blocks.push_back({tag, text.substr(eol + 1, end == std::string::npos ? std::string::npos : end - eol - 1)});
    if (end == std::string::npos) break;
    at = text.find("```", end + 3);
  }
  auto has_main = [](const std::string& b) { return b.find("void main") != std::string::npos; };
  for (const auto& b : blocks)
    if ((b.tag == "glsl" || b.tag == "comp" || b.tag == "c" || b.tag == "cpp" || b.tag == "GLSL") && has_main(b.body))
      return {b.body, "fence:" + b.tag};
  for (const auto& b : blocks)
    if (has_main(b.body)) return {b.body, "fence"};
  if (const std::size_t v = text.find("#version"); v != std::string::npos && has_main(text.substr(v)))
    return {text.substr(v), "version-directive"};
  return {"", ""};
}

}  // namespace kforge::gen
