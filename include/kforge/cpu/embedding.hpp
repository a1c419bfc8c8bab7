// kforge/cpu/embedding.hpp — embedding lookup for policy::blocked and
// policy::threaded: the ids (checked by the entry before this runs) walked
// in order, threads splitting them; each table row memcpy'd into its output
// row where both are contiguous, an element loop over the strides otherwise.
// A quantized table: each named row dequantized, then stored in T.
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/ops/embedding.hpp"
#include "kforge/ops/softmax.hpp"

namespace kforge::cpu::detail {

template <class T>
void embedding_compute(const embedding_args<T>& g, int nthreads) {
  if (g.n == 0 || g.d == 0) return;
  const auto& t = g.table;
  const auto& o = g.out;
  const index_t so = o.strides.back();
  parallel_for(nthreads, g.n, std::max<index_t>(1, 16384 / g.d), [&](index_t i0, index_t i1) {
    for (index_t i = i0; i < i1; ++i) {
      const index_t id = g.ids.data[element_offset(g.ids, i)];
      const T* src = t.data + id * t.stride(0);
      T* dst = o.data + row_offset(o, i);
      if (t.stride(1) == 1 && so == 1) {
        std::memcpy(dst, src, static_cast<std::size_t>(g.d) * sizeof(T));
      } else {
        for (index_t j = 0; j < g.d; ++j) dst[j * so] = src[j * t.stride(1)];
      }
    }
  });
}

/// A quantized table: each named row dequantized (dequantize_row) into a
/// thread's buffer, then stored in T.
template <class T>
void embedding_quantized_compute(const embedding_qargs<T>& g, int nthreads) {
  if (g.n == 0 || g.d == 0) return;
  const auto& o = g.out;
  const index_t so = o.strides.back();
  parallel_for(nthreads, g.n, std::max<index_t>(1, 16384 / g.d), [&](index_t i0, index_t i1) {
    std::vector<float> row(static_cast<std::size_t>(g.d));
    for (index_t i = i0; i < i1; ++i) {
      g.table->dequantize_row(g.ids.data[element_offset(g.ids, i)], row.data());
      T* dst = o.data + row_offset(o, i);
      for (index_t j = 0; j < g.d; ++j) dst[j * so] = static_cast<T>(row[static_cast<std::size_t>(j)]);
    }
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::embedding<T>> : embedding_entry<impl<P, op::embedding<T>>, op::embedding<T>> {
  static void compute(const op::embedding<T>&, const embedding_args<T>& g) {
    cpu::detail::embedding_compute(g, cpu::detail::cpu_config<P>::threads());
  }
  static void compute_quantized(const op::embedding<T>&, const embedding_qargs<T>& g) {
    cpu::detail::embedding_quantized_compute(g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
