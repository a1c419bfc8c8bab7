// kforge/model/config.hpp — what a decoder is: one config struct, its named
// presets, and the checks that make a config runnable.
//
// A config describes a stack of `layers` pre-norm decoder blocks
//
//   x += o_proj(attention(rope(q_proj(norm(x))), kv_cache))      (+ biases where `bias`)
//   x += down(mlp(norm(x)))                                        mlp: gated act(g)·u, or act(up(x))
//
// between a token embedding (plus a learned position table where
// `learned_positions` > 0) and a final norm and LM head over the vocabulary.
// Every dimension is free: heads · head_dim need not equal hidden (the
// projections map between them), and heads need only be a multiple of
// kv_heads (grouped-query attention). The block itself is built in
// model/block.hpp from kforge ops only.
//
// Presets (preset(name)):
//   tiny        hidden 72, 4 heads over 2 KV heads of 16, SwiGLU MLP 100, vocab 97, 2 layers: every code path
//               of the Llama-style block at sizes that run in milliseconds, on lavapipe too (CI); 72 ≠ 4·16,
//               so a projection that assumed hidden = heads · head_dim fails.
//   gpt2-small  GPT-2 small as GPT-2 has it: hidden 768, 12 heads of 64 (multi-head), MLP 3072 with GELU
//               (tanh form) in the up projection's epilogue, LayerNorm eps 1e-5, biases on every projection,
//               a learned table of 1024 positions, no RoPE, LM head tied to the embedding, vocab 50257.
//               One layer unless set (the model has 12).
//   llama3-8b   Llama 3 8B's block: hidden 4096, 32 heads over 8 KV heads of 128, SwiGLU MLP 14336,
//               RMSNorm eps 1e-5, RoPE base 500000 (half-split pairs, Hugging Face's layout), no biases,
//               untied LM head, vocab 128256. One layer unless set (the model has 32).
// Bad configs throw config_error (an argument_error) naming the field, its
// value and the rule; an unknown preset names the known ones.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/ops/functions.hpp"

namespace kforge::model {

/// A config, a preset name or a run length that kforge cannot run. what()
/// names the field, the value and the rule it breaks.
class config_error : public argument_error {
 public:
  using argument_error::argument_error;
};

enum class norm_kind : std::uint8_t { rms_norm, layer_norm };
enum class mlp_kind : std::uint8_t {
  gated,  ///< act(x·Wg) · (x·Wu): one gemm into [gate | up] (op::gated's packed layout), then op::gated
  plain,  ///< act(x·W1 + b1): the activation in the up projection's epilogue (GPT-2)
};

constexpr std::string_view to_string(norm_kind n) { return n == norm_kind::rms_norm ? "rms_norm" : "layer_norm"; }
constexpr std::string_view to_string(mlp_kind m) { return m == mlp_kind::gated ? "gated" : "plain"; }

struct config {
  std::string name = "custom";
  index_t hidden = 0;    ///< model width D
  index_t heads = 0;     ///< query heads H
  index_t kv_heads = 0;  ///< KV heads (H % kv_heads == 0; = H: multi-head, 1: multi-query)
  index_t head_dim = 0;  ///< per head
  index_t mlp = 0;       ///< MLP width F
  index_t vocab = 0;
  index_t layers = 1;
  norm_kind norm = norm_kind::rms_norm;
  float norm_eps = 1e-5f;
  mlp_kind mlp_type = mlp_kind::gated;
  fn activation = fn::silu;  ///< gated: silu, gelu_erf, gelu_tanh; plain: also relu
  bool rope = true;
  float rope_base = 10000.0f;
  bool rope_interleaved = false;  ///< pairs (2i, 2i+1) as Meta's Llama; else (i, i + D/2) as Hugging Face's
  bool bias = false;              ///< a bias on every projection (q, k, v, o, up, down)
  bool qkv_bias = false;          ///< biases on q, k and v only (Qwen2); implied by bias
  /// Hugging Face's sliding window (Mistral, Qwen2): a query sees the last `window` positions. kforge's
  /// attention is dense, which is the same computation while a run's tokens fit the window: validate_run
  /// refuses longer runs (0: no window).
  index_t window = 0;
  index_t learned_positions = 0;  ///< rows of a learned position table added to the embedding; 0: none
  bool tied_embeddings = false;   ///< LM head = the embedding table, transposed
  std::uint64_t seed = 0x6b666f7267650013ull;  ///< of the random weights

  index_t q_dim() const { return heads * head_dim; }
  index_t kv_dim() const { return kv_heads * head_dim; }
  /// Columns of the up projection: [gate | up] for a gated MLP.
  index_t up_dim() const { return mlp_type == mlp_kind::gated ? 2 * mlp : mlp; }

  /// Parameters of one block (projections, norms, biases).
  index_t block_params() const {
    const index_t norms = (norm == norm_kind::layer_norm ? 4 : 2) * hidden;
    const index_t proj = hidden * (q_dim() + 2 * kv_dim()) + q_dim() * hidden + hidden * up_dim() + mlp * hidden;
    const index_t biases = bias ? q_dim() + 2 * kv_dim() + hidden + up_dim() + hidden : qkv_bias ? q_dim() + 2 * kv_dim() : 0;
    return norms + proj + biases;
  }

