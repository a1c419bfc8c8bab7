// kforge/model.hpp — transformer decoders built from kforge ops (kforge::model):
// a config and its presets, random weights, checkpoints (Hugging Face
// safetensors directories and GGUF files), the block as one program of ops,
// sessions on host data under any CPU policy, and the stage-by-stage
// verification against the Eigen reference. The Vulkan session (device
// tensors, one stream per step) is <kforge/model/vulkan.hpp>.
#pragma once

#include "kforge/kforge.hpp"
#include "kforge/model/block.hpp"
#include "kforge/model/checkpoint.hpp"
#include "kforge/model/config.hpp"
#include "kforge/model/host.hpp"
#include "kforge/model/verify.hpp"
#include "kforge/model/weights.hpp"
