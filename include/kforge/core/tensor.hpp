// kforge/core/tensor.hpp — non-owning tensor views and the conversions from
// Eigen matrices/maps, std::span, std::vector and raw pointers.
//
// A view is (pointer, shape, strides in elements). Row-major is the default
// for views made from pointers; Eigen's column-major objects keep their own
// strides (a column-major M×N matrix is the view [M, N] with strides [1, ld]),
// so nothing is ever silently transposed. Every op and backend receives the one
// canonical type tensor_view<const T> / tensor_view<T>, which keeps template
// instantiations few (STYLE habit 7).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <initializer_list>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/core/error.hpp"

namespace kforge {

inline constexpr int max_rank = 6;

/// A small fixed-capacity list of extents (or strides).
class shape {
 public:
  constexpr shape() = default;
  constexpr shape(std::initializer_list<index_t> dims) {
    if (dims.size() > max_rank) throw shape_error("kforge: rank " + std::to_string(dims.size()) + " exceeds max_rank 6");
    for (index_t d : dims) dims_[rank_++] = d;
  }
  static shape from(std::span<const index_t> dims) {
    if (dims.size() > max_rank) throw shape_error("kforge: rank " + std::to_string(dims.size()) + " exceeds max_rank 6");
    shape s;
    for (index_t d : dims) s.dims_[s.rank_++] = d;
    return s;
  }
  constexpr int rank() const { return rank_; }
  constexpr index_t operator[](int i) const { return dims_[static_cast<std::size_t>(i)]; }
  constexpr index_t& operator[](int i) { return dims_[static_cast<std::size_t>(i)]; }
  /// Extent counted from the back: back(0) is the last dimension.
  constexpr index_t back(int i = 0) const { return dims_[static_cast<std::size_t>(rank_ - 1 - i)]; }
  constexpr index_t numel() const {
    index_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[static_cast<std::size_t>(i)];
    return n;
  }
  constexpr void push_back(index_t d) {
    if (rank_ >= max_rank) throw shape_error("kforge: rank exceeds max_rank 6");
    dims_[static_cast<std::size_t>(rank_++)] = d;
  }
  constexpr const index_t* begin() const { return dims_.data(); }
  constexpr const index_t* end() const { return dims_.data() + rank_; }
  friend constexpr bool operator==(const shape& a, const shape& b) {
    if (a.rank_ != b.rank_) return false;
    for (int i = 0; i < a.rank_; ++i)
      if (a.dims_[static_cast<std::size_t>(i)] != b.dims_[static_cast<std::size_t>(i)]) return false;
    return true;
  }
  /// "[3x4x5]"; the scalar shape prints as "[]".
  std::string str() const {
    std::string s = "[";
    for (int i = 0; i < rank_; ++i) {
      if (i) s += 'x';
      s += std::to_string(dims_[static_cast<std::size_t>(i)]);
    }
    return s + "]";
  }

