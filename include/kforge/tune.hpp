// kforge/tune.hpp — the tuner: search spaces, strategies, the tuning cache,
// policy::autotune and the roofline probes. Link kforge::tune (it brings
// simdjson; the core kforge::kforge stays free of it). The Vulkan gemm space
// is a header of its own, kforge/tune/vulkan_space.hpp (link kforge::vulkan
// too): it brings the Vulkan headers, which tuner users who never tune
// Vulkan should not compile.
#pragma once

#include "kforge/kforge.hpp"
#include "kforge/tune/autotune.hpp"
#include "kforge/tune/cache.hpp"
#include "kforge/tune/common.hpp"
#include "kforge/tune/record.hpp"
#include "kforge/tune/roofline.hpp"
#include "kforge/tune/space.hpp"
#include "kforge/tune/tuner.hpp"
