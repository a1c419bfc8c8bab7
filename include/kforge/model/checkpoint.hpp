// kforge/model/checkpoint.hpp — checkpoints into kforge::model: a Hugging
// Face directory (config.json into a model::config, the safetensors weights,
// one file or shards with model.safetensors.index.json, into model::weights)
// or a GGUF file (its llama.cpp metadata and tensors; quantized projections
// kept as stored).
//
//   auto ck = kforge::model::open_checkpoint("path/to/dir");        // config checked, files mapped
//   auto w = kforge::model::load_weights<float>(ck);                  // F32/F16/BF16 → T, transposed for the gemms
//   kforge::model::host_session<float, kforge::policy::threaded<>> s(ck.cfg, w, 4096);
//
// A run means what `transformers` computes for the checkpoint (PRINCIPLES):
// every config.json field that changes the math is read, and a value kforge
// does not implement is a checkpoint_error naming the field — never an
// approximation. Architectures:
//   LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM: RMSNorm, RoPE of
//     rope_theta with Hugging Face's half-split pairs ("default" rope type
//     only: Llama 3's "llama3" scaling and the others are refused), SwiGLU
//     (hidden_act silu; gelu and gelu_pytorch_tanh gated too), GQA, head_dim,
//     tie_word_embeddings; Llama's attention_bias with mlp_bias (all six
//     projections) and Qwen2's q/k/v biases; a sliding window (Mistral's
//     sliding_window, Qwen2's use_sliding_window) becomes config.window:
//     runs within it are exact, longer runs refused.
//   GPT2LMHeadModel: LayerNorm, learned positions (n_positions), the fused
//     c_attn split into q, k, v, Conv1D weights (already [in, out]),
//     activation_function gelu_new (tanh form), tied head.
// Every tensor of the checkpoint must be used (a tensor kforge does not
// place means a model it does not understand: checkpoint_error), but the
// buffers transformers saves beside the weights (GPT-2's attn.bias masks).
//
// Loading: the files are mapped, never read into a second buffer; the bytes
// the weights take in T are checked against the memory limit (half of
// available RAM) before any is allocated (memory_error with the bytes);
// each tensor is converted, and a linear layer's [out, in] transposed into
// the [in, out] the block's gemms read, in one pass on every core.
#pragma once

#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/file.hpp"
#include "kforge/core/json_read.hpp"
#include "kforge/model/config.hpp"
#include "kforge/model/gguf.hpp"
#include "kforge/model/safetensors.hpp"
#include "kforge/model/weights.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge::model {

