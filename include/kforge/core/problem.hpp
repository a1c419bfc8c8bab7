// kforge/core/problem.hpp — a run-time description of one op call (op name,
// dtype, shapes, parameters), the roles of its operands, and the host tensors
// that hold them. The CLI, the validation suite, the tuner and the generation
// module all speak this one language; what a problem means for each op family
// is that family's traits (ops/*_traits.hpp), read through ops/registry.hpp.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/core/error.hpp"
#include "kforge/core/tensor.hpp"

namespace kforge {

/// One op call. What `dims` (and `dims2`) mean is the op family's (its
/// traits' SHAPE syntax, ops/*_traits.hpp), e.g.
///   gemm       dims = {M, N, K}
///   softmax    dims = input shape
///   binary     dims = shape of a, dims2 = shape of b (broadcast; empty = same as a)
///   conv2d     dims = x [N,C,H,W], dims2 = w [K,C/groups,R,S]
///   attention  dims = {B, H, S, D}, dims2 = {L} (key length; empty = S)
/// The named parameters below belong to the families that existed first;
/// later families keep theirs in `attrs` (by name; the family's traits say
/// which names and defaults), so that adding an op never changes this struct.
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
  std::map<std::string, double, std::less<>> attrs;  ///< the other families' parameters

  /// attrs[name], or `fallback` when it is not set.
  double attr(std::string_view name, double fallback) const {
    const auto it = attrs.find(name);
    return it == attrs.end() ? fallback : it->second;
  }
};

/// "64x48x40" → {64, 48, 40}. Throws argument_error on anything else.
inline shape parse_dims(std::string_view s) {
  shape out;
  if (s.empty()) throw argument_error("kforge: empty shape");
  std::size_t i = 0;
  while (i <= s.size()) {
    const std::size_t j = s.find('x', i);
    const std::string_view part = s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i);
    if (part.empty() || part.size() > 12 || part.find_first_not_of("0123456789") != std::string_view::npos)
      throw argument_error("kforge: bad shape '" + std::string(s) +
                           "' (expected dims separated by 'x', each a whole number of at most 12 digits, e.g. 64x48x40)");
    if (out.rank() == max_rank) throw argument_error("kforge: shape '" + std::string(s) + "' has more than 6 dims");
    out.push_back(std::stoll(std::string(part)));
    if (j == std::string_view::npos) break;
    i = j + 1;
  }
  // Any product of these dims (an operand, an output) must fit index_t with
  // room to spare; 2^53 elements is beyond every machine's memory anyway.
  double all = 1;
  for (int d = 0; d < out.rank(); ++d) all *= static_cast<double>(std::max<index_t>(out[d], 1));
  if (all > 9007199254740992.0)
    throw argument_error("kforge: shape '" + std::string(s) + "' has more than 2^53 elements");
  return out;
}

/// Shape, strides, role and element type of one operand of a problem.
///
/// Operands come in call order: the inputs, then the outputs. A family whose
/// op has one output marks none (validate/problem.hpp's operands() marks the
/// last); one with several (topk: values, indices) marks each of them.
struct operand_spec {
  std::string name;
  shape dims, strides;
  bool is_output = false;
  bool also_input = false;  ///< the output is read too (gemm with beta != 0)
  bool gets_specials = false;  ///< receives NaN/Inf in the nan_inf case
  /// The element type where it is not the problem's: dtype::i32 for ids and
  /// indices. Empty: p.type (every operand of the float ops).
  std::optional<dtype> type;
  /// An i32 input holding row ids of a table of `id_bound` rows: the suite
  /// draws every element in [0, id_bound) (embedding's ids).
  index_t id_bound = 0;
  /// Contract kernels write a row of zeros for an id outside [0, id_bound)
  /// (embedding: output row i for id i, the host reports the id): the suite
  /// feeds them such ids where it judges contract kernels (suite_options::contract).
  bool bad_ids_zero_rows = false;
};

/// The element type of operand o of problem p.
inline dtype operand_type(const problem& p, const operand_spec& o) { return o.type.value_or(p.type); }

/// An owning host buffer for one operand (its storage covers the strides).
struct host_tensor {
  dtype type = dtype::f32;
  shape dims, strides;
  std::vector<std::byte> storage;

  host_tensor() = default;
  host_tensor(dtype t, shape d, shape st) : type(t), dims(d), strides(st) {
    index_t span = 0;  // an empty tensor holds nothing, whatever its strides
    if (dims.numel() != 0) {
      span = 1;
      for (int i = 0; i < dims.rank(); ++i) span += (dims[i] - 1) * strides[i];
    }
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
  /// Element i of the storage (not of the logical shape) as float (i32:
  /// exact up to 2^24; get_i32 reads integers exactly).
  float get(index_t i) const {
    switch (type) {
      case dtype::f32: return reinterpret_cast<const float*>(storage.data())[i];
      case dtype::f16: return static_cast<float>(reinterpret_cast<const half*>(storage.data())[i]);
      case dtype::bf16: return static_cast<float>(reinterpret_cast<const bfloat16*>(storage.data())[i]);
      case dtype::f64: return static_cast<float>(reinterpret_cast<const double*>(storage.data())[i]);
      case dtype::i32: return static_cast<float>(get_i32(i));
    }
    return 0;
  }
  void set(index_t i, float v) {
    switch (type) {
      case dtype::f32: reinterpret_cast<float*>(storage.data())[i] = v; break;
      case dtype::f16: reinterpret_cast<half*>(storage.data())[i] = half(v); break;
      case dtype::bf16: reinterpret_cast<bfloat16*>(storage.data())[i] = bfloat16(v); break;
      case dtype::f64: reinterpret_cast<double*>(storage.data())[i] = v; break;
      case dtype::i32: set_i32(i, static_cast<std::int32_t>(v)); break;
    }
  }
  /// The bits of element i of the storage (f32: 32, f16/bf16: 16, i32: 32).
  std::uint64_t bits(index_t i) const {
    std::uint64_t v = 0;
    const std::size_t n = size_of(type);
    std::memcpy(&v, storage.data() + static_cast<std::size_t>(i) * n, n);
    return v;
  }
  /// Element i of an i32 tensor's storage, exactly.
  std::int32_t get_i32(index_t i) const {
    check<std::int32_t>();
    std::int32_t v;
    std::memcpy(&v, storage.data() + static_cast<std::size_t>(i) * 4, 4);
    return v;
  }
  void set_i32(index_t i, std::int32_t v) {
    check<std::int32_t>();
    std::memcpy(storage.data() + static_cast<std::size_t>(i) * 4, &v, 4);
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

}  // namespace kforge
