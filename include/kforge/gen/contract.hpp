// kforge/gen/contract.hpp — the kernel contract: what a GLSL compute kernel
// for each op must declare so that the host can bind, size and dispatch it
// without knowing anything else about it. docs/KERNEL_CONTRACT.md is the
// prose version of this table; contract_text() is what prompts quote.
//
// Every kernel: set 0, storage buffers at bindings 0..n-1 (inputs in call
// order, then the output), all dense row-major, element type `float` (f32 and
// bf16 problems; bf16 is widened to f32 on upload) or `float16_t` (f16, with
// GL_EXT_shader_16bit_storage); inputs declared `readonly`; one push-constant
// block laid out exactly as listed; `layout(local_size_x_id = 0) in;` plus a
// literal default `layout(local_size_x = N) in;` (y = z = 1); and, where the
// family has one, its per-workgroup output tile as specialization constants
// (ids 1 and 2) whose defaults the host reads back with SPIRV-Cross to size
// the grid. Other specialization constants (ids >= 3) are the kernel's own
// knobs and keep their defaults.
//
// No Vulkan here: the gate, the prompts and the docs share these numbers.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kforge/ops/ops.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge::gen {

/// One push-constant field: name and GLSL type (uint, int or float; 4 bytes each).
struct push_field {
  std::string name, type, meaning;
};

/// What a kernel for one problem must declare, and how the host runs it.
struct kernel_contract {
  op_family family;
  std::vector<std::string> bindings;       ///< names in binding order; the last is the output
  std::vector<push_field> push;            ///< in declaration order
  std::uint32_t push_bytes = 0;
  bool tile_2d = false;                    ///< ids 1 (TILE_M) and 2 (TILE_N) required
  bool tile_1d_optional = false;           ///< id 1 optional: work items per workgroup
  std::string tile_meaning;                ///< what one work item is
  std::string grid_rule;                   ///< human-readable grid formula
};

inline bool is_f16_device(dtype t) { return t == dtype::f16; }

