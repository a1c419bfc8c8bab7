// tests/checkpoint_checks.hpp — what the checkpoint-file tests share: the
// checked-in data's directory and the message of the checkpoint_error a
// call throws.
#pragma once

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "kforge/model.hpp"

namespace ktest {

/// tests/data/<sub> (ctest passes tests/data as KFORGE_TEST_DATA).
inline std::filesystem::path test_data(const std::string& sub) {
  const char* root = std::getenv("KFORGE_TEST_DATA");
  REQUIRE_MESSAGE(root != nullptr, "KFORGE_TEST_DATA names tests/data (ctest sets it)");
  return std::filesystem::path(root) / sub;
}

/// The message of the checkpoint_error f throws (fails the case if none).
template <class F>
std::string checkpoint_error_of(F&& f) {
  try {
    f();
  } catch (const kforge::model::checkpoint_error& e) {
    return e.what();
  }
  FAIL("no checkpoint_error thrown");
  return {};
}

inline void put(const std::filesystem::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

/// A Hugging Face checkpoint directory: config.json and one model.safetensors.
inline void write_checkpoint(const std::filesystem::path& dir, const std::string& config,
                             const std::vector<kforge::model::st_write_tensor>& tensors) {
  std::filesystem::create_directories(dir);
  put(dir / "config.json", config);
  put(dir / "model.safetensors", kforge::model::safetensors_bytes(tensors));
}

/// A Llama of hidden 64, 4 heads of 16 over 2 KV heads, MLP 96, vocab 40, 2 layers, as a Hugging Face
/// checkpoint (config.json, F32 tensors of seeded values: [out, in] for linear layers).
struct small_llama {
  static constexpr std::int64_t d = 64, h = 4, kv = 2, hd = 16, f = 96, v = 40, layers = 2;
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> spec;
  std::map<std::string, std::vector<float>> values;
  small_llama() {
    spec = {{"model.embed_tokens.weight", {v, d}}, {"model.norm.weight", {d}}, {"lm_head.weight", {v, d}}};
    for (int l = 0; l < layers; ++l) {
      const std::string p = "model.layers." + std::to_string(l) + ".";
      spec.insert(spec.end(), {{p + "input_layernorm.weight", {d}}, {p + "self_attn.q_proj.weight", {h * hd, d}},
                               {p + "self_attn.k_proj.weight", {kv * hd, d}}, {p + "self_attn.v_proj.weight", {kv * hd, d}},
                               {p + "self_attn.o_proj.weight", {d, h * hd}}, {p + "post_attention_layernorm.weight", {d}},
                               {p + "mlp.gate_proj.weight", {f, d}}, {p + "mlp.up_proj.weight", {f, d}}, {p + "mlp.down_proj.weight", {d, f}}});
    }
    std::uint64_t s = 0x1234;
    for (const auto& [name, dims] : spec) {
      auto& vals = values[name];
      vals.resize(static_cast<std::size_t>(kforge::model::numel_of(dims)));
      const bool norm = name.find("norm") != std::string::npos;
      for (float& x : vals) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const float u = static_cast<float>(s >> 40) / static_cast<float>(1ull << 24) - 0.5f;  // [-0.5, 0.5)
        x = norm ? 1.0f + 0.2f * u : (name.find("embed") != std::string::npos ? 2.0f : 0.5f) * u;
      }
    }
  }
  std::string config() const {
    return R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
      "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 40, "rms_norm_eps": 1e-05, "rope_theta": 10000.0})";
  }
  void write_hf(const std::filesystem::path& dir) const {
    std::vector<kforge::model::st_write_tensor> t;
    for (const auto& [name, dims] : spec) t.push_back(kforge::model::st_tensor_of<float>(name, dims, values.at(name)));
    write_checkpoint(dir, config(), t);
  }
  /// llama.cpp's conversion (convert_hf_to_gguf.py, LlamaModel): its tensor names, q and k rows permuted so that
  /// interleaved pairs (2i, 2i+1) hold Hugging Face's (i, i + hd/2); the projections in `q` where given.
  std::string gguf(std::optional<kforge::qformat> q) const {
    kforge::model::gguf_writer w;
    w.string("general.architecture", "llama").u32("llama.embedding_length", 64).u32("llama.block_count", 2);
    w.u32("llama.feed_forward_length", 96).u32("llama.attention.head_count", 4).u32("llama.attention.head_count_kv", 2);
    w.u32("llama.rope.dimension_count", 16).f32("llama.rope.freq_base", 10000.0f).f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
    const std::pair<std::string_view, std::string_view> names[] = {
        {"model.embed_tokens.weight", "token_embd.weight"}, {"model.norm.weight", "output_norm.weight"}, {"lm_head.weight", "output.weight"},
        {"input_layernorm.weight", "attn_norm.weight"}, {"self_attn.q_proj.weight", "attn_q.weight"}, {"self_attn.k_proj.weight", "attn_k.weight"},
        {"self_attn.v_proj.weight", "attn_v.weight"}, {"self_attn.o_proj.weight", "attn_output.weight"},
        {"post_attention_layernorm.weight", "ffn_norm.weight"}, {"mlp.gate_proj.weight", "ffn_gate.weight"},
        {"mlp.up_proj.weight", "ffn_up.weight"}, {"mlp.down_proj.weight", "ffn_down.weight"}};
    for (const auto& [name, dims] : spec) {
      std::string gname;
      for (const auto& [from, to] : names)
        if (name.size() >= from.size() && name.compare(name.size() - from.size(), from.size(), from) == 0)
          gname = name.rfind("model.layers.", 0) == 0 ? "blk." + name.substr(13, name.find('.', 13) - 13) + "." + std::string(to) : std::string(to);
      std::vector<float> x = values.at(name);
      const bool is_q = name.find("q_proj") != std::string::npos, is_k = name.find("k_proj") != std::string::npos;
      if (is_q || is_k) {  // permute(weights, n_head, n_head_kv): reshape (heads, 2, hd/2, in), swap axes 1 and 2
        const std::vector<float> src = x;
        const std::int64_t heads = is_q ? h : kv, in = dims[1];
        for (std::int64_t hh = 0; hh < heads; ++hh)
          for (std::int64_t i = 0; i < hd / 2; ++i)
            for (std::int64_t s2 = 0; s2 < 2; ++s2)
              std::copy_n(src.begin() + ((hh * hd + s2 * hd / 2 + i) * in), in, x.begin() + ((hh * hd + 2 * i + s2) * in));
      }
      const std::vector<std::int64_t> ne(dims.rbegin(), dims.rend());
      const bool projection = dims.size() == 2 && name.find("embed") == std::string::npos;
      if (q && projection) {
        const kforge::quantized_matrix m = kforge::quantize(*q, x.data(), dims[0], dims[1]);
        const std::uint32_t type = *q == kforge::qformat::q8_0 ? kforge::model::ggml_type_id::q8_0 : *q == kforge::qformat::q4_0 ? kforge::model::ggml_type_id::q4_0 : kforge::model::ggml_type_id::mxfp4;
        w.tensor(gname, type, ne, std::as_bytes(std::span<const std::uint8_t>(m.data(), static_cast<std::size_t>(m.rows() * m.row_bytes()))));
      } else {
        w.tensor(gname, kforge::model::ggml_type_id::f32, ne, std::as_bytes(std::span<const float>(x)));
      }
    }
    return w.bytes();
  }
};

/// Greedy tokens and the logits of `steps` steps of one fixed prompt on a
/// session (host_session or vulkan_session; T its element type).
template <class T, class Session>
std::pair<std::vector<kforge::index_t>, std::vector<float>> greedy_run(Session& s, kforge::index_t vocab, kforge::index_t steps) {
  const std::vector<kforge::index_t> prompt{3, 1, 4, 1, 5, 9, 2, 6};
  std::vector<T> logits(static_cast<std::size_t>(vocab));
  std::vector<float> all;
  const kforge::tensor_view<T> lv(logits.data(), kforge::shape{1, vocab});
  std::vector<kforge::index_t> tokens;
  for (kforge::index_t k = 0; k < steps; ++k) {
    tokens.push_back(k == 0 ? s.step(prompt, lv) : s.step({&tokens.back(), 1}, lv));
    for (const T& x : logits) all.push_back(static_cast<float>(x));
  }
  return {tokens, all};
}
/// greedy_run on a host session of policy P.
template <class P>
std::pair<std::vector<kforge::index_t>, std::vector<float>> greedy(const kforge::model::config& c,
                                                                   const kforge::model::weights<kforge::model::host_buffer<float>>& w,
                                                                   kforge::index_t steps) {
  kforge::model::host_session<float, P> s(c, w, 16 + steps);
  return greedy_run<float>(s, c.vocab, steps);
}

inline double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

/// What make_reference.py saved of transformers' run on one checkpoint.
struct hf_reference {
  std::vector<std::vector<kforge::index_t>> prompts;
  std::int64_t steps = 0, logit_steps = 0, vocab = 0;
  std::vector<std::int64_t> tokens;  ///< [prompts, steps]
  std::vector<float> logits;         ///< [prompts, logit_steps, vocab]
  std::vector<float> margins;        ///< [prompts, steps]
  /// KV cache rows a session needs: the longest prompt and the steps.
  kforge::index_t rows() const {
    std::size_t longest = 0;
    for (const auto& p : prompts) longest = std::max(longest, p.size());
    return static_cast<kforge::index_t>(longest) + steps;
  }
};


template <class T>
std::vector<T> values_of(const kforge::model::safetensors_file& f, const std::string& name, std::size_t rank) {
  const kforge::model::st_tensor* t = f.find(name);
  REQUIRE_MESSAGE(t != nullptr, name);
  REQUIRE(t->dims.size() == rank);
  REQUIRE(t->bytes.size() == static_cast<std::size_t>(t->numel()) * sizeof(T));
  std::vector<T> v(static_cast<std::size_t>(t->numel()));
  std::memcpy(v.data(), t->bytes.data(), t->bytes.size());
  return v;
}

inline hf_reference read_reference(const std::string& arch) {
  const kforge::model::safetensors_file f(test_data("hf") / arch / "reference.safetensors");
  hf_reference r;
  const auto ids = values_of<std::int64_t>(f, "prompt_ids", 1);
  std::size_t at = 0;
  for (std::int64_t n : values_of<std::int64_t>(f, "prompt_lens", 1)) {
    r.prompts.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(at), ids.begin() + static_cast<std::ptrdiff_t>(at + static_cast<std::size_t>(n)));
    at += static_cast<std::size_t>(n);
  }
  r.tokens = values_of<std::int64_t>(f, "tokens", 2);
  r.logits = values_of<float>(f, "logits", 3);
  r.margins = values_of<float>(f, "margins", 2);
  r.steps = f.find("tokens")->dims[1];
  r.logit_steps = f.find("logits")->dims[1];
  r.vocab = f.find("logits")->dims[2];
  return r;
}

