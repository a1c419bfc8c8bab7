// kforge/ops/reduce.hpp — sum, mean, max, min over one axis.
//
// The output has the input's shape without the reduced axis, or with it kept
// as extent 1 (keepdim); both are accepted. max/min propagate NaN. Sums
// accumulate in f32. Over an empty axis (PyTorch's rule) sum gives 0 and
// mean NaN (0/0); max and min, which have no identity, are an argument_error.
#pragma once

#include <limits>
#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T, reduce_fn F>
struct reduce {
  using value_type = T;
  static constexpr reduce_fn function = F;
  static constexpr std::string_view name = to_string(F);
  static constexpr int arity = 1;
  int axis = -1;  ///< negative counts from the back
};

}  // namespace op

/// A reduction seen as [outer, n, inner] with the input strides of those
/// three logical dimensions (outer/inner may fold several contiguous dims).
template <class T>
struct reduce_args {
  tensor_view<const T> x;  // original input
  tensor_view<T> y;        // output, re-viewed as [outer, inner]
  int axis = 0;
  index_t outer = 1, n = 1, inner = 1;
};

/// What a reduction over an empty axis gives: sum 0, mean NaN (0/0); max
/// and min have no identity and refuse it.
constexpr float empty_reduction(reduce_fn f) { return f == reduce_fn::mean ? std::numeric_limits<float>::quiet_NaN() : 0.0f; }

namespace detail {
template <class Derived, class Op>
struct reduce_entry;
template <class Derived, class T, reduce_fn F>
struct reduce_entry<Derived, op::reduce<T, F>> {
  static constexpr bool available = true;
  static void run(const op::reduce<T, F>& op, tensor_view<const T> x, tensor_view<T> y) {
    const int r = x.rank();
    const int axis = op.axis < 0 ? op.axis + r : op.axis;
    if (r == 0 || axis < 0 || axis >= r)
      throw argument_error("kforge::" + std::string(op.name) + ": axis " + std::to_string(op.axis) +
                           " is out of range for shape " + x.dims.str());
    if (x.size(axis) == 0 && (F == reduce_fn::max || F == reduce_fn::min))
      throw argument_error("kforge::" + std::string(op.name) + ": cannot reduce the empty axis " +
                           std::to_string(axis) + " of shape " + x.dims.str() + " (" + std::string(op.name) +
                           " has no identity; sum gives 0 and mean NaN there)");
    shape dropped, kept;
    for (int i = 0; i < r; ++i) {
      if (i != axis) dropped.push_back(x.size(i));
      kept.push_back(i == axis ? 1 : x.size(i));
    }
    if (!(y.dims == dropped) && !(y.dims == kept))
      throw shape_error("kforge::" + std::string(op.name) + ": output has shape " + y.dims.str() + ", expected " +
                        dropped.str() + " or " + kept.str());
    reduce_args<T> g{x, y, axis, 1, x.size(axis), 1};
    for (int i = 0; i < axis; ++i) g.outer *= x.size(i);
    for (int i = axis + 1; i < r; ++i) g.inner *= x.size(i);
    if (g.n == 0 && y.data) {
      // Host outputs of a sum or mean over nothing are written here, for every
      // backend; a device tensor's (data == nullptr) by the backend.
      for (index_t i = 0, e = y.numel(); i < e; ++i) y.data[element_offset(y, i)] = static_cast<T>(empty_reduction(F));
      return;
    }
    Derived::compute(op, g);
  }
};
}  // namespace detail

/// Index helpers shared by CPU backends: element (o, j, i) of [outer, n, inner].
template <class T>
index_t reduce_offset(const tensor_view<T>& v, int axis, index_t o, index_t j, index_t i) {
  // Decompose o over dims [0, axis) and i over dims (axis, rank) row-major.
  index_t off = j * v.stride(axis);
  for (int d = v.rank() - 1; d > axis; --d) {
    off += (i % v.size(d)) * v.stride(d);
    i /= v.size(d);
  }
  for (int d = axis - 1; d >= 0; --d) {
    off += (o % v.size(d)) * v.stride(d);
    o /= v.size(d);
  }
  return off;
}

inline tolerance reduce_tolerance(dtype d, index_t n) {
  const double t = dot_error(n);
  return d == dtype::f32 ? tolerance{t, 1e-6, 0} : tolerance{t, 0, 2};
}

}  // namespace kforge

KFORGE_REFUSE(reduce, (class T, ::kforge::reduce_fn F), (T, F))
