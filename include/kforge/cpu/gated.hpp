// kforge/cpu/gated.hpp — the gated activation for policy::blocked and
// policy::threaded.
//
// One pass over the rows of x [rows, 2F], threads splitting the rows; each
// row's gate and up halves go through f32 row buffers (load_row: vector
// loads where contiguous, conversion for half/bfloat16), the activation is
// cpu/vmath.hpp's vectorisable formula on the gate half, multiplied by the up
// half and stored (store_row) in y's row. Any F: the halves are whole rows.
#pragma once

#include <algorithm>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/gated.hpp"

namespace kforge::cpu::detail {

struct tag_gated_row {};

template <fn F, class T>
void gated_rows(const gated_args<T>& g, int nthreads) {
  const index_t f = g.f, sx = g.x.strides.back(), sy = g.y.strides.back();
  parallel_for(nthreads, g.rows, std::max<index_t>(1, 16384 / f), [&](index_t r0, index_t r1) {
    float* a = scratch<tag_gated_row>(static_cast<std::size_t>(2 * f));
    float* b = a + f;
    for (index_t r = r0; r < r1; ++r) {
      const T* x = g.x.data + row_offset(g.x, r);
      load_row(x, sx, f, a);
      load_row(x + f * sx, sx, f, b);
      for (index_t j = 0; j < f; ++j) a[j] = vapply<F>(a[j], 0.0f) * b[j];
      store_row(a, f, g.y.data + row_offset(g.y, r), sy);
    }
  });
}

template <class T>
void gated_compute(const op::gated<T>& op, const gated_args<T>& g, int nthreads) {
  if (g.rows == 0 || g.f == 0) return;
  switch (op.activation) {
    case fn::silu: return gated_rows<fn::silu>(g, nthreads);
    case fn::gelu_erf: return gated_rows<fn::gelu_erf>(g, nthreads);
    default: return gated_rows<fn::gelu_tanh>(g, nthreads);
  }
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::gated<T>> : gated_entry<impl<P, op::gated<T>>, op::gated<T>> {
  static void compute(const op::gated<T>& op, const gated_args<T>& g) {
    cpu::detail::gated_compute(op, g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
