// kforge/vulkan/shaders/shaders.hpp — every kernel source of the Vulkan
// backend, for those that need them all (the generation module's templates
// and mutants read each family's contract_form through it).
#pragma once

#include "kforge/vulkan/shaders/attention.hpp"
#include "kforge/vulkan/shaders/common.hpp"
#include "kforge/vulkan/shaders/elementwise.hpp"
#include "kforge/vulkan/shaders/embedding.hpp"
#include "kforge/vulkan/shaders/gated.hpp"
#include "kforge/vulkan/shaders/gemm.hpp"
#include "kforge/vulkan/shaders/gemm_common.hpp"
#include "kforge/vulkan/shaders/gemm_coopmat.hpp"
#include "kforge/vulkan/shaders/gemm_gemv.hpp"
#include "kforge/vulkan/shaders/gemm_splitk.hpp"
#include "kforge/vulkan/shaders/gemm_tiled.hpp"
#include "kforge/vulkan/shaders/kv_append.hpp"
#include "kforge/vulkan/shaders/reduce.hpp"
#include "kforge/vulkan/shaders/rope.hpp"
#include "kforge/vulkan/shaders/rows.hpp"
#include "kforge/vulkan/shaders/topk.hpp"
