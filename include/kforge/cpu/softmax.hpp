// kforge/cpu/softmax.hpp — softmax, layer_norm and rms_norm over the last
// axis for policy::blocked and policy::threaded.
//
// Each row is read from memory once and written once: the first pass over a
// row brings it into L1/L2 (a 4096-float row is 16 KiB) and the later passes
// re-read it from there — softmax: max, then exp(x - max) into a row buffer
// with its sum (one exp per element), then the scaled output; layer_norm:
// mean, then the mean of squared deviations (the reference's two-pass
// variance), then the output; rms_norm: sum of squares, then the output.
// Every pass runs on whole SIMD registers (cpu/vmath.hpp's exp included),
// large outputs are written with non-temporal stores (row_stream_min_bytes),
// and the next row's input is prefetched during a compute pass of this one
// (prefetch_next), so memory and arithmetic overlap.
// Rows that are strided or half/bfloat16 are converted into an f32 row
// buffer first. Rows are claimed in chunks by the pool's threads.
//
// Special values follow the reference: a NaN anywhere makes the softmax row
// NaN, an all -inf row gives NaN, a +inf gives NaN (inf - inf).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/norm.hpp"
#include "kforge/ops/softmax.hpp"

namespace kforge::cpu::detail {

struct tag_row {};
struct tag_exp {};
struct tag_gamma {};

/// Output rows of at least this many bytes in total are written with
/// non-temporal stores: they would not stay in cache anyway, and streaming
/// saves the read-for-ownership of every output line (a third of the memory
/// traffic of softmax and the norms). 16 MiB is half the L3 of the 2-core
/// Zen 5 development machine (bench_ops, 4096×4096 f32 = 64 MiB out).
inline constexpr index_t row_stream_min_bytes = index_t{16} << 20;

/// Asks for the cache lines of next[j0, j1) (nothing when next is null): the
/// next row's input, fetched into L2 while this row computes from L1/L2.
/// Without it the first pass over each row waits for memory while the others
/// leave it idle (the hardware prefetchers follow demand misses only):
/// softmax over 4096 × 4096 f32 ran at half its in-cache rate on the 2-core
/// Zen 5. Into L2, not L1: with 11008-float rows a prefetch into L1 evicted
/// the row being worked on (2048 × 11008: 10–20 % slower than none, into L2
/// 10–15 % faster).
KFORGE_CPU_INLINE void prefetch_next(const float* next, index_t j0, index_t j1) {
  if (next)
    for (index_t j = j0; j < j1; j += 64 / static_cast<index_t>(sizeof(float))) __builtin_prefetch(next + j, 0, 2);
}

/// Rows shorter than this (in floats) are not prefetched: the hardware
/// prefetchers keep up with them, and rms_norm over 8192 × 1024 f32 lost
/// ~25 % with the prefetches (2-core Zen 5).
inline constexpr index_t row_prefetch_min_cols = 2048;

/// y[j] = vec(j) (a register of W outputs from j) or one(j) (one output),
/// for j < n; streamed (non-temporal) when `stream`, after a scalar head
/// that aligns y to a register. Prefetches `next` (prefetch_next) as it goes.
template <class FV, class FS>
KFORGE_CPU_INLINE void write_row(float* __restrict y, index_t n, bool stream, const float* next, FV&& vec, FS&& one) {
  using S = simd_native;
  constexpr int W = S::width;
  constexpr index_t L = 64 / sizeof(float);  // floats per cache line
  index_t j = 0;
  if (stream) {
    for (; j < n && reinterpret_cast<std::uintptr_t>(y + j) % sizeof(typename S::reg) != 0; ++j) y[j] = one(j);
    for (; j + W <= n; j += W) {
      if (j % L < W) prefetch_next(next, j, j + 1);
      S::stream(y + j, vec(j));
    }
  }
  for (; j + W <= n; j += W) {
    if (j % L < W) prefetch_next(next, j, j + 1);
    S::store(y + j, vec(j));
  }
  prefetch_next(next, j, n);
  for (; j < n; ++j) y[j] = one(j);
}

/// Σ f(x[j]) over a row, in two registers of lanes (independent chains);
/// prefetches `next` (prefetch_next) as it goes.
template <class F>
KFORGE_CPU_INLINE float row_sum(const float* __restrict x, index_t n, F&& f, const float* next = nullptr) {
  using S = simd_native;
  using V = S::reg;
  constexpr int W = S::width;
  V s0 = S::zero(), s1 = S::zero();
  index_t j = 0;
  for (; j + 2 * W <= n; j += 2 * W) {
    prefetch_next(next, j, j + 2 * W);
    s0 = s0 + f(S::load(x + j));
    s1 = s1 + f(S::load(x + j + W));
  }
  prefetch_next(next, j, n);
  for (; j + W <= n; j += W) s0 = s0 + f(S::load(x + j));
  alignas(64) float lanes[W];
  S::store(lanes, s0 + s1);
  float s = 0.0f;
  for (int l = 0; l < W; ++l) s += lanes[l];
  for (; j < n; ++j) s += f(x[j]);
  return s;
}

/// Softmax of one f32 row into y (y may alias x). x is read from memory
/// once, for its max; e = exp(x - max) goes to the L1/L2-resident buffer `e`
/// with its sum (one exp per element); y = e / sum is the only write.
inline void softmax_row(const float* x, float* y, index_t n, float* __restrict e, bool stream, const float* next) {
  using S = simd_native;
  using V = S::reg;
  constexpr int W = S::width;
  const float mx = row_nan_max(x, n);
  // exp(x - mx): an all -inf row gives exp(NaN) and a +inf gives
  // exp(inf - inf) = NaN, so those rows are NaN, as in the reference.
  const V vm = S::set1(mx);
  V s0 = S::zero(), s1 = S::zero();
  index_t j = 0;
  alignas(64) float lanes[W];
  const auto exp_pass = [&](auto&& ex) {
    for (; j + 2 * W <= n; j += 2 * W) {
      prefetch_next(next, j, j + 2 * W);  // the next row, during the pass that computes most
      const V a = ex(S::load(x + j) - vm), b = ex(S::load(x + j + W) - vm);
      S::store(e + j, a);
      S::store(e + j + W, b);
      s0 = s0 + a;
      s1 = s1 + b;
    }
  };
  // With a finite max every x - max is <= 0 or -inf, never NaN: the cheaper exp.
  if (std::isfinite(mx)) exp_pass([](V v) { return vexp_nonpositive(v); });
  else exp_pass([](V v) { return vexp(v); });
  S::store(lanes, s0 + s1);
  float sum = 0.0f;
  for (int l = 0; l < W; ++l) sum += lanes[l];
  prefetch_next(next, j, n);
  for (; j < n; ++j) sum += (e[j] = vexp(x[j] - mx));
  const float inv = 1.0f / sum;
  const V vi = S::set1(inv);
  write_row(
      y, n, stream, nullptr, [&](index_t k) { return S::load(e + k) * vi; }, [&](index_t k) { return e[k] * inv; });
}

/// Runs f(xrow_f32, yrow_f32, n, stream, next) per row: contiguous f32 rows
/// in place (next: the following row of the same chunk, to prefetch, or
/// null), others through an f32 row buffer (next null).
template <class T, class F>
void for_each_row(const rows_args<T>& g, int nthreads, F&& f) {
  const index_t n = g.cols;
  const index_t sx = g.x.strides.back(), sy = g.y.strides.back();
  const bool stream = g.rows * n * static_cast<index_t>(sizeof(T)) >= row_stream_min_bytes;
  parallel_for(nthreads, g.rows, std::max<index_t>(1, 32768 / std::max<index_t>(n, 1)), [&](index_t r0, index_t r1) {
    float* buf = scratch<tag_row>(static_cast<std::size_t>(n));
    for (index_t r = r0; r < r1; ++r) {
      const T* x = g.x.data + row_offset(g.x, r);
      T* y = g.y.data + row_offset(g.y, r);
      if constexpr (std::is_same_v<T, float>) {
        if (sx == 1 && sy == 1) {
          f(x, y, n, stream, r + 1 < r1 && n >= row_prefetch_min_cols ? g.x.data + row_offset(g.x, r + 1) : nullptr);
          continue;
        }
      }
      load_row(x, sx, n, buf);
      f(buf, buf, n, false, nullptr);
      store_row(buf, n, y, sy);
    }
    if (stream) stream_fence();
  });
}

template <class T>
void softmax_compute(const rows_args<T>& g, int nthreads) {
  if (g.rows * g.cols == 0) return;
  for_each_row(g, nthreads, [](const float* x, float* y, index_t n, bool stream, const float* next) {
    softmax_row(x, y, n, scratch<tag_exp>(static_cast<std::size_t>(n)), stream, next);
  });
}

template <class T>
const float* gamma_f32(const tensor_view<const T>& v, index_t n, float* dst) {
  load_row(v.data, v.stride(0), n, dst);
  return dst;
}

template <class T>
void layer_norm_compute(const op::layer_norm<T>& op, const norm_args<T>& g, int nthreads) {
  if (g.rows * g.cols == 0) return;
  using S = simd_native;
  float* gb = scratch<tag_gamma>(static_cast<std::size_t>(2 * g.cols));
  const float* gamma = gamma_f32(g.gamma, g.cols, gb);
  const float* beta = gamma_f32(g.beta, g.cols, gb + g.cols);
  const float eps = op.epsilon;
  for_each_row(static_cast<const rows_args<T>&>(g), nthreads, [&](const float* x, float* y, index_t n, bool stream, const float* next) {
    // Two passes over the row (the second from L1/L2), as the reference:
    // the mean, then the mean of squared deviations.
    const float mean = row_sum(x, n, [](auto v) { return v; }) / static_cast<float>(n);
    const float var = row_sum(
                          x, n, [&](auto v) { return (v - mean) * (v - mean); }, next) /
                      static_cast<float>(n);
    const float rstd = 1.0f / std::sqrt(var + eps);
    const auto vmean = S::set1(mean), vrstd = S::set1(rstd);
    write_row(
        y, n, stream, nullptr,
        [&](index_t j) { return (S::load(x + j) - vmean) * vrstd * S::load(gamma + j) + S::load(beta + j); },
        [&](index_t j) { return (x[j] - mean) * rstd * gamma[j] + beta[j]; });
  });
}

template <class T>
void rms_norm_compute(const op::rms_norm<T>& op, const norm_args<T>& g, int nthreads) {
  if (g.rows * g.cols == 0) return;
  using S = simd_native;
  float* gb = scratch<tag_gamma>(static_cast<std::size_t>(g.cols));
  const float* gamma = gamma_f32(g.gamma, g.cols, gb);
  const float eps = op.epsilon;
  for_each_row(static_cast<const rows_args<T>&>(g), nthreads, [&](const float* x, float* y, index_t n, bool stream, const float* next) {
    const float ss = row_sum(x, n, [](auto v) { return v * v; });
    const float rs = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
    const auto vrs = S::set1(rs);
    write_row(
        y, n, stream, next, [&](index_t j) { return S::load(x + j) * vrs * S::load(gamma + j); },
        [&](index_t j) { return x[j] * rs * gamma[j]; });
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
