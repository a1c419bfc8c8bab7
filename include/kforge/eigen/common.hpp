// kforge/eigen/common.hpp — moving views in and out of Eigen float arrays.
//
// The reference computes in float whatever the storage type. f32 views that
// are plain strided matrices are mapped without a copy; everything else is
// gathered into a dense float array first and scattered back at the end.
#pragma once

#include <Eigen/Core>

#include "kforge/core/tensor.hpp"

namespace kforge::eigen {

using matrix_rm = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using array_rm = Eigen::Array<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using strided_map = Eigen::Map<const matrix_rm, 0, Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;

/// Calls f(offset) for every element of `dims` walked in row-major order,
/// with the offset computed from `strides`.
template <class F>
void for_each_offset(const shape& dims, const shape& strides, F&& f) {
  const index_t n = dims.numel();
  if (n == 0) return;
  const int r = dims.rank();
  std::array<index_t, max_rank> idx{};
  index_t off = 0;
  for (index_t e = 0; e < n; ++e) {
    f(e, off);
    for (int d = r - 1; d >= 0; --d) {
      if (++idx[static_cast<std::size_t>(d)] < dims[d]) {
        off += strides[d];
        break;
      }
      off -= (dims[d] - 1) * strides[d];
      idx[static_cast<std::size_t>(d)] = 0;
    }
  }
}

/// All elements of v, in row-major order of its shape, as floats.
template <class T>
Eigen::ArrayXf gather(const tensor_view<T>& v) {
  using U = std::remove_const_t<T>;
  if (v.is_contiguous())  // the common case: one vectorised conversion
    return Eigen::Map<const Eigen::Array<U, Eigen::Dynamic, 1>>(v.data, v.numel()).template cast<float>();
  Eigen::ArrayXf out(v.numel());
  for_each_offset(v.dims, v.strides, [&](index_t e, index_t off) { out[e] = static_cast<float>(v.data[off]); });
  return out;
}

/// Writes row-major float values into v, converting to its storage type.
template <class T>
void scatter(const Eigen::Ref<const Eigen::ArrayXf>& values, const tensor_view<T>& v) {
  if (v.is_contiguous()) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(v.data, v.numel()) = values.template cast<T>();
    return;
  }
  for_each_offset(v.dims, v.strides, [&](index_t e, index_t off) { v.data[off] = static_cast<T>(values[e]); });
}

/// A rank-2 view as a dense row-major float matrix (copied).
template <class T>
matrix_rm to_matrix(const tensor_view<T>& v) {
  matrix_rm m(v.size(0), v.size(1));
  for (index_t i = 0; i < v.size(0); ++i)
    for (index_t j = 0; j < v.size(1); ++j) m(i, j) = static_cast<float>(v(i, j));
  return m;
}

/// A rank-2 f32 view mapped in place (any strides).
inline strided_map map(const tensor_view<const float>& v) {
  return strided_map(v.data, v.size(0), v.size(1), Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(v.stride(0), v.stride(1)));
}

template <class T>
void store(const matrix_rm& m, const tensor_view<T>& v) {
  for (index_t i = 0; i < v.size(0); ++i)
    for (index_t j = 0; j < v.size(1); ++j) v(i, j) = static_cast<T>(m(i, j));
}

}  // namespace kforge::eigen
