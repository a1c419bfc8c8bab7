// kforge/cpu/topk.hpp — topk and argmax over the last axis for
// policy::blocked and policy::threaded.
//
// k = 1 (argmax) is one SIMD pass over the row in chunks of 512 floats: each
// chunk's NaN-propagating max in registers (row_nan_max), the first
// chunk holding the row's largest remembered (NaN beats everything, a later
// chunk wins only when strictly larger), then a scalar scan of that chunk
// alone for the first position equal to it (or the first NaN). k > 1 keeps a
// min-heap of k candidates, each packed as (topk_key << 32 | ~position) so
// that one integer comparison is the whole order (larger = earlier; equal
// keys: lower position); an element enters only when it beats the heap's
// least, chunks whose SIMD max cannot are skipped, then the heap is sorted. Rows that are strided or f16/bf16 are
// converted into an f32 row buffer first (exact); values are copied from x
// itself. Rows are claimed in chunks by the pool's threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/topk.hpp"

namespace kforge::cpu::detail {

/// Elements per chunk of argmax's SIMD scan: its lanes are reduced once per
/// 512 loads, and the scalar scan after the pass reads one chunk (2 KiB).
inline constexpr index_t scan_chunk = 512;
/// Elements per chunk of topk's SIMD pre-filter: smaller, since a chunk that
/// holds one element beating the current k-th is walked element by element,
/// and early in a row most chunks hold one.
inline constexpr index_t topk_chunk = 128;

/// Position of the first of row x[0, n) in topk's order (n >= 1).
inline index_t argmax_row(const float* x, index_t n) {
  float best = 0.0f;
  index_t best_chunk = 0;
  for (index_t c0 = 0; c0 < n; c0 += scan_chunk) {
    const float m = row_nan_max(x + c0, std::min(scan_chunk, n - c0));
    if (c0 == 0 || (best == best && (m != m || m > best))) {
      best = m;
      best_chunk = c0;
    }
  }
  const index_t c1 = std::min(n, best_chunk + scan_chunk);
  for (index_t j = best_chunk; j < c1; ++j)
    if (best != best ? x[j] != x[j] : x[j] == best) return j;
  return best_chunk;  // not reached: the chunk holds its max
}

/// The value whose topk_key is `key` (+0 for a zero; NaN for 0xffffffff).
inline float topk_value(std::uint32_t key) {
  if (key == 0xffffffffu) return std::numeric_limits<float>::quiet_NaN();
  const std::uint32_t b = (key & 0x80000000u) ? (key & 0x7fffffffu) : ~key;
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

/// The first k of row x[0, n) in topk's order, first first, as packed
/// (key << 32 | ~position) in `heap` (k <= n). Once the heap is full an
/// element enters only when its key beats the least candidate's (a later
/// position never wins a tie): when it is NaN or larger than that value. A
/// chunk whose NaN-propagating max (SIMD) is neither is skipped whole.
inline void topk_row(const float* x, index_t n, index_t k, std::vector<std::uint64_t>& heap) {
  heap.clear();
  const std::greater<std::uint64_t> later;  // min-heap: the front is the least of the candidates
  auto packed = [&](index_t j) {
    return (std::uint64_t{topk_key(x[j])} << 32) | (0xffffffffu - static_cast<std::uint32_t>(j));
  };
  index_t j = 0;
  for (; j < k; ++j) {
    heap.push_back(packed(j));
    std::push_heap(heap.begin(), heap.end(), later);
  }
  float least = topk_value(static_cast<std::uint32_t>(heap.front() >> 32));
  while (j < n && least == least) {  // k NaNs: nothing later comes before them
    const index_t end = std::min(n, j + topk_chunk);
    const float m = row_nan_max(x + j, end - j);
    if (m == m && !(m > least)) {
      j = end;
      continue;
    }
    for (; j < end; ++j) {
      if (!(x[j] > least) && x[j] == x[j]) continue;
      std::pop_heap(heap.begin(), heap.end(), later);
      heap.back() = packed(j);
      std::push_heap(heap.begin(), heap.end(), later);
      least = topk_value(static_cast<std::uint32_t>(heap.front() >> 32));
      if (least != least) break;
    }
  }
  std::sort_heap(heap.begin(), heap.end(), later);  // descending
}

template <class T>
void topk_compute(const topk_args<T>& g, int nthreads) {
  if (g.rows == 0) return;
  const index_t n = g.n, sx = g.x.strides.back(), sv = g.values.strides.back(), si = g.indices.strides.back();
  parallel_for(nthreads, g.rows, std::max<index_t>(1, 32768 / n), [&](index_t r0, index_t r1) {
    std::vector<float> buf;
    std::vector<std::uint64_t> heap;
    for (index_t r = r0; r < r1; ++r) {
      const T* x = g.x.data + row_offset(g.x, r);
      const float* row;
      if constexpr (std::is_same_v<T, float>) row = sx == 1 ? x : nullptr;
      else row = nullptr;
      if (!row) {
        buf.resize(static_cast<std::size_t>(n));
        load_row(x, sx, n, buf.data());
        row = buf.data();
      }
      T* v = g.values.data + row_offset(g.values, r);
      std::int32_t* i = g.indices.data + row_offset(g.indices, r);
      if (g.k == 1) {
        const index_t j = argmax_row(row, n);
        v[0] = x[j * sx];
        i[0] = static_cast<std::int32_t>(j);
        continue;
      }
      topk_row(row, n, g.k, heap);
      for (index_t e = 0; e < g.k; ++e) {
        const index_t j = 0xffffffffu - static_cast<std::uint32_t>(heap[static_cast<std::size_t>(e)]);
        v[e * sv] = x[j * sx];
        i[e * si] = static_cast<std::int32_t>(j);
      }
    }
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::topk<T>> : topk_entry<impl<P, op::topk<T>>, op::topk<T>> {
  static void compute(const op::topk<T>&, const topk_args<T>& g) {
    cpu::detail::topk_compute(g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
