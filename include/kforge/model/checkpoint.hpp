// kforge/model/checkpoint.hpp — Hugging Face checkpoints into kforge::model:
// config.json into a model::config, the safetensors weights (one file or
// shards with model.safetensors.index.json) into model::weights.
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

/// A Hugging Face checkpoint opened: its config and its mapped safetensors
/// files, every tensor name once.
struct checkpoint {
  std::filesystem::path dir;
  config cfg;
  std::vector<std::unique_ptr<safetensors_file>> files;
  std::map<std::string, const st_tensor*> tensors;

  const st_tensor* find(const std::string& name) const {
    auto it = tensors.find(name);
    return it == tensors.end() ? nullptr : it->second;
  }
  /// Bytes of the safetensors files.
  double file_bytes() const {
    double b = 0;
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

/// Opens the checkpoint in directory `dir` (config.json beside
/// model.safetensors or model.safetensors.index.json and its shards): the
/// config read, every file mapped and its header checked, the index's
/// shards confined to the directory, each tensor in exactly one file and
/// where the index says. Throws checkpoint_error, config_error.
inline checkpoint open_checkpoint(const std::filesystem::path& dir) {
  checkpoint ck;
  ck.dir = dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec))
    throw checkpoint_error("kforge: checkpoint '" + dir.string() + "' is not a directory (it holds config.json and *.safetensors)");
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

/// Calls place(dst buffer, dst dims, parts) for every weight of config c's
/// architecture, in Hugging Face's names.
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
  place(w.embed, shape{v, d}, std::vector<P>{{"model.embed_tokens.weight", {v, d}}});
  for (index_t l = 0; l < c.layers; ++l) {
    auto& L = w.layers[static_cast<std::size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    place(L.attn_norm_w, shape{d}, std::vector<P>{{p + "input_layernorm.weight", {d}}});
    place(L.wq, shape{d, q}, std::vector<P>{{p + "self_attn.q_proj.weight", {q, d}, true}});
    place(L.wk, shape{d, kv}, std::vector<P>{{p + "self_attn.k_proj.weight", {kv, d}, true}});
    place(L.wv, shape{d, kv}, std::vector<P>{{p + "self_attn.v_proj.weight", {kv, d}, true}});
    place(L.wo, shape{q, d}, std::vector<P>{{p + "self_attn.o_proj.weight", {d, q}, true}});
    if (c.bias || c.qkv_bias) {
      place(L.bq, shape{q}, std::vector<P>{{p + "self_attn.q_proj.bias", {q}}});
      place(L.bk, shape{kv}, std::vector<P>{{p + "self_attn.k_proj.bias", {kv}}});
      place(L.bv, shape{kv}, std::vector<P>{{p + "self_attn.v_proj.bias", {kv}}});
    }
    place(L.mlp_norm_w, shape{d}, std::vector<P>{{p + "post_attention_layernorm.weight", {d}}});
    place(L.w_up, shape{d, 2 * f},
          std::vector<P>{{p + "mlp.gate_proj.weight", {f, d}, true, 0}, {p + "mlp.up_proj.weight", {f, d}, true, f}});
    place(L.w_down, shape{f, d}, std::vector<P>{{p + "mlp.down_proj.weight", {d, f}, true}});
    if (c.bias) {
      place(L.bo, shape{d}, std::vector<P>{{p + "self_attn.o_proj.bias", {d}}});
      place(L.b_up, shape{2 * f}, std::vector<P>{{p + "mlp.gate_proj.bias", {f}, false, 0}, {p + "mlp.up_proj.bias", {f}, false, f}});
      place(L.b_down, shape{d}, std::vector<P>{{p + "mlp.down_proj.bias", {d}}});
    }
  }
  place(w.final_norm_w, shape{d}, std::vector<P>{{"model.norm.weight", {d}}});
  place(w.lm_head, shape{d, v},
        std::vector<P>{c.tied_embeddings ? P{"model.embed_tokens.weight", {v, d}, true} : P{"lm_head.weight", {v, d}, true}});
}

/// Tensors transformers saves beside the weights that are not parameters.
inline bool hf_buffer_tensor(const checkpoint& ck, const std::string& name) {
  auto ends = [&](std::string_view s) { return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0; };
  if (ck.cfg.name == "GPT2LMHeadModel") return ends(".attn.bias") || ends(".attn.masked_bias");
  return ends(".rotary_emb.inv_freq");
}
}  // namespace detail

/// The checkpoint's weights in T (float, half, bfloat16), laid out as
/// model::weights holds them (see the file's comment). Every tensor's name,
/// shape and dtype are checked, and the bytes against max_bytes, before any
/// buffer is allocated. Throws checkpoint_error, memory_error.
template <class T>
weights<host_buffer<T>> load_weights(const checkpoint& ck, const memory_limit& limit = host_memory_limit()) {
  using B = host_buffer<T>;
  weights<B> w;
  std::set<std::string> used;
  const std::string where = "kforge: checkpoint '" + ck.dir.string() + "'";
  double bytes = 0;
  detail::hf_layout(ck, w, [&](B&, shape dims, const std::vector<detail::hf_part>& parts) {
    bytes += static_cast<double>(dims.numel()) * sizeof(T);
    for (const auto& p : parts) {
      const st_tensor* t = ck.find(p.name);
      if (!t) throw checkpoint_error(where + " has no tensor '" + p.name + "', which a " + ck.cfg.name + " of this config needs");
      if (t->dims != p.dims)
        throw checkpoint_error(where + ": tensor '" + p.name + "' is " + t->dims_text() + ", config.json makes it " + extents_text(p.dims));
      if (!convertible(t->dtype))
        throw checkpoint_error(where + ": tensor '" + p.name + "' is " + std::string(st_info(t->dtype).name) +
                               "; kforge loads F32, F16 and BF16 tensors");
      used.insert(p.name);
    }
  });
  for (const auto& [name, t] : ck.tensors)
    if (!used.count(name) && !detail::hf_buffer_tensor(ck, name) && !(ck.cfg.tied_embeddings && name == "lm_head.weight"))
      throw checkpoint_error(where + ": tensor '" + name + "' " + t->dims_text() + " has no place in a " + ck.cfg.name +
                             " of this config.json (a field kforge does not read?)");
  if (bytes > limit.bytes)
    throw memory_error(where + ": the weights take " + bytes_text(bytes) + " as " + std::string(to_string(dtype_of<T>())) +
                       ", more than the " + bytes_text(limit.bytes) + " limit (" + limit.what + ")");
  detail::hf_layout(ck, w, [&](B& dst, shape dims, const std::vector<detail::hf_part>& parts) {
    dst = B(dims);
    const auto ld = static_cast<std::size_t>(dims.rank() == 2 ? dims[1] : dims[0]);
    for (const auto& p : parts) {
      const st_tensor& t = *ck.find(p.name);
      const auto [rows, cols] = matrix_dims(t);
      const st_block b{p.b.r0, p.b.nr < 0 ? rows : p.b.nr, p.b.c0, p.b.nc < 0 ? cols : p.b.nc};
      read_block(t, b, dst.data.data() + p.col, ld, p.transpose);
    }
  });
  return w;
}

}  // namespace kforge::model
