// examples/07_transformer.cpp — a decoder built from a preset, run as a
// program of kforge ops from token ids to the greedily sampled next token: a
// prefill of a prompt then single-token decode steps with the KV cache, on
// the CPU (policy::threaded<>) and, where kforge was built with Vulkan, on
// the GPU (weights and cache on the device, one submission per step), with
// tokens/s for each; then the CPU run checked stage by stage against the
// Eigen reference.
//
// Run: build/examples/07_transformer [tiny|gpt2-small|llama3-8b] [prefill] [decode]
//      (default: tiny 64 16; gpt2-small is one of GPT-2 small's layers, llama3-8b one of Llama 3 8B's)
#include <kforge/model.hpp>
#if defined(KFORGE_HAS_VULKAN)
#include <kforge/model/vulkan.hpp>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

using namespace kforge;

namespace {

/// Prefill, then decode steps, each token being the one the last step
/// sampled: the argmax of its logits (greedy decoding), an op of the step;
/// prints tokens/s.
template <class Session>
void generate(const char* where, Session& s, const model::config& c, index_t prefill, index_t decode) {
  using clock = std::chrono::steady_clock;
  model::host_buffer<float> logits(shape{1, c.vocab});
  const auto prompt = model::random_tokens(c, prefill, 42);
  s.reset();
  auto t0 = clock::now();
  index_t next = s.step(prompt, logits.view());  // the whole prompt, one step
  const double prefill_s = std::chrono::duration<double>(clock::now() - t0).count();
  std::vector<index_t> out;
  double decode_s = 0;
  for (index_t i = 0; i < decode; ++i) {
    out.push_back(next);
    t0 = clock::now();
    next = s.step(std::span<const index_t>(&out.back(), 1), logits.view());  // the next token, one step
    decode_s += std::chrono::duration<double>(clock::now() - t0).count();
  }
  std::printf("%-8s prefill %lld tokens: %8.1f tokens/s | decode %lld tokens: %7.1f tokens/s (%.3f ms/token) | tokens:",
              where, static_cast<long long>(prefill), prefill / prefill_s, static_cast<long long>(decode),
              decode / decode_s, 1e3 * decode_s / decode);
  for (std::size_t i = 0; i < out.size() && i < 8; ++i) std::printf(" %lld", static_cast<long long>(out[i]));
  std::printf("%s\n", out.size() > 8 ? " ..." : "");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) try {
  const model::config c = model::preset(argc > 1 ? argv[1] : "tiny");
  const index_t prefill = argc > 2 ? std::atoll(argv[2]) : 64, decode = argc > 3 ? std::atoll(argv[3]) : 16;
  c.validate_run(prefill, decode, prefill + decode);
  std::printf("%s: %lld layer(s), hidden %lld, %lld heads / %lld KV heads, MLP %lld, vocab %lld (%.3f M parameters per block)\n",
              c.name.c_str(), static_cast<long long>(c.layers), static_cast<long long>(c.hidden), static_cast<long long>(c.heads),
              static_cast<long long>(c.kv_heads), static_cast<long long>(c.mlp), static_cast<long long>(c.vocab),
              static_cast<double>(c.block_params()) / 1e6);
  const auto w = model::random_weights<float>(c);  // fixed seed: the same weights everywhere

  model::host_session<float, policy::threaded<>> cpu(c, w, prefill + decode);
  generate("CPU", cpu, c, prefill, decode);
#if defined(KFORGE_HAS_VULKAN)
  try {
    vulkan::context ctx;
    model::vulkan_session<float> gpu(ctx, c, w, prefill + decode);
    generate(ctx.info().name.c_str(), gpu, c, prefill, decode);
  } catch (const vulkan::no_device& e) {
    std::printf("Vulkan: no device (%s)\n", e.what());
  } catch (const unsupported_error& e) {
    std::printf("Vulkan: %s\n", e.what());
  }
#endif

  // The same model against the Eigen reference, stage by stage (a short run).
  model::host_session<float, policy::threaded<>> check(c, w, 9);
  const model::verification v = model::verify<float>(c, w, check, 8, 1, "threaded");
  std::printf("verified against eigen, %zu stages: %s\n", v.stages.size(), v.passed ? "PASSED" : v.first_failure.c_str());
  return v.passed ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 2;
}
