// kforge/validate/catalog.hpp — the problem sets every backend is tested on:
// every op family and its variants, on shapes that are not multiples of any
// tile (1, 3, 7, 17, 33, 100, 257, 1000) and skinny/tall cases. `small`
// trims the sizes for slow implementations (lavapipe) without losing the odd
// extents.
#pragma once

#include <vector>

#include "kforge/validate/problem.hpp"

namespace kforge {

inline std::vector<problem> test_problems(dtype t, bool small = false) {
  std::vector<problem> ps;
  auto add = [&](std::string op, const char* shp, auto&& tweak) {
    problem p;
    p.op = std::move(op);
    p.type = t;
    set_shape(p, shp);
    tweak(p);
    ps.push_back(p);
  };
  auto none = [](problem&) {};
  // gemm: odd, skinny, tall, every epilogue, both layouts, alpha/beta.
  add("gemm", "1x1x1", none);
  add("gemm", "7x3x17", none);
  add("gemm", small ? "33x17x7" : "100x33x257", [](problem& p) { p.a_col_major = true; });
  add("gemm", small ? "17x33x100" : "257x100x33", [](problem& p) { p.b_col_major = true; });
  add("gemm", small ? "3x100x33" : "1x1000x257", none);  // decode-like skinny M
  add("gemm", small ? "100x3x17" : "1000x3x17", none);   // tall
  add("gemm", "17x33x7", [](problem& p) { p.alpha = 0.5f; p.beta = -1.5f; });
  for (const char* e : {"bias", "relu", "bias_relu", "leaky_relu", "bias_gelu_tanh", "gelu", "bias_silu"})
    add("gemm", small ? "17x7x33" : "33x100x17", [e](problem& p) { p.epilogue = e; p.slope = 0.1f; });
  // element-wise
  for (const char* f : {"relu", "leaky_relu", "gelu", "gelu_tanh", "silu", "exp", "tanh", "sigmoid", "abs", "neg"})
    add(f, small ? "3x7x17" : "3x7x257", none);
  for (const char* f : {"add", "sub", "mul", "div", "max", "min"}) add(f, small ? "7x33" : "33x1000", none);
  add("add", "7x1x33,17x1", none);  // both sides broadcast
  add("mul", small ? "3x17x33,33" : "3x100x257,257", none);
  // reductions over every axis position
  for (const char* f : {"reduce_sum", "reduce_mean", "reduce_max", "reduce_min"}) {
    add(f, small ? "7x33x3" : "7x257x3", [](problem& p) { p.axis = 1; });
    add(f, small ? "17x33" : "100x257", [](problem& p) { p.axis = -1; });
    add(f, "33x7", [](problem& p) { p.axis = 0; });
  }
  // row ops
  for (const char* f : {"softmax", "layer_norm", "rms_norm"}) {
    add(f, "1x3", none);
    add(f, small ? "17x33" : "100x257", none);
    add(f, small ? "3x100" : "3x1000", none);
    add(f, "270x1001", none);  // many rows too long for a subgroup, not a multiple of 4
  }
  add("softmax", "2x20001", none);  // few long rows: split into chunks

  // conv2d: stride, padding, dilation, groups, bias + activation
  add("conv2d", "1x3x7x7,4x3x3x3", none);
  add("conv2d", small ? "2x4x9x9,6x2x3x3" : "2x4x17x17,6x2x3x3",
      [](problem& p) { p.groups = 2; p.stride[0] = p.stride[1] = 2; p.pad[0] = p.pad[1] = 1; });
  add("conv2d", small ? "1x3x9x7,5x3x3x2" : "1x3x17x13,5x3x3x2",
      [](problem& p) { p.dilation[0] = 2; p.pad[1] = 2; p.epilogue = "bias_relu"; });
  add("conv2d", "1x6x7x7,6x1x3x3", [](problem& p) { p.groups = 6; p.pad[0] = p.pad[1] = 1; p.epilogue = "bias_gelu"; });
  // attention, causal or not, S != L
  add("attention", "1x1x1x3", none);
  add("attention", small ? "1x2x7x17" : "2x3x33x17", none);
  add("attention", small ? "1x2x17x7" : "1x2x100x33", [](problem& p) { p.causal = true; });
  add("attention", small ? "1x1x7x17,33" : "1x2x7x17,100", [](problem& p) { p.causal = true; });
  add("attention", small ? "1x1x17x7,3" : "1x1x33x7,3", none);
  add("attention", small ? "1x1x17x16" : "1x2x70x32", [](problem& p) { p.causal = true; });  // a tensor-core head dim
  // grouped KV heads (GQA, MQA), causal with S > L, [B,S,H,D], decode (S = 1 against 1000+ keys: the
  // split kernel), and head dims 64 / 128 across the coopmat kernel's 64- and 128-row blocks
  add("attention", small ? "1x4x17x16,20x2" : "2x4x33x16,40x2", [](problem& p) { p.causal = true; });
  add("attention", small ? "1x2x20x16,7x1" : "1x2x40x16,17x1", [](problem& p) { p.causal = true; });
  add("attention", small ? "1x4x9x16,13x2" : "2x4x20x32,25x2", [](problem& p) {
    p.causal = true;
    p.attrs["bshd"] = 1;
  });
  add("attention", small ? "1x4x1x16,1000x1" : "1x8x1x64,1000x2", none);
  add("attention", small ? "1x2x3x16,1001x1" : "2x4x3x64,1500x2", [](problem& p) { p.attrs["bshd"] = 1; });
  add("attention", small ? "1x1x65x64,67" : "1x2x129x64,130", [](problem& p) { p.causal = true; });
  add("attention", small ? "1x2x66x128,63x1" : "1x4x127x128,129x2", none);
  // a KV cache (kv_len < L: the rows past it hold data that must not be read): decode of one sequence
  // in [B,S,H,D] (its keys a prefix of the cache), causal prefill of two sequences, and [B,H,S,D] with
  // two sequences of two KV heads (neither a prefix: Vulkan gathers their rows)
  add("attention", small ? "1x4x1x16,20x2" : "1x8x1x64,300x2", [small](problem& p) {
    p.attrs["bshd"] = 1;
    p.attrs["kv_len"] = small ? 13 : 257;
  });
  add("attention", small ? "2x4x7x16,17x2" : "2x4x33x32,70x2", [small](problem& p) {
    p.causal = true;
    p.attrs["bshd"] = 1;
    p.attrs["kv_len"] = small ? 7 : 33;
  });
  add("attention", small ? "2x4x3x8,9x2" : "2x4x5x17,40x2", [small](problem& p) { p.attrs["kv_len"] = small ? 6 : 29; });
  // rope: half-split and interleaved, a decode-like position offset, Llama 3's base
  add("rope", small ? "3x5x16" : "2x17x3x64", none);
  add("rope", small ? "7x3x18" : "33x5x34", [](problem& p) {
    p.attrs["interleaved"] = 1;
    p.attrs["offset"] = 100;
    p.attrs["base"] = 500000;
  });
  // gated activations: F odd and not a multiple of any tile; a decode-like single row; rank 3; F a
  // multiple of 4 (the Vulkan kernel's vector path) over rows that leave its last workgroup part-filled
  add("swiglu", small ? "7x34" : "33x514", none);
  add("swiglu", small ? "5x72" : "37x1032", none);
  add("geglu", small ? "3x5x22" : "2x17x130", none);
  add("geglu_tanh", "1x66", none);
  // kv_append: prefill from row 0 into a longer cache, decode (T = 1) mid-cache, a chunk that ends at Lmax
  add("kv_append", small ? "2x7x3x5,17" : "2x33x3x17,100", none);
  add("kv_append", small ? "3x1x2x9,7" : "3x1x5x33,257", [small](problem& p) { p.attrs["pos"] = small ? 4 : 200; });
  add("kv_append", "1x5x1x7,12", [](problem& p) { p.attrs["pos"] = 7; });
  // embedding: a batch of sequences (ids [B, T]), a decode step (one id), a one-column table, a one-row table,
  add("embedding", small ? "257x33,3x17" : "1001x100,7x33", none);
  add("embedding", small ? "100x17,1" : "32003x65,1", none);
  add("embedding", "7x1,100", none);
  add("embedding", "1x5,2x3x9", none);
  add("embedding", "50x12,3x5", none);  // D a multiple of 4: the Vulkan kernel's vector path
  // topk / argmax: odd rows, k = N, N = 1, k > 64 (several rounds of the GPU kernel's lists), rank 3, few
  // long rows (the split kernel: the sampling case); ties and NaN come from the suite's edge cases
  auto k_is = [](index_t k) { return [k](problem& p) { p.attrs["k"] = static_cast<double>(k); }; };
  add("topk", small ? "17x100" : "33x1000", k_is(5));
  add("topk", "7x33", k_is(33));
  add("topk", "5x1", k_is(1));
  add("topk", "4x200", k_is(100));
  add("topk", small ? "3x5x65" : "2x3x300", k_is(64));
  add("topk", "270x1001", k_is(8));
  add("topk", small ? "2x20001" : "3x50000", k_is(50));
  add("argmax", small ? "3x1000" : "17x4097", none);
  add("argmax", small ? "1x9000" : "1x128256", none);
  return ps;
}

}  // namespace kforge
