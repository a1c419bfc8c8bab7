// ggml's own GGUF writer and reader: what tests/model_gguf.cpp checks kforge's
// GGUF reader and writer against (an independent implementation).
//   ggml_written.gguf = `ggml_xcheck write FILE`, built against ggml d99724f2:
//     cmake -S ggml -B b -DGGML_NATIVE=OFF && cmake --build b --target ggml-base
//     gcc ggml_xcheck.c -Iggml/include -Lb/src -lggml-base -o ggml_xcheck
//   `ggml_xcheck read FILE` prints what ggml reads: the hashes the test expects.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "gguf.h"
static unsigned long long fnv(const unsigned char* p, size_t n) {
  unsigned long long h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
int main(int argc, char** argv) {
  if (argc == 3 && !strcmp(argv[1], "write")) {
    struct ggml_init_params ip = {1 << 20, NULL, false};
    struct ggml_context* g = ggml_init(ip);
    struct gguf_context* c = gguf_init_empty();
    gguf_set_val_str(c, "general.architecture", "llama");
    gguf_set_val_u32(c, "llama.block_count", 2);
    gguf_set_val_f32(c, "llama.attention.layer_norm_rms_epsilon", 1e-5f);
    gguf_set_val_bool(c, "test.flag", true);
    gguf_set_val_i8(c, "test.i8", -3);
    gguf_set_val_u64(c, "test.u64", 1ull << 40);
    gguf_set_val_f64(c, "test.f64", 0.1);
    const char* toks[] = {"a", "\xc4\xa0" "b", "<s>"};
    gguf_set_arr_str(c, "tokenizer.ggml.tokens", toks, 3);
    float sc[] = {0.5f, -1.0f, 2.0f};
    gguf_set_arr_data(c, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, sc, 3);
    struct { const char* name; enum ggml_type t; int64_t ne0, ne1; } ts[] = {
      {"token_embd.weight", GGML_TYPE_F32, 8, 3}, {"blk.0.attn_q.weight", GGML_TYPE_Q8_0, 64, 3},
      {"blk.0.attn_k.weight", GGML_TYPE_Q4_0, 32, 5}, {"blk.0.ffn_up.weight", GGML_TYPE_MXFP4, 32, 2},
      {"output_norm.weight", GGML_TYPE_F16, 7, 1}, {"output.weight", GGML_TYPE_BF16, 8, 3}};
    for (int i = 0; i < 6; ++i) {
      struct ggml_tensor* t = ts[i].ne1 == 1 ? ggml_new_tensor_1d(g, ts[i].t, ts[i].ne0) : ggml_new_tensor_2d(g, ts[i].t, ts[i].ne0, ts[i].ne1);
      ggml_set_name(t, ts[i].name);
      unsigned char* d = t->data;
      for (size_t k = 0; k < ggml_nbytes(t); ++k) d[k] = (unsigned char)(k * 7 + i * 31 + 1);
      if (ts[i].t == GGML_TYPE_Q8_0 || ts[i].t == GGML_TYPE_Q4_0)  // f16 scales that decode to finite values
        for (size_t b = 0; b < ggml_nbytes(t); b += ggml_type_size(ts[i].t)) { d[b] = 0x00; d[b + 1] = 0x3c; }
      if (ts[i].t == GGML_TYPE_MXFP4)
        for (size_t b = 0; b < ggml_nbytes(t); b += ggml_type_size(ts[i].t)) d[b] = 127;
      gguf_add_tensor(c, t);
    }
    return gguf_write_to_file(c, argv[2], false) ? 0 : 1;
  }
  if (argc == 3 && !strcmp(argv[1], "read")) {
    struct ggml_context* g = NULL;
    struct gguf_init_params p = {false, &g};
    struct gguf_context* c = gguf_init_from_file(argv[2], p);
    if (!c) { printf("ggml refuses the file\n"); return 1; }
    printf("version %u alignment %zu kv %lld tensors %lld\n", gguf_get_version(c), gguf_get_alignment(c),
           (long long)gguf_get_n_kv(c), (long long)gguf_get_n_tensors(c));
    for (int64_t k = 0; k < gguf_get_n_kv(c); ++k) printf("kv %s type %d\n", gguf_get_key(c, k), gguf_get_kv_type(c, k));
    for (int64_t i = 0; i < gguf_get_n_tensors(c); ++i) {
      struct ggml_tensor* t = ggml_get_tensor(g, gguf_get_tensor_name(c, i));
      printf("tensor %s type %s ne %lld %lld %lld %lld offset %zu bytes %zu fnv %016llx\n", t->name, ggml_type_name(t->type),
             (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], gguf_get_tensor_offset(c, i),
             ggml_nbytes(t), fnv(t->data, ggml_nbytes(t)));
    }
    return 0;
  }
  fprintf(stderr, "usage: xcheck write|read FILE\n");
  return 2;
}
