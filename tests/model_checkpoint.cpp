// Hugging Face checkpoints (kforge/model/checkpoint.hpp, safetensors.hpp,
// core/json_read.hpp): the JSON reader's strictness, safetensors files
// written and read back bit for bit, every corrupt header refused with the
// reason and nothing allocated from a claim, config.json fields kforge does
// not implement refused by name, and the checked-in checkpoints that
// `transformers` built (tests/data/hf/, make_reference.py) giving the tokens
// and logits transformers gave, on every CPU policy.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/model.hpp"
#include "kforge/model/checkpoint.hpp"
#include "checkpoint_checks.hpp"
#include "scratch_dir.hpp"

namespace fs = std::filesystem;
using namespace kforge;
using namespace kforge::model;
using ktest::checkpoint_error_of;
using ktest::greedy;
using ktest::put;
using ktest::small_llama;
using ktest::write_checkpoint;
using ktest::max_diff;

namespace {

/// A fresh directory of this test's own (scratch_dir.hpp removes them all at exit).
struct temp_dir {
  fs::path path;
  explicit temp_dir(const std::string& tag) : path(ktest::scratch_dir("kforge_checkpoint_") / tag) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
};



std::string json_error_of(std::string_view text) {
  try {
    parse_json(text, "t");
  } catch (const json_error& e) {
    return e.what();
  }
  FAIL("no json_error for: " << text);
  return {};
}

/// A header's bytes with a given length field, then `data` bytes.
std::string raw_file(const std::string& header, std::size_t data_bytes, std::uint64_t claimed_len) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<char>((claimed_len >> (8 * i)) & 0xFF);
  return out + header + std::string(data_bytes, '\x01');
}
std::string raw_file(const std::string& header, std::size_t data_bytes) { return raw_file(header, data_bytes, header.size()); }

}  // namespace

TEST_CASE("json_read: RFC 8259 and nothing more") {
  const json_value v = parse_json(R"( {"a": [1, -2.5e3, true, false, null], "s": "\u00e9\ud83d\ude00\n\"", "n": {"x": {}}} )", "t");
  CHECK(v.at("a", "t").items("a").size() == 5);
  CHECK(v.at("a", "t").items("a")[0].as_int("a") == 1);
  CHECK(v.at("a", "t").items("a")[1].as_double("a") == -2500.0);
  CHECK(v.at("s", "t").as_string("s") == "\xC3\xA9\xF0\x9F\x98\x80\n\"");
  CHECK(v.at("n", "t").at("x", "n").members("x").empty());
  CHECK(parse_json("9007199254740993", "t").as_int("t") == 9007199254740993);  // 2^53 + 1: exact
  CHECK(json_error_of("{\"a\": 1,}").find("expected a member name") != std::string::npos);
  CHECK(json_error_of("[1 2]").find("expected ',' or ']'") != std::string::npos);
  CHECK(json_error_of("{\"a\": 1, \"a\": 2}").find("duplicate member \"a\"") != std::string::npos);
  CHECK(json_error_of("NaN").find("expected a value") != std::string::npos);
  CHECK(json_error_of("01").find("text after") != std::string::npos);
  CHECK(json_error_of("\"\\ud800\"").find("surrogate") != std::string::npos);
  CHECK(json_error_of("\"\xC0\xAF\"").find("invalid UTF-8") != std::string::npos);  // overlong '/'
  CHECK(json_error_of("\"a\tb\"").find("control character") != std::string::npos);
  CHECK(json_error_of("// c\n{}").find("expected a value") != std::string::npos);
  CHECK(json_error_of(std::string(200, '[') + std::string(200, ']')).find("deeper than 64") != std::string::npos);
  CHECK_THROWS_AS(parse_json("1.5", "t").as_int("t"), json_error);
  CHECK_THROWS_AS(parse_json("1e999", "t").as_double("t"), json_error);
  CHECK_THROWS_AS(parse_json("99999999999999999999", "t").as_int("t"), json_error);
  CHECK_THROWS_AS(parse_json("{}", "t").at("x", "t"), json_error);
  CHECK_THROWS_AS(parse_json("[]", "t").as_string("t"), json_error);
}

