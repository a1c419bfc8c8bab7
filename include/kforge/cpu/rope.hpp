// kforge/cpu/rope.hpp — rotary position embedding for policy::blocked and
// policy::threaded.
//
// The cos/sin table of the call's positions ([S, D/2], f32 angles p·θ_i as
// the definition's f32 kernels compute them, glibc's cosf/sinf with full
// range reduction) is built once per call, threads splitting the positions;
// then every [D] row of x (over outer, S, H) is rotated with it in one pass,
// threads splitting the rows. Rows that are strided or half/bfloat16 go
// through an f32 row buffer.
#pragma once

#include <cmath>
#include <vector>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/rope.hpp"
#include "kforge/ops/softmax.hpp"

namespace kforge::cpu::detail {

struct tag_rope_row {};

template <class T>
void rope_compute(const op::rope<T>& op, const rope_args<T>& g, int nthreads) {
  const index_t half = g.d / 2, rows = g.outer * g.s * g.h;
  if (rows == 0 || g.d == 0) return;
  std::vector<float> inv(static_cast<std::size_t>(half)), cs(static_cast<std::size_t>(g.s * g.d));
  for (index_t i = 0; i < half; ++i)
    inv[static_cast<std::size_t>(i)] = static_cast<float>(std::pow(static_cast<double>(op.base), -2.0 * static_cast<double>(i) / static_cast<double>(g.d)));
  // cs row s: cos θ_0..θ_{D/2-1}, then sin θ_0..θ_{D/2-1}.
  parallel_for(nthreads, g.s, 64, [&](index_t s0, index_t s1) {
    for (index_t s = s0; s < s1; ++s) {
      const float p = static_cast<float>(op.offset + s);
      float* c = cs.data() + s * g.d;
      for (index_t i = 0; i < half; ++i) {
        const float t = p * inv[static_cast<std::size_t>(i)];
        c[i] = std::cos(t);
        c[half + i] = std::sin(t);
      }
    }
  });
  const index_t sx = g.x.strides.back(), sy = g.y.strides.back();
  parallel_for(nthreads, rows, std::max<index_t>(1, 16384 / g.d), [&](index_t r0, index_t r1) {
    float* buf = scratch<tag_rope_row>(static_cast<std::size_t>(2 * g.d));
    float* in = buf;
    float* out = buf + g.d;
    for (index_t r = r0; r < r1; ++r) {
      const float* c = cs.data() + ((r / g.h) % g.s) * g.d;
      const float* sn = c + half;
      load_row(g.x.data + row_offset(g.x, r), sx, g.d, in);
      if (op.interleaved) {
        for (index_t i = 0; i < half; ++i) {
          const float a = in[2 * i], b = in[2 * i + 1];
          out[2 * i] = a * c[i] - b * sn[i];
          out[2 * i + 1] = a * sn[i] + b * c[i];
        }
      } else {
        for (index_t i = 0; i < half; ++i) {
          const float a = in[i], b = in[half + i];
          out[i] = a * c[i] - b * sn[i];
          out[half + i] = a * sn[i] + b * c[i];
        }
      }
      store_row(out, g.d, g.y.data + row_offset(g.y, r), sy);
    }
  });
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::rope<T>> : rope_entry<impl<P, op::rope<T>>, op::rope<T>> {
  static void compute(const op::rope<T>& op, const rope_args<T>& g) {
    cpu::detail::rope_compute(op, g, cpu::detail::cpu_config<P>::threads());
  }
};
}  // namespace kforge::detail
