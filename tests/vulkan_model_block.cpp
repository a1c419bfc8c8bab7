// tests/vulkan_model_block.cpp — kforge::model on policy::vulkan (lavapipe in
// CI; validation layer on): the tiny preset verified stage by stage against
// the Eigen reference in f32, f16 and bf16 (each held as itself on the
// device), from the token ids' embedding to the sampled token, each step one
// submission with per-stage GPU times, and typed errors.
#include <kforge/model/vulkan.hpp>
#if defined(KFORGE_HAS_TUNE)
#include <kforge/tune.hpp>
#endif

#include "checkpoint_checks.hpp"
#include "model_checks.hpp"
#include "vulkan_common.hpp"

using namespace kforge;
namespace mc = model_checks;

namespace {
template <class T, class P = policy::vulkan<>>
void verify_on_vulkan(vulkan::context& ctx, const model::config& c, index_t prefill = 7, index_t decode = 3,
                      std::optional<qformat> weights = {}) {
  const auto w = mc::weights_of<T>(c, weights);
  model::vulkan_session<T, P> s(ctx, c, w, prefill + decode);
  const model::verification v = model::verify<T>(c, w, s, prefill, decode, P::name());
  mc::check_passed(v, c, prefill, decode);
  for (const auto& st : v.stages)
    if (st.s == model::stage::q_proj || st.s == model::stage::attention) CHECK(!st.knobs.empty());
}
}  // namespace