 private:
  std::array<index_t, max_rank> dims_{};
  int rank_ = 0;
};

/// Row-major (C order) strides for a shape.
inline shape row_major_strides(const shape& s) {
  shape st = s;
  index_t acc = 1;
  for (int i = s.rank() - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}

/// Non-owning view of a strided tensor. T may be const.
template <class T>
struct tensor_view {
  using element_type = T;
  using value_type = std::remove_const_t<T>;
  static_assert(storage_type<value_type>, "kforge::tensor_view: element type must be float, half, bfloat16, double or std::int32_t");

  T* data = nullptr;
  kforge::shape dims;
  kforge::shape strides;

  constexpr tensor_view() = default;
  /// Contiguous row-major view.
  tensor_view(T* p, kforge::shape s) : data(p), dims(s), strides(row_major_strides(s)) {}
  tensor_view(T* p, kforge::shape s, kforge::shape st) : data(p), dims(s), strides(st) {
    if (st.rank() != s.rank())
      throw shape_error("kforge::tensor_view: shape " + s.str() + " and strides " + st.str() + " differ in rank");
  }
  /// A view of T converts to a view of const T.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  tensor_view(const tensor_view<U>& o) : data(o.data), dims(o.dims), strides(o.strides) {}

  int rank() const { return dims.rank(); }
  index_t size(int i) const { return dims[i]; }
  index_t stride(int i) const { return strides[i]; }
  index_t numel() const { return dims.numel(); }
  bool empty() const { return numel() == 0; }
  static constexpr dtype type() { return dtype_of<value_type>(); }

  /// True when the elements are densely packed in row-major order.
  bool is_contiguous() const {
    index_t acc = 1;
    for (int i = rank() - 1; i >= 0; --i) {
      if (dims[i] != 1 && strides[i] != acc) return false;
      acc *= dims[i];
    }
    return true;
  }
  /// True for a rank-2 view whose rows are contiguous (stride(1) == 1).
  bool rows_contiguous() const { return rank() == 2 && (dims[1] <= 1 || strides[1] == 1); }
  /// True for a rank-2 view whose columns are contiguous (stride(0) == 1).
  bool cols_contiguous() const { return rank() == 2 && (dims[0] <= 1 || strides[0] == 1); }

  T& operator()(index_t i) const { return data[i * strides[0]]; }
  T& operator()(index_t i, index_t j) const { return data[i * strides[0] + j * strides[1]]; }
  T& operator()(index_t i, index_t j, index_t k) const {
    return data[i * strides[0] + j * strides[1] + k * strides[2]];
  }
  T& operator()(index_t i, index_t j, index_t k, index_t l) const {
    return data[i * strides[0] + j * strides[1] + k * strides[2] + l * strides[3]];
  }
  /// Element at a multi-index given as a shape-like list.
  T& at(const kforge::shape& idx) const {
    index_t off = 0;
    for (int i = 0; i < idx.rank(); ++i) off += idx[i] * strides[i];
    return data[off];
  }

  /// The same data seen with a new shape; only for contiguous views.
  tensor_view reshaped(kforge::shape s) const {
    if (!is_contiguous() || s.numel() != numel())
      throw shape_error("kforge::tensor_view::reshaped: cannot view " + dims.str() + " as " + s.str());
    return tensor_view(data, s);
  }
};

template <class T>
tensor_view(T*, shape) -> tensor_view<T>;
template <class T>
tensor_view(T*, shape, shape) -> tensor_view<T>;

// ---------------------------------------------------------------------------
// Conversions to views: as_view(x) is the customisation point run() applies to
// every argument. Types it does not know (device tensors, …) pass through.

template <class T>
tensor_view<T> as_view(tensor_view<T> v) {
  return v;
}

template <storage_type T, std::size_t E>
tensor_view<T> as_view(std::span<T, E> s) {
  return tensor_view<T>(s.data(), shape{static_cast<index_t>(s.size())});
}
template <storage_type T>
tensor_view<T> as_view(std::vector<T>& v) {
  return tensor_view<T>(v.data(), shape{static_cast<index_t>(v.size())});
}
template <storage_type T>
tensor_view<const T> as_view(const std::vector<T>& v) {
  return tensor_view<const T>(v.data(), shape{static_cast<index_t>(v.size())});
}

/// A view of a span with an explicit (row-major) shape; the sizes must agree.
template <storage_type T, std::size_t E>
tensor_view<T> make_view(std::span<T, E> s, shape dims) {
  if (static_cast<index_t>(s.size()) != dims.numel())
    throw shape_error("kforge::make_view: span of " + std::to_string(s.size()) + " elements cannot hold shape " +
                      dims.str());
  return tensor_view<T>(s.data(), dims);
}
template <storage_type T>
tensor_view<T> make_view(std::vector<T>& v, shape dims) {
  return make_view(std::span<T>(v), dims);
}
template <storage_type T>
tensor_view<const T> make_view(const std::vector<T>& v, shape dims) {
  return make_view(std::span<const T>(v), dims);
}
template <storage_type T>
tensor_view<T> make_view(T* p, shape dims) {
  return tensor_view<T>(p, dims);
}
template <storage_type T>
tensor_view<T> make_view(T* p, shape dims, shape strides) {
  return tensor_view<T>(p, dims, strides);
}

namespace detail {
template <class D>
concept eigen_direct = std::is_base_of_v<Eigen::DenseBase<std::remove_cvref_t<D>>, std::remove_cvref_t<D>> &&
                       (static_cast<int>(std::remove_cvref_t<D>::Flags) & Eigen::DirectAccessBit) != 0;

template <class D>
constexpr bool eigen_is_vector() {
  using P = std::remove_cvref_t<D>;
  return P::RowsAtCompileTime == 1 || P::ColsAtCompileTime == 1;
}
}  // namespace detail

/// Eigen dense objects with direct access (Matrix, Array, Map, Ref, Block of
/// those). Compile-time vectors become rank-1 views; everything else rank-2
/// with the object's own row and column strides, either storage order.
template <class D>
  requires detail::eigen_direct<D>
auto as_view(D&& m) {
  using P = std::remove_cvref_t<D>;
  using S = typename P::Scalar;
  constexpr bool writable = !std::is_const_v<std::remove_reference_t<D>> &&
                            (static_cast<int>(P::Flags) & Eigen::LvalueBit) != 0;
  using T = std::conditional_t<writable, S, const S>;
  T* p = const_cast<T*>(m.data());
  if constexpr (detail::eigen_is_vector<D>()) {
    return tensor_view<T>(p, shape{static_cast<index_t>(m.size())}, shape{static_cast<index_t>(m.innerStride())});
  } else {
    return tensor_view<T>(p, shape{static_cast<index_t>(m.rows()), static_cast<index_t>(m.cols())},
                          shape{static_cast<index_t>(m.rowStride()), static_cast<index_t>(m.colStride())});
  }
}

namespace detail {
/// What run() passes to a backend: a tensor_view for anything viewable,
/// the argument itself otherwise.
template <class A>
decltype(auto) canonical(A&& a) {
  if constexpr (requires { as_view(std::forward<A>(a)); }) return as_view(std::forward<A>(a));
  else return std::forward<A>(a);
}
}  // namespace detail

/// Shape check helper used by every backend: throws shape_error naming the op,
/// the operand, the expected and the actual shape.
inline void expect_shape(std::string_view op, std::string_view operand, const shape& expected, const shape& actual) {
  if (!(expected == actual))
    throw shape_error("kforge::" + std::string(op) + ": " + std::string(operand) + " has shape " + actual.str() +
                      ", expected " + expected.str());
}

/// Treats a view as a vector of n elements: rank-1 [n], or rank-2 [1,n]/[n,1].
template <class T>
tensor_view<T> as_vector(std::string_view op, std::string_view operand, tensor_view<T> v, index_t n) {
  if (v.rank() == 1 && v.size(0) == n) return v;
  if (v.rank() == 2 && v.numel() == n && (v.size(0) == 1 || v.size(1) == 1))
    return tensor_view<T>(v.data, shape{n}, shape{v.size(0) == 1 ? v.stride(1) : v.stride(0)});
  throw shape_error("kforge::" + std::string(op) + ": " + std::string(operand) + " has shape " + v.dims.str() +
                    ", expected [" + std::to_string(n) + "]");
}

/// Storage offset of element i (row-major order of the dims) of a view of any strides.
template <class U>
index_t element_offset(const tensor_view<U>& v, index_t i) {
  index_t off = 0;
  for (int d = v.rank() - 1; d >= 0; --d) {
    off += (i % v.size(d)) * v.stride(d);
    i /= v.size(d);
  }
  return off;
}

}  // namespace kforge