/// The architectures config_from_hf reads.
inline std::vector<std::string> hf_architectures() {
  return {"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "GPT2LMHeadModel"};
}

namespace detail {
/// f(), its json_error (a checkpoint file of the wrong shape) as a checkpoint_error.
template <class F>
auto json_checked(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const json_error& e) {
    throw checkpoint_error(std::string("kforge: ") + e.what());
  }
}

/// Reads config.json members with the file named in every error.
struct hf_fields {
  const json_value& j;
  std::string file;
  std::string what(std::string_view key) const { return file + ": " + std::string(key); }
  [[noreturn]] void fail(std::string_view key, const std::string& why) const {
    throw checkpoint_error("kforge: " + what(key) + " " + why);
  }
  const json_value* get(std::string_view key) const {
    const json_value* v = j.find(key, file);
    return v && !v->is_null() ? v : nullptr;
  }
  index_t integer(std::string_view key) const {
    const json_value* v = get(key);
    if (!v) fail(key, "is missing");
    return json_checked([&] { return v->as_int(what(key)); });
  }
  index_t integer(std::string_view key, index_t fallback) const { return get(key) ? integer(key) : fallback; }
  double number(std::string_view key, double fallback) const {
    const json_value* v = get(key);
    return v ? json_checked([&] { return v->as_double(what(key)); }) : fallback;
  }
  bool flag(std::string_view key, bool fallback) const {
    const json_value* v = get(key);
    return v ? json_checked([&] { return v->as_bool(what(key)); }) : fallback;
  }
  std::string text(std::string_view key, std::string_view fallback) const {
    const json_value* v = get(key);
    return v ? json_checked([&] { return v->as_string(what(key)); }) : std::string(fallback);
  }
  /// key must be absent, null or `expected`.
  void require(std::string_view key, bool expected, std::string_view why) const {
    if (get(key) && flag(key, expected) != expected)
      fail(key, "= " + std::string(expected ? "false" : "true") + " is not implemented by kforge (" + std::string(why) + ")");
  }
};

inline fn hf_activation(const hf_fields& f, std::string_view key, std::string_view fallback) {
  const std::string a = f.text(key, fallback);
  if (a == "silu" || a == "swish") return fn::silu;
  if (a == "gelu") return fn::gelu_erf;
  if (a == "gelu_new" || a == "gelu_pytorch_tanh" || a == "gelu_fast") return fn::gelu_tanh;
  if (a == "relu") return fn::relu;
  f.fail(key, "= \"" + a + "\" is an activation kforge does not implement (silu, gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

/// The RoPE base of a Llama-family config: rope_theta (transformers 4) or
/// rope_parameters.rope_theta (5); any rope type but "default" refused.
inline float hf_rope_base(const hf_fields& f) {
  double theta = f.number("rope_theta", 10000.0);
  for (const char* key : {"rope_scaling", "rope_parameters"}) {
    const json_value* r = f.get(key);
    if (!r) continue;
    const hf_fields sub{*r, f.file + ": " + key};
    const std::string type = sub.text("rope_type", sub.text("type", "default"));
    if (type != "default")
      f.fail(key, "has rope_type \"" + type + "\", which kforge does not implement (only the default RoPE; Llama 3's "
                  "\"llama3\" frequency scaling is not there yet)");
    if (sub.number("partial_rotary_factor", 1.0) != 1.0) f.fail(key, "has a partial_rotary_factor kforge does not implement");
    theta = sub.number("rope_theta", theta);
  }
  if (f.number("partial_rotary_factor", 1.0) != 1.0) f.fail("partial_rotary_factor", "!= 1 is not implemented by kforge");
  return static_cast<float>(theta);
}
}  // namespace detail

/// A model::config from a parsed config.json (`file` names it in errors).
/// Throws checkpoint_error for an architecture or a field value kforge does
/// not implement, config_error for a config that breaks its rules.
inline config config_from_hf(const json_value& j, const std::string& file) {
  if (!j.is_object()) throw checkpoint_error("kforge: " + file + " is " + std::string(json_value::kind_name(j.type())) + ", not an object");
  const detail::hf_fields f{j, file};
  std::string arch;
  if (const json_value* a = f.get("architectures")) {
    const auto& items = detail::json_checked([&]() -> const std::vector<json_value>& { return a->items(f.what("architectures")); });
    if (items.size() != 1) f.fail("architectures", "names " + std::to_string(items.size()) + " architectures; kforge loads one");
    arch = detail::json_checked([&] { return items[0].as_string(f.what("architectures")); });
  } else {
    const std::string mt = f.text("model_type", "");
    const std::map<std::string, std::string> by_type{
        {"llama", "LlamaForCausalLM"}, {"mistral", "MistralForCausalLM"}, {"qwen2", "Qwen2ForCausalLM"}, {"gpt2", "GPT2LMHeadModel"}};
    if (auto it = by_type.find(mt); it != by_type.end()) arch = it->second;
    else f.fail("architectures", "is missing and model_type \"" + mt + "\" is not one kforge knows");
  }
  config c;
  c.name = arch;
  if (arch == "GPT2LMHeadModel") {
    c.hidden = f.integer("n_embd");
    c.heads = c.kv_heads = f.integer("n_head");
    if (c.heads <= 0 || c.hidden % c.heads)
      f.fail("n_head", "= " + std::to_string(c.heads) + " does not divide n_embd = " + std::to_string(c.hidden));
    c.head_dim = c.hidden / c.heads;
    c.mlp = f.integer("n_inner", 4 * c.hidden);
    c.vocab = f.integer("vocab_size");
    c.layers = f.integer("n_layer");
    c.norm = norm_kind::layer_norm;
    c.norm_eps = static_cast<float>(f.number("layer_norm_epsilon", 1e-5));
    c.mlp_type = mlp_kind::plain;
    c.activation = detail::hf_activation(f, "activation_function", "gelu_new");
    c.rope = false;
    c.bias = true;
    c.learned_positions = f.integer("n_positions");
    c.tied_embeddings = f.flag("tie_word_embeddings", true);
    f.require("scale_attn_weights", true, "attention scores are scaled by 1/sqrt(head_dim)");
    f.require("scale_attn_by_inverse_layer_idx", false, "scores scaled by 1/(layer + 1)");
    f.require("add_cross_attention", false, "an encoder-decoder model");
  } else if (arch == "LlamaForCausalLM" || arch == "MistralForCausalLM" || arch == "Qwen2ForCausalLM") {
    c.hidden = f.integer("hidden_size");
    c.heads = f.integer("num_attention_heads");
    c.kv_heads = f.integer("num_key_value_heads", c.heads);
    if (!f.get("head_dim") && (c.heads <= 0 || c.hidden % c.heads))
      f.fail("num_attention_heads", "= " + std::to_string(c.heads) + " does not divide hidden_size = " + std::to_string(c.hidden) +
                                        " and there is no head_dim");
    c.head_dim = f.integer("head_dim", c.heads > 0 ? c.hidden / c.heads : 0);
    c.mlp = f.integer("intermediate_size");
    c.vocab = f.integer("vocab_size");
    c.layers = f.integer("num_hidden_layers");
    c.norm_eps = static_cast<float>(f.number("rms_norm_eps", 1e-6));
    c.activation = detail::hf_activation(f, "hidden_act", "silu");
    c.rope_base = detail::hf_rope_base(f);
    c.tied_embeddings = f.flag("tie_word_embeddings", false);
    if (arch == "LlamaForCausalLM") {
      const bool attn = f.flag("attention_bias", false), mlp = f.flag("mlp_bias", false);
      if (attn != mlp)
        f.fail(attn ? "attention_bias" : "mlp_bias", "without " + std::string(attn ? "mlp_bias" : "attention_bias") +
                                                       " is not implemented by kforge (biases on all projections or none)");
      c.bias = attn;
      const index_t tp = f.integer("pretraining_tp", 1);
      if (tp < 1) f.fail("pretraining_tp", "= " + std::to_string(tp) + " must be >= 1");
    } else if (arch == "Qwen2ForCausalLM") {
      c.qkv_bias = true;
      if (f.flag("use_sliding_window", false)) {
        if (f.integer("max_window_layers", 0) < c.layers)
          c.window = f.integer("sliding_window");
      }
    } else {
      c.window = f.integer("sliding_window", 0);
    }
    if (const json_value* lt = f.get("layer_types"))
      detail::json_checked([&] {
        for (const auto& t : lt->items(f.what("layer_types"))) {
          const std::string& s = t.as_string(f.what("layer_types"));
          if (s == "sliding_attention") c.window = f.integer("sliding_window");
          else if (s != "full_attention") f.fail("layer_types", "holds \"" + s + "\", which kforge does not implement");
        }
      });
  } else {
    std::string known;
    for (const auto& n : hf_architectures()) known += (known.empty() ? "" : ", ") + n;
    f.fail("architectures", "names \"" + arch + "\", which kforge does not load (it loads " + known + ")");
  }
  c.validate();
  return c;
}

/// A checkpoint opened: its config and its mapped files — a Hugging Face
/// directory's safetensors, or one GGUF file — every tensor name once.
/// Dense tensors (F32/F16/BF16; a GGUF one seen with its extents outermost
/// first, as safetensors and PyTorch give them) are in `tensors`; GGUF's
/// Q8_0, Q4_0 and MXFP4 tensors in `quantized`, with their format.
struct checkpoint {
  std::filesystem::path dir;  ///< the directory, or the GGUF file
  std::string format;         ///< "safetensors" or "gguf"
  config cfg;
  std::vector<std::unique_ptr<safetensors_file>> files;
  std::unique_ptr<gguf_file> gguf;
  std::vector<st_tensor> gguf_views;  ///< the GGUF file's dense tensors as st_tensors
  std::map<std::string, const st_tensor*> tensors;
  std::map<std::string, std::pair<const gguf_tensor*, qformat>> quantized;
  /// A GGUF tensor of a type kforge does not load (q4_K, ...): named in the error where it is needed.
  std::map<std::string, const gguf_tensor*> unloadable;

  const st_tensor* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : it->second;
  }
  bool has(const std::string& name) const { return tensors.count(name) || quantized.count(name) || unloadable.count(name); }
  /// Bytes of the mapped files.
  double file_bytes() const {
    double b = gguf ? static_cast<double>(gguf->file_bytes()) : 0.0;
    for (const auto& f : files) b += static_cast<double>(f->file_bytes());
    return b;
  }
};

namespace detail {
inline std::string read_checkpoint_json(const std::filesystem::path& p, std::string_view what) {
  try {
    return read_regular_file(p, file_limits::report, what);
  } catch (const file_error& e) {
    throw checkpoint_error(e.what());
  }
}
inline json_value parse_checkpoint_json(const std::string& text, const std::string& name) {
  return json_checked([&] { return parse_json(text, name); });
}
}  // namespace detail

namespace detail {
/// open_checkpoint of a Hugging Face directory.
inline checkpoint open_hf_checkpoint(const std::filesystem::path& dir) {
  checkpoint ck;
  ck.dir = dir;
  ck.format = "safetensors";
  std::error_code ec;
  const auto cfg_path = dir / "config.json";
  ck.cfg = config_from_hf(detail::parse_checkpoint_json(detail::read_checkpoint_json(cfg_path, "config.json"), cfg_path.string()),
                          cfg_path.string());
  const auto single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
  std::map<std::string, std::string> weight_map;  // tensor -> file, from the index
  std::vector<std::string> names;
  if (std::filesystem::exists(index, ec)) {
    const std::string what = index.string();
    const json_value j = detail::parse_checkpoint_json(detail::read_checkpoint_json(index, "checkpoint index"), what);
    std::set<std::string> seen;
    detail::json_checked([&] {
      for (const auto& [tensor, file] : j.at("weight_map", what).members(what + ": weight_map")) {
        const std::string& f = file.as_string(what + ": weight_map." + tensor);
        if (f.empty() || f.find('/') != std::string::npos || f == "." || f == "..")
          throw checkpoint_error("kforge: " + what + ": weight_map puts '" + tensor + "' in \"" + f +
                                 "\", not a file name in the checkpoint's directory");
        weight_map[tensor] = f;
        if (seen.insert(f).second) names.push_back(f);
      }
    });
    if (names.empty()) throw checkpoint_error("kforge: " + what + ": weight_map names no tensor");
  } else if (std::filesystem::exists(single, ec)) {
    names.push_back("model.safetensors");
  } else {
    throw checkpoint_error("kforge: checkpoint '" + dir.string() + "' has neither model.safetensors nor model.safetensors.index.json");
  }
  for (const auto& n : names) {
    ck.files.push_back(std::make_unique<safetensors_file>(dir / n));
    for (const st_tensor& t : ck.files.back()->tensors()) {
      if (!weight_map.empty()) {
        auto it = weight_map.find(t.name);
        if (it == weight_map.end() || it->second != n)
          throw checkpoint_error("kforge: checkpoint '" + dir.string() + "': tensor '" + t.name + "' is in " + n + ", but the index " +
                                 (it == weight_map.end() ? std::string("does not list it") : "puts it in " + it->second));
      }
      if (!ck.tensors.emplace(t.name, &t).second)
        throw checkpoint_error("kforge: checkpoint '" + dir.string() + "': tensor '" + t.name + "' is in two files");
    }
  }
  for (const auto& [tensor, file] : weight_map)
    if (!ck.tensors.count(tensor))
      throw checkpoint_error("kforge: checkpoint '" + dir.string() + "': the index puts '" + tensor + "' in " + file +
                             ", which does not hold it");
  return ck;
}

/// GGUF metadata of one architecture ("llama.embedding_length"), the file named in every error.
struct gguf_fields {
  const gguf_file& f;
  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw checkpoint_error("kforge: GGUF file '" + f.path().string() + "': " + key + " " + why);
  }
  const gguf_value* get(const std::string& key) const { return f.find(key); }
  index_t integer(const std::string& key) const {
    const gguf_value* v = get(key);
    if (!v) fail(key, "is missing");
    switch (v->type) {
      case gguf_type::u8: case gguf_type::u16: case gguf_type::u32: case gguf_type::u64:
        if (v->u > static_cast<std::uint64_t>(INT64_MAX)) fail(key, "= " + std::to_string(v->u) + " is too large");
        return static_cast<index_t>(v->u);
      case gguf_type::i8: case gguf_type::i16: case gguf_type::i32: case gguf_type::i64: return v->i;
      default: fail(key, "is not an integer");
    }
  }
  index_t integer(const std::string& key, index_t fallback) const { return get(key) ? integer(key) : fallback; }
  double number(const std::string& key, double fallback) const {
    const gguf_value* v = get(key);
    if (!v) return fallback;
    if (v->type == gguf_type::f32 || v->type == gguf_type::f64) return v->f;
    return static_cast<double>(integer(key));
  }
  std::string text(const std::string& key, const std::string& fallback) const {
    const gguf_value* v = get(key);
    if (!v) return fallback;
    if (v->type != gguf_type::string) fail(key, "is not a string");
    return v->s;
  }
};

/// config from a GGUF file's metadata (llama.cpp's keys) for the
/// architectures kforge loads from GGUF: llama (Llama, Mistral: q and k
/// stored permuted for interleaved RoPE pairs, llama.cpp's "normal" rope)
/// and qwen2 (q/k/v biases, half-split pairs).
inline config config_from_gguf(const checkpoint& ck) {
  const gguf_file& g = *ck.gguf;
  const gguf_fields f{g};
  const std::string arch = f.text("general.architecture", "");
  const std::string a = arch + ".";
  config c;
  c.name = "gguf:" + arch;
  if (arch != "llama" && arch != "qwen2")
    f.fail("general.architecture", "= \"" + arch + "\" is not one kforge loads from GGUF (llama, qwen2)");
  c.hidden = f.integer(a + "embedding_length");
  c.layers = f.integer(a + "block_count");
  c.mlp = f.integer(a + "feed_forward_length");
  c.heads = f.integer(a + "attention.head_count");
  c.kv_heads = f.integer(a + "attention.head_count_kv", c.heads);
  if (c.heads <= 0) f.fail(a + "attention.head_count", "= " + std::to_string(c.heads) + " must be > 0");
  if (!f.get(a + "attention.key_length") && c.hidden % c.heads)
    f.fail(a + "attention.head_count", "= " + std::to_string(c.heads) + " does not divide " + a + "embedding_length = " +
                                           std::to_string(c.hidden) + " and there is no " + a + "attention.key_length");
  c.head_dim = f.integer(a + "attention.key_length", c.hidden / c.heads);
  if (f.integer(a + "attention.value_length", c.head_dim) != c.head_dim)
    f.fail(a + "attention.value_length", "differs from the key length, which kforge's attention does not implement");
  if (f.integer(a + "expert_count", 0) > 0) f.fail(a + "expert_count", "> 0: a mixture of experts, which kforge does not implement");
  const gguf_tensor* embd = g.tensor("token_embd.weight");
  if (!embd || embd->ne.size() != 2) f.fail("token_embd.weight", "is missing or not a matrix");
  c.vocab = f.integer(a + "vocab_size", embd->ne[1]);
  c.tied_embeddings = !ck.has("output.weight");
  {
    c.norm_eps = static_cast<float>(f.number(a + "attention.layer_norm_rms_epsilon", 1e-5));
    c.rope_base = static_cast<float>(f.number(a + "rope.freq_base", 10000.0));
    c.rope_interleaved = arch == "llama";
    c.qkv_bias = arch == "qwen2";
    if (f.integer(a + "rope.dimension_count", c.head_dim) != c.head_dim)
      f.fail(a + "rope.dimension_count", "rotates part of each head, which kforge's RoPE does not implement");
    const std::string scaling = f.text(a + "rope.scaling.type", "none");
    if (scaling != "none") f.fail(a + "rope.scaling.type", "= \"" + scaling + "\" is not implemented by kforge");
    if (ck.has("rope_freqs.weight"))
      f.fail("rope_freqs.weight", "(per-frequency RoPE factors, Llama 3's scaling) is not implemented by kforge");
    if (f.get(a + "attention.sliding_window")) c.window = f.integer(a + "attention.sliding_window");
  }
  c.validate();
  return c;
}

/// open_checkpoint of a GGUF file.
inline checkpoint open_gguf_checkpoint(const std::filesystem::path& file) {
  checkpoint ck;
  ck.dir = file;
  ck.format = "gguf";
  ck.gguf = std::make_unique<gguf_file>(file);
  ck.gguf_views.reserve(ck.gguf->tensors().size());
  for (const gguf_tensor& t : ck.gguf->tensors()) {
    st_tensor v;
    v.name = t.name;
    v.dims.assign(t.ne.rbegin(), t.ne.rend());
    v.bytes = t.bytes;
    switch (t.type) {
      case ggml_type_id::f32: v.dtype = st_dtype::f32; break;
      case ggml_type_id::f16: v.dtype = st_dtype::f16; break;
      case ggml_type_id::bf16: v.dtype = st_dtype::bf16; break;
      case ggml_type_id::q8_0: ck.quantized[t.name] = {&t, qformat::q8_0}; continue;
      case ggml_type_id::q4_0: ck.quantized[t.name] = {&t, qformat::q4_0}; continue;
      case ggml_type_id::mxfp4: ck.quantized[t.name] = {&t, qformat::mxfp4}; continue;
      default: ck.unloadable[t.name] = &t; continue;
    }
    ck.gguf_views.push_back(std::move(v));
    ck.tensors[t.name] = &ck.gguf_views.back();
  }
  ck.cfg = config_from_gguf(ck);
  return ck;
}
}  // namespace detail

