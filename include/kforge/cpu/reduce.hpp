// kforge/cpu/reduce.hpp — sum, mean, max, min over one axis for
// policy::blocked and policy::threaded.
//
// The input is seen as [outer, n, inner] (reduce_args). Contiguous input
// and output take the fast paths: inner == 1 reduces each row with 32
// independent f32 lanes (vectorised without reassociating: each lane is its
// own sequential sum), inner > 1 accumulates whole rows of `inner` values
// (vectorised along inner, in chunks of 2048 that stay in L1). Other layouts
// walk each output's n inputs with their stride. max/min propagate NaN lane
// by lane (once a lane holds NaN nothing replaces it). Threads split outer
// rows (or inner chunks when there is a single outer row).
#pragma once

#include <algorithm>
#include <limits>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/reduce.hpp"

namespace kforge::cpu::detail {

template <reduce_fn F>
KFORGE_CPU_INLINE float reduce_step(float acc, float x) {
  if constexpr (F == reduce_fn::sum || F == reduce_fn::mean) return acc + x;
  else if constexpr (F == reduce_fn::max) return (x > acc || x != x) ? x : acc;
  else return (x < acc || x != x) ? x : acc;
}
template <reduce_fn F>
KFORGE_CPU_INLINE float reduce_merge(float a, float b) {
  if constexpr (F == reduce_fn::sum || F == reduce_fn::mean) return a + b;
  else if constexpr (F == reduce_fn::max) return math::nan_max(a, b);
  else return math::nan_min(a, b);
}

/// Reduces n contiguous floats (n >= 1).
template <reduce_fn F>
float reduce_contiguous(const float* __restrict x, index_t n) {
  constexpr int L = 32;
  index_t i = 0;
  float acc[L];
  if (n >= L) {
    for (int l = 0; l < L; ++l) acc[l] = x[l];
    for (i = L; i + L <= n; i += L)
      for (int l = 0; l < L; ++l) acc[l] = reduce_step<F>(acc[l], x[i + l]);
    for (int w = L / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) acc[l] = reduce_merge<F>(acc[l], acc[l + w]);
  } else {
    acc[0] = x[0];
    i = 1;
  }
  float r = acc[0];
  for (; i < n; ++i) r = reduce_step<F>(r, x[i]);
  return r;
}

template <class T, reduce_fn F>
void reduce_compute(const reduce_args<T>& g, int nthreads) {
  const index_t outer = g.outer, n = g.n, inner = g.inner;
  if (outer * inner == 0) return;
  const float inv_n = 1.0f / static_cast<float>(n);
  auto finish = [&](float v) { return F == reduce_fn::mean ? v * inv_n : v; };
  const bool fast = g.x.is_contiguous() && g.y.is_contiguous();
  if (fast && inner == 1) {
    parallel_for(nthreads, outer, std::max<index_t>(1, 65536 / n), [&](index_t o0, index_t o1) {
      alignas(64) float buf[2048];
      for (index_t o = o0; o < o1; ++o) {
        const T* row = g.x.data + o * n;
        float r;
        if constexpr (std::is_same_v<T, float>) {
          r = reduce_contiguous<F>(row, n);
        } else {
          index_t c0 = 0;
          const index_t len0 = std::min<index_t>(2048, n);
          load_row(row, 1, len0, buf);
          r = reduce_contiguous<F>(buf, len0);
          for (c0 = len0; c0 < n; c0 += 2048) {
            const index_t len = std::min<index_t>(2048, n - c0);
            load_row(row + c0, 1, len, buf);
            r = reduce_merge<F>(r, reduce_contiguous<F>(buf, len));
          }
        }
        g.y.data[o] = from_f32<T>(finish(r));
      }
    });
    return;
  }
  if (fast) {
    constexpr index_t CH = 2048;
    const index_t chunks = (inner + CH - 1) / CH, items = outer * chunks;
    parallel_for(nthreads, items, std::max<index_t>(1, 65536 / (n * std::min(inner, CH))), [&](index_t b, index_t e) {
      alignas(64) float acc[CH], buf[CH];
      for (index_t it = b; it < e; ++it) {
        const index_t o = it / chunks, i0 = (it % chunks) * CH, len = std::min<index_t>(CH, inner - i0);
        const T* base = g.x.data + o * n * inner + i0;
        load_row(base, 1, len, acc);
        for (index_t j = 1; j < n; ++j) {
          load_row(base + j * inner, 1, len, buf);
          for (index_t i = 0; i < len; ++i) acc[i] = reduce_step<F>(acc[i], buf[i]);
        }
        for (index_t i = 0; i < len; ++i) acc[i] = finish(acc[i]);
        store_row(acc, len, g.y.data + o * inner + i0, 1);
      }
    });
    return;
  }
  // Any strides: the output seen with the reduced axis kept (stride 0).
  shape ydims, ystr;
  const bool kept = g.y.rank() == g.x.rank();
  for (int i = 0, j = 0; i < g.x.rank(); ++i) {
    ydims.push_back(i == g.axis ? 1 : g.x.size(i));
    ystr.push_back(i == g.axis ? 0 : g.y.stride(kept ? i : j));
    if (i != g.axis) ++j;
  }
  const tensor_view<T> yk(g.y.data, ydims, ystr);
  const index_t sx = g.x.stride(g.axis);
  parallel_for(nthreads, outer * inner, std::max<index_t>(1, 65536 / n), [&](index_t b, index_t e) {
    for (index_t it = b; it < e; ++it) {
      const index_t o = it / inner, i = it % inner;
      const T* p = g.x.data + reduce_offset(g.x, g.axis, o, 0, i);
      float r = to_f32(p[0]);
      for (index_t j = 1; j < n; ++j) r = reduce_step<F>(r, to_f32(p[j * sx]));
      yk.data[reduce_offset(yk, g.axis, o, 0, i)] = from_f32<T>(finish(r));
    }
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T, reduce_fn F>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::reduce<T, F>> : reduce_entry<impl<P, op::reduce<T, F>>, op::reduce<T, F>> {
  static void compute(const op::reduce<T, F>&, const reduce_args<T>& g) {
    cpu::detail::reduce_compute<T, F>(g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