/// The contract of a problem's op family (bias bindings depend on the epilogue).
inline kernel_contract contract_for(const problem& p) {
  kernel_contract c;
  c.family = find_op(p.op).family;
  const bool bias = detail::epilogue_has_bias(p.epilogue);
  auto u = [](const char* n, const char* m) { return push_field{n, "uint", m}; };
  auto i = [](const char* n, const char* m) { return push_field{n, "int", m}; };
  auto f = [](const char* n, const char* m) { return push_field{n, "float", m}; };
  switch (c.family) {
    case op_family::gemm:
      c.bindings = {"A", "B"};
      if (bias) c.bindings.push_back("bias");
      c.bindings.push_back("C");
      c.push = {u("M", "rows of A and C"), u("N", "columns of B and C"), u("K", "columns of A, rows of B"),
                f("alpha", "scale of A*B"), f("beta", "scale of the old C (C is read only when beta != 0)"),
                f("slope", "leaky_relu negative slope")};
      c.tile_2d = true;
      c.tile_meaning = "TILE_M x TILE_N outputs of C";
      c.grid_rule = "(ceil(N / TILE_N), ceil(M / TILE_M), 1)";
      break;
    case op_family::conv2d:
      c.bindings = {"x", "w"};
      if (bias) c.bindings.push_back("bias");
      c.bindings.push_back("y");
      c.push = {u("M", "filters per group = K / groups"), u("N", "images * P * Q"),
                u("K", "reduction length per group = C / groups * R * S"), u("C", "input channels"),
                u("H", "input height"), u("W", "input width"), u("P", "output height"), u("Q", "output width"),
                u("R", "filter height"), u("S", "filter width"), u("KT", "total filters K"), i("sh", "stride h"),
                i("sw", "stride w"), i("ph", "padding h"), i("pw", "padding w"), i("dh", "dilation h"),
                i("dw", "dilation w"), f("slope", "leaky_relu negative slope")};
      c.tile_2d = true;
      c.tile_meaning = "TILE_M filters x TILE_N output pixels (implicit GEMM) of one group";
      c.grid_rule = "(ceil(N / TILE_N), ceil(M / TILE_M), groups); group = gl_WorkGroupID.z";
      break;
    case op_family::unary:
      c.bindings = {"x", "y"};
      c.push = {u("n", "element count"), f("slope", "leaky_relu negative slope")};
      c.tile_1d_optional = true;
      c.tile_meaning = "output elements per workgroup (default: local_size_x)";
      c.grid_rule = "G = ceil(n / TILE) workgroups";
      break;
    case op_family::binary:
      c.bindings = {"a", "b", "c"};
      c.push = {u("n", "output element count"), u("rank", "output rank (<= 6)"),
                push_field{"dims[6]", "uint", "output extents (first `rank` used)"},
                push_field{"sa[6]", "uint", "element strides of a over the output dims (0 where broadcast)"},
                push_field{"sb[6]", "uint", "element strides of b over the output dims (0 where broadcast)"}};
      c.tile_1d_optional = true;
      c.tile_meaning = "output elements per workgroup (default: local_size_x)";
      c.grid_rule = "G = ceil(n / TILE) workgroups";
      break;
    case op_family::reduce:
      c.bindings = {"x", "y"};
      c.push = {u("outer", "product of dims before the axis"), u("n", "extent of the reduced axis"),
                u("inner", "product of dims after the axis")};
      c.tile_1d_optional = true;
      c.tile_meaning = "output elements per workgroup (default 1)";
      c.grid_rule = "G = ceil(outer * inner / TILE) workgroups";
      break;
    case op_family::softmax:
      c.bindings = {"x", "y"};
      c.push = {u("rows", "rows (all dims but the last)"), u("cols", "last dim")};
      c.tile_1d_optional = true;
      c.tile_meaning = "rows per workgroup (default 1)";
      c.grid_rule = "G = ceil(rows / TILE) workgroups";
      break;
    case op_family::layer_norm:
    case op_family::rms_norm:
      c.bindings = {"x", "gamma"};
      if (c.family == op_family::layer_norm) c.bindings.push_back("beta");
      c.bindings.push_back("y");
      c.push = {u("rows", "rows (all dims but the last)"), u("cols", "last dim"), f("eps", "epsilon")};
      c.tile_1d_optional = true;
      c.tile_meaning = "rows per workgroup (default 1)";
      c.grid_rule = "G = ceil(rows / TILE) workgroups";
      break;
    case op_family::attention:
      c.bindings = {"Q", "K", "V", "O"};
      c.push = {u("BH", "batch * heads"), u("S", "query length"), u("L", "key length"), u("D", "head dim of Q, K"),
                u("DV", "head dim of V, O"), f("scale", "score scale (1/sqrt(D) unless given)"),
                u("causal", "1: query i sees keys j <= i")};
      c.tile_1d_optional = true;
      c.tile_meaning = "query rows (over B*H*S) per workgroup (default 1)";
      c.grid_rule = "G = ceil(BH * S / TILE) workgroups";
      break;
  }
  std::uint32_t bytes = 0;
  for (const auto& fld : c.push) bytes += fld.name.find("[6]") != std::string::npos ? 24 : 4;
  c.push_bytes = bytes;
  return c;
}

/// Splits G workgroups over a 2-D grid (x <= 65535); kernels use the flat id
/// gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x and must ignore
/// ids >= G (the grid may round up).
inline std::array<std::uint32_t, 3> flat_grid(std::uint64_t groups) {
  if (groups == 0) return {0, 1, 1};
  const std::uint64_t x = std::min<std::uint64_t>(groups, 65535);
  const std::uint64_t y = (groups + x - 1) / x;
  if (y > 65535) throw unsupported_error("kforge::gen: " + std::to_string(groups) + " workgroups exceed the 2-D grid");
  return {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), 1};
}

inline std::uint32_t to_u32(index_t v, const char* what) {
  if (v < 0 || v > 0xffffffffll)
    throw unsupported_error(std::string("kforge::gen: ") + what + " = " + std::to_string(v) + " does not fit 32 bits");
  return static_cast<std::uint32_t>(v);
}

