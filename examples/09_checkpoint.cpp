// examples/09_checkpoint.cpp — a checkpoint loaded into kforge::model and
// run: a Hugging Face directory (config.json + *.safetensors) or a GGUF
// file, its config read from the files, greedy generation from a prompt of
// token ids on the CPU and, where kforge was built with Vulkan, on the GPU
// with the weights streamed to the device one at a time.
//
// Run: build/examples/09_checkpoint [DIR|FILE.gguf] [steps] [id,id,...]
//      Without a path it first writes a small random Llama-style checkpoint
//      (safetensors, as save_pretrained lays it out) to a temporary
//      directory, so that it runs anywhere. Token ids, not text: tokenizers
//      are not in kforge yet.
#include <kforge/model.hpp>
#if defined(KFORGE_HAS_VULKAN)
#include <kforge/model/vulkan.hpp>
#endif

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using namespace kforge;

namespace {

/// A 2-layer Llama with random weights, as Hugging Face writes one.
std::filesystem::path write_random_llama() {
  const auto dir = std::filesystem::temp_directory_path() / "kforge-example-llama";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 64, "intermediate_size": 128,
    "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 100, "rms_norm_eps": 1e-5})";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  std::vector<model::st_write_tensor> tensors;
  auto add = [&](const std::string& name, std::vector<std::int64_t> dims, float mean) {
    std::vector<float> v(static_cast<std::size_t>(model::numel_of(dims)));
    for (float& x : v) x = mean + u(rng);
    tensors.push_back(model::st_tensor_of<float>(name, dims, v));
  };
  add("model.embed_tokens.weight", {100, 64}, 0), add("model.norm.weight", {64}, 1), add("lm_head.weight", {100, 64}, 0);
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add(p + "input_layernorm.weight", {64}, 1), add(p + "post_attention_layernorm.weight", {64}, 1);
    add(p + "self_attn.q_proj.weight", {64, 64}, 0), add(p + "self_attn.k_proj.weight", {32, 64}, 0);
    add(p + "self_attn.v_proj.weight", {32, 64}, 0), add(p + "self_attn.o_proj.weight", {64, 64}, 0);
    add(p + "mlp.gate_proj.weight", {128, 64}, 0), add(p + "mlp.up_proj.weight", {128, 64}, 0);
    add(p + "mlp.down_proj.weight", {64, 128}, 0);
  }
  std::ofstream(dir / "model.safetensors", std::ios::binary) << model::safetensors_bytes(tensors);
  return dir;
}

/// The prompt, then `steps` tokens, each the argmax of the last step's logits.
template <class Session>
std::vector<index_t> generate(Session& s, const model::config& c, const std::vector<index_t>& prompt, int steps) {
  model::host_buffer<float> logits(shape{1, c.vocab});
  std::vector<index_t> out{s.step(prompt, logits.view())};
  while (static_cast<int>(out.size()) < steps) out.push_back(s.step({&out.back(), 1}, logits.view()));
  return out;
}

void print(const char* where, const std::vector<index_t>& ids) {
  std::printf("%-8s", where);
  for (index_t id : ids) std::printf(" %lld", static_cast<long long>(id));
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) try {
  const std::filesystem::path path = argc > 1 ? std::filesystem::path(argv[1]) : write_random_llama();
  struct cleanup {  // the example's own checkpoint goes when it ends
    std::filesystem::path p;
    ~cleanup() {
      std::error_code ec;
      if (!p.empty()) std::filesystem::remove_all(p, ec);
    }
  } own{argc > 1 ? std::filesystem::path() : path};
  const int steps = argc > 2 ? std::atoi(argv[2]) : 16;
  std::vector<index_t> prompt{1, 2, 3, 4};
  if (argc > 3) {
    prompt.clear();
    for (const char* p = argv[3]; *p;) {
      char* end = nullptr;
      prompt.push_back(std::strtoll(p, &end, 10));
      p = *end == ',' ? end + 1 : end;
      if (end == p && *p) throw std::runtime_error("the prompt is comma-separated token ids");
    }
  }
  const model::checkpoint ck = model::open_checkpoint(path);  // config checked, files mapped, nothing loaded yet
  const model::config& c = ck.cfg;
  std::printf("%s: %s %s, %lld layers, hidden %lld, vocab %lld\n", path.c_str(), ck.format.c_str(), c.name.c_str(),
              static_cast<long long>(c.layers), static_cast<long long>(c.hidden), static_cast<long long>(c.vocab));
  const auto w = model::load_weights<float>(ck);  // converted, transposed for the gemms; quantized GGUF weights kept
  const index_t rows = static_cast<index_t>(prompt.size()) + steps;
  model::host_session<float, policy::threaded<>> cpu(c, w, rows);
  const auto tokens = generate(cpu, c, prompt, steps);
  print("cpu", tokens);
#if defined(KFORGE_HAS_VULKAN)
  try {
    vulkan::context ctx;
    model::vulkan_session<float> gpu(ctx, ck, rows);  // streamed: the host holds one weight at a time
    print("vulkan", generate(gpu, c, prompt, steps));
  } catch (const vulkan::no_device& e) {
    std::printf("Vulkan: no device (%s)\n", e.what());
  }
#endif
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
