// kforge/ops/conv2d.hpp — 2-D convolution, NCHW, cross-correlation as in
// PyTorch: y[n,k,p,q] = act(bias[k] + Σ_{c,r,s} x[n, g·C/G + c, p·sh - ph + r·dh,
// q·sw - pw + s·dw] · w[k, c, r, s]) with g = k / (K/G).
//
// Operands: x [N, C, H, W], w [K, C/groups, R, S], optional bias [K],
// y [N, K, P, Q] with P = (H + 2·ph - dh·(R-1) - 1) / sh + 1 (likewise Q).
// Stride, padding, dilation and groups are run-time members like alpha/beta;
// bias and activation are compile-time (the epilogue, as for gemm).
#pragma once

#include <string_view>

#include "kforge/core/dispatch.hpp"
#include "kforge/ops/gemm.hpp"

namespace kforge {
namespace op {

template <class T, class Epilogue = epilogue::none>
struct conv2d {
  using value_type = T;
  using epilogue_type = Epilogue;
  static constexpr std::string_view name = "conv2d";
  static constexpr int arity = Epilogue::has_bias ? 3 : 2;

  Epilogue epilogue{};
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
};

}  // namespace op

struct conv2d_dims {
  index_t n, c, h, w;  // input
  index_t k, r, s;     // filters (w is [k, c/groups, r, s])
  index_t p, q;        // output spatial
  int sh, sw, ph, pw, dh, dw, groups;
  index_t c_per_group() const { return c / groups; }
  index_t k_per_group() const { return k / groups; }
};

template <class T>
struct conv2d_args {
  tensor_view<const T> x, w, bias;
  tensor_view<T> y;
  conv2d_dims d;
};


inline conv2d_dims make_conv2d_dims(int sh, int sw, int ph, int pw, int dh, int dw, int groups, const shape& x,
                                    const shape& w) {
  if (x.rank() != 4) throw shape_error("kforge::conv2d: x has shape " + x.str() + ", expected rank 4 [N,C,H,W]");
  if (w.rank() != 4) throw shape_error("kforge::conv2d: w has shape " + w.str() + ", expected rank 4 [K,C/groups,R,S]");
  if (sh < 1 || sw < 1 || dh < 1 || dw < 1 || ph < 0 || pw < 0 || groups < 1)
    throw argument_error("kforge::conv2d: stride and dilation must be >= 1, padding >= 0, groups >= 1 (got stride " +
                         std::to_string(sh) + "x" + std::to_string(sw) + ", pad " + std::to_string(ph) + "x" +
                         std::to_string(pw) + ", dilation " + std::to_string(dh) + "x" + std::to_string(dw) +
                         ", groups " + std::to_string(groups) + ")");
  if (w[2] < 1 || w[3] < 1)
    throw shape_error("kforge::conv2d: w has shape " + w.str() + ": the filter's extents R and S must be >= 1");
  conv2d_dims d{x[0], x[1], x[2], x[3], w[0], w[2], w[3], 0, 0, sh, sw, ph, pw, dh, dw, groups};
  if (d.c % groups || d.k % groups)
    throw shape_error("kforge::conv2d: channels C=" + std::to_string(d.c) + " and filters K=" + std::to_string(d.k) +
                      " must both be divisible by groups=" + std::to_string(groups));
  expect_shape("conv2d", "w", shape{d.k, d.c / groups, d.r, d.s}, w);
  const index_t eh = d.h + 2 * index_t{ph} - dh * (d.r - 1) - 1, ew = d.w + 2 * index_t{pw} - dw * (d.s - 1) - 1;  // pad up to 2^30: no int overflow
  if (eh < 0 || ew < 0)
    throw shape_error("kforge::conv2d: filter " + w.str() + " with dilation does not fit input " + x.str() +
                      " with padding");
  d.p = eh / sh + 1;
  d.q = ew / sw + 1;
  // Padding up to 2^30 makes P and Q up to ~2^31 each: the output's element
  // count (and its strides) would overflow an index_t long before memory runs out.
  const double out = static_cast<double>(d.n) * static_cast<double>(d.k) * static_cast<double>(d.p) * static_cast<double>(d.q);
  if (out > 9007199254740992.0)
    throw shape_error("kforge::conv2d: the output [N,K,P,Q] = [" + std::to_string(d.n) + "," + std::to_string(d.k) + "," +
                      std::to_string(d.p) + "," + std::to_string(d.q) + "] has more than 2^53 elements");
  return d;
}

namespace detail {
template <class Derived, class Op>
struct conv2d_entry;
template <class Derived, class T, class E>
struct conv2d_entry<Derived, op::conv2d<T, E>> {
  static constexpr bool available = true;
  static conv2d_args<T> check(const op::conv2d<T, E>& op, tensor_view<const T> x, tensor_view<const T> w,
                              tensor_view<const T> bias, tensor_view<T> y) {
    conv2d_args<T> g{x, w, {}, y,
                     make_conv2d_dims(op.stride_h, op.stride_w, op.pad_h, op.pad_w, op.dilation_h, op.dilation_w,
                                      op.groups, x.dims, w.dims)};
    expect_shape("conv2d", "y", shape{g.d.n, g.d.k, g.d.p, g.d.q}, y.dims);
    if (E::has_bias) g.bias = as_vector("conv2d", "bias", bias, g.d.k);
    return g;
  }
  static void run(const op::conv2d<T, E>& op, tensor_view<const T> x, tensor_view<const T> w, tensor_view<T> y)
    requires(!E::has_bias)
  {
    Derived::compute(op, check(op, x, w, {}, y));
  }
  static void run(const op::conv2d<T, E>& op, tensor_view<const T> x, tensor_view<const T> w,
                  tensor_view<const T> bias, tensor_view<T> y)
    requires(E::has_bias)
  {
    Derived::compute(op, check(op, x, w, bias, y));
  }
};
}  // namespace detail

inline tolerance conv2d_tolerance(dtype d, index_t reduction) { return gemm_tolerance(d, reduction); }

}  // namespace kforge

KFORGE_REFUSE(conv2d, (class T, class E), (T, E))
