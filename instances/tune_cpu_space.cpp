// instances/tune_cpu_space.cpp — the tuner's CPU gemm candidates (every
// policy of tune::cpu_gemm_space), compiled once for kforge's own
// executables (see kforge/validate/execute.hpp).
#include <kforge/cpu/cpu.hpp>
#include <kforge/tune.hpp>

namespace kforge::tune {
KFORGE_TUNE_CPU_SPACE_INSTANCES()
}  // namespace kforge::tune