TEST_CASE("safetensors: written and read back bit for bit, transposed and in blocks") {
  temp_dir dir("rt");
  std::vector<float> a(6);
  for (int i = 0; i < 6; ++i) a[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.37f - 1.0f;
  std::vector<half> h(6);
  std::vector<bfloat16> b(6);
  for (int i = 0; i < 6; ++i) {
    h[static_cast<std::size_t>(i)] = half(a[static_cast<std::size_t>(i)]);
    b[static_cast<std::size_t>(i)] = bfloat16(a[static_cast<std::size_t>(i)]);
  }
  const std::vector<std::int64_t> ids{3, -1, 1LL << 40};
  put(dir.path / "x.safetensors",
      safetensors_bytes({st_tensor_of<float>("a", {2, 3}, a), st_tensor_of<half>("h", {2, 3}, h), st_tensor_of<bfloat16>("b", {6}, b),
                         st_tensor_of<std::int64_t>("ids", {3}, ids), st_tensor_of<float>("empty", {0, 4}, std::span<const float>())},
                        {{"format", "pt"}}));
  const safetensors_file f(dir.path / "x.safetensors");
  REQUIRE(f.tensors().size() == 5);
  CHECK(f.metadata().at("format") == "pt");
  const st_tensor& ta = *f.find("a");
  CHECK(ta.dims == std::vector<std::int64_t>{2, 3});
  CHECK(std::memcmp(ta.bytes.data(), a.data(), 24) == 0);
  CHECK(std::memcmp(f.find("ids")->bytes.data(), ids.data(), 24) == 0);
  CHECK(f.find("empty")->bytes.empty());
  CHECK(f.find("nope") == nullptr);

  std::vector<float> t(6);
  read_block(ta, {0, 2, 0, 3}, t.data(), 2, true);  // [3, 2]
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 3; ++c) CHECK(t[static_cast<std::size_t>(c * 2 + r)] == a[static_cast<std::size_t>(r * 3 + c)]);
  std::vector<float> blk(2);
  read_block(ta, {1, 1, 1, 2}, blk.data(), 2, false);  // row 1, columns 1..2
  CHECK(blk[0] == a[4]);
  CHECK(blk[1] == a[5]);
  // f16 and bf16 to float exactly; float to half rounds as Eigen's cast; to itself bit for bit
  std::vector<float> hf(6), bf(6);
  std::vector<half> ah(6);
  std::vector<bfloat16> bb(6);
  read_block(*f.find("h"), {0, 2, 0, 3}, hf.data(), 3, false);
  read_block(*f.find("b"), {0, 1, 0, 6}, bf.data(), 6, false);
  read_block(ta, {0, 2, 0, 3}, ah.data(), 3, false);
  read_block(*f.find("b"), {0, 1, 0, 6}, bb.data(), 6, false);
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(hf[i] == static_cast<float>(h[i]));
    CHECK(bf[i] == static_cast<float>(b[i]));
    CHECK(Eigen::numext::bit_cast<std::uint16_t>(ah[i]) == Eigen::numext::bit_cast<std::uint16_t>(h[i]));
    CHECK(Eigen::numext::bit_cast<std::uint16_t>(bb[i]) == Eigen::numext::bit_cast<std::uint16_t>(b[i]));
  }
  CHECK(checkpoint_error_of([&] { read_block(*f.find("ids"), {0, 1, 0, 3}, t.data(), 3, false); }).find("I64; kforge loads F32") !=
        std::string::npos);
  CHECK(checkpoint_error_of([&] { read_block(ta, {1, 2, 0, 3}, t.data(), 3, false); }).find("has no block") != std::string::npos);
}

