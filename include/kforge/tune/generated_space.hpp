// kforge/tune/generated_space.hpp — kernels admitted by kforge::gen as tuner
// candidates, next to kforge's own.
//
// A generated candidate is one accepted record (c_*.json in the generation
// cache) for exactly the problem being tuned: name "generated:<record file>",
// family "generated", config {"policy": "generated", "record": <file>}. Its
// executor runs the record's kernel on the default Vulkan context through
// gen's guarded runner, and its device_seconds() is that dispatch's GPU
// timestamp time, as the Vulkan gemm candidates report theirs. Like every
// candidate it passes the 16-case suite before it is timed: a record that was
// edited or planted in the cache without going through the gate is
// "invalid" (or "error" if it no longer compiles) and cannot win.
//
// A cached generated winner: the entry's family is "generated", its
// candidate "generated:<file>", and record() adds to its config the best of
// kforge's own candidates of that run as a fallback ("fallback": its name,
// "fallback.<key>": each key of its config). policy::autotune runs that
// fallback (generated_fallback(cfg), an ordinary config of the space): a
// generated kernel was admitted for one problem, not for the whole bucket.
//
// The config helpers are in tune/record.hpp, so that policy::autotune reads
// a generated entry without this header; the candidates here exist where kforge::llm and kforge::vulkan are linked (KFORGE_HAS_LLM
// and KFORGE_HAS_VULKAN; empty otherwise), and bring kforge/gen.hpp.
#pragma once

#include <string>
#include <vector>

#include "kforge/tune/record.hpp"  // is_generated, generated_record, generated_fallback

#if defined(KFORGE_HAS_LLM) && defined(KFORGE_HAS_VULKAN)

#include "kforge/gen.hpp"

namespace kforge::tune {

/// The tuner's candidate for one of gen::tuner_candidates(p).
inline candidate generated_candidate(gen::generated_candidate g) {
  candidate c;
  c.name = g.name;
  c.family = std::string(generated_family);
  c.cfg = {{"policy", std::string(generated_family)}, {"record", g.record}};
  c.run = std::move(g.execute);
  c.device_seconds = std::move(g.device_seconds);
  return c;
}

/// kforge's own Vulkan kernel for p's op in the contract's form
/// (gen::template_source, what the gate benchmarks generated kernels
/// against), run and timed exactly like a generated candidate: same runner,
/// GPU time of the dispatch alone. Named and configured "vulkan" (it stands
/// for policy::vulkan<>), it is the default of a contest between kforge's
/// kernel and generated ones for the ops whose Vulkan space is no knob grid
/// (every op but gemm, whose space is tune/vulkan_space.hpp's).
inline candidate builtin_vulkan_candidate(const problem& p) {
  candidate c = generated_candidate(gen::contract_candidate("vulkan", "", "kforge_" + p.op, gen::template_source(p)));
  c.family = "vulkan";
  c.cfg = {{"policy", "vulkan"}};
  c.is_default = true;
  return c;
}

/// Every accepted generated kernel for exactly problem p, as candidates
/// (empty when there is none; records_dir() is where they are looked for).
inline std::vector<candidate> generated_candidates(const problem& p) {
  std::vector<candidate> out;
  for (auto& g : gen::tuner_candidates(p)) out.push_back(generated_candidate(std::move(g)));
  return out;
}

}  // namespace kforge::tune

#endif  // KFORGE_HAS_LLM && KFORGE_HAS_VULKAN
