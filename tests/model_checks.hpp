// tests/model_checks.hpp — the checks of kforge::model, one body per property,
// run on the CPU policies by tests/model_block.cpp and on Vulkan by
// tests/vulkan_model_block.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <kforge/model.hpp>

#include "transformer_ops_checks.hpp"

namespace model_checks {

using namespace kforge;
using transformer_checks::message_of;

inline bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline void check_configs() {
  for (const auto& n : model::preset_names()) CHECK_NOTHROW(model::preset(n).validate());
  const model::config tiny = model::preset("tiny");
  CHECK(tiny.hidden == 72);
  CHECK(tiny.heads % tiny.kv_heads == 0);
  CHECK(model::preset("llama3-8b").block_params() == 218112000);  // Llama 3 8B: 4096·(4096+2·1024) + 4096² + 3·4096·14336 + 2·4096
  CHECK(model::preset("gpt2-small").block_params() == 7087872);   // GPT-2 small's block, biases and LayerNorms included

  const std::string unknown = message_of<model::config_error>([] { model::preset("gpt5"); });
  CHECK(contains(unknown, "unknown preset 'gpt5'"));
  CHECK(contains(unknown, "llama3-8b"));
  auto broken = [&](auto edit) {
    model::config c = tiny;
    edit(c);
    return message_of<model::config_error>([&] { c.validate(); });
  };
  CHECK(contains(broken([](model::config& c) { c.heads = 6, c.kv_heads = 4; }), "heads = 6 is not a multiple of kv_heads = 4"));
  CHECK(contains(broken([](model::config& c) { c.hidden = 0; }), "hidden = 0 must be > 0"));
  CHECK(contains(broken([](model::config& c) { c.kv_heads = -2; }), "kv_heads = -2 must be > 0"));
  CHECK(contains(broken([](model::config& c) { c.layers = 0; }), "layers = 0 must be > 0"));
  CHECK(contains(broken([](model::config& c) { c.head_dim = 15; }), "head_dim = 15 must be even for RoPE"));
  CHECK(broken([](model::config& c) { c.head_dim = 15, c.rope = false; }).empty());
  CHECK(contains(broken([](model::config& c) { c.norm_eps = 0; }), "norm_eps"));
  CHECK(contains(broken([](model::config& c) { c.activation = fn::relu; }), "activation relu"));
  CHECK(contains(broken([](model::config& c) { c.vocab = 0; }), "vocab = 0"));
  static_assert(std::is_base_of_v<argument_error, model::config_error>);

  CHECK(contains(message_of<model::config_error>([&] { tiny.validate_run(0, 3, 8); }), "prefill = 0"));
  CHECK(contains(message_of<model::config_error>([&] { tiny.validate_run(6, 3, 8); }),
                 "prefill 6 + decode 3 = 9 tokens do not fit a KV cache of 8 rows"));
  model::config g = model::preset("gpt2-small");
  CHECK(contains(message_of<model::config_error>([&] { g.validate_run(1000, 30, 2000); }), "learned table of 1024 positions"));
}

inline void check_weights() {
  const model::config c = model::preset("tiny");
  const auto a = model::random_weights<float>(c), b = model::random_weights<float>(c);
  CHECK(a.layers[1].w_down.data == b.layers[1].w_down.data);
  CHECK(a.layers[0].wq.data != a.layers[1].wq.data);
  model::config other = c;
  other.seed += 1;
  CHECK(model::random_weights<float>(other).layers[0].wq.data != a.layers[0].wq.data);
  // σ = 1/√fan_in for projections: the sample's standard deviation within 10 %
  double s2 = 0;
  for (float x : a.layers[0].w_up.data) s2 += double(x) * x;
  const double sd = std::sqrt(s2 / static_cast<double>(a.layers[0].w_up.data.size()));
  CHECK(sd == doctest::Approx(1.0 / std::sqrt(72.0)).epsilon(0.1));
  CHECK(a.layers[0].w_up.dims == shape{72, 200});  // [gate | up]
  CHECK_FALSE(a.layers[0].bq.present());
  // f16 weights are the f32 draws rounded
  const auto h = model::random_weights<half>(c);
  CHECK(static_cast<float>(h.layers[0].wk.data[5]) == static_cast<float>(half(a.layers[0].wk.data[5])));

  model::config g = model::preset("gpt2-small");
  g.hidden = 16, g.heads = 2, g.kv_heads = 2, g.head_dim = 8, g.mlp = 24, g.vocab = 11, g.learned_positions = 9;
  const auto t = model::random_weights<float>(g);
  CHECK(t.lm_head.dims == shape{16, 11});
  int diff = 0;
  for (index_t v = 0; v < 11; ++v)
    for (index_t i = 0; i < 16; ++i) diff += t.lm_head.data[static_cast<std::size_t>(i * 11 + v)] != t.embed.data[static_cast<std::size_t>(v * 16 + i)];
  CHECK(diff == 0);
  CHECK(t.layers[0].bo.present());
  CHECK(t.positions.dims == shape{9, 16});
}

/// The stages of one step, in order, for config c and t tokens.
inline std::vector<std::string> expected_stages(const model::config& c, index_t t) {
  std::vector<std::string> s{"embed"};
  if (c.learned_positions > 0) s.insert(s.end(), {"pos_embed", "embed+pos"});
  for (index_t l = 0; l < c.layers; ++l) {
    for (const char* n : {"attn_norm", "q_proj", "k_proj", "v_proj"}) s.push_back(n);
    if (c.rope) s.insert(s.end(), {"rope_q", "rope_k"});
    for (const char* n : {"k_append", "v_append", "attention", "o_proj+residual", "mlp_norm", "up_proj"}) s.push_back(n);
    if (c.mlp_type == model::mlp_kind::gated) s.push_back("gated");
    s.push_back("down_proj+residual");
  }
  if (t > 1) s.push_back("select_last");
  s.insert(s.end(), {"final_norm", "lm_head", "sample"});
  return s;
}

/// A verification that must pass: every stage checked, isolated and end to
/// end, inside the bounds (the embedding's gathers exactly: their bound is
/// 0); prints the largest end-to-end error / bound.
inline void check_passed(const model::verification& v, const model::config& c, index_t prefill, index_t decode) {
  INFO(model::failure_lines(v));
  CHECK(v.passed);
  const auto pre = expected_stages(c, prefill), dec = expected_stages(c, 1);
  REQUIRE(v.stages.size() == pre.size() + (decode > 0 ? dec.size() : 0));
  double worst = 0;
  for (std::size_t i = 0; i < v.stages.size(); ++i) {
    const auto& s = v.stages[i];
    const bool in_prefill = i < pre.size();
    CHECK(std::string(model::to_string(s.s)) == (in_prefill ? pre[i] : dec[i - pre.size()]));
    CHECK(s.calls == (in_prefill ? 1 : decode));
    CHECK(s.elements > 0);
    if (s.s == model::stage::embed || s.s == model::stage::pos_embed) {
      CHECK(s.e2e_rel == 0);
      continue;
    }
    CHECK(s.e2e_bound > 0);
    worst = std::max(worst, s.e2e_rel / s.e2e_bound);
  }
  MESSAGE(v.candidate << " " << to_string(v.type) << " " << c.name << ": largest end-to-end error / bound " << worst);
}

/// The tiny preset resized so that every projection's input width fits
/// 32-element blocks (tiny's hidden 72 does not): what quantized weights need.
inline model::config quantizable() {
  model::config c = model::preset("tiny");
  c.name = "tiny-q", c.hidden = 64, c.heads = 2, c.kv_heads = 1, c.head_dim = 32, c.mlp = 96, c.vocab = 77;
  return c;
}

/// Random weights of c in T, quantized in `weights` where given.
template <class T>
model::weights<model::host_buffer<T>> weights_of(const model::config& c, std::optional<qformat> weights = {}) {
  auto w = model::random_weights<T>(c);
  if (weights) model::quantize_weights(w, *weights);  // random_weights(c, f) gives the same (check_quantize_weights)
  return w;
}

template <class P, class T>
void check_verify_host(const model::config& c, index_t prefill = 7, index_t decode = 3, std::optional<qformat> weights = {}) {
  const auto w = weights_of<T>(c, weights);
  model::host_session<T, P> s(c, w, prefill + decode);
  check_passed(model::verify<T>(c, w, s, prefill, decode, P::name()), c, prefill, decode);
}

/// quantize_weights: every projection and the LM head hold Wᵀ in the format
/// (the dense elements freed), the embedding and norms stay dense, each
/// quantized tensor dequantizes to the dense one within the format's step,
/// bytes_of counts the packed bytes; widths that do not fit are refused.
inline void check_quantize_weights() {
  const model::config c = quantizable();
  const auto dense = model::random_weights<float>(c);
  for (qformat f : all_qformats) {
    CAPTURE(to_string(f));
    const auto w = weights_of<float>(c, f);
    const auto& L = w.layers[1];
    const auto& D = dense.layers[1];
    for (auto [q, d] : {std::pair{&L.wq, &D.wq}, {&L.wo, &D.wo}, {&L.w_up, &D.w_up}, {&L.w_down, &D.w_down}, {&w.lm_head, &dense.lm_head}}) {
      REQUIRE(q->quantized());
      CHECK(q->data.empty());
      CHECK(q->dims == d->dims);
      CHECK(q->q->rows() == d->dims[1]);  // Wᵀ: one row per output feature
      CHECK(q->q->cols() == d->dims[0]);
      // Element [i, o] of the dense weight against row o of Wᵀ: within half a step of the row's largest magnitude.
      const index_t in = d->dims[0], out = d->dims[1];
      std::vector<float> row(static_cast<std::size_t>(in));
      for (index_t o : {index_t{0}, out / 2, out - 1}) {
        q->q->dequantize_row(o, row.data());
        float amax = 0, worst = 0;
        for (index_t i = 0; i < in; ++i) {
          const float x = d->data[static_cast<std::size_t>(i * out + o)];
          amax = std::max(amax, std::fabs(x));
          worst = std::max(worst, std::fabs(row[static_cast<std::size_t>(i)] - x));
        }
        // Half a step: q8_0 amax/254 plus 127 × its f16 scale's rounding (2^-11 of it; ggml quantizes with the
        // unrounded scale), fp8 2^-4 / 2^-3 of a value; q4_0's scale
        // is the largest magnitude's -1/8 (llama.cpp's), so the other sign's extreme clamps by up to a step, amax/8;
        // mxfp4 clamps what exceeds 6 under its power-of-two scale (up to a third of the block's largest).
        const float step = f == qformat::q8_0 ? 0.5625f / 127 : f == qformat::q4_0 ? 1.0f / 8 : f == qformat::fp8_e4m3 ? 0.0625f
                           : f == qformat::fp8_e5m2 ? 0.125f : 0.34f;
        CHECK(worst <= step * amax * 1.01f);
      }
    }
    // Quantized as drawn (random_weights(c, f)): the same bytes and scales, tensor by tensor.
    const auto drawn = model::random_weights<float>(c, f);
    for (auto [a, b] : {std::pair{&drawn.layers[1].wk, &L.wk}, {&drawn.layers[0].w_down, &w.layers[0].w_down}, {&drawn.lm_head, &w.lm_head}}) {
      REQUIRE(a->quantized());
      const auto n = static_cast<std::size_t>(a->q->rows() * a->q->row_bytes());
      REQUIRE(b->q->rows() * b->q->row_bytes() == a->q->rows() * a->q->row_bytes());
      CHECK(std::equal(a->q->data(), a->q->data() + n, b->q->data()));
      CHECK(a->q->scales() == b->q->scales());
    }
    CHECK(drawn.embed.data == dense.embed.data);
    CHECK(!w.embed.quantized());
    CHECK(w.embed.data == dense.embed.data);
    CHECK(!L.attn_norm_w.quantized());
    const double ratio = model::bytes_of(w, 4).block / model::bytes_of(dense, 4).block;
    CHECK(ratio < info_of(f).bits() / 32 + 0.05);  // the norms stay f32
  }
  model::config bad = quantizable();
  bad.mlp = 100;
  CHECK_THROWS_AS(model::check_quantizable(bad, qformat::q4_0), model::config_error);
  auto w = model::random_weights<float>(bad);
  CHECK_THROWS_WITH_AS(model::quantize_weights(w, qformat::q8_0), doctest::Contains("down_proj"), model::config_error);
  CHECK_THROWS_AS(model::random_weights<float>(bad, qformat::q4_0), model::config_error);
}

/// policy::blocked<> for every op, but op::gated's output is off by 0.05 in
/// one element: a plausible wrong kernel.
struct wrong_gated {
  static std::string name() { return "wrong_gated"; }
};

}  // namespace model_checks

