// instances/threaded.cpp — policy::threaded<>'s instances for kforge's own executables
// (instances/host_policy.hpp says which).
#include "host_policy.hpp"

KFORGE_HOST_POLICY_INSTANCES(policy::threaded<>)
