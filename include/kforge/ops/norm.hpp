// kforge/ops/norm.hpp — layer_norm and rms_norm over the last axis.
//
//   layer_norm: y = (x - mean) / sqrt(var + eps) * gamma + beta   (biased var)
//   rms_norm:   y = x / sqrt(mean(x²) + eps) * gamma
// gamma and beta have one element per column (the last axis).
#pragma once

#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/softmax.hpp"
#include "kforge/ops/tolerance.hpp"

namespace kforge {
namespace op {

template <class T>
struct layer_norm {
  using value_type = T;
  static constexpr std::string_view name = "layer_norm";
  static constexpr int arity = 3;  // x, gamma, beta
  float epsilon = 1e-5f;
};

template <class T>
struct rms_norm {
  using value_type = T;
  static constexpr std::string_view name = "rms_norm";
  static constexpr int arity = 2;  // x, gamma
  float epsilon = 1e-6f;
};

}  // namespace op

template <class T>
struct norm_args : rows_args<T> {
  tensor_view<const T> gamma, beta;  // beta.data == nullptr for rms_norm
};

namespace detail {
template <class Derived, class Op>
struct norm_entry;
template <class Derived, class T>
struct norm_entry<Derived, op::layer_norm<T>> {
  static constexpr bool available = true;
  static void run(const op::layer_norm<T>& op, tensor_view<const T> x, tensor_view<const T> gamma,
                  tensor_view<const T> beta, tensor_view<T> y) {
    if (!(op.epsilon >= 0.0f)) throw argument_error("kforge::layer_norm: epsilon must be >= 0");
    norm_args<T> g{check_rows<T>(op.name, x, y), {}, {}};
    g.gamma = as_vector(op.name, "gamma", gamma, g.cols);
    g.beta = as_vector(op.name, "beta", beta, g.cols);
    Derived::compute(op, g);
  }
};
template <class Derived, class T>
struct norm_entry<Derived, op::rms_norm<T>> {
  static constexpr bool available = true;
  static void run(const op::rms_norm<T>& op, tensor_view<const T> x, tensor_view<const T> gamma, tensor_view<T> y) {
    if (!(op.epsilon >= 0.0f)) throw argument_error("kforge::rms_norm: epsilon must be >= 0");
    norm_args<T> g{check_rows<T>(op.name, x, y), {}, {}};
    g.gamma = as_vector(op.name, "gamma", gamma, g.cols);
    Derived::compute(op, g);
  }
};
}  // namespace detail

inline tolerance norm_tolerance(dtype d, index_t cols) {
  // Error scale: |gamma| · |x - mean| / std + |beta| (validation computes it).
  const double t = 8 * epsilon_of(dtype::f32) * (4 + std::sqrt(static_cast<double>(cols)));
  return d == dtype::f32 ? tolerance{t, 1e-5, 0} : tolerance{t, 1e-5, 2};
}

}  // namespace kforge

KFORGE_REFUSE(layer_norm, (class T), (T))
KFORGE_REFUSE(rms_norm, (class T), (T))
