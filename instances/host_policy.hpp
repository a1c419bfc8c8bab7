// instances/host_policy.hpp — what instances/<policy>.cpp defines for a
// policy that runs on host data: kforge::execute in each dtype, and a host
// session's step and model::verify of it (one file per policy: both reach
// the policy's kernels for every op, compiled there once). The declarations
// these match are in kforge/validate/execute.hpp and kforge/model/*.hpp.
#pragma once

#include <kforge/model.hpp>
#include <kforge/validate/execute.hpp>

#define KFORGE_HOST_POLICY_INSTANCES(P)         \
  namespace kforge::detail {                    \
  KFORGE_EXECUTE_INSTANCES(, P)                 \
  }                                             \
  namespace kforge::model {                     \
  KFORGE_MODEL_FORWARD_INSTANCES(, P)           \
  KFORGE_MODEL_VERIFY_INSTANCES(, P)            \
  }
