// kforge/validate/problem.hpp — a run-time description of one op call
// (op name, dtype, shapes, parameters) and the host tensors that hold its
// operands. The CLI, the validation suite, the tuner and the generation module
// all speak this one language; execute.hpp turns it back into a typed
// run<Policy>(op, ...) call.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/core/error.hpp"
#include "kforge/core/tensor.hpp"
#include "kforge/ops/conv2d.hpp"
#include "kforge/ops/elementwise.hpp"
#include "kforge/ops/functions.hpp"

namespace kforge {

enum class op_family : std::uint8_t { gemm, unary, binary, reduce, softmax, layer_norm, rms_norm, conv2d, attention };

/// One op call. `dims` (and `dims2`) mean, per family:
///   gemm       dims = {M, N, K}
///   unary, softmax, layer_norm, rms_norm, reduce   dims = input shape
///   binary     dims = shape of a, dims2 = shape of b (broadcast; empty = same as a)
///   conv2d     dims = x [N,C,H,W], dims2 = w [K,C/groups,R,S]
///   attention  dims = {B, H, S, D}, dims2 = {L} (key length; empty = S)
struct problem {
  std::string op = "gemm";  ///< gemm, relu, gelu, ..., add, ..., reduce_sum, ..., softmax, layer_norm, rms_norm, conv2d, attention
  dtype type = dtype::f32;
  shape dims, dims2;
  std::string epilogue = "none";  ///< gemm/conv2d: none, bias, relu, bias_relu, leaky_relu, gelu_tanh, gelu, silu, bias_* ...
  float alpha = 1.0f, beta = 0.0f;
  float slope = 0.01f;            ///< leaky_relu
  float epsilon = -1.0f;          ///< norms; < 0 = the op's default
  float scale = 0.0f;             ///< attention; 0 = 1/sqrt(D)
  int axis = -1;                  ///< reductions
  bool causal = false;            ///< attention
  int stride[2] = {1, 1}, pad[2] = {0, 0}, dilation[2] = {1, 1}, groups = 1;  ///< conv2d
  bool a_col_major = false, b_col_major = false;  ///< gemm operand layouts
};

struct op_info {
  std::string_view name;
  op_family family;
  std::string_view shape_help;  ///< the SHAPE syntax for the CLI
};

/// Every op the library knows, with the family it belongs to.
inline const std::vector<op_info>& all_ops() {
  static const std::vector<op_info> ops = {
      {"gemm", op_family::gemm, "MxNxK"},
      {"relu", op_family::unary, "dims, e.g. 64x1000"},
      {"leaky_relu", op_family::unary, "dims"},
      {"gelu", op_family::unary, "dims"},
      {"gelu_tanh", op_family::unary, "dims"},
      {"silu", op_family::unary, "dims"},
      {"exp", op_family::unary, "dims"},
      {"tanh", op_family::unary, "dims"},
      {"sigmoid", op_family::unary, "dims"},
      {"abs", op_family::unary, "dims"},
      {"neg", op_family::unary, "dims"},
      {"add", op_family::binary, "A[,B] e.g. 8x100,100 (NumPy broadcasting)"},
      {"sub", op_family::binary, "A[,B]"},
      {"mul", op_family::binary, "A[,B]"},
      {"div", op_family::binary, "A[,B]"},
      {"max", op_family::binary, "A[,B]"},
      {"min", op_family::binary, "A[,B]"},
      {"reduce_sum", op_family::reduce, "dims (with --axis)"},
      {"reduce_mean", op_family::reduce, "dims (with --axis)"},
      {"reduce_max", op_family::reduce, "dims (with --axis)"},
      {"reduce_min", op_family::reduce, "dims (with --axis)"},
      {"softmax", op_family::softmax, "RxC (last axis)"},
      {"layer_norm", op_family::layer_norm, "RxC (last axis)"},
      {"rms_norm", op_family::rms_norm, "RxC (last axis)"},
      {"conv2d", op_family::conv2d, "NxCxHxW,KxCxRxS (C of the filter = C/groups)"},
      {"attention", op_family::attention, "BxHxSxD[,L]"},
  };
  return ops;
}

inline const op_info& find_op(std::string_view name) {
  for (const auto& o : all_ops())
    if (o.name == name) return o;
  std::string known;
  for (const auto& o : all_ops()) known += (known.empty() ? "" : ", ") + std::string(o.name);
  throw argument_error("kforge: unknown op '" + std::string(name) + "' (known: " + known + ")");
}

/// "64x48x40" → {64, 48, 40}. Throws argument_error on anything else.
inline shape parse_dims(std::string_view s) {
  shape out;
  if (s.empty()) throw argument_error("kforge: empty shape");
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = s.find('x', i);
    const std::string_view part = s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string_view::npos)
      throw argument_error("kforge: bad shape '" + std::string(s) + "' (expected dims separated by 'x', e.g. 64x48x40)");
    if (out.rank() == max_rank) throw argument_error("kforge: shape '" + std::string(s) + "' has more than 6 dims");
    out.push_back(std::stoll(std::string(part)));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  return out;
}

