// instances/autotune.cpp — policy::autotune's instances for kforge's own
// executables (see kforge/validate/execute.hpp): kforge::execute in each
// dtype, a host session's step and model::verify of it, and the tuner's CPU
// gemm candidates. One file: all reach the gemms of the whole CPU space
// (tune::cpu_gemm_space), compiled here once.
#include <kforge/model.hpp>
#include <kforge/tune.hpp>
#include <kforge/validate/execute.hpp>

namespace kforge::detail {
KFORGE_EXECUTE_INSTANCES(, policy::autotune)
}  // namespace kforge::detail

namespace kforge::model {
KFORGE_MODEL_FORWARD_INSTANCES(, policy::autotune)
KFORGE_MODEL_VERIFY_INSTANCES(, policy::autotune)
}  // namespace kforge::model

namespace kforge::tune {
KFORGE_TUNE_CPU_SPACE_INSTANCES()
}  // namespace kforge::tune