/// Greedy decoding of every prompt on a session (host or Vulkan, element type
/// T) against transformers': per prompt, the first step whose token differs
/// (steps if none), and the largest logit error over the first logit_steps
/// steps (while the tokens agree), relative to the step's largest logit magnitude.
template <class T, class Session>
std::pair<std::vector<std::int64_t>, double> run_against(Session& s, const hf_reference& r) {
  std::vector<T> logits(static_cast<std::size_t>(r.vocab));
  const kforge::tensor_view<T> lv(logits.data(), kforge::shape{1, r.vocab});
  std::vector<std::int64_t> first_diff;
  double worst = 0;
  for (std::size_t n = 0; n < r.prompts.size(); ++n) {
    s.reset();
    kforge::index_t next = s.step(r.prompts[n], lv);
    std::int64_t diff = r.steps;
    for (std::int64_t k = 0; k < r.steps; ++k) {
      if (k > 0) next = s.step({&next, 1}, lv);
      if (k < r.logit_steps && diff == r.steps) {
        const float* ref = r.logits.data() + (n * static_cast<std::size_t>(r.logit_steps) + static_cast<std::size_t>(k)) * static_cast<std::size_t>(r.vocab);
        double scale = 0, err = 0;
        for (std::int64_t v = 0; v < r.vocab; ++v) scale = std::max(scale, std::abs(static_cast<double>(ref[v])));
        for (std::int64_t v = 0; v < r.vocab; ++v)
          err = std::max(err, std::abs(static_cast<double>(static_cast<float>(logits[static_cast<std::size_t>(v)])) - ref[v]));
        worst = std::max(worst, err / std::max(scale, 1.0));
      }
      if (diff == r.steps && next != r.tokens[n * static_cast<std::size_t>(r.steps) + static_cast<std::size_t>(k)]) diff = k;
    }
    first_diff.push_back(diff);
  }
  return {first_diff, worst};
}
}  // namespace ktest