/// Sets p.op, p.dims and p.dims2 from an op name and a SHAPE string, checking
/// the number of dims each family needs.
inline void set_shape(problem& p, std::string_view shape_text) {
  const op_info& info = find_op(p.op);
  const std::size_t comma = shape_text.find(',');
  p.dims = parse_dims(shape_text.substr(0, comma));
  p.dims2 = comma == std::string_view::npos ? shape{} : parse_dims(shape_text.substr(comma + 1));
  auto need = [&](bool ok, std::string_view what) {
    if (!ok)
      throw argument_error("kforge: " + std::string(p.op) + " takes SHAPE " + std::string(what) + ", got '" +
                           std::string(shape_text) + "'");
  };
  switch (info.family) {
    case op_family::gemm: need(p.dims.rank() == 3 && p.dims2.rank() == 0, "MxNxK"); break;
    case op_family::softmax:
    case op_family::layer_norm:
    case op_family::rms_norm: need(p.dims.rank() >= 1 && p.dims2.rank() == 0, "RxC"); break;
    case op_family::unary:
    case op_family::reduce: need(p.dims.rank() >= 1 && p.dims2.rank() == 0, "dims"); break;
    case op_family::binary: need(p.dims.rank() >= 1, "A[,B]"); break;
    case op_family::conv2d: need(p.dims.rank() == 4 && p.dims2.rank() == 4, "NxCxHxW,KxCxRxS"); break;
    case op_family::attention: need(p.dims.rank() == 4 && p.dims2.rank() <= 1, "BxHxSxD[,L]"); break;
  }
}

/// Shape, strides and role of one operand of a problem.
struct operand_spec {
  std::string name;
  shape dims, strides;
  bool is_output = false;
  bool also_input = false;  ///< the output is read too (gemm with beta != 0)
  bool gets_specials = false;  ///< receives NaN/Inf in the nan_inf case
};

/// An owning host buffer for one operand (its storage covers the strides).
struct host_tensor {
  dtype type = dtype::f32;
  shape dims, strides;
  std::vector<std::byte> storage;

