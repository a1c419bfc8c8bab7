// kforge/cpu/softmax.hpp — softmax, layer_norm and rms_norm over the last
// axis for policy::blocked and policy::threaded.
//
// Each row is read from memory once: the statistics pass runs 16
// independent lanes (online softmax: running max and rescaled sum per lane;
// layer_norm: Welford mean and M2 per lane; rms_norm: sum of squares), the
// lanes are merged (Chan's formula for Welford), and the output pass re-reads
// the row from L1/L2 (a 4096-float row is 16 KiB). Rows that are strided or
// half/bfloat16 are converted into an f32 row buffer first. Threads split
// rows.
//
// Special values follow the reference: a NaN anywhere makes the softmax row
// NaN, an all -inf row gives NaN, a +inf gives NaN (inf - inf).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/norm.hpp"
#include "kforge/ops/softmax.hpp"

namespace kforge::cpu::detail {

inline constexpr int row_lanes = 16;
struct tag_row {};
struct tag_gamma {};

/// Online softmax of one f32 row into y (may alias x).
inline void softmax_row(const float* x, float* y, index_t n) {
  constexpr int L = row_lanes;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  float m[L], s[L];
  for (int l = 0; l < L; ++l) {
    m[l] = ninf;
    s[l] = 0.0f;
  }
  index_t i = 0;
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) {
      const float v = x[i + l];
      const float mn = (v > m[l] || v != v) ? v : m[l];
      // While the running max is -inf, scores are -inf too: count them as
      // exp(0) and let the first finite max rescale them away (exp(-inf) = 0).
      const float scale = mn == ninf ? 1.0f : vexp(m[l] - mn);
      const float e = vexp(mn == ninf ? 0.0f : v - mn);
      s[l] = s[l] * scale + e;
      m[l] = mn;
    }
  for (int l = 0; i < n; ++i, l = (l + 1) % L) {
    const float v = x[i];
    const float mn = (v > m[l] || v != v) ? v : m[l];
    const float scale = mn == ninf ? 1.0f : vexp(m[l] - mn);
    s[l] = s[l] * scale + vexp(mn == ninf ? 0.0f : v - mn);
    m[l] = mn;
  }
  float mx = m[0];
  for (int l = 1; l < L; ++l) mx = math::nan_max(mx, m[l]);
  float sum = 0.0f;
  for (int l = 0; l < L; ++l) sum += s[l] * (mx == ninf ? 1.0f : vexp(m[l] - mx));
  const float inv = 1.0f / sum;
  for (index_t j = 0; j < n; ++j) y[j] = vexp(x[j] - mx) * inv;
}

/// Welford mean and variance (biased) of one f32 row, 16 lanes merged with Chan.
inline void welford_row(const float* __restrict x, index_t n, float& mean, float& var) {
  constexpr int L = row_lanes;
  float mu[L] = {}, m2[L] = {};
  index_t i = 0, k = 0;
  for (; i + L <= n; i += L) {
    const float inv = 1.0f / static_cast<float>(++k);
    for (int l = 0; l < L; ++l) {
      const float v = x[i + l];
      const float d = v - mu[l];
      mu[l] += d * inv;
      m2[l] += d * (v - mu[l]);
    }
  }
  // Merge the lanes pairwise (all hold k samples), then the tail one by one.
  double cnt = static_cast<double>(k);
  for (int w = L / 2; w >= 1 && k > 0; w /= 2) {
    for (int l = 0; l < w; ++l) {
      const float d = mu[l + w] - mu[l];
      mu[l] += 0.5f * d;
      m2[l] += m2[l + w] + d * d * static_cast<float>(cnt * 0.5);
    }
    cnt *= 2;
  }
  float a_mu = k > 0 ? mu[0] : 0.0f, a_m2 = k > 0 ? m2[0] : 0.0f;
  float a_n = static_cast<float>(k > 0 ? cnt : 0.0);
  for (; i < n; ++i) {
    a_n += 1.0f;
    const float d = x[i] - a_mu;
    a_mu += d / a_n;
    a_m2 += d * (x[i] - a_mu);
  }
  mean = a_mu;
  var = a_m2 / static_cast<float>(n);
}