  /// Throws config_error for the first rule this config breaks.
  void validate() const {
    auto positive = [&](const char* field, index_t v) {
      if (v <= 0) throw config_error("kforge::model: config '" + name + "': " + field + " = " + std::to_string(v) + " must be > 0");
    };
    positive("hidden", hidden);
    positive("heads", heads);
    positive("kv_heads", kv_heads);
    positive("head_dim", head_dim);
    positive("mlp", mlp);
    positive("vocab", vocab);
    positive("layers", layers);
    if (heads % kv_heads)
      throw config_error("kforge::model: config '" + name + "': heads = " + std::to_string(heads) +
                         " is not a multiple of kv_heads = " + std::to_string(kv_heads) +
                         " (each KV head serves heads / kv_heads query heads)");
    if (rope && head_dim % 2)
      throw config_error("kforge::model: config '" + name + "': head_dim = " + std::to_string(head_dim) +
                         " must be even for RoPE (it rotates pairs)");
    if (!(norm_eps > 0.0f) || !std::isfinite(norm_eps))
      throw config_error("kforge::model: config '" + name + "': norm_eps = " + std::to_string(norm_eps) + " must be finite and > 0");
    if (rope && (!(rope_base > 1.0f) || !std::isfinite(rope_base)))
      throw config_error("kforge::model: config '" + name + "': rope_base = " + std::to_string(rope_base) + " must be finite and > 1");
    if (window < 0) throw config_error("kforge::model: config '" + name + "': window = " + std::to_string(window) + " must be >= 0");
    if (learned_positions < 0)
      throw config_error("kforge::model: config '" + name + "': learned_positions = " + std::to_string(learned_positions) +
                         " must be >= 0");
    const bool gated_ok = activation == fn::silu || activation == fn::gelu_erf || activation == fn::gelu_tanh;
    if (!gated_ok && !(mlp_type == mlp_kind::plain && activation == fn::relu))
      throw config_error("kforge::model: config '" + name + "': activation " + std::string(kforge::to_string(activation)) +
                         " is not one a " + std::string(to_string(mlp_type)) +
                         " MLP takes (silu, gelu_erf, gelu_tanh" + (mlp_type == mlp_kind::plain ? ", relu)" : ")"));
  }

  /// Throws config_error unless `prefill` tokens then `decode` single-token
  /// steps fit a KV cache of `cache` rows (and the position table).
  void validate_run(index_t prefill, index_t decode, index_t cache) const {
    if (prefill < 1) throw config_error("kforge::model: prefill = " + std::to_string(prefill) + " tokens must be >= 1");
    if (decode < 0) throw config_error("kforge::model: decode = " + std::to_string(decode) + " steps must be >= 0");
    if (prefill + decode > cache)
      throw config_error("kforge::model: prefill " + std::to_string(prefill) + " + decode " + std::to_string(decode) + " = " +
                         std::to_string(prefill + decode) + " tokens do not fit a KV cache of " + std::to_string(cache) +
                         " rows");
    if (window > 0 && prefill + decode > window)
      throw config_error("kforge::model: config '" + name + "' attends over a sliding window of " + std::to_string(window) +
                         " positions, which kforge's dense attention computes exactly only while a run fits it; prefill " +
                         std::to_string(prefill) + " + decode " + std::to_string(decode) + " tokens go past it");
    if (learned_positions > 0 && prefill + decode > learned_positions)
      throw config_error("kforge::model: config '" + name + "' has a learned table of " + std::to_string(learned_positions) +
                         " positions; prefill " + std::to_string(prefill) + " + decode " + std::to_string(decode) +
                         " tokens go past it");
  }
};

/// The names preset() knows.
inline std::vector<std::string> preset_names() { return {"tiny", "gpt2-small", "llama3-8b"}; }

/// A named preset (see the file's comment), validated.
inline config preset(std::string_view name) {
  config c;
  c.name = std::string(name);
  if (name == "tiny") {
    c.hidden = 72, c.heads = 4, c.kv_heads = 2, c.head_dim = 16, c.mlp = 100, c.vocab = 97, c.layers = 2;
  } else if (name == "gpt2-small") {
    c.hidden = 768, c.heads = 12, c.kv_heads = 12, c.head_dim = 64, c.mlp = 3072, c.vocab = 50257, c.layers = 1;
    c.norm = norm_kind::layer_norm;
    c.mlp_type = mlp_kind::plain;
    c.activation = fn::gelu_tanh;
    c.rope = false;
    c.bias = true;
    c.learned_positions = 1024;
    c.tied_embeddings = true;
  } else if (name == "llama3-8b") {
    c.hidden = 4096, c.heads = 32, c.kv_heads = 8, c.head_dim = 128, c.mlp = 14336, c.vocab = 128256, c.layers = 1;
    c.rope_base = 500000.0f;
  } else {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw config_error("kforge::model: unknown preset '" + std::string(name) + "' (known: " + known + ")");
  }
  c.validate();
  return c;
}

}  // namespace kforge::model