  host_tensor() = default;
  host_tensor(dtype t, shape d, shape st) : type(t), dims(d), strides(st) {
    index_t span = dims.numel() == 0 ? 0 : 1;
    for (int i = 0; i < dims.rank(); ++i) span += (dims[i] - 1) * strides[i];
    storage.resize(static_cast<std::size_t>(span) * size_of(t));
  }
  index_t span() const { return static_cast<index_t>(storage.size() / size_of(type)); }
  template <class T>
  tensor_view<T> view() {
    check<T>();
    return tensor_view<T>(reinterpret_cast<T*>(storage.data()), dims, strides);
  }
  template <class T>
  tensor_view<const T> view() const {
    check<T>();
    return tensor_view<const T>(reinterpret_cast<const T*>(storage.data()), dims, strides);
  }
  /// Element i of the storage (not of the logical shape) as float.
  float get(index_t i) const {
    switch (type) {
      case dtype::f32: return reinterpret_cast<const float*>(storage.data())[i];
      case dtype::f16: return static_cast<float>(reinterpret_cast<const half*>(storage.data())[i]);
      case dtype::bf16: return static_cast<float>(reinterpret_cast<const bfloat16*>(storage.data())[i]);
      case dtype::f64: return static_cast<float>(reinterpret_cast<const double*>(storage.data())[i]);
    }
    return 0;
  }
  void set(index_t i, float v) {
    switch (type) {
      case dtype::f32: reinterpret_cast<float*>(storage.data())[i] = v; break;
      case dtype::f16: reinterpret_cast<half*>(storage.data())[i] = half(v); break;
      case dtype::bf16: reinterpret_cast<bfloat16*>(storage.data())[i] = bfloat16(v); break;
      case dtype::f64: reinterpret_cast<double*>(storage.data())[i] = v; break;
    }
  }
  /// Storage offsets of the logical elements, in row-major order of dims.
  std::vector<index_t> offsets() const {
    std::vector<index_t> out;
    out.reserve(static_cast<std::size_t>(dims.numel()));
    const index_t n = dims.numel();
    std::array<index_t, max_rank> idx{};
    for (index_t e = 0; e < n; ++e) {
      index_t off = 0;
      for (int d = 0; d < dims.rank(); ++d) off += idx[static_cast<std::size_t>(d)] * strides[d];
      out.push_back(off);
      for (int d = dims.rank() - 1; d >= 0; --d) {
        if (++idx[static_cast<std::size_t>(d)] < dims[d]) break;
        idx[static_cast<std::size_t>(d)] = 0;
      }
    }
    return out;
  }

 private:
  template <class T>
  void check() const {
    if (dtype_of<T>() != type)
      throw argument_error("kforge::host_tensor: viewed as " + std::string(to_string(dtype_of<T>())) + " but holds " +
                           std::string(to_string(type)));
  }
};

namespace detail {
inline bool epilogue_has_bias(std::string_view e) { return e == "bias" || e.starts_with("bias_"); }
}  // namespace detail

/// The operands of a problem: inputs in call order, then the output.
inline std::vector<operand_spec> operands(const problem& p) {
  const op_info& info = find_op(p.op);
  std::vector<operand_spec> ops;
  auto add = [&](std::string name, shape dims, bool specials = false) {
    ops.push_back({std::move(name), dims, row_major_strides(dims), false, false, specials});
  };
  auto col_major = [](shape d) { return shape{1, d[0]}; };
  switch (info.family) {
    case op_family::gemm: {
      const index_t m = p.dims[0], n = p.dims[1], k = p.dims[2];
      add("A", shape{m, k}, true);
      if (p.a_col_major) ops.back().strides = col_major(shape{m, k});
      add("B", shape{k, n});
      if (p.b_col_major) ops.back().strides = col_major(shape{k, n});
      if (detail::epilogue_has_bias(p.epilogue)) add("bias", shape{n});
      add("C", shape{m, n});
      ops.back().also_input = p.beta != 0.0f;
      break;
    }
    case op_family::unary:
    case op_family::softmax: add("x", p.dims, true); add("y", p.dims); break;
    case op_family::layer_norm:
      add("x", p.dims, true); add("gamma", shape{p.dims.back()}); add("beta", shape{p.dims.back()}); add("y", p.dims);
      break;
    case op_family::rms_norm: add("x", p.dims, true); add("gamma", shape{p.dims.back()}); add("y", p.dims); break;
    case op_family::binary: {
      const shape b = p.dims2.rank() ? p.dims2 : p.dims;
      add("a", p.dims, true);
      add("b", b, true);
      const shape out = broadcast_shape(p.op, p.dims, b);
      add("c", out);
      break;
    }
    case op_family::reduce: {
      const int axis = p.axis < 0 ? p.axis + p.dims.rank() : p.axis;
      if (axis < 0 || axis >= p.dims.rank())
        throw argument_error("kforge::" + p.op + ": axis " + std::to_string(p.axis) + " is out of range for " + p.dims.str());
      shape out;
      for (int i = 0; i < p.dims.rank(); ++i)
        if (i != axis) out.push_back(p.dims[i]);
      add("x", p.dims, true);
      add("y", out);
      break;
    }
    case op_family::conv2d: {
      const shape& x = p.dims;
      const shape& w = p.dims2;
      // The op's own check: fit, groups and the filter's shape.
      const conv2d_dims d = make_conv2d_dims(p.stride[0], p.stride[1], p.pad[0], p.pad[1], p.dilation[0], p.dilation[1],
                                             p.groups, x, w);
      add("x", x, true);
      add("w", w);
      if (detail::epilogue_has_bias(p.epilogue)) add("bias", shape{w[0]});
      add("y", shape{d.n, d.k, d.p, d.q});
      break;
    }
    case op_family::attention: {
      const index_t b = p.dims[0], h = p.dims[1], s = p.dims[2], d = p.dims[3];
      const index_t l = p.dims2.rank() ? p.dims2[0] : s;
      add("Q", shape{b, h, s, d}, true);
      add("K", shape{b, h, l, d});
      add("V", shape{b, h, l, d});
      add("O", shape{b, h, s, d});
      break;
    }
  }
  ops.back().is_output = true;
  return ops;
}

