// kforge/cpu/elementwise.hpp — unary and binary (broadcasting) element-wise
// ops for policy::blocked and policy::threaded.
//
// Tiling: operands are first coalesced (adjacent dimensions that are
// contiguous in every operand merge, extent-1 dimensions vanish), leaving
// rows × n where the last dimension has one stride per operand (1, 0 for a
// broadcast operand, or any other). Work is cut into chunks of 2048 elements
// of a row; a chunk is converted into f32 stack buffers (vector loads for
// stride 1, a splat for stride 0, a gather otherwise), computed with the
// vectorisable formulas of cpu/vmath.hpp, and converted back. Threads take
// equal contiguous ranges of chunks.
#pragma once

#include <algorithm>
#include <array>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/elementwise.hpp"

namespace kforge::cpu::detail {

/// Up to three operands' strides over one shape, coalesced.
template <int N>
struct strided_loop {
  int rank = 0;
  std::array<index_t, max_rank> dims{};
  std::array<std::array<index_t, max_rank>, N> st{};

  strided_loop(const shape& d, const std::array<const shape*, N>& strides) {
    // Drop extent-1 dimensions, then merge i into i+1 where contiguous for all.
    for (int i = 0; i < d.rank(); ++i) {
      if (d[i] == 1) continue;
      dims[static_cast<std::size_t>(rank)] = d[i];
      for (int o = 0; o < N; ++o) st[static_cast<std::size_t>(o)][static_cast<std::size_t>(rank)] = (*strides[static_cast<std::size_t>(o)])[i];
      ++rank;
    }
    int w = 0;
    for (int i = 0; i < rank; ++i) {
      if (w > 0) {
        bool merge = true;
        for (int o = 0; o < N; ++o)
          merge = merge && st[o][static_cast<std::size_t>(w - 1)] == st[o][static_cast<std::size_t>(i)] * dims[static_cast<std::size_t>(i)];
        if (merge) {
          dims[static_cast<std::size_t>(w - 1)] *= dims[static_cast<std::size_t>(i)];
          for (int o = 0; o < N; ++o) st[o][static_cast<std::size_t>(w - 1)] = st[o][static_cast<std::size_t>(i)];
          continue;
        }
      }
      dims[static_cast<std::size_t>(w)] = dims[static_cast<std::size_t>(i)];
      for (int o = 0; o < N; ++o) st[o][static_cast<std::size_t>(w)] = st[o][static_cast<std::size_t>(i)];
      ++w;
    }
    rank = w;
    if (rank == 0) {  // a single element
      rank = 1;
      dims[0] = 1;
      for (int o = 0; o < N; ++o) st[o][0] = 1;
    }
  }
  index_t n() const { return dims[static_cast<std::size_t>(rank - 1)]; }
  index_t rows() const {
    index_t r = 1;
    for (int i = 0; i < rank - 1; ++i) r *= dims[static_cast<std::size_t>(i)];
    return r;
  }
  index_t inner_stride(int o) const { return st[static_cast<std::size_t>(o)][static_cast<std::size_t>(rank - 1)]; }
  /// Offset of the first element of row r in operand o.
  index_t row_offset(int o, index_t r) const {
    index_t off = 0;
    for (int i = rank - 2; i >= 0; --i) {
      off += (r % dims[static_cast<std::size_t>(i)]) * st[static_cast<std::size_t>(o)][static_cast<std::size_t>(i)];
      r /= dims[static_cast<std::size_t>(i)];
    }
    return off;
  }
};

inline constexpr index_t elementwise_chunk = 2048;

/// Calls f(row, begin, len) for every chunk of every row, over threads.
template <int N, class F>
void for_each_chunk(const strided_loop<N>& lp, int nthreads, F&& f) {
  const index_t n = lp.n(), per_row = (n + elementwise_chunk - 1) / elementwise_chunk;
  const index_t items = lp.rows() * per_row;
  // At least ~32K elements per thread: below that a worker's wake-up costs
  // more than it saves (measured with bench_ops on the 2-core Zen 5).
  const index_t grain = std::max<index_t>(1, 32768 / std::min<index_t>(std::max<index_t>(n, 1), elementwise_chunk));
  parallel_for(nthreads, items, grain, [&](index_t b, index_t e) {
    for (index_t it = b; it < e; ++it) {
      const index_t r = it / per_row, c0 = (it % per_row) * elementwise_chunk;
      f(r, c0, std::min<index_t>(elementwise_chunk, n - c0));
    }
  });
}

template <class T, fn F>
void unary_compute(const op::unary<T, F>& op, const unary_args<T>& g, int nthreads) {
  if (g.x.numel() == 0) return;
  const strided_loop<2> lp(g.x.dims, {&g.x.strides, &g.y.strides});
  const index_t sx = lp.inner_stride(0), sy = lp.inner_stride(1);
  for_each_chunk(lp, nthreads, [&](index_t r, index_t c0, index_t len) {
    alignas(64) float buf[elementwise_chunk];
    load_row(g.x.data + lp.row_offset(0, r) + c0 * sx, sx, len, buf);
    apply_n<F>(buf, len, op.slope);
    store_row(buf, len, g.y.data + lp.row_offset(1, r) + c0 * sy, sy);
  });
}

template <binop F>
inline void binary_n(const float* a, const float* b, float* c, index_t n) {
  for (index_t i = 0; i < n; ++i) c[i] = math::apply<F>(a[i], b[i]);
}

template <class T, binop F>
void binary_compute(const binary_args<T>& g, int nthreads) {
  if (g.c.numel() == 0) return;
  const strided_loop<3> lp(g.c.dims, {&g.a.strides, &g.b.strides, &g.c.strides});
  const index_t sa = lp.inner_stride(0), sb = lp.inner_stride(1), sc = lp.inner_stride(2);
  for_each_chunk(lp, nthreads, [&](index_t r, index_t c0, index_t len) {
    alignas(64) float a[elementwise_chunk], b[elementwise_chunk];
    load_row(g.a.data + lp.row_offset(0, r) + c0 * sa, sa, len, a);
    load_row(g.b.data + lp.row_offset(1, r) + c0 * sb, sb, len, b);
    binary_n<F>(a, b, a, len);
    store_row(a, len, g.c.data + lp.row_offset(2, r) + c0 * sc, sc);
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T, fn F>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::unary<T, F>> : unary_entry<impl<P, op::unary<T, F>>, op::unary<T, F>> {
  static void compute(const op::unary<T, F>& op, const unary_args<T>& g) {
    cpu::detail::unary_compute(op, g, cpu::detail::cpu_config<P>::threads());
  }
};
template <class P, class T, binop F>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::binary<T, F>> : binary_entry<impl<P, op::binary<T, F>>, op::binary<T, F>> {
  static void compute(const op::binary<T, F>&, const binary_args<T>& g) {
    cpu::detail::binary_compute<T, F>(g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
