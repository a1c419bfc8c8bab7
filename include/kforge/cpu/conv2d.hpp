// kforge/cpu/conv2d.hpp — conv2d for policy::blocked and policy::threaded as
// an implicit GEMM on the blocked driver (cpu/gemm_kernel.hpp).
//
// Per image n and group g:  Y[n, g] (K/G × P·Q) = W_g (K/G × C/G·R·S) · X̂ (C/G·R·S × P·Q)
// where X̂ is the im2col matrix. X̂ is never materialised: im2col_source's
// pack_b builds the packed KC×NR panels of X̂ straight from x (zero for taps
// in the padding), so the gather is fused into the packing the gemm does
// anyway. Materialising X̂ first would write and re-read C·R·S·P·Q floats
// (ResNet-50 conv1 at batch 8: 8 × 147 × 12544 × 4 B = 59 MB) for no reuse
// the packed panels don't already give. 1×1 convolutions with stride 1 and no
// padding skip even that: X̂ is x itself, a plain [C × H·W] matrix.
// The bias is one per output channel, i.e. per row of Y (the driver's
// per-row bias); the activation is fused in the write-back as for gemm.
// Threads: with at least two (image, group) gemms per thread each thread runs
// whole gemms; otherwise each gemm is split over the threads.
#pragma once

#include <vector>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/ops/conv2d.hpp"