/// The push-constant bytes and dispatch grid of a problem, given the tile
/// constants the kernel declares (tile_m/tile_n for 2-D tiles, tile for 1-D;
/// local_size is the kernel's local_size_x).
struct launch {
  std::vector<std::uint8_t> push;
  std::array<std::uint32_t, 3> grid{0, 1, 1};
};

inline launch make_launch(const problem& p, std::uint32_t local_size, std::uint32_t tile_m, std::uint32_t tile_n,
                          std::uint32_t tile) {
  const kernel_contract c = contract_for(p);
  const auto ops = operands(p);
  launch l;
  auto put = [&](auto v) {
    static_assert(sizeof(v) == 4);
    std::uint8_t b[4];
    std::memcpy(b, &v, 4);
    l.push.insert(l.push.end(), b, b + 4);
  };
  auto ceil_div = [](std::uint64_t a, std::uint64_t b) { return b ? (a + b - 1) / b : 0; };
  auto dflt = [](std::uint32_t t, std::uint32_t d) { return t ? t : d; };
  switch (c.family) {
    case op_family::gemm: {
      const std::uint32_t m = to_u32(p.dims[0], "M"), n = to_u32(p.dims[1], "N"), k = to_u32(p.dims[2], "K");
      put(m), put(n), put(k), put(p.alpha), put(p.beta), put(p.slope);
      l.grid = {static_cast<std::uint32_t>(ceil_div(n, tile_n)), static_cast<std::uint32_t>(ceil_div(m, tile_m)), 1};
      break;
    }
    case op_family::conv2d: {
      const shape& x = p.dims;
      const shape& w = p.dims2;
      const shape& y = ops.back().dims;
      const index_t g = p.groups;
      const std::uint32_t m = to_u32(w[0] / g, "K/groups"), n = to_u32(x[0] * y[2] * y[3], "N*P*Q");
      put(m), put(n), put(to_u32(x[1] / g * w[2] * w[3], "C/groups*R*S"));
      put(to_u32(x[1], "C")), put(to_u32(x[2], "H")), put(to_u32(x[3], "W")), put(to_u32(y[2], "P")),
          put(to_u32(y[3], "Q")), put(to_u32(w[2], "R")), put(to_u32(w[3], "S")), put(to_u32(w[0], "K"));
      put(std::int32_t(p.stride[0])), put(std::int32_t(p.stride[1])), put(std::int32_t(p.pad[0])),
          put(std::int32_t(p.pad[1])), put(std::int32_t(p.dilation[0])), put(std::int32_t(p.dilation[1]));
      put(p.slope);
      l.grid = {static_cast<std::uint32_t>(ceil_div(n, tile_n)), static_cast<std::uint32_t>(ceil_div(m, tile_m)),
                static_cast<std::uint32_t>(g)};
      break;
    }
    case op_family::unary: {
      const std::uint32_t n = to_u32(p.dims.numel(), "elements");
      put(n), put(p.slope);
      l.grid = flat_grid(ceil_div(n, dflt(tile, local_size)));
      break;
    }
    case op_family::binary: {
      const shape out = ops.back().dims;
      const shape sa = broadcast_strides(tensor_view<const float>(nullptr, ops[0].dims), out);
      const shape sb = broadcast_strides(tensor_view<const float>(nullptr, ops[1].dims), out);
      const std::uint32_t n = to_u32(out.numel(), "elements");
      put(n), put(static_cast<std::uint32_t>(out.rank()));
      for (const shape* s : {&out, &sa, &sb})
        for (int d = 0; d < 6; ++d) put(d < out.rank() ? to_u32((*s)[d], "extent") : std::uint32_t(0));
      l.grid = flat_grid(ceil_div(n, dflt(tile, local_size)));
      break;
    }
    case op_family::reduce: {
      const int axis = p.axis < 0 ? p.axis + p.dims.rank() : p.axis;
      index_t outer = 1, inner = 1;
      for (int d = 0; d < axis; ++d) outer *= p.dims[d];
      for (int d = axis + 1; d < p.dims.rank(); ++d) inner *= p.dims[d];
      put(to_u32(outer, "outer")), put(to_u32(p.dims[axis], "n")), put(to_u32(inner, "inner"));
      l.grid = flat_grid(ceil_div(static_cast<std::uint64_t>(outer * inner), dflt(tile, 1)));
      break;
    }
    case op_family::softmax:
    case op_family::layer_norm:
    case op_family::rms_norm: {
      const index_t cols = p.dims.back(), rows = cols ? p.dims.numel() / cols : 0;
      put(to_u32(rows, "rows")), put(to_u32(cols, "cols"));
      if (c.family != op_family::softmax) {
        const float eps = p.epsilon >= 0 ? p.epsilon : (c.family == op_family::layer_norm ? 1e-5f : 1e-6f);
        put(eps);
      }
      l.grid = flat_grid(ceil_div(static_cast<std::uint64_t>(rows), dflt(tile, 1)));
      break;
    }
    case op_family::attention: {
      const index_t bh = p.dims[0] * p.dims[1], s = p.dims[2], d = p.dims[3], len = ops[1].dims[2];
      const float scale = p.scale > 0 ? p.scale : 1.0f / std::sqrt(static_cast<float>(std::max<index_t>(1, d)));
      put(to_u32(bh, "B*H")), put(to_u32(s, "S")), put(to_u32(len, "L")), put(to_u32(d, "D")), put(to_u32(d, "DV"));
      put(scale), put(std::uint32_t(p.causal ? 1 : 0));
      l.grid = flat_grid(ceil_div(static_cast<std::uint64_t>(bh * s), dflt(tile, 1)));
      break;
    }
  }
  if (l.push.size() != c.push_bytes)
    throw error("kforge::gen: internal: push constants of " + p.op + " packed " + std::to_string(l.push.size()) +
                " bytes, contract says " + std::to_string(c.push_bytes));
  return l;
}