TEST_CASE("safetensors: a corrupt file is refused with its reason, before anything is read") {
  temp_dir dir("bad");
  const fs::path p = dir.path / "bad.safetensors";
  auto error_for = [&](const std::string& bytes) {
    put(p, bytes);
    return checkpoint_error_of([&] { safetensors_file f(p); });
  };
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  put(p, raw_file(ok, 8));
  CHECK_NOTHROW(safetensors_file{p});
  CHECK(error_for("abc").find("shorter than the 8-byte header length") != std::string::npos);
  CHECK(error_for(raw_file(ok, 8, 1ull << 40)).find("over the format's 100 MB limit") != std::string::npos);
  CHECK(error_for(raw_file(ok, 8, ok.size() + 9)).find("runs past the file") != std::string::npos);
  CHECK(error_for(raw_file(ok, 4)).find("ends at byte 8 of a data section of 4 bytes") != std::string::npos);  // truncated
  CHECK(error_for(raw_file(ok, 12)).find("cover 8 of the data section's 12 bytes") != std::string::npos);
  CHECK(error_for(raw_file("[1]", 0)).find("not an object") != std::string::npos);
  CHECK(error_for(raw_file("{\"a\":", 0)).find("not valid JSON") != std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[1099511627776],"data_offsets":[0,8]}})", 8))
            .find("needs more bytes than the file holds") != std::string::npos);  // 2^40 elements: never allocated
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8))
            .find("needs more bytes than the file holds") != std::string::npos);  // the product overflows 64 bits
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", 8)).find("negative extent") != std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})", 8)).find("unknown dtype \"F33\"") !=
        std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}})", 8)).find("exactly dtype, shape") !=
        std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", 8)).find("data_offsets [8, 0]") !=
        std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", 8)).find("needs 4 bytes, its data_offsets give 8") != std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12))
            .find("overlap") != std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)).find("(a hole)") != std::string::npos);
  CHECK(error_for(raw_file(R"({"__metadata__":{"k":1}})", 0)).find("__metadata__.k is a number") != std::string::npos);
  CHECK(error_for(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8))
            .find("duplicate member") != std::string::npos);
  CHECK(checkpoint_error_of([&] { safetensors_file f(dir.path / "missing.safetensors"); }).find("cannot open") != std::string::npos);
  CHECK(checkpoint_error_of([&] { safetensors_file f(dir.path); }).find("not a regular file") != std::string::npos);
}

namespace {

/// A small Llama config.json (Hugging Face's field names) and its tensors,
/// element i of each tensor = its name's hash + i·1e-3, so that a tensor put
/// in the wrong place or orientation shows.
const char* llama_config = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8, "intermediate_size": 12,
  "num_attention_heads": 2, "num_key_value_heads": 1, "num_hidden_layers": 1, "vocab_size": 10, "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": false, "torch_dtype": "float32"})";

float value_of(const std::string& name, std::int64_t i) {
  return static_cast<float>(std::hash<std::string>{}(name) % 97) * 0.01f + static_cast<float>(i) * 1e-3f;
}

