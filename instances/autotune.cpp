// instances/autotune.cpp — policy::autotune's instances for kforge's own
// executables (instances/host_policy.hpp says which), and the tuner's CPU gemm
// candidates: all reach the gemms of the whole CPU space
// (tune::cpu_gemm_space), compiled here once.
#include <kforge/tune.hpp>

#include "host_policy.hpp"

KFORGE_HOST_POLICY_INSTANCES(policy::autotune)

namespace kforge::tune {
KFORGE_TUNE_CPU_SPACE_INSTANCES()
}  // namespace kforge::tune
