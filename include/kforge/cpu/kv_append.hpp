// kforge/cpu/kv_append.hpp — KV-cache append for policy::blocked and
// policy::threaded: the B·T·H new [D] rows are copied into the cache's rows
// (b, pos + t, h), threads splitting the rows; memcpy where both rows are
// contiguous, an element loop over the strides otherwise. Nothing outside
// the T new rows of each batch is read or written.
#pragma once

#include <algorithm>
#include <cstring>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/ops/kv_append.hpp"

namespace kforge::cpu::detail {

template <class T>
void kv_append_compute(const op::kv_append<T>& op, const kv_append_args<T>& g, int nthreads) {
  const index_t rows = g.b * g.t * g.h, d = g.d;
  if (rows == 0 || d == 0) return;
  const auto& x = g.x;
  const auto& c = g.cache;
  parallel_for(nthreads, rows, std::max<index_t>(1, 16384 / d), [&](index_t r0, index_t r1) {
    for (index_t r = r0; r < r1; ++r) {
      const index_t h = r % g.h, t = (r / g.h) % g.t, b = r / (g.h * g.t);
      const T* src = x.data + b * x.stride(0) + t * x.stride(1) + h * x.stride(2);
      T* dst = c.data + b * c.stride(0) + (op.pos + t) * c.stride(1) + h * c.stride(2);
      if (x.stride(3) == 1 && c.stride(3) == 1) {
        std::memcpy(dst, src, static_cast<std::size_t>(d) * sizeof(T));
      } else {
        for (index_t j = 0; j < d; ++j) dst[j * c.stride(3)] = src[j * x.stride(3)];
      }
    }
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::kv_append<T>> : kv_append_entry<impl<P, op::kv_append<T>>, op::kv_append<T>> {
  static void compute(const op::kv_append<T>& op, const kv_append_args<T>& g) {
    cpu::detail::kv_append_compute(op, g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