namespace kforge::detail {
template <class Op>
  requires supports<policy::blocked<>, Op>
struct impl<model_checks::wrong_gated, Op> {
  static constexpr bool available = true;
  template <class... V>
  static void run(const Op& op, V... v) {
    kforge::run<policy::blocked<>>(op, v...);
    if constexpr (Op::name == std::string_view("gated")) {
      auto& y = std::get<sizeof...(V) - 1>(std::tie(v...));
      if (y.numel() > 3) y.data[3] = static_cast<typename Op::value_type>(static_cast<float>(y.data[3]) + 0.05f);
    }
  }
};
}  // namespace kforge::detail

namespace model_checks {

template <class T>
void check_wrong_op_named() {
  const model::config c = model::preset("tiny");
  const auto w = model::random_weights<T>(c);
  model::host_session<T, wrong_gated> s(c, w, 10);
  const model::verification v = model::verify<T>(c, w, s, 7, 3, "wrong_gated");
  CHECK_FALSE(v.passed);
  INFO(model::failure_lines(v));
  CHECK(contains(v.first_failure, "stage gated (layer 0), prefill on wrong_gated"));
  CHECK(contains(v.first_failure, "given the reference's inputs, 1 of 700 elements outside the op's tolerance"));
  CHECK(contains(v.first_failure, "swiglu [7x200]"));
  for (const auto& st : v.stages) {
    CHECK(st.iso_passed == (st.s != model::stage::gated));  // only the wrong op fails in isolation
    if (st.step == "prefill" && st.layer == 0 && st.s < model::stage::gated) CHECK(st.e2e_passed);
  }
}

/// The index of the first largest logit (no NaN among them).
inline index_t first_largest(const std::vector<float>& l) {
  return static_cast<index_t>(std::max_element(l.begin(), l.end()) - l.begin());
}

inline void check_session_errors() {
  const model::config c = model::preset("tiny");
  const auto w = model::random_weights<float>(c);
  model::host_session<float, policy::blocked<>> s(c, w, 8);
  model::host_buffer<float> logits(shape{1, c.vocab});
  const auto i9 = model::random_tokens(c, 9, 5), i4 = model::random_tokens(c, 4, 5), i2 = model::random_tokens(c, 2, 5),
             i1 = model::random_tokens(c, 1, 5);
  CHECK(contains(message_of<model::config_error>([&] { s.step(i9, logits.view()); }), "exceed the KV cache of 8 rows"));
  s.step(i4, logits.view());
  CHECK(s.position() == 4);
  CHECK(contains(message_of<model::config_error>([&] { s.step(i2, logits.view()); }), "bottom-right causal"));
  s.step(i1, logits.view());
  CHECK(s.position() == 5);
  CHECK_THROWS_AS(s.step(i1, tensor_view<float>(logits.data.data(), shape{1, c.vocab - 1})), shape_error);
  // Token ids outside the vocabulary: config_error before any op runs (the position stays).
  for (const index_t bad : {c.vocab, index_t{-1}})
    CHECK(contains(message_of<model::config_error>([&] { s.step(std::vector<index_t>{bad}, logits.view()); }),
                   "token id " + std::to_string(bad) + " is outside [0, " + std::to_string(c.vocab) + ")"));
  CHECK(s.position() == 5);
  s.reset();
  const index_t next = s.step(i4, logits.view());
  CHECK(s.position() == 4);
  CHECK(std::isfinite(static_cast<double>(logits.data[0])));
  // The token a step returns is its sample stage's argmax of the logits (op::topk, k = 1).
  CHECK(next == first_largest(logits.data));
  model::host_buffer<float> again(shape{1, c.vocab});
  s.reset();
  CHECK(s.step(i4, again.view()) == next);
  CHECK(again.data == logits.data);
}

}  // namespace model_checks