/// GLSL storage type of a problem's buffers.
inline std::string glsl_storage_type(dtype t) { return is_f16_device(t) ? "float16_t" : "float"; }

/// The op's meaning in words, for prompts and docs.
inline std::string semantics(const problem& p) {
  const op_family f = find_op(p.op).family;
  switch (f) {
    case op_family::gemm: {
      std::string e = p.epilogue == "none" ? "" : " then the epilogue '" + p.epilogue + "'";
      return "C = alpha * A·B + beta * C" + std::string(detail::epilogue_has_bias(p.epilogue) ? " + bias[n] (per column)" : "") +
             e + ". A is [M,K], B is [K,N], C is [M,N], all row-major. When beta == 0, C must not be read." +
             " Accumulate in f32. Activations: relu(x)=max(x,0) with NaN passing through; leaky_relu(x)=x<0?slope*x:x;"
             " gelu(x)=0.5x(1+erf(x/sqrt2)); gelu_tanh(x)=0.5x(1+tanh(0.7978845608(x+0.044715x^3))); silu(x)=x/(1+exp(-x)).";
    }
    case op_family::conv2d:
      return "2-D convolution (cross-correlation, as PyTorch), NCHW: y[n,k,p,q] = act(bias[k] + sum over c,r,s of "
             "x[n, g*C/G + c, p*sh - ph + r*dh, q*sw - pw + s*dw] * w[k, c, r, s]) with g = k / (K/G); taps outside "
             "the image read 0. x is [N,C,H,W], w is [K,C/groups,R,S], y is [N,K,P,Q]. Accumulate in f32.";
    case op_family::unary:
      return "y[i] = " + p.op + "(x[i]) element-wise, computed in f32; NaN propagates. Definitions: relu(x)=x<0?0:x; "
             "leaky_relu(x)=x<0?slope*x:x; gelu(x)=0.5x(1+erf(x/sqrt2)); gelu_tanh(x)=0.5x(1+tanh(0.7978845608(x+0.044715x^3))); "
             "silu(x)=x*sigmoid(x); sigmoid(x)=1/(1+exp(-x)); tanh must not overflow for large |x|.";
    case op_family::binary:
      return "c = " + p.op + "(a, b) element-wise with NumPy broadcasting (use the strides given; they are 0 along "
             "broadcast dims). max/min propagate NaN from either side.";
    case op_family::reduce:
      return p.op + " over axis " + std::to_string(p.axis) + ": the input is seen as dense [outer, n, inner] and "
             "y[o, i] = reduce over j of x[(o*n + j)*inner + i]. Sums accumulate in f32; max/min propagate NaN.";
    case op_family::softmax:
      return "softmax over the last axis, numerically stable (subtract the row max before exp). A NaN or +Inf in a row,"
             " or a row of all -Inf, makes that whole row NaN.";
    case op_family::layer_norm:
      return "layer_norm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma[j] + beta[j] with the biased "
             "variance (divide by cols), computed in f32 (two passes: mean, then mean of squared deviations).";
    case op_family::rms_norm:
      return "rms_norm over the last axis: y = x / sqrt(mean(x^2) + eps) * gamma[j], computed in f32.";
    case op_family::attention:
      return "scaled dot-product attention per (batch, head): O = softmax(Q·Kᵀ·scale [+ causal mask]) · V. Q is "
             "[B,H,S,D], K [B,H,L,D], V [B,H,L,DV], O [B,H,S,DV], flattened as [BH, rows, dim]. With causal, query i "
             "sees keys j <= i. NaN in a score row makes that output row NaN. Accumulate in f32.";
  }
  return "";
}