TEST_CASE("vulkan model: tiny verified stage by stage against the reference (f32, f16, bf16)") {
  KFT_NEED_DEVICE();
  const model::config c = model::preset("tiny");
  verify_on_vulkan<float>(*ctx, c);
  if (ctx->info().storage_16bit) {
    verify_on_vulkan<half>(*ctx, c);
    verify_on_vulkan<bfloat16>(*ctx, c);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

#if defined(KFORGE_HAS_TUNE)
TEST_CASE("vulkan model under policy::autotune: its gemms recorded with the device's tuned (or default) config") {
  KFT_NEED_DEVICE();
  verify_on_vulkan<float, policy::autotune>(*ctx, model::preset("tiny"));
  KFT_NO_VALIDATION_MESSAGES();
}
#endif

TEST_CASE("vulkan model: quantized weights (each format) verified against the reference on the same weights dequantized") {
  KFT_NEED_DEVICE();
  const model::config c = mc::quantizable();
  // Prefill rows from 17 on take the prefill path (W dequantized into the stream's scratch, the dense gemm).
  verify_on_vulkan<float>(*ctx, c, 20, 2, qformat::q4_0);
  verify_on_vulkan<float>(*ctx, c, 5, 1, qformat::fp8_e5m2);
  if (ctx->info().storage_16bit) {
    verify_on_vulkan<half>(*ctx, c, 20, 2, qformat::q8_0);
    verify_on_vulkan<half>(*ctx, c, 5, 1, qformat::mxfp4);
    verify_on_vulkan<bfloat16>(*ctx, c, 5, 1, qformat::fp8_e4m3);
  }
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan model: a GPT-2-style block (learned positions: two gathers and an add) verifies") {
  KFT_NEED_DEVICE();
  model::config c = model::preset("gpt2-small");
  c.hidden = 48, c.heads = 3, c.kv_heads = 3, c.head_dim = 16, c.mlp = 70, c.vocab = 61, c.layers = 2, c.learned_positions = 32;
  verify_on_vulkan<float>(*ctx, c);
  if (ctx->info().storage_16bit) verify_on_vulkan<bfloat16>(*ctx, c);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan model: one submission per step, a GPU time for every op, the host session's logits and token") {
  KFT_NEED_DEVICE();
  const model::config c = model::preset("tiny");
  const auto w = model::random_weights<float>(c);
  model::vulkan_session<float> s(*ctx, c, w, 16);
  model::host_session<float, policy::blocked<>> h(c, w, 16);
  model::host_buffer<float> lv(shape{1, c.vocab}), lh(shape{1, c.vocab});
  const auto ids = model::random_tokens(c, 6, 3);
  for (index_t step = 0; step < 3; ++step) {
    const index_t t = step == 0 ? 4 : 1, pos = s.position();
    const std::vector<index_t> step_ids(ids.begin() + pos, ids.begin() + pos + t);
    const index_t a = s.step(step_ids, lv.view()), b = h.step(step_ids, lh.view());
    CHECK(s.submissions() == 1);
    // The token ids in; the embedding's id check (device-tensor ids are checked on the device too), the
    // logits and the sampled token out.
    CHECK(s.stream().copy_count() == 4);
    CHECK(s.times().size() == mc::expected_stages(c, t).size());
    if (ctx->info().timestamps)
      for (const auto& tm : s.times()) CHECK((tm.seconds && *tm.seconds >= 0));
    double err = 0, mag = 0;
    for (index_t v = 0; v < c.vocab; ++v) {
      err = std::max(err, std::fabs(double(lv.data[v]) - lh.data[v]));
      mag = std::max(mag, std::fabs(double(lh.data[v])));
    }
    CHECK(err <= 1e-4 * mag);
    CHECK(a == mc::first_largest(lv.data));  // the device's argmax of its own logits
    CHECK((a == b || std::fabs(double(lh.data[a]) - lh.data[b]) <= 1e-4 * mag));  // the host's token, or a tie
  }
  CHECK(s.position() == 6);
  const std::vector<index_t> two{1, 2};
  CHECK_THROWS_AS(s.step(two, lv.view()), model::config_error);  // prefill after decode
  CHECK_THROWS_AS(s.step(std::vector<index_t>{c.vocab}, lv.view()), model::config_error);  // checked before the stream
  s.reset();  // the cache zeroed on the device (vkCmdFillBuffer)
  h.reset();
  s.step(two, lv.view());
  h.step(two, lh.view());
  CHECK(s.position() == 2);
  double err = 0, mag = 0;
  for (index_t v = 0; v < c.vocab; ++v) {
    err = std::max(err, std::fabs(double(lv.data[v]) - lh.data[v]));
    mag = std::max(mag, std::fabs(double(lh.data[v])));
  }
  CHECK(err <= 1e-4 * mag);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan model: a step submitted in parts while recorded, whole, or without timestamps gives the same logits") {
  KFT_NEED_DEVICE();
  const model::config c = model::preset("tiny");
  const auto w = model::random_weights<float>(c);
  const auto ids = model::random_tokens(c, 6, 5);
  auto run3 = [&](bool parts, bool profile, std::vector<std::size_t>* nparts) {
    model::vulkan_session<float> s(*ctx, c, w, 16);
    s.submit_in_parts(parts);
    s.profile(profile);
    model::host_buffer<float> l(shape{1, c.vocab});
    std::vector<float> out;
    for (index_t step = 0; step < 3; ++step) {
      const index_t t = step == 0 ? 4 : 1, pos = s.position();
      s.step(std::vector<index_t>(ids.begin() + pos, ids.begin() + pos + t), l.view());
      out.insert(out.end(), l.data.begin(), l.data.end());
      CHECK(s.submissions() == 1);
      CHECK(s.host().record_s > 0);
      CHECK(s.host().wait_s >= 0);
      CHECK((ctx->info().timestamps ? s.host().gpu_s && *s.host().gpu_s > 0 : !s.host().gpu_s));
      if (nparts) nparts->push_back(s.host().parts);
      for (const auto& tm : s.times()) CHECK((profile && ctx->info().timestamps ? tm.seconds && *tm.seconds >= 0 : !tm.seconds));
    }
    return out;
  };
  std::vector<std::size_t> parts, whole;
  const auto a = run3(true, true, &parts), b = run3(false, true, &whole), d = run3(true, false, nullptr);
  CHECK(a == b);  // the same commands in the same order: the same bits
  CHECK(a == d);
  // tiny: 2 layers of ~15 commands; parts after 4, 8, 16 and 32 commands
  for (std::size_t p : parts) CHECK(p >= 3);
  for (std::size_t p : whole) CHECK(p == 1);
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan model: a checkpoint streamed to the device weight by weight runs the host's model (Hugging Face f32, GGUF q8_0)") {
  KFT_NEED_DEVICE();
  const std::filesystem::path dir = ktest::scratch_dir("kforge-vk-checkpoint-");
  const ktest::small_llama m;
  m.write_hf(dir / "hf");
  ktest::put(dir / "q8_0.gguf", m.gguf(qformat::q8_0));
  const model::checkpoint hf = model::open_checkpoint(dir / "hf");
  const auto [tokens, logits] = ktest::greedy<policy::eigen>(hf.cfg, model::load_weights<float>(hf), 10);
  model::vulkan_session<float> s(*ctx, hf, 32);
  const auto [vt, vl] = ktest::greedy_run<float>(s, hf.cfg.vocab, 10);
  CHECK(vt == tokens);
  CHECK(ktest::max_diff(vl, logits) < 1e-3);
  const model::checkpoint g = model::open_checkpoint(dir / "q8_0.gguf");
  const auto [qt, ql] = ktest::greedy<policy::threaded<>>(g.cfg, model::load_weights<float>(g), 10);
  model::vulkan_session<float> sq(*ctx, g, 32);
  const auto [vqt, vql] = ktest::greedy_run<float>(sq, g.cfg.vocab, 10);
  CHECK(vqt == qt);
  CHECK(ktest::max_diff(vql, ql) < 1e-3);
  // the host holds one weight at a time: a limit below the largest weight ([gate | up], 64 x 192 f32) refuses
  // before anything is uploaded, one that holds it loads the model (~4x as many bytes)
  CHECK_THROWS_AS(model::vulkan_session<float>(*ctx, hf, 32, memory_limit{64 * 192 * 4 - 1, "a test's limit"}), memory_error);
  CHECK_NOTHROW(model::vulkan_session<float>(*ctx, hf, 32, memory_limit{64 * 192 * 4, "a test's limit"}));
  KFT_NO_VALIDATION_MESSAGES();
}

TEST_CASE("vulkan model: the checked-in checkpoints give the tokens and logits transformers gives (f32, streamed)") {
  KFT_NEED_DEVICE();
  for (const std::string arch : {"llama", "qwen2", "mistral", "gpt2"}) {
    CAPTURE(arch);
    const model::checkpoint ck = model::open_checkpoint(ktest::test_data("hf") / arch);
    const ktest::hf_reference r = ktest::read_reference(arch);
    model::vulkan_session<float> s(*ctx, ck, r.rows());
    const auto [diff, err] = ktest::run_against<float>(s, r);
    MESSAGE(arch << " f32 on " << ctx->info().name << ": logits max error " << err << " of the largest logit");
    CHECK(err < 1e-4);
    for (std::size_t n = 0; n < diff.size(); ++n) CHECK_MESSAGE(diff[n] == r.steps, "prompt " << n << " first differs at step " << diff[n]);
  }
  KFT_NO_VALIDATION_MESSAGES();
}
