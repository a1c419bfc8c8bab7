// Every header under include/kforge/ (the umbrella headers and the few
// that stand alone), and the big templates behind them
// instantiated (every op and dtype on every policy through execute<>, the
// model's sessions), checked with -fsyntax-only -Wall -Wextra -Werror and
// kforge's headers as a normal include (compile_warnings_clang,
// compile_warnings_gcc_syntax). The module headers come in where the build
// has the module (the same KFORGE_HAS_* macros its CMake targets define).
#include <kforge/kforge.hpp>
#include <kforge/model.hpp>
#include <kforge/validate.hpp>
#include <kforge/validate/execute.hpp>

template void kforge::execute<kforge::policy::eigen>(const kforge::problem&, std::vector<kforge::host_tensor>&);
template void kforge::execute<kforge::policy::blocked<>>(const kforge::problem&, std::vector<kforge::host_tensor>&);
template void kforge::execute<kforge::policy::threaded<>>(const kforge::problem&, std::vector<kforge::host_tensor>&);
template class kforge::model::host_session<float, kforge::policy::threaded<>>;
template class kforge::model::host_session<kforge::half, kforge::policy::blocked<>>;

#if defined(KFORGE_HAS_VULKAN)
#include <kforge/model/vulkan.hpp>
#include <kforge/vulkan.hpp>
#include <kforge/vulkan/problem.hpp>
template void kforge::execute<kforge::policy::vulkan<>>(const kforge::problem&, std::vector<kforge::host_tensor>&);
template class kforge::model::vulkan_session<kforge::half>;
template class kforge::model::vulkan_session<float>;
#endif
#if defined(KFORGE_HAS_TUNE)
#include <kforge/tune.hpp>
#endif
#if defined(KFORGE_HAS_TUNE) && defined(KFORGE_HAS_VULKAN)
#include <kforge/tune/vulkan_roofline.hpp>
#endif
#if defined(KFORGE_HAS_LLM) && defined(KFORGE_HAS_VULKAN)
#include <kforge/gen.hpp>
#include <kforge/tune/generated_space.hpp>
#endif

int main() {}