/// The contract for one problem as text (quoted in prompts, printed by tools).
inline std::string contract_text(const problem& p) {
  const kernel_contract c = contract_for(p);
  const std::string T = glsl_storage_type(p.type);
  std::string s = "Kernel contract for " + p.op + " (" + std::string(to_string(p.type)) + "):\n";
  s += "- `#version 450`, one compute shader, entry point main.\n";
  if (is_f16_device(p.type)) s += "- `#extension GL_EXT_shader_16bit_storage : require`; buffers hold float16_t, compute in float.\n";
  s += "- Storage buffers, std430, set 0, element type " + T + ", dense row-major; inputs `readonly`:\n";
  for (std::size_t b = 0; b < c.bindings.size(); ++b)
    s += "    binding " + std::to_string(b) + ": " + c.bindings[b] +
         (b + 1 == c.bindings.size() ? " (output, written)" : " (input, readonly)") + "\n";
  s += "  No other descriptors (no uniform buffers, images or samplers).\n";
  s += "- One push-constant block of exactly " + std::to_string(c.push_bytes) + " bytes, members in this order:\n";
  s += "    layout(push_constant) uniform Push {";
  for (std::size_t i = 0; i < c.push.size(); ++i) s += (i ? " " : " ") + c.push[i].type + " " + c.push[i].name + ";";
  s += " } pc;\n";
  for (const auto& f : c.push) s += "    " + f.name + ": " + f.meaning + "\n";
  s += "- Workgroup size: `layout(local_size_x_id = 0) in;` and a literal default `layout(local_size_x = N) in;` "
       "(N <= the device's maxComputeWorkGroupInvocations); y = z = 1.\n";
  if (c.tile_2d) {
    s += "- Output tile per workgroup as specialization constants, read by the host to size the grid:\n"
         "    layout(constant_id = 1) const uint TILE_M = ...;  layout(constant_id = 2) const uint TILE_N = ...;\n"
         "  one workgroup computes " + c.tile_meaning + ".\n";
  } else {
    s += "- Optional: `layout(constant_id = 1) const uint TILE = ...;` = " + c.tile_meaning + ".\n";
  }
  s += "- Dispatch grid: " + c.grid_rule + ".";
  if (!c.tile_2d)
    s += " Groups are laid out on a 2-D grid (x <= 65535): use the flat id gl_WorkGroupID.y * gl_NumWorkGroups.x + "
         "gl_WorkGroupID.x and do nothing for ids >= G.";
  s += "\n- Specialization constant ids >= 3 are free for your own knobs (they keep their defaults).\n";
  s += "- Handle every size, including sizes that are not multiples of your tile: never read or write outside the "
       "buffers (the host checks guard regions around every buffer), write every output element, and give the same "
       "result on every run (no atomics that reorder float sums).\n";
  return s;
}

}  // namespace kforge::gen