/// Opens a checkpoint: a Hugging Face directory (config.json beside
/// model.safetensors or model.safetensors.index.json and its shards — the
/// config read, every file mapped and its header checked, the index's shards
/// confined to the directory, each tensor in exactly one file and where the
/// index says) or a GGUF file (its metadata read as the config, its tensors
/// checked as ggml's reader does). Throws checkpoint_error, config_error.
inline checkpoint open_checkpoint(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) return detail::open_gguf_checkpoint(path);
  if (!std::filesystem::is_directory(path, ec))
    throw checkpoint_error("kforge: checkpoint '" + path.string() +
                           "' is neither a directory (config.json and *.safetensors) nor a GGUF file");
  return detail::open_hf_checkpoint(path);
}

namespace detail {
/// One source of a weight: block b of tensor `name` (whole: nr/nc = -1),
/// written at column `col` of the destination, transposed or not.
struct hf_part {
  std::string name;
  std::vector<std::int64_t> dims;  ///< the tensor's expected extents
  bool transpose = false;
  std::int64_t col = 0;            ///< destination column of the block's first
  st_block b{0, -1, 0, -1};
};

/// A Llama-family tensor's name in llama.cpp's GGUF naming, from its Hugging Face name.
inline std::string gguf_name(std::string n) {
  static const std::pair<std::string_view, std::string_view> map[] = {
      {"model.embed_tokens.", "token_embd."}, {"model.norm.", "output_norm."}, {"lm_head.", "output."}, {"model.layers.", "blk."},
      {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
      {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"}, {"mlp.gate_proj", "ffn_gate"},
      {"mlp.up_proj", "ffn_up"}, {"mlp.down_proj", "ffn_down"}};
  for (const auto& [from, to] : map)
    if (auto at = n.find(from); at != std::string::npos) n.replace(at, from.size(), to);
  return n;
}

/// Calls place(dst buffer, dst dims, parts) for every weight of config c's
/// architecture, in Hugging Face's names (a GGUF file: llama.cpp's names, its
/// tensors seen with PyTorch's extents, so the same parts).
template <class Buf, class Place>
void hf_layout(const checkpoint& ck, weights<Buf>& w, Place&& place) {
  const config& c = ck.cfg;
  using P = hf_part;
  const index_t d = c.hidden, v = c.vocab;
  w.layers.resize(static_cast<std::size_t>(c.layers));
  if (c.name == "GPT2LMHeadModel") {
    const std::string pre = ck.find("transformer.wte.weight") ? "transformer." : "";
    place(w.embed, shape{v, d}, std::vector<P>{{pre + "wte.weight", {v, d}}});
    place(w.positions, shape{c.learned_positions, d}, std::vector<P>{{pre + "wpe.weight", {c.learned_positions, d}}});
    for (index_t l = 0; l < c.layers; ++l) {
      auto& L = w.layers[static_cast<std::size_t>(l)];
      const std::string p = pre + "h." + std::to_string(l) + ".";
      place(L.attn_norm_w, shape{d}, std::vector<P>{{p + "ln_1.weight", {d}}});
      place(L.attn_norm_b, shape{d}, std::vector<P>{{p + "ln_1.bias", {d}}});
      Buf* qkv[] = {&L.wq, &L.wk, &L.wv};
      Buf* qkv_b[] = {&L.bq, &L.bk, &L.bv};
      for (index_t i = 0; i < 3; ++i) {
        place(*qkv[i], shape{d, d}, std::vector<P>{{p + "attn.c_attn.weight", {d, 3 * d}, false, 0, {0, d, i * d, d}}});
        place(*qkv_b[i], shape{d}, std::vector<P>{{p + "attn.c_attn.bias", {3 * d}, false, 0, {0, 1, i * d, d}}});
      }
      place(L.wo, shape{d, d}, std::vector<P>{{p + "attn.c_proj.weight", {d, d}}});
      place(L.bo, shape{d}, std::vector<P>{{p + "attn.c_proj.bias", {d}}});
      place(L.mlp_norm_w, shape{d}, std::vector<P>{{p + "ln_2.weight", {d}}});
      place(L.mlp_norm_b, shape{d}, std::vector<P>{{p + "ln_2.bias", {d}}});
      place(L.w_up, shape{d, c.mlp}, std::vector<P>{{p + "mlp.c_fc.weight", {d, c.mlp}}});
      place(L.b_up, shape{c.mlp}, std::vector<P>{{p + "mlp.c_fc.bias", {c.mlp}}});
      place(L.w_down, shape{c.mlp, d}, std::vector<P>{{p + "mlp.c_proj.weight", {c.mlp, d}}});
      place(L.b_down, shape{d}, std::vector<P>{{p + "mlp.c_proj.bias", {d}}});
    }
    place(w.final_norm_w, shape{d}, std::vector<P>{{pre + "ln_f.weight", {d}}});
    place(w.final_norm_b, shape{d}, std::vector<P>{{pre + "ln_f.bias", {d}}});
    place(w.lm_head, shape{d, v},
          std::vector<P>{c.tied_embeddings ? P{pre + "wte.weight", {v, d}, true} : P{"lm_head.weight", {v, d}, true}});
    return;
  }
  const index_t q = c.q_dim(), kv = c.kv_dim(), f = c.mlp;
  const bool gguf = ck.format == "gguf";
  auto place_named = [&](Buf& dst, shape dims, std::vector<P> parts) {
    if (gguf)
      for (P& p : parts) p.name = gguf_name(p.name);
    place(dst, dims, parts);
  };
  place_named(w.embed, shape{v, d}, std::vector<P>{{"model.embed_tokens.weight", {v, d}}});
  for (index_t l = 0; l < c.layers; ++l) {
    auto& L = w.layers[static_cast<std::size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    place_named(L.attn_norm_w, shape{d}, std::vector<P>{{p + "input_layernorm.weight", {d}}});
    place_named(L.wq, shape{d, q}, std::vector<P>{{p + "self_attn.q_proj.weight", {q, d}, true}});
    place_named(L.wk, shape{d, kv}, std::vector<P>{{p + "self_attn.k_proj.weight", {kv, d}, true}});
    place_named(L.wv, shape{d, kv}, std::vector<P>{{p + "self_attn.v_proj.weight", {kv, d}, true}});
    place_named(L.wo, shape{q, d}, std::vector<P>{{p + "self_attn.o_proj.weight", {d, q}, true}});
    if (c.bias || c.qkv_bias) {
      place_named(L.bq, shape{q}, std::vector<P>{{p + "self_attn.q_proj.bias", {q}}});
      place_named(L.bk, shape{kv}, std::vector<P>{{p + "self_attn.k_proj.bias", {kv}}});
      place_named(L.bv, shape{kv}, std::vector<P>{{p + "self_attn.v_proj.bias", {kv}}});
    }
    place_named(L.mlp_norm_w, shape{d}, std::vector<P>{{p + "post_attention_layernorm.weight", {d}}});
    place_named(L.w_up, shape{d, 2 * f},
          std::vector<P>{{p + "mlp.gate_proj.weight", {f, d}, true, 0}, {p + "mlp.up_proj.weight", {f, d}, true, f}});
    place_named(L.w_down, shape{f, d}, std::vector<P>{{p + "mlp.down_proj.weight", {d, f}, true}});
    if (c.bias) {
      place_named(L.bo, shape{d}, std::vector<P>{{p + "self_attn.o_proj.bias", {d}}});
      place_named(L.b_up, shape{2 * f}, std::vector<P>{{p + "mlp.gate_proj.bias", {f}, false, 0}, {p + "mlp.up_proj.bias", {f}, false, f}});
      place_named(L.b_down, shape{d}, std::vector<P>{{p + "mlp.down_proj.bias", {d}}});
    }
  }
  place_named(w.final_norm_w, shape{d}, std::vector<P>{{"model.norm.weight", {d}}});
  place_named(w.lm_head, shape{d, v},
        std::vector<P>{c.tied_embeddings ? P{"model.embed_tokens.weight", {v, d}, true} : P{"lm_head.weight", {v, d}, true}});
}

/// Tensors transformers saves beside the weights that are not parameters.
inline bool hf_buffer_tensor(const checkpoint& ck, const std::string& name) {
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
  if (ck.cfg.name == "GPT2LMHeadModel") return ends(".attn.bias") || ends(".attn.masked_bias");
  return ends(".rotary_emb.inv_freq");
}
}  // namespace detail

namespace detail {
/// Where a part's tensor is and what it holds, or checkpoint_error.
struct part_source {
  const st_tensor* dense = nullptr;
  const gguf_tensor* q = nullptr;
  qformat format = qformat::q8_0;
};
inline part_source source_of(const checkpoint& ck, const hf_part& p, const std::string& where) {
  part_source s;
  std::vector<std::int64_t> dims;
  if ((s.dense = ck.find(p.name))) {
    dims = s.dense->dims;
    if (!convertible(s.dense->dtype))
      throw checkpoint_error(where + ": tensor '" + p.name + "' is " + std::string(st_info(s.dense->dtype).name) +
                             "; kforge loads F32, F16 and BF16 tensors");
  } else if (auto it = ck.quantized.find(p.name); it != ck.quantized.end()) {
    s.q = it->second.first;
    s.format = it->second.second;
    dims.assign(s.q->ne.rbegin(), s.q->ne.rend());
  } else if (auto u = ck.unloadable.find(p.name); u != ck.unloadable.end()) {
    throw checkpoint_error(where + ": tensor '" + p.name + "' is " + std::string(find_ggml_type(u->second->type)->name) +
                           "; kforge loads F32, F16, BF16, Q8_0, Q4_0 and MXFP4 tensors");
  } else {
    throw checkpoint_error(where + " has no tensor '" + p.name + "', which a " + ck.cfg.name + " of this config needs");
  }
  if (dims != p.dims)
    throw checkpoint_error(where + ": tensor '" + p.name + "' is " + extents_text(dims) + ", the config makes it " + extents_text(p.dims));
  return s;
}

/// Whether the parts of a projection [in, out] are quantized rows that
/// stack into its Wᵀ [out, in] as they are (one format, each part whole
/// rows of its tensor, transposed, at consecutive columns): kept quantized.
inline bool stacks_quantized(const std::vector<part_source>& src, const std::vector<hf_part>& parts, shape dims) {
  if (dims.rank() != 2) return false;
  std::int64_t col = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const hf_part& p = parts[i];
    if (!src[i].q || src[i].format != src[0].format || !p.transpose || p.b.c0 != 0 || p.b.nc >= 0 || p.col != col) return false;
    col += p.b.nr < 0 ? p.dims[0] : p.b.nr;
  }
  return col == dims[1];
}
}  // namespace detail

/// The checkpoint's weights, each loaded as a host_buffer<T> (T: float,
/// half, bfloat16) laid out as model::weights holds them (see the file's
/// comment) and handed to keep(name, host_buffer<T>&&) -> Out, which keeps
/// it (load_weights) or uploads it and lets it go (vulkan_session from a
/// checkpoint: `streamed`, the host holds one weight at a time). Every
/// tensor's name, shape and type are checked, and the bytes — all of them,
/// or the largest one when streamed — against the limit, before any buffer
/// is allocated. A GGUF file's Q8_0, Q4_0 and MXFP4 projections and
/// LM head stay quantized as they are stored (their rows are kforge's
/// quantized_matrix rows: no re-quantising); a quantized tensor used
/// otherwise (an embedding table) is dequantized into T. Throws
/// checkpoint_error, memory_error.
template <class T, class Out, class Keep>
weights<Out> load_weights_as(const checkpoint& ck, Keep&& keep, bool streamed, const memory_limit& limit) {
  using B = host_buffer<T>;
  using detail::hf_part;
  weights<Out> w;
  std::set<std::string> used;
  const std::string where = "kforge: checkpoint '" + ck.dir.string() + "'";
  auto sources = [&](const std::vector<hf_part>& parts) {
    std::vector<detail::part_source> src;
    for (const auto& p : parts) src.push_back(detail::source_of(ck, p, where));
    return src;
  };
  double bytes = 0;
  detail::hf_layout(ck, w, [&](Out&, shape dims, const std::vector<hf_part>& parts) {
    const auto src = sources(parts);
    double b = static_cast<double>(dims.numel()) * sizeof(T);
    if (detail::stacks_quantized(src, parts, dims)) {
      const qformat_info in = info_of(src[0].format);
      b = static_cast<double>(dims.numel() / in.block * in.block_bytes);
    }
    bytes = streamed ? std::max(bytes, b) : bytes + b;
    for (const auto& p : parts) used.insert(p.name);
  });
  auto check_used = [&](const std::string& name, const std::string& dims) {
    if (!used.count(name) && !detail::hf_buffer_tensor(ck, name) && !(ck.cfg.tied_embeddings && name == "lm_head.weight"))
      throw checkpoint_error(where + ": tensor '" + name + "' " + dims + " has no place in a " + ck.cfg.name +
                             " of this config (a field kforge does not read?)");
  };
  for (const auto& [name, t] : ck.tensors) check_used(name, t->dims_text());
  for (const auto& [name, t] : ck.quantized) check_used(name, t.first->ne_text());
  for (const auto& [name, t] : ck.unloadable) check_used(name, t->ne_text());
  if (bytes > limit.bytes)
    throw memory_error(where + ": " + (streamed ? "its largest weight takes " : "the weights take ") + bytes_text(bytes) + " as " +
                       std::string(to_string(dtype_of<T>())) + ", more than the " + bytes_text(limit.bytes) + " limit (" + limit.what + ")");
  detail::hf_layout(ck, w, [&](Out& out, shape dims, const std::vector<hf_part>& parts) {
    const auto src = sources(parts);
    B dst;
    if (detail::stacks_quantized(src, parts, dims)) {
      std::vector<std::uint8_t> rows;
      for (const auto& s : src) rows.insert(rows.end(), reinterpret_cast<const std::uint8_t*>(s.q->bytes.data()),
                                            reinterpret_cast<const std::uint8_t*>(s.q->bytes.data()) + s.q->bytes.size());
      dst.dims = dims;
      try {
        dst.q = std::make_shared<const quantized_matrix>(src[0].format, dims[1], dims[0], std::move(rows));
      } catch (const error& e) {
        throw checkpoint_error(where + ": tensor '" + parts[0].name + "': " + e.what());
      }
      out = keep(parts[0].name, std::move(dst));
      return;
    }
    dst = B(dims);
    const auto ld = static_cast<std::size_t>(dims.rank() == 2 ? dims[1] : dims[0]);
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const hf_part& p = parts[i];
      st_tensor dequantized;  // a quantized tensor used densely: its f32 values
      std::vector<float> values;
      const st_tensor* t = src[i].dense;
      if (!t) {
        const index_t n = p.dims[0], k = p.dims[1];
        try {
          const quantized_matrix m(src[i].format, n, k,
                                   std::vector<std::uint8_t>(reinterpret_cast<const std::uint8_t*>(src[i].q->bytes.data()),
                                                             reinterpret_cast<const std::uint8_t*>(src[i].q->bytes.data()) + src[i].q->bytes.size()));
          values.resize(static_cast<std::size_t>(n * k));
          for (index_t r = 0; r < n; ++r) m.dequantize_row(r, values.data() + r * k);
        } catch (const error& e) {
          throw checkpoint_error(where + ": tensor '" + p.name + "': " + e.what());
        }
        dequantized.name = p.name;
        dequantized.dims = p.dims;
        dequantized.bytes = std::as_bytes(std::span<const float>(values));
        t = &dequantized;
      }
      const auto [rows, cols] = matrix_dims(*t);
      const st_block b{p.b.r0, p.b.nr < 0 ? rows : p.b.nr, p.b.c0, p.b.nc < 0 ? cols : p.b.nc};
      read_block(*t, b, dst.data.data() + p.col, ld, p.transpose);
    }
    out = keep(parts[0].name, std::move(dst));
  });
  return w;
}

/// The checkpoint's weights in T on the host (see load_weights_as).
template <class T>
weights<host_buffer<T>> load_weights(const checkpoint& ck, const memory_limit& limit = host_memory_limit()) {
  return load_weights_as<T, host_buffer<T>>(ck, [](const std::string&, host_buffer<T>&& b) { return std::move(b); }, false, limit);
}

}  // namespace kforge::model