/// Runs f(xrow_f32, yrow_f32, n) per row and stores the f32 output row.
template <class T, class F>
void for_each_row(const rows_args<T>& g, int nthreads, F&& f) {
  const index_t n = g.cols;
  const index_t sx = g.x.strides.back(), sy = g.y.strides.back();
  parallel_for(nthreads, g.rows, std::max<index_t>(1, 32768 / std::max<index_t>(n, 1)), [&](index_t r0, index_t r1) {
    float* buf = scratch<tag_row>(static_cast<std::size_t>(n));
    for (index_t r = r0; r < r1; ++r) {
      const T* x = g.x.data + row_offset(g.x, r);
      T* y = g.y.data + row_offset(g.y, r);
      if constexpr (std::is_same_v<T, float>) {
        if (sx == 1 && sy == 1) {
          f(x, y, n);
          continue;
        }
      }
      load_row(x, sx, n, buf);
      f(buf, buf, n);
      store_row(buf, n, y, sy);
    }
  });
}

template <class T>
void softmax_compute(const rows_args<T>& g, int nthreads) {
  if (g.rows * g.cols == 0) return;
  for_each_row(g, nthreads, [](const float* x, float* y, index_t n) { softmax_row(x, y, n); });
}

template <class T>
const float* gamma_f32(const tensor_view<const T>& v, index_t n, float* dst) {
  load_row(v.data, v.stride(0), n, dst);
  return dst;
}

template <class T>
void layer_norm_compute(const op::layer_norm<T>& op, const norm_args<T>& g, int nthreads) {
  if (g.rows * g.cols == 0) return;
  float* gb = scratch<tag_gamma>(static_cast<std::size_t>(2 * g.cols));
  const float* gamma = gamma_f32(g.gamma, g.cols, gb);
  const float* beta = gamma_f32(g.beta, g.cols, gb + g.cols);
  const float eps = op.epsilon;
  for_each_row(static_cast<const rows_args<T>&>(g), nthreads, [&](const float* x, float* y, index_t n) {
    float mean, var;
    welford_row(x, n, mean, var);
    const float rstd = 1.0f / std::sqrt(var + eps);
    for (index_t j = 0; j < n; ++j) y[j] = (x[j] - mean) * rstd * gamma[j] + beta[j];
  });
}

template <class T>
void rms_norm_compute(const op::rms_norm<T>& op, const norm_args<T>& g, int nthreads) {
  if (g.rows * g.cols == 0) return;
  float* gb = scratch<tag_gamma>(static_cast<std::size_t>(g.cols));
  const float* gamma = gamma_f32(g.gamma, g.cols, gb);
  const float eps = op.epsilon;
  for_each_row(static_cast<const rows_args<T>&>(g), nthreads, [&](const float* x, float* y, index_t n) {
    constexpr int L = row_lanes;
    float acc[L] = {};
    index_t i = 0;
    for (; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) acc[l] += x[i + l] * x[i + l];
    float ss = 0.0f;
    for (int l = 0; l < L; ++l) ss += acc[l];
    for (; i < n; ++i) ss += x[i] * x[i];
    const float rs = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    for (index_t j = 0; j < n; ++j) y[j] = x[j] * rs * gamma[j];
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::softmax<T>> : softmax_entry<impl<P, op::softmax<T>>, op::softmax<T>> {
  static void compute(const op::softmax<T>&, const rows_args<T>& g) {
    cpu::detail::softmax_compute(g, cpu::detail::cpu_config<P>::threads());
  }
};
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::layer_norm<T>> : norm_entry<impl<P, op::layer_norm<T>>, op::layer_norm<T>> {
  static void compute(const op::layer_norm<T>& op, const norm_args<T>& g) {
    cpu::detail::layer_norm_compute(op, g, cpu::detail::cpu_config<P>::threads());
  }
};
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::rms_norm<T>> : norm_entry<impl<P, op::rms_norm<T>>, op::rms_norm<T>> {
  static void compute(const op::rms_norm<T>& op, const norm_args<T>& g) {
    cpu::detail::rms_norm_compute(op, g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
