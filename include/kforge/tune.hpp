// kforge/tune.hpp — the tuner: search spaces, strategies, the tuning cache,
// policy::autotune and the roofline probes. Link kforge::tune (it brings
// simdjson; the core kforge::kforge stays free of it). Where kforge::vulkan
// is linked too (KFORGE_HAS_VULKAN), policy::autotune also resolves gemm on
// Vulkan device tensors and so brings the Vulkan gemm space,
// kforge/tune/vulkan_space.hpp, and the Vulkan headers with it.
#pragma once

#include "kforge/kforge.hpp"
#include "kforge/tune/autotune.hpp"
#include "kforge/tune/cache.hpp"
#include "kforge/tune/common.hpp"
#include "kforge/tune/record.hpp"
#include "kforge/tune/roofline.hpp"
#include "kforge/tune/space.hpp"
#include "kforge/tune/tuner.hpp"
