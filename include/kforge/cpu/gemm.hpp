// kforge/cpu/gemm.hpp — gemm for policy::blocked and policy::threaded.
//
// M ≤ 8 with row-major B takes the unpacked skinny path (LLM decoding shapes:
// bound by reading B once; half/bfloat16 B is converted in registers as it
// streams), and so does M ≤ 32 over a wide, deep row-major B (N > 1024,
// K ≥ 4096) on AVX-512;
// everything else runs the packed driver of cpu/gemm_kernel.hpp. Bias is converted to f32 once per call; the epilogue
// is applied in the micro-kernel's write-back. A quantized B (ops/gemm.hpp) runs cpu/quant_gemm.hpp's kernels
// (gemm_quantized_compute).
#pragma once

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/quant_gemm.hpp"
#include "kforge/ops/gemm.hpp"

namespace kforge::cpu::detail {

struct tag_bias {};

/// Bias of a gemm/conv2d as f32 (in a per-thread scratch buffer).
template <class T>
const float* bias_f32(const tensor_view<const T>& bias, index_t n) {
  float* p = scratch<tag_bias>(static_cast<std::size_t>(n > 0 ? n : 1));
  load_row(bias.data, bias.stride(0), n, p);
  return p;
}

/// The micro-kernel's epilogue of one gemm call (the bias converted to f32).
template <class T, class E, class A>
gemm_epilogue epilogue_of(const op::gemm<T, E, A>& op, const tensor_view<const T>& bias, index_t n) {
  gemm_epilogue ep;
  ep.alpha = op.alpha;
  ep.beta = op.beta;
  ep.act = E::activation;
  ep.slope = op.epilogue.slope;
  if constexpr (E::has_bias) ep.bias = bias_f32(bias, n);
  return ep;
}

/// A gemm on the S, MR×NR micro-kernel with run-time blocking and thread
/// count: what every blocked and threaded policy runs (gemm_compute below),
/// and what policy::autotune and the tuner run for each candidate of the CPU
/// space (tune/space.hpp) without a function per policy.
template <class S, int MR, int NR, class T, class E, class A>
void gemm_run(const op::gemm<T, E, A>& op, const gemm_args<T>& g, blocking blk, int threads) {
  if (g.m == 0 || g.n == 0) return;
  const gemm_epilogue ep = epilogue_of(op, g.bias, g.n);
  const matrix_source<T> a{g.a.data, g.a.stride(0), g.a.stride(1)};
  const matrix_source<T> b{g.b.data, g.b.stride(0), g.b.stride(1)};
  // Row-major B with few rows of A streams B unpacked (gemm_skinny): up to 8
  // rows always; up to 32 where B is wide and deep (N > 1024, the tuner's
  // buckets from 2048 up; K ≥ 4096) and the kernels are AVX-512's (where it
  // was measured: the 8-row block's 16 accumulators fill AVX2's registers).
  // Packing B costs a read and a write of it per call, which 9-32 rows do
  // not repay at K = 4096: M × 4096 × 4096 f32 on a 2-core Zen 4 (2026-11-29,
  // docs/bench/HISTORY.md) ran 1.25-1.8x faster threaded and 1.2-1.75x on one
  // thread at M = 12-32, 32 × 11008 × 4096 1.2-1.7x. At shallower K the
  // partial sums' traffic wins over packing: 32 × 3072 × 768 1.3x and
  // 20 × 8192 × 256 1.8x slower, 32 × 1100 × 300 and 24 × 2048 × 512 slower,
  // 16 × 2304 × 768 faster — no simple rule, so those stay packed. M = 48, 64
  // were not faster. Those rows go by the packed driver's caller-alone
  // threshold (gemm_threads), so a small product does not wake the pool.
  const bool decode = g.m <= 8;
  const bool thin = S::width >= 16 && g.m <= 32 && g.n > 1024 && g.k >= 4096;
  if ((decode || thin) && (g.n <= 1 || g.b.stride(1) == 1)) {
    gemm_skinny<S>(g.m, g.n, g.k, a, b, g.c.data, g.c.stride(0), g.c.stride(1), ep,
                   decode ? threads : gemm_threads(g.m, g.n, g.k, threads));
    return;
  }
  gemm_blocked<S, MR, NR / S::width>(g.m, g.n, g.k, a, b, g.c.data, g.c.stride(0), g.c.stride(1), ep, blk, threads);
}

template <class Policy, class T, class E, class A>
void gemm_compute(const op::gemm<T, E, A>& op, const gemm_args<T>& g) {
  using C = cpu_config<Policy>;
  gemm_run<typename C::simd, C::mr, C::nr>(op, g, blocking_of<Policy>(), C::threads());
}

struct tag_quant_x {};
struct tag_quant_y {};

/// A gemm whose B is a quantized W (B = Wᵀ). Prefill rows (M ≥
/// quant_detail::packed_rows): Policy's packed driver with W's panels
/// dequantized as they are packed, A of any T and strides, the epilogue in
/// the write-back. Decode rows: A's rows as dense f32 (copied unless they
/// are), cpu::gemm_quantized's tiles into an f32 M×N buffer, then the
/// epilogue row by row as the micro-kernel's write-back applies it.
template <class Policy, class T, class E, class A>
void gemm_quantized_compute(const op::gemm<T, E, A>& op, const gemm_qargs<T>& g) {
  if (g.m == 0) return;
  using C = cpu_config<Policy>;
  const gemm_epilogue ep = epilogue_of(op, g.bias, g.n);
  const matrix_source<T> a{g.a.data, g.a.stride(0), g.a.stride(1)};
  if (g.m >= quant_detail::packed_rows) {
    gemm_blocked<typename C::simd, C::mr, C::nr / C::simd::width>(g.m, g.n, g.k, a, quantized_b_source{g.w}, g.c.data,
                                                                  g.c.stride(0), g.c.stride(1), ep, blocking_of<Policy>(),
                                                                  C::threads());
    return;
  }
  const float* x = nullptr;
  index_t ldx = g.k;
  if constexpr (std::is_same_v<T, float>)
    if (g.a.stride(1) == 1 && g.a.stride(0) >= g.k) x = g.a.data, ldx = g.a.stride(0);
  if (!x) {
    float* xs = scratch<tag_quant_x>(static_cast<std::size_t>(g.m * g.k));
    for (index_t i = 0; i < g.m; ++i) load_row(g.a.data + i * g.a.stride(0), g.a.stride(1), g.k, xs + i * g.k);
    x = xs;
  }
  if constexpr (std::is_same_v<T, float>) {
    // No epilogue and f32 rows of C: the tiles write C itself.
    const bool plain = ep.alpha == 1.0f && ep.beta == 0.0f && !ep.bias && ep.act == fn::identity;
    if (plain && g.c.stride(1) == 1 && g.c.stride(0) >= g.n) {
      quant_detail::gemm_tiles(*g.w, x, g.m, ldx, g.c.data, g.c.stride(0), C::threads());
      return;
    }
  }
  float* y = scratch<tag_quant_y>(static_cast<std::size_t>(g.m * g.n));
  quant_detail::gemm_tiles(*g.w, x, g.m, ldx, y, g.n, C::threads());
  for (index_t i = 0; i < g.m; ++i) {
    float* v = y + i * g.n;
    T* crow = g.c.data + i * g.c.stride(0);
    for (index_t j = 0; j < g.n; ++j) v[j] *= ep.alpha;
    if (ep.beta != 0.0f)
      for (index_t j = 0; j < g.n; ++j) v[j] += ep.beta * to_f32(crow[j * g.c.stride(1)]);
    if (ep.bias)
      for (index_t j = 0; j < g.n; ++j) v[j] += ep.bias[j];
    apply_activation(ep.act, ep.slope, v, static_cast<std::int64_t>(g.n));
    store_row<T>(v, g.n, crow, g.c.stride(1));
  }
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T, class E, class A>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T> && std::is_same_v<A, float>)
struct impl<P, op::gemm<T, E, A>> : gemm_entry<impl<P, op::gemm<T, E, A>>, op::gemm<T, E, A>> {
  static void compute(const op::gemm<T, E, A>& op, const gemm_args<T>& g) { cpu::detail::gemm_compute<P>(op, g); }
  static void compute_quantized(const op::gemm<T, E, A>& op, const gemm_qargs<T>& g) {
    cpu::detail::gemm_quantized_compute<P>(op, g);
  }
};
}  // namespace kforge::detail
