// instances/autotune.cpp — policy::autotune's instances for kforge's own
// executables (instances/host_policy.hpp says which).
#include <kforge/tune.hpp>

#include "host_policy.hpp"

KFORGE_HOST_POLICY_INSTANCES(policy::autotune)
