// tools/tune_candidates.hpp — the candidates `kforge tune` searches for a
// problem and a family (cmd_tune.cpp); `--policy autotune` tunes the same
// ones on a miss with KFORGE_AUTOTUNE=1 (autotune.cpp). Needs kforge::tune.
#pragma once

#include <string>
#include <vector>

#include <kforge/tune/common.hpp>

#include "registry.hpp"

namespace kforge::tool {

/// gemm: the compiled CPU space (or the Vulkan device's configs for
/// "vulkan"); other ops: the tool's registered policies of the family, and
/// for "vulkan" the accepted generated kernels of exactly p unless
/// `with_generated` is false.
std::vector<tune::candidate> tune_candidates(const problem& p, const std::string& family,
                                             const std::vector<policy_entry>& policies, bool with_generated);

}  // namespace kforge::tool