namespace kforge::cpu::detail {

/// The im2col matrix of one image and group: element (row = (c·R + r)·S + s,
/// col = p·Q + q) is x[c, p·sh - ph + r·dh, q·sw - pw + s·dw], 0 outside.
template <class T>
struct im2col_source {
  const T* x;  // x[n, g·C/G, 0, 0]
  index_t sc, sh_x, sw_x;
  index_t h, w, r, s, q;
  int sh, sw, ph, pw, dh, dw;
};

template <int NR, class T>
void pack_b(const im2col_source<T>& src, index_t k0, index_t kc, index_t j0, index_t nc, float* __restrict dst) {
  for (index_t pnl = 0; pnl < nc; pnl += NR, dst += NR * kc) {
    const int nr = static_cast<int>(std::min<index_t>(NR, nc - pnl));
    const index_t col0 = j0 + pnl;
    for (index_t k = 0; k < kc; ++k) {
      const index_t row = k0 + k;
      const index_t c = row / (src.r * src.s), rs = row % (src.r * src.s);
      const index_t rr = rs / src.s, ss = rs % src.s;
      const T* xc = src.x + c * src.sc;
      float* d = dst + k * NR;
      index_t p = col0 / src.q, q = col0 % src.q;
      for (int j = 0; j < nr; ++j) {
        const index_t ih = p * src.sh - src.ph + rr * src.dh, iw = q * src.sw - src.pw + ss * src.dw;
        d[j] = (ih >= 0 && ih < src.h && iw >= 0 && iw < src.w) ? to_f32(xc[ih * src.sh_x + iw * src.sw_x]) : 0.0f;
        if (++q == src.q) {
          q = 0;
          ++p;
        }
      }
      for (int j = nr; j < NR; ++j) d[j] = 0.0f;
    }
  }
}

template <class Policy, class T, class E>
void conv2d_compute(const op::conv2d<T, E>& op, const conv2d_args<T>& g) {
  using C = cpu_config<Policy>;
  using S = typename C::simd;
  constexpr int MR = C::mr, NV = C::nr / S::width;
  const conv2d_dims& d = g.d;
  const index_t cg = d.c_per_group(), kg = d.k_per_group(), crs = cg * d.r * d.s, pq = d.p * d.q;
  if (d.n * d.k * pq == 0) return;
  gemm_epilogue ep;
  ep.act = E::activation;
  ep.slope = op.epilogue.slope;
  ep.bias_per_row = true;
  if constexpr (E::has_bias) ep.bias = bias_f32(g.bias, d.k);
  // Weights as [K × C/G·R·S]: a strided matrix when (c, r, s) are contiguous
  // among themselves, else a dense copy.
  std::vector<T> wcopy;
  matrix_source<T> wm{g.w.data, g.w.stride(0), g.w.stride(3)};
  if (!(g.w.stride(2) == d.s * g.w.stride(3) && g.w.stride(1) == d.r * g.w.stride(2))) {
    wcopy.resize(static_cast<std::size_t>(d.k * crs));
    for (index_t k = 0; k < d.k; ++k)
      for (index_t c = 0; c < cg; ++c)
        for (index_t r = 0; r < d.r; ++r)
          for (index_t s = 0; s < d.s; ++s) wcopy[static_cast<std::size_t>(((k * cg + c) * d.r + r) * d.s + s)] = g.w(k, c, r, s);
    wm = {wcopy.data(), crs, 1};
  }
  // Y[n, g] as a [K/G × P·Q] matrix when (p, q) are contiguous among
  // themselves, else a dense temporary scattered afterwards.
  const bool y_direct = d.q == 1 || g.y.stride(2) == d.q * g.y.stride(3);
  const bool pointwise = d.r == 1 && d.s == 1 && d.sh == 1 && d.sw == 1 && d.ph == 0 && d.pw == 0 &&
                         (d.w == 1 || g.x.stride(2) == d.w * g.x.stride(3));
  const blocking bl = blocking_of<Policy>();
  // One (image, group) gemm; `threads` > 1 splits the gemm itself.
  auto one = [&](index_t n, int grp, int threads) {
    std::vector<T> ytmp(y_direct ? 0 : static_cast<std::size_t>(kg * pq));
    const matrix_source<T> a{wm.p + grp * kg * wm.rs, wm.rs, wm.cs};
    T* yp = y_direct ? g.y.data + n * g.y.stride(0) + grp * kg * g.y.stride(1) : ytmp.data();
    const index_t rs_y = y_direct ? g.y.stride(1) : pq, cs_y = y_direct ? g.y.stride(3) : 1;
    gemm_epilogue e = ep;
    if (ep.bias) e.bias = ep.bias + grp * kg;
    const T* xg = g.x.data + n * g.x.stride(0) + grp * cg * g.x.stride(1);
    if (pointwise) {
      const matrix_source<T> b{xg, g.x.stride(1), g.x.stride(3)};
      gemm_blocked<S, MR, NV>(kg, pq, crs, a, b, yp, rs_y, cs_y, e, bl, threads);
    } else {
      const im2col_source<T> b{xg, g.x.stride(1), g.x.stride(2), g.x.stride(3), d.h, d.w, d.r, d.s, d.q,
                               d.sh, d.sw, d.ph, d.pw, d.dh, d.dw};
      gemm_blocked<S, MR, NV>(kg, pq, crs, a, b, yp, rs_y, cs_y, e, bl, threads);
    }
    if (!y_direct)
      for (index_t k = 0; k < kg; ++k)
        for (index_t j = 0; j < pq; ++j)
          g.y(n, grp * kg + k, j / d.q, j % d.q) = ytmp[static_cast<std::size_t>(k * pq + j)];
  };
  const int nthreads = C::threads();
  const index_t items = d.n * d.groups;
  if (nthreads > 1 && items >= 2 * nthreads) {
    // Enough independent gemms (batch × groups): one per thread at a time, no
    // barriers inside (with one gemm split over threads, every KC step
    // costs two barriers: ResNet-50 res5 at batch 8 ran 4× slower that way
    // under load, bench_ops 2026-11-22).
    parallel_for(nthreads, items, 1, [&](index_t b, index_t e) {
      for (index_t it = b; it < e; ++it) one(it / d.groups, static_cast<int>(it % d.groups), 1);
    });
  } else {
    for (index_t it = 0; it < items; ++it) one(it / d.groups, static_cast<int>(it % d.groups), nthreads);
  }
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T, class E>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::conv2d<T, E>> : conv2d_entry<impl<P, op::conv2d<T, E>>, op::conv2d<T, E>> {
  static void compute(const op::conv2d<T, E>& op, const conv2d_args<T>& g) { cpu::detail::conv2d_compute<P>(op, g); }
};
}  // namespace kforge::detail
