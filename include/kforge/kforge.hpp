// kforge/kforge.hpp — the umbrella header CPU users include: ops, policies,
// run(), the Eigen reference and the validation suite. Vulkan lives in
// kforge/vulkan.hpp and generation in kforge/gen.hpp.
#pragma once

#include "kforge/core/dispatch.hpp"
#include "kforge/core/dtype.hpp"
#include "kforge/core/error.hpp"
#include "kforge/core/quant.hpp"
#include "kforge/core/tensor.hpp"
#include "kforge/cpu/cpu.hpp"
#include "kforge/cpu/quant_gemm.hpp"
#include "kforge/eigen/eigen.hpp"
#include "kforge/ops/ops.hpp"
#include "kforge/policy/policy.hpp"
