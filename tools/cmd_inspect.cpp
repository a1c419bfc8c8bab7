// tools/cmd_inspect.cpp — `kforge inspect --model DIR|FILE.gguf`: what a
// checkpoint holds, as kforge reads it: the format and file bytes, the
// config kforge derives (or the one-line reason it refuses the checkpoint),
// and every tensor with its type, extents and bytes; --json for all of it.
// Nothing is loaded: the files are mapped and their headers checked.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include <kforge/core/json.hpp>
#include <kforge/model/checkpoint.hpp>

#include "cli.hpp"

namespace kforge::tool {

int cmd_inspect(const args& a) {
  const auto path = a.get("model");
  if (!path) throw usage_error("--model DIR|FILE.gguf is required (a Hugging Face checkpoint directory or a GGUF file)");
  const model::checkpoint ck = model::open_checkpoint(*path);
  struct row {
    std::string name, type, dims;
    double bytes;
  };
  std::vector<row> rows;
  std::map<std::string, double> by_type;
  for (const auto& [name, t] : ck.tensors)
    rows.push_back({name, std::string(model::st_info(t->dtype).name), t->dims_text(), static_cast<double>(t->bytes.size())});
  auto gguf_row = [&](const std::string& name, const model::gguf_tensor* t) {
    rows.push_back({name, std::string(model::find_ggml_type(t->type)->name), t->ne_text(), static_cast<double>(t->bytes.size())});
  };
  for (const auto& [name, t] : ck.quantized) gguf_row(name, t.first);
  for (const auto& [name, t] : ck.unloadable) gguf_row(name, t);
  std::sort(rows.begin(), rows.end(), [](const row& x, const row& y) { return x.name < y.name; });
  double total = 0;
  for (const row& r : rows) by_type[r.type] += r.bytes, total += r.bytes;
  const model::config& c = ck.cfg;
  if (a.has("json")) {
    json_writer w;
    w.begin_object().field("model", *path).field("format", ck.format).field("file_bytes", ck.file_bytes());
    w.key("config").begin_object().field("architecture", c.name).field("hidden", c.hidden).field("heads", c.heads);
    w.field("kv_heads", c.kv_heads).field("head_dim", c.head_dim).field("mlp", c.mlp).field("vocab", c.vocab).field("layers", c.layers);
    w.field("norm", std::string(model::to_string(c.norm))).field("norm_eps", c.norm_eps);
    w.field("activation", std::string(to_string(c.activation))).field("rope", c.rope).field("rope_base", c.rope_base);
    w.field("rope_interleaved", c.rope_interleaved).field("bias", c.bias).field("qkv_bias", c.qkv_bias).field("window", c.window);
    w.field("learned_positions", c.learned_positions).field("tied_embeddings", c.tied_embeddings).end_object();
    w.key("tensors").begin_array();
    for (const row& r : rows)
      w.begin_object().field("name", r.name).field("type", r.type).field("dims", r.dims).field("bytes", r.bytes).end_object();
    w.end_array().end_object();
    std::cout << w.str() << "\n";
    return ok;
  }
  std::cout << *path << ": " << ck.format << ", " << bytes_text(ck.file_bytes()) << "\n"
            << "  " << c.name << ": " << c.layers << " layers, hidden " << c.hidden << ", " << c.heads << " heads / " << c.kv_heads
            << " KV of " << c.head_dim << ", MLP " << c.mlp << " (" << model::to_string(c.mlp_type) << " " << to_string(c.activation)
            << "), " << model::to_string(c.norm) << " eps " << c.norm_eps << ", vocab " << c.vocab;
  if (c.rope) std::cout << ", RoPE base " << c.rope_base << (c.rope_interleaved ? " (interleaved pairs)" : " (half-split pairs)");
  if (c.learned_positions) std::cout << ", " << c.learned_positions << " learned positions";
  if (c.window) std::cout << ", sliding window " << c.window;
  std::cout << (c.bias ? ", biases" : c.qkv_bias ? ", q/k/v biases" : "") << (c.tied_embeddings ? ", tied LM head" : "") << "\n  "
            << rows.size() << " tensors, " << bytes_text(total) << ":";
  for (const auto& [type, b] : by_type) std::cout << " " << type << " " << bytes_text(b);
  std::cout << "\n";
  for (const row& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-48s %-8s %-16s %s\n", r.name.c_str(), r.type.c_str(), r.dims.c_str(), bytes_text(r.bytes).c_str());
    std::cout << line;
  }
  return ok;
}

}  // namespace kforge::tool