/// Allocates host tensors for every operand of p (contents zero).
inline std::vector<host_tensor> allocate(const problem& p) {
  std::vector<host_tensor> ts;
  for (const auto& o : operands(p)) ts.emplace_back(p.type, o.dims, o.strides);
  return ts;
}

/// Floating-point operations of one call (multiply-add = 2), for GFLOP/s.
inline double flops(const problem& p) {
  const auto ops = operands(p);
  const double out = static_cast<double>(ops.back().dims.numel());
  switch (find_op(p.op).family) {
    case op_family::gemm: return 2.0 * p.dims[0] * p.dims[1] * p.dims[2];
    case op_family::conv2d: return 2.0 * out * (p.dims2[1] * p.dims2[2] * p.dims2[3]);
    case op_family::attention: {
      const double l = static_cast<double>(ops[1].dims[2]), s = static_cast<double>(p.dims[2]);
      const double pairs = p.causal ? s * l - s * (s - 1) / 2.0 : s * l;
      return 4.0 * p.dims[0] * p.dims[1] * pairs * p.dims[3];
    }
    default: return static_cast<double>(ops.front().dims.numel());
  }
}

/// Bytes a call must move at least once (each operand read or written once).
inline double min_bytes(const problem& p) {
  double b = 0;
  for (const auto& o : operands(p)) b += static_cast<double>(o.dims.numel()) * static_cast<double>(size_of(p.type));
  return b;
}

/// True when the op is usually limited by compute rather than memory.
inline bool compute_bound(const problem& p) {
  const op_family f = find_op(p.op).family;
  return f == op_family::gemm || f == op_family::conv2d || f == op_family::attention;
}

/// "gemm 64x48x40 f32 epilogue=bias_relu" — for messages and reports.
inline std::string describe(const problem& p) {
  std::string s = p.op + " " + p.dims.str();
  if (p.dims2.rank()) s += "," + p.dims2.str();
  s += " " + std::string(to_string(p.type));
  const op_family f = find_op(p.op).family;
  if ((f == op_family::gemm || f == op_family::conv2d) && p.epilogue != "none") s += " epilogue=" + p.epilogue;
  if (f == op_family::attention && p.causal) s += " causal";
  if (f == op_family::reduce) s += " axis=" + std::to_string(p.axis);
  return s;
}

}  // namespace kforge