std::vector<st_write_tensor> llama_tensors() {
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> spec{
      {"model.embed_tokens.weight", {10, 8}}, {"model.layers.0.input_layernorm.weight", {8}},
      {"model.layers.0.self_attn.q_proj.weight", {8, 8}}, {"model.layers.0.self_attn.k_proj.weight", {4, 8}},
      {"model.layers.0.self_attn.v_proj.weight", {4, 8}}, {"model.layers.0.self_attn.o_proj.weight", {8, 8}},
      {"model.layers.0.post_attention_layernorm.weight", {8}}, {"model.layers.0.mlp.gate_proj.weight", {12, 8}},
      {"model.layers.0.mlp.up_proj.weight", {12, 8}}, {"model.layers.0.mlp.down_proj.weight", {8, 12}},
      {"model.norm.weight", {8}}, {"lm_head.weight", {10, 8}}};
  std::vector<st_write_tensor> out;
  for (const auto& [name, dims] : spec) {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<float> v(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_of(name, i);
    out.push_back(st_tensor_of<float>(name, dims, v));
  }
  return out;
}


std::string with(std::string config, const std::string& from, const std::string& to) {
  const auto at = config.find(from);
  REQUIRE(at != std::string::npos);
  return config.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("checkpoint: a Llama checkpoint's tensors land where the block reads them") {
  temp_dir dir("layout");
  write_checkpoint(dir.path, llama_config, llama_tensors());
  const checkpoint ck = open_checkpoint(dir.path);
  CHECK(ck.cfg.hidden == 8);
  CHECK(ck.cfg.heads == 2);
  CHECK(ck.cfg.kv_heads == 1);
  CHECK(ck.cfg.head_dim == 4);
  CHECK(ck.cfg.mlp == 12);
  CHECK(ck.cfg.norm_eps == 1e-5f);
  CHECK(ck.cfg.rope);
  CHECK_FALSE(ck.cfg.rope_interleaved);
  const auto w = load_weights<float>(ck);
  const auto& L = w.layers.at(0);
  // [out, in] → [in, out]: wq(i, o) = q_proj(o, i)
  for (index_t i = 0; i < 8; ++i)
    for (index_t o = 0; o < 8; ++o) CHECK(L.wq.data[static_cast<std::size_t>(i * 8 + o)] == value_of("model.layers.0.self_attn.q_proj.weight", o * 8 + i));
  // [gate | up]: w_up(i, f) = gate(f, i), w_up(i, 12 + f) = up(f, i)
  for (index_t i = 0; i < 8; ++i)
    for (index_t f = 0; f < 12; ++f) {
      CHECK(L.w_up.data[static_cast<std::size_t>(i * 24 + f)] == value_of("model.layers.0.mlp.gate_proj.weight", f * 8 + i));
      CHECK(L.w_up.data[static_cast<std::size_t>(i * 24 + 12 + f)] == value_of("model.layers.0.mlp.up_proj.weight", f * 8 + i));
    }
  CHECK(L.w_down.dims == shape{12, 8});
  CHECK(L.w_down.data[1] == value_of("model.layers.0.mlp.down_proj.weight", 12));
  CHECK(w.lm_head.dims == shape{8, 10});
  CHECK(w.lm_head.data[1] == value_of("lm_head.weight", 8));
  CHECK(w.embed.data[9] == value_of("model.embed_tokens.weight", 9));
  CHECK_FALSE(L.bq.present());
  CHECK_FALSE(w.final_norm_b.present());
  // runs: a step on the loaded weights
  host_session<float, policy::eigen> s(ck.cfg, w, 8);
  std::vector<float> logits(10);
  const std::vector<index_t> prompt{1, 2, 3};
  const index_t next = s.step(prompt, tensor_view<float>(logits.data(), shape{1, 10}));
  CHECK(next >= 0);
  CHECK(next < 10);

  // tied: the head is the embedding's transpose, and a saved lm_head.weight is ignored as transformers ignores it
  temp_dir tied("tied");
  write_checkpoint(tied.path, with(llama_config, "\"tie_word_embeddings\": false", "\"tie_word_embeddings\": true"), llama_tensors());
  const auto wt = load_weights<float>(open_checkpoint(tied.path));
  CHECK(wt.lm_head.data[1] == value_of("model.embed_tokens.weight", 8));
}

TEST_CASE("checkpoint: what kforge does not implement, or a checkpoint that does not match its config, is refused by name") {
  temp_dir dir("errors");
  int n = 0;
  auto open_error = [&](const std::string& config, const std::vector<st_write_tensor>& tensors) {
    const fs::path p = dir.path / std::to_string(n++);
    write_checkpoint(p, config, tensors);
    return checkpoint_error_of([&] { (void)load_weights<float>(open_checkpoint(p)); });
  };
  const auto t = llama_tensors();
  CHECK(open_error(with(llama_config, "LlamaForCausalLM", "FalconForCausalLM"), t).find("\"FalconForCausalLM\", which kforge does not load") !=
        std::string::npos);
  CHECK(open_error(with(llama_config, "\"rope_theta\": 10000.0",
                        R"("rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0})"), t)
            .find("rope_scaling has rope_type \"llama3\"") != std::string::npos);
  CHECK(open_error(with(llama_config, "\"rope_theta\": 10000.0", R"("rope_parameters": {"rope_type": "yarn", "rope_theta": 1e4})"), t)
            .find("rope_type \"yarn\"") != std::string::npos);
  CHECK(open_error(with(llama_config, "\"hidden_act\": \"silu\"", "\"hidden_act\": \"mish\""), t).find("hidden_act = \"mish\"") !=
        std::string::npos);
  CHECK(open_error(with(llama_config, "\"torch_dtype\"", "\"attention_bias\": true, \"torch_dtype\""), t).find("attention_bias without mlp_bias") !=
        std::string::npos);
  CHECK(open_error(with(llama_config, "\"hidden_size\": 8,", ""), t).find("hidden_size is missing") != std::string::npos);
  CHECK(open_error(with(llama_config, "\"hidden_size\": 8", "\"hidden_size\": \"8\""), t).find("hidden_size is a string, not a number") !=
        std::string::npos);
  CHECK(open_error(with(llama_config, "\"num_attention_heads\": 2", "\"num_attention_heads\": 3"), t).find("does not divide hidden_size") !=
        std::string::npos);
  CHECK(open_error("{", t).find("not valid JSON") != std::string::npos);
  // tensors against the config
  auto without = [&](const std::string& name) {
    auto v = t;
    std::erase_if(v, [&](const st_write_tensor& x) { return x.name == name; });
    return v;
  };
  CHECK(open_error(llama_config, without("model.norm.weight")).find("no tensor 'model.norm.weight'") != std::string::npos);
  auto extra = t;
  extra.push_back(st_tensor_of<float>("model.layers.0.self_attn.q_proj.bias", {8}, std::vector<float>(8)));
  CHECK(open_error(llama_config, extra).find("'model.layers.0.self_attn.q_proj.bias' [8] has no place") != std::string::npos);
  auto wide = t;
  wide[2] = st_tensor_of<float>("model.layers.0.self_attn.q_proj.weight", {8, 9}, std::vector<float>(72));
  CHECK(open_error(llama_config, wide).find("'model.layers.0.self_attn.q_proj.weight' is [8, 9], the config makes it [8, 8]") !=
        std::string::npos);
  auto ints = t;
  ints[6] = st_tensor_of<std::int32_t>("model.layers.0.post_attention_layernorm.weight", {8}, std::vector<std::int32_t>(8));
  CHECK(open_error(llama_config, ints).find("is I32; kforge loads F32, F16 and BF16") != std::string::npos);
  // config_error for a config that breaks kforge's own rules
  write_checkpoint(dir.path / "kv", with(llama_config, "\"num_key_value_heads\": 1", "\"num_key_value_heads\": 3"), t);
  CHECK_THROWS_AS(open_checkpoint(dir.path / "kv"), config_error);

  // the files: none, an index that escapes the directory or disagrees with its shards
  fs::create_directories(dir.path / "empty");
  put(dir.path / "empty" / "config.json", llama_config);
  CHECK(checkpoint_error_of([&] { open_checkpoint(dir.path / "empty"); }).find("has neither model.safetensors") != std::string::npos);
  CHECK(checkpoint_error_of([&] { open_checkpoint(dir.path / "nowhere"); }).find("is neither a directory (config.json and *.safetensors) nor a GGUF file") != std::string::npos);
  const fs::path sh = dir.path / "sharded";
  fs::create_directories(sh);
  put(sh / "config.json", llama_config);
  std::vector<st_write_tensor> first(t.begin(), t.begin() + 6), second(t.begin() + 6, t.end());
  put(sh / "a.safetensors", safetensors_bytes(first));
  put(sh / "b.safetensors", safetensors_bytes(second));
  auto index = [&](const std::string& file_of_last) {
    std::string j = "{\"metadata\": {}, \"weight_map\": {";
    for (std::size_t i = 0; i < t.size(); ++i)
      j += (i ? ", \"" : "\"") + t[i].name + "\": \"" + (i + 1 == t.size() ? file_of_last : i < 6 ? "a.safetensors" : "b.safetensors") + "\"";
    put(sh / "model.safetensors.index.json", j + "}}");
  };
  index("b.safetensors");
  const checkpoint ck = open_checkpoint(sh);
  CHECK(ck.files.size() == 2);
  const auto w = load_weights<float>(ck);
  CHECK(w.lm_head.data[1] == value_of("lm_head.weight", 8));
  index("a.safetensors");
  CHECK(checkpoint_error_of([&] { open_checkpoint(sh); }).find("'lm_head.weight' is in b.safetensors, but the index puts it in a.safetensors") !=
        std::string::npos);
  index("../b.safetensors");
  CHECK(checkpoint_error_of([&] { open_checkpoint(sh); }).find("not a file name in the checkpoint's directory") != std::string::npos);
  // the memory check comes before any buffer
  try {
    (void)load_weights<float>(ck, memory_limit{100, "a test's limit"});
    FAIL("no memory_error");
  } catch (const memory_error& e) {
    CHECK(std::string(e.what()).find("more than the 100 bytes limit (a test's limit)") != std::string::npos);
  }
}

TEST_CASE("checkpoint: a GGUF file as llama.cpp converts it runs the model its Hugging Face checkpoint runs") {
  temp_dir dir("gguf");
  const small_llama m;
  m.write_hf(dir.path / "hf");
  std::ofstream(dir.path / "f32.gguf", std::ios::binary) << m.gguf(std::nullopt);
  std::ofstream(dir.path / "q8_0.gguf", std::ios::binary) << m.gguf(qformat::q8_0);
  std::ofstream(dir.path / "q4_0.gguf", std::ios::binary) << m.gguf(qformat::q4_0);
  const checkpoint hf = open_checkpoint(dir.path / "hf");
  const checkpoint g = open_checkpoint(dir.path / "f32.gguf");
  CHECK(g.format == "gguf");
  CHECK(g.cfg.rope_interleaved);  // llama.cpp's permuted q/k: interleaved pairs
  CHECK(g.cfg.hidden == hf.cfg.hidden);
  CHECK(g.cfg.kv_heads == 2);
  CHECK(g.cfg.head_dim == 16);
  CHECK(g.cfg.norm_eps == hf.cfg.norm_eps);
  CHECK_FALSE(g.cfg.tied_embeddings);
  const auto wh = load_weights<float>(hf);
  const auto wg = load_weights<float>(g);
  const auto [th, lh] = greedy<policy::eigen>(hf.cfg, wh, 12);
  const auto [tg, lg] = greedy<policy::eigen>(g.cfg, wg, 12);
  CHECK(tg == th);
  CHECK(max_diff(lg, lh) < 1e-4);
  // quantized projections stay as stored, and compute what quantizing the Hugging Face weights computes
  for (const qformat f : {qformat::q8_0, qformat::q4_0}) {
    CAPTURE(to_string(f));
    const checkpoint gq = open_checkpoint(dir.path / (std::string(to_string(f)) + ".gguf"));
    const auto wq = load_weights<float>(gq);
    CHECK(wq.layers[0].wq.quantized());
    CHECK(wq.layers[0].w_up.quantized());
    CHECK(wq.layers[0].w_up.q->rows() == 2 * small_llama::f);  // [gate | up]: the two tensors' rows stacked
    CHECK(wq.lm_head.quantized());
    CHECK_FALSE(wq.embed.quantized());
    auto whq = load_weights<float>(hf);
    quantize_weights(whq, f);
    const auto [tq, lq] = greedy<policy::threaded<>>(gq.cfg, wq, 12);
    const auto [tr, lr] = greedy<policy::threaded<>>(hf.cfg, whq, 12);
    CHECK(tq == tr);
    CHECK(max_diff(lq, lr) < 1e-3);
  }
  // what kforge does not load from GGUF is refused by name
  {
    gguf_writer w;
    w.string("general.architecture", "falcon");
    std::ofstream(dir.path / "falcon.gguf", std::ios::binary) << w.bytes();
    CHECK(checkpoint_error_of([&] { open_checkpoint(dir.path / "falcon.gguf"); }).find("\"falcon\" is not one kforge loads from GGUF") !=
          std::string::npos);
  }
}

TEST_CASE("checkpoint: mutated files (bytes flipped, headers cut, lengths forged) are a typed error or a model, never a crash") {
  // Under AddressSanitizer (a sanitizer unit) any read past a mapping or an allocation of a forged size fails the run.
  temp_dir dir("fuzz");
  const small_llama m;
  m.write_hf(dir.path / "hf");
  const std::string st = [&] {
    std::ifstream in(dir.path / "hf" / "model.safetensors", std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }();
  const std::string gg = m.gguf(qformat::q8_0);
  std::uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&](std::uint64_t n) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return n ? rng % n : 0;
  };
  int loaded = 0, refused = 0;
  auto attempt = [&](const fs::path& path, const std::string& bytes) {
    put(path, bytes);
    try {
      const checkpoint ck = open_checkpoint(path.extension() == ".gguf" ? path : path.parent_path());
      (void)load_weights<float>(ck);
      ++loaded;
    } catch (const kforge::error&) {
      ++refused;  // checkpoint_error, config_error, memory_error, shape_error: typed, with a message
    }
  };
  for (int i = 0; i < 300; ++i) {
    for (const bool gguf : {false, true}) {
      std::string b = gguf ? gg : st;
      // the header region (where lengths, offsets and extents live) gets most of the damage
      const std::uint64_t header = gguf ? std::min<std::uint64_t>(b.size(), 2048) : std::min<std::uint64_t>(b.size(), 8 + 4096);
      switch (next(4)) {
        case 0:  // flip bytes
          for (std::uint64_t k = 0, n = 1 + next(4); k < n; ++k) b[next(header)] ^= static_cast<char>(1 + next(255));
          break;
        case 1:  // cut the file
          b.resize(next(b.size()));
          break;
        case 2: {  // forge a 64-bit length or count with a huge value
          const std::uint64_t at = next(header > 8 ? header - 8 : 1);
          const std::uint64_t v = std::uint64_t{1} << (32 + next(31));
          std::memcpy(b.data() + at, &v, std::min<std::size_t>(8, b.size() - at));
          break;
        }
        default:  // a digit of the JSON header or a byte of the GGUF metadata changed to another
          b[next(header)] = static_cast<char>('0' + next(10));
      }
      attempt(gguf ? dir.path / "m.gguf" : dir.path / "hf" / "model.safetensors", b);
    }
  }
  MESSAGE(loaded << " mutated checkpoints still loaded, " << refused << " refused with a typed error");
  CHECK(refused > 300);
}

TEST_CASE("checkpoint: the tokens and logits transformers gives, on every CPU policy") {
  for (const std::string arch : {"llama", "qwen2", "mistral", "gpt2"}) {
    CAPTURE(arch);
    const checkpoint ck = open_checkpoint(ktest::test_data("hf") / arch);
    const ktest::hf_reference r = ktest::read_reference(arch);
    REQUIRE(r.vocab == ck.cfg.vocab);
    const auto w = load_weights<float>(ck);
    auto f32 = [&](auto policy_tag, const char* name) {
      using P = decltype(policy_tag);
      host_session<float, P> s(ck.cfg, w, r.rows());
      const auto [diff, err] = ktest::run_against<float>(s, r);
      MESSAGE(arch << " f32 " << std::string(name) << ": logits max error " << err << " of the largest logit");
      CHECK(err < 1e-4);
      for (std::size_t n = 0; n < diff.size(); ++n) CHECK_MESSAGE(diff[n] == r.steps, name << " prompt " << n << " first differs at step " << diff[n]);
    };
    f32(policy::eigen{}, "eigen");
    f32(policy::blocked<>{}, "blocked");
    f32(policy::threaded<>{}, "threaded");
    // 16-bit storage against transformers' f32: the first step's logits within a few of the format's eps, the
    // first divergent step reported
    auto narrow = [&](auto t, const char* name, double tol) {
      using T = decltype(t);
      const auto wn = load_weights<T>(ck);
      host_session<T, policy::threaded<>> s(ck.cfg, wn, r.rows());
      const auto [diff, err] = ktest::run_against<T>(s, r);
      std::int64_t first = r.steps;
      for (auto d : diff) first = std::min(first, d);
      MESSAGE(arch << " " << std::string(name) << " threaded: logits max error " << err << " of the largest logit, first divergent step " << first);
      CHECK(err < tol);
    };
    narrow(half{}, "f16", 2e-2);
    narrow(bfloat16{}, "bf16", 1e-1);
  }
}
