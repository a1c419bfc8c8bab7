// tests/model_block.cpp — kforge::model on the CPU policies: configs and their
// typed errors, the tiny preset verified stage by stage against the Eigen
// reference in f32, f16 and bf16 on eigen, blocked and threaded, and a
// deliberately wrong op (a test policy that perturbs one op family's output)
// detected and named.
#include <doctest/doctest.h>

#include <kforge/model.hpp>
#if defined(KFORGE_HAS_TUNE)
#include <kforge/tune.hpp>
#endif

#include "model_checks.hpp"

using namespace kforge;
namespace mc = model_checks;

TEST_CASE("model config: presets validate, bad configs and runs are typed errors naming the rule") { mc::check_configs(); }

TEST_CASE("model weights: the same seed gives the same weights; tied LM head is the embedding's transpose") {
  mc::check_weights();
}

TEST_CASE_TEMPLATE("model tiny verified stage by stage against the reference on every CPU policy", P, policy::eigen,
                   policy::blocked<>, policy::threaded<>) {
  mc::check_verify_host<P, float>(model::preset("tiny"));
  mc::check_verify_host<P, half>(model::preset("tiny"));
  mc::check_verify_host<P, bfloat16>(model::preset("tiny"));
}

#if defined(KFORGE_HAS_TUNE)
TEST_CASE("model tiny under policy::autotune: its gemms from the tuning cache (or the default), the other ops on threaded<>") {
  mc::check_verify_host<policy::autotune, float>(model::preset("tiny"));
  mc::check_verify_host<policy::autotune, half>(model::preset("tiny"));
}
#endif

TEST_CASE("model: quantized weights — converted as defined, verified against the reference on the same weights dequantized") {
  mc::check_quantize_weights();
  const model::config c = mc::quantizable();
  mc::check_verify_host<policy::threaded<>, float>(c, 7, 3, qformat::q4_0);
  mc::check_verify_host<policy::threaded<>, float>(c, 50, 1, qformat::mxfp4);  // 50 rows: the prefill's packed kernels
  mc::check_verify_host<policy::blocked<>, half>(c, 7, 2, qformat::q8_0);
  mc::check_verify_host<policy::threaded<>, bfloat16>(c, 5, 2, qformat::fp8_e4m3);
}

TEST_CASE("model: a GPT-2-style block (LayerNorm, biases, GELU MLP, learned positions, tied head) verifies") {
  model::config c = model::preset("gpt2-small");
  c.hidden = 48, c.heads = 3, c.kv_heads = 3, c.head_dim = 16, c.mlp = 70, c.vocab = 61, c.layers = 2,
  c.learned_positions = 32;
  mc::check_verify_host<policy::threaded<>, float>(c);
  mc::check_verify_host<policy::blocked<>, half>(c);
}

TEST_CASE("model: a wrong op is detected in isolation and named with its stage, layer and shape") {
  mc::check_wrong_op_named<float>();
  mc::check_wrong_op_named<half>();
}

TEST_CASE("model session: steps that do not fit and ids outside the vocabulary are typed errors; a step returns its argmax") {
  mc::check_session_errors();
}
