// kforge/tune/generated_hook.hpp — how policy::autotune reaches kforge::gen
// without depending on it: a cached generated gemm winner runs on device
// tensors through the recorder kforge/gen.hpp installs here
// (gen::record_generated). Where no translation unit of the program includes
// kforge/gen.hpp the recorder stays empty and the winner's fallback (the best
// of kforge's own configs of that tuning run) runs.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "kforge/core/problem.hpp"

namespace kforge::vulkan {
class stream;
struct buffer_ref;
}  // namespace kforge::vulkan

namespace kforge::tune {

/// Records the kernel of an accepted generation record (a file name in the
/// generation cache) for gemm problem p on stream s, operands `refs` (A, B,
/// [bias,] C); false, recording nothing, where that kernel does not serve p.
using generated_gemm_recorder_fn = bool (*)(vulkan::stream& s, const std::string& record, const problem& p,
                                            const std::vector<vulkan::buffer_ref>& refs);

/// The process's recorder (null: kforge::gen is not in this program).
inline std::atomic<generated_gemm_recorder_fn>& generated_gemm_recorder() {
  static std::atomic<generated_gemm_recorder_fn> f{nullptr};
  return f;
}

}  // namespace kforge::tune
