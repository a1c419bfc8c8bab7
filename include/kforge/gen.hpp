// kforge/gen.hpp — the umbrella header of kernel generation (kforge::gen):
// GLSL compute kernels written by a language model (or by the offline
// template provider), compiled to SPIR-V, checked against the kernel contract
// and admitted only after sandboxed validation against the Eigen reference.
//
//   problem → prompt → provider → GLSL → glslang → SPIR-V → contract check
//     → sandboxed 16-case validation on the prompt's shape and a held-out one
//     → benchmark vs kforge's own kernel → record (c_/r_) → cache
//
// Link kforge::llm and kforge::vulkan. docs/GENERATION.md is the tour,
// docs/KERNEL_CONTRACT.md the contract kernels must follow.
#pragma once

#if !defined(KFORGE_HAS_LLM) || !defined(KFORGE_HAS_VULKAN)
#error "kforge/gen.hpp needs kforge::llm and kforge::vulkan (link both targets)"
#endif

#include "kforge/vulkan.hpp"

#define KFORGE_GEN_INTERNAL 1
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include "kforge/gen/common.hpp"
#include "kforge/gen/contract.hpp"
#include "kforge/gen/templates.hpp"
#include "kforge/gen/runner.hpp"
#include "kforge/gen/shared_access.hpp"
#include "kforge/gen/race.hpp"
#include "kforge/gen/unwritten.hpp"
#include "kforge/gen/static_rules.hpp"
#include "kforge/gen/shared_fill.hpp"
#include "kforge/gen/gate.hpp"
#include "kforge/gen/sandbox.hpp"
#include "kforge/gen/mutate.hpp"
#include "kforge/gen/prompt.hpp"
#include "kforge/gen/provider.hpp"
#include "kforge/gen/record.hpp"
#include "kforge/gen/bucket.hpp"
#include "kforge/gen/generate.hpp"
#include "kforge/gen/generated.hpp"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#undef KFORGE_GEN_INTERNAL
