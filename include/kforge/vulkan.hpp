// kforge/vulkan.hpp — the umbrella header of the Vulkan compute backend:
// context, device tensors, streams, and policy::vulkan for every op.
// Link kforge::vulkan. CPU-only code includes kforge/kforge.hpp and never
// sees Vulkan, glslang or SPIRV-Cross headers.
#pragma once

#include "kforge/kforge.hpp"

#define KFORGE_VULKAN_INTERNAL 1
// The Vulkan idiom `VkFooInfo info{VK_STRUCTURE_TYPE_FOO_INFO};` value-initialises
// the rest on purpose; -Wextra would flag every one of them.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#endif
#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/handles.hpp"
#include "kforge/vulkan/memory.hpp"
#include "kforge/vulkan/compiler.hpp"
// SPIR-V readers (module.hpp comes with the checker): control flow for the generation gate's static rules.
#include "kforge/vulkan/spirv/flow.hpp"
#include "kforge/vulkan/instance.hpp"
#include "kforge/vulkan/device.hpp"
#include "kforge/vulkan/pipelines.hpp"
#include "kforge/vulkan/context.hpp"
#include "kforge/vulkan/stream.hpp"
#include "kforge/vulkan/probe.hpp"
#include "kforge/vulkan/tensor.hpp"
#include "kforge/vulkan/launch.hpp"
#include "kforge/vulkan/gemm_config.hpp"
#include "kforge/vulkan/call.hpp"
// policy::vulkan for each op family: its record_* function and implementation.
#include "kforge/vulkan/attention.hpp"
#include "kforge/vulkan/conv2d.hpp"
#include "kforge/vulkan/elementwise.hpp"
#include "kforge/vulkan/embedding.hpp"
#include "kforge/vulkan/gated.hpp"
#include "kforge/vulkan/gemm.hpp"
#include "kforge/vulkan/kv_append.hpp"
#include "kforge/vulkan/quant.hpp"
#include "kforge/vulkan/reduce.hpp"
#include "kforge/vulkan/rope.hpp"
#include "kforge/vulkan/rows.hpp"
#include "kforge/vulkan/topk.hpp"
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#undef KFORGE_VULKAN_INTERNAL
