// kforge/cpu/quant_gemm.hpp — Y = X · Wᵀ on the CPU with W a quantized
// weight (core/quant.hpp: N rows of K, each along K in its format) and X, Y
// f32. Decode rows (M < 48, quant_detail::packed_rows: the crossover
// measured at 4096×4096 on 2 Zen 5 cores) read the packed bytes of W once and
// never a dequantized copy; prefill rows (M ≥ 48) run the f32
// gemm's packed driver (cpu/gemm_kernel.hpp) with W's panels dequantized as
// they are packed (detail::quantized_b_source): KC×NR floats per panel, in
// cache, each rebuilt once per call and used by every row of X.
//
// Meaning: exactly the f32 gemm of X and dequantize(W) — each weight is
// rebuilt as the format defines it (q·d as a float product, the E2M1/FP8
// value times its scale) before it meets x, and sums are f32; only the order
// of the additions differs from the reference.
//
// Decode work: the rows of W (output columns) are split over the threads
// (cpu::detail::parallel_for) and read from memory once: each thread walks
// its rows in slices of ~64 KiB, and on each slice takes up to 4 rows of X
// at a time and walks each row of W block by block, rebuilding a block of 32
// weights in two registers and multiplying it into the M accumulators. On
// AVX-512: q8_0 by sign extension, q4_0 and mxfp4 by a 16-entry permute of
// their values times the block's scale, fp8 (K a multiple of 32) by permutes
// of its 128 magnitudes. Other ISAs (and fp8 rows of other lengths) rebuild a
// row of W into a thread's buffer (dequantize_row) and dot it with X's rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kforge/core/quant.hpp"
#include "kforge/cpu/config.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/isa.hpp"
#include "kforge/cpu/thread_pool.hpp"

namespace kforge::cpu::detail {

/// B = Wᵀ of a quantized W as an operand of the packed driver
/// (gemm_blocked): its pack_b rebuilds each panel's weights as
/// dequantize_range defines them, NR rows of W at a time, so the prefill
/// rows run on the f32 micro-kernel with a KC×NR panel the only
/// dequantized copy (per thread, in cache).
struct quantized_b_source {
  const quantized_matrix* w;
};
struct tag_quant_rows {};

template <int NR>
void pack_b(const quantized_b_source& b, index_t k0, index_t kc, index_t j0, index_t nc, float* __restrict dst) {
  if (kc <= 0) return;
  const quantized_matrix& w = *b.w;
  const index_t blk = info_of(w.format()).block;
  const index_t a0 = k0 / blk * blk, a1 = std::min(w.cols(), (k0 + kc + blk - 1) / blk * blk), len = a1 - a0;
  float* rows = scratch<tag_quant_rows>(static_cast<std::size_t>(len * NR));
  for (index_t p = 0; p < nc; p += NR, dst += NR * kc) {
    const int nr = static_cast<int>(std::min<index_t>(NR, nc - p));
    for (int j = 0; j < nr; ++j) w.dequantize_range(j0 + p + j, a0, a1, rows + j * len);
    const float* src = rows + (k0 - a0);
    for (index_t k = 0; k < kc; ++k) {
      for (int j = 0; j < nr; ++j) dst[k * NR + j] = src[j * len + k];
      for (int j = nr; j < NR; ++j) dst[k * NR + j] = 0.0f;
    }
  }
}

/// Y = X · Wᵀ through the packed driver with policy::threaded<>'s micro-kernel and blocking.
inline void gemm_quantized_packed(const quantized_matrix& w, const float* x, index_t m, index_t ldx, float* y,
                                  index_t ldy, int nthreads) {
  using C = cpu_config<policy::threaded<>>;
  gemm_blocked<typename C::simd, C::mr, C::nr / C::simd::width>(
      m, w.rows(), w.cols(), matrix_source<float>{x, ldx, 1}, quantized_b_source{&w}, y, ldy, 1, gemm_epilogue{},
      blocking_of<policy::threaded<>>(), nthreads);
}

}  // namespace kforge::cpu::detail

namespace kforge::cpu {

namespace quant_detail {

inline constexpr index_t m_tile = 4;
/// From this many rows of X on, the packed driver (prefill): W's panels
/// dequantized once per call and reused by every row (4096×4096 on 2 Zen 5
/// cores, q4_0/q8_0: the tiles faster at M = 32, even at 48, slower at 64).
inline constexpr index_t packed_rows = 48;

#if defined(__AVX512F__) && defined(__AVX512BW__)
/// What a row of an fp8 matrix needs: the values of codes 0-127 (eight
/// registers of 16) and the row's scale.
struct fp8_row {
  __m512 t[8];
  __m512 s;
};

/// 16 FP8 codes' values: codes 0-127 by permutes of the tables, the sign
/// put back as a bit (NaN stays NaN), times the row's scale — the same
/// products as dequantize_row's table times scale.
KFORGE_CPU_INLINE __m512 fp8_values16(const std::uint8_t* p, const fp8_row& r) {
  const __m512i c = detail::x512::cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  const __m512i idx = _mm512_and_si512(c, _mm512_set1_epi32(0x7f));
  const __m512 a0 = _mm512_permutex2var_ps(r.t[0], idx, r.t[1]);
  const __m512 a1 = _mm512_permutex2var_ps(r.t[2], idx, r.t[3]);
  const __m512 a2 = _mm512_permutex2var_ps(r.t[4], idx, r.t[5]);
  const __m512 a3 = _mm512_permutex2var_ps(r.t[6], idx, r.t[7]);
  const __mmask16 b5 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(32));
  const __mmask16 b6 = _mm512_test_epi32_mask(idx, _mm512_set1_epi32(64));
  const __m512 v = _mm512_mask_blend_ps(b6, _mm512_mask_blend_ps(b5, a0, a1), _mm512_mask_blend_ps(b5, a2, a3));
  const __m512i sign = detail::x512::slli_epi32<24>(_mm512_and_si512(c, _mm512_set1_epi32(0x80)));
  return _mm512_mul_ps(_mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(v), sign)), r.s);
}

/// The two halves of block b of row p (32 weights: elements 0-15, 16-31) as floats.
template <qformat F>
KFORGE_CPU_INLINE void load_block(const std::uint8_t* p, __m512& lo, __m512& hi, const fp8_row& r) {
  if constexpr (F == qformat::fp8_e4m3 || F == qformat::fp8_e5m2) {
    lo = fp8_values16(p, r);
    hi = fp8_values16(p + 16, r);
  } else if constexpr (F == qformat::q8_0) {
    const __m512 d = _mm512_set1_ps(kforge::quant_detail::get_f16(p));
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 18));
    lo = _mm512_mul_ps(detail::x512::cvtepi32_ps(detail::x512::cvtepi8_epi32(a)), d);
    hi = _mm512_mul_ps(detail::x512::cvtepi32_ps(detail::x512::cvtepi8_epi32(b)), d);
  } else {
    // q4_0 and mxfp4: a nibble indexes 16 values, multiplied by the block's
    // scale once (the same float products q·d as dequantize_row) and
    // permuted into place.
    __m512 table;
    if constexpr (F == qformat::q4_0) {
      const __m512 d = _mm512_set1_ps(kforge::quant_detail::get_f16(p));
      table = _mm512_mul_ps(_mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7), d);
      p += 2;
    } else {
      table = _mm512_mul_ps(_mm512_setr_ps(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12),
                            _mm512_set1_ps(kforge::quant_detail::mxfp4_half_scale(p[0])));
      p += 1;
    }
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i m = _mm_set1_epi8(0x0f);
    lo = detail::x512::permutexvar_ps(detail::x512::cvtepu8_epi32(_mm_and_si128(q, m)), table);
    hi = detail::x512::permutexvar_ps(detail::x512::cvtepu8_epi32(_mm_and_si128(_mm_srli_epi16(q, 4), m)), table);
  }
}

/// Rows [n0, n1) of Y's columns for rows [i0, i0 + mt) of X, mt <= m_tile.
template <qformat F>
void rows_avx512(const quantized_matrix& w, const float* x, index_t ldx, index_t i0, index_t mt, float* y, index_t ldy,
                 index_t n0, index_t n1) {
  const index_t nb = w.cols() / 32;
  constexpr bool fp8 = F == qformat::fp8_e4m3 || F == qformat::fp8_e5m2;
  constexpr index_t bb = fp8 ? 32 : info_of(F).block_bytes;  // fp8: 32 one-byte values a step
  fp8_row r{};
  if constexpr (fp8) {
    const auto& t = kforge::quant_detail::fp8_values(F == qformat::fp8_e4m3 ? kforge::quant_detail::e4m3
                                                                             : kforge::quant_detail::e5m2);
    for (int i = 0; i < 8; ++i) r.t[i] = _mm512_loadu_ps(t.data() + 16 * i);
  }
  for (index_t n = n0; n < n1; ++n) {
    const std::uint8_t* p = w.row(n);
    if constexpr (fp8) r.s = _mm512_set1_ps(w.scale(n));
    // Four chains per row of X (two blocks, two halves): one chain would
    // wait on the FMA's latency at every block.
    __m512 acc[m_tile][4];
    for (index_t i = 0; i < m_tile; ++i)
      for (auto& a : acc[i]) a = _mm512_setzero_ps();
    index_t b = 0;
    for (; b + 2 <= nb; b += 2, p += 2 * bb) {
      __m512 lo0, hi0, lo1, hi1;
      load_block<F>(p, lo0, hi0, r);
      load_block<F>(p + bb, lo1, hi1, r);
      for (index_t i = 0; i < mt; ++i) {
        const float* xr = x + (i0 + i) * ldx + b * 32;
        acc[i][0] = _mm512_fmadd_ps(_mm512_loadu_ps(xr), lo0, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(_mm512_loadu_ps(xr + 16), hi0, acc[i][1]);
        acc[i][2] = _mm512_fmadd_ps(_mm512_loadu_ps(xr + 32), lo1, acc[i][2]);
        acc[i][3] = _mm512_fmadd_ps(_mm512_loadu_ps(xr + 48), hi1, acc[i][3]);
      }
    }
    if (b < nb) {
      __m512 lo, hi;
      load_block<F>(p, lo, hi, r);
      for (index_t i = 0; i < mt; ++i) {
        const float* xr = x + (i0 + i) * ldx + b * 32;
        acc[i][0] = _mm512_fmadd_ps(_mm512_loadu_ps(xr), lo, acc[i][0]);
        acc[i][1] = _mm512_fmadd_ps(_mm512_loadu_ps(xr + 16), hi, acc[i][1]);
      }
    }
    for (index_t i = 0; i < mt; ++i)
      y[(i0 + i) * ldy + n] =
          detail::x512::reduce_add_ps(_mm512_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]), _mm512_add_ps(acc[i][2], acc[i][3])));
  }
}

/// One row of X (mt = 1, decode) against rows [n0, n1) of W, two rows of W
/// per pass: each vector of X loaded once serves both (at K = 14336 X's row
/// is 56 KiB, past L1, and every reload came from L2).
template <qformat F>
void rows1_avx512(const quantized_matrix& w, const float* x, index_t ldx, index_t i0, float* y, index_t ldy,
                  index_t n0, index_t n1) {
  const index_t nb = w.cols() / 32;
  constexpr bool fp8 = F == qformat::fp8_e4m3 || F == qformat::fp8_e5m2;
  constexpr index_t bb = fp8 ? 32 : info_of(F).block_bytes;
  fp8_row r0{}, r1{};
  if constexpr (fp8) {
    const auto& t = kforge::quant_detail::fp8_values(F == qformat::fp8_e4m3 ? kforge::quant_detail::e4m3
                                                                             : kforge::quant_detail::e5m2);
    for (int i = 0; i < 8; ++i) r0.t[i] = r1.t[i] = _mm512_loadu_ps(t.data() + 16 * i);
  }
  const float* xr = x + i0 * ldx;
  index_t n = n0;
  for (; n + 2 <= n1; n += 2) {
    const std::uint8_t* p = w.row(n);
    const std::uint8_t* q = w.row(n + 1);
    if constexpr (fp8) r0.s = _mm512_set1_ps(w.scale(n)), r1.s = _mm512_set1_ps(w.scale(n + 1));
    __m512 a[4], c[4];
    for (int i = 0; i < 4; ++i) a[i] = c[i] = _mm512_setzero_ps();
    index_t b = 0;
    for (; b + 2 <= nb; b += 2, p += 2 * bb, q += 2 * bb) {
      const __m512 x0 = _mm512_loadu_ps(xr + b * 32), x1 = _mm512_loadu_ps(xr + b * 32 + 16);
      const __m512 x2 = _mm512_loadu_ps(xr + b * 32 + 32), x3 = _mm512_loadu_ps(xr + b * 32 + 48);
      // Two blocks of one row of W into its four accumulators.
      auto two_blocks = [&](const std::uint8_t* rw, const fp8_row& rr, __m512* acc) __attribute__((always_inline)) {
        __m512 lo0, hi0, lo1, hi1;
        load_block<F>(rw, lo0, hi0, rr);
        load_block<F>(rw + bb, lo1, hi1, rr);
        acc[0] = _mm512_fmadd_ps(x0, lo0, acc[0]);
        acc[1] = _mm512_fmadd_ps(x1, hi0, acc[1]);
        acc[2] = _mm512_fmadd_ps(x2, lo1, acc[2]);
        acc[3] = _mm512_fmadd_ps(x3, hi1, acc[3]);
      };
      two_blocks(p, r0, a);
      two_blocks(q, r1, c);
    }
    if (b < nb) {
      const __m512 x0 = _mm512_loadu_ps(xr + b * 32), x1 = _mm512_loadu_ps(xr + b * 32 + 16);
      __m512 lo, hi;
      load_block<F>(p, lo, hi, r0);
      a[0] = _mm512_fmadd_ps(x0, lo, a[0]);
      a[1] = _mm512_fmadd_ps(x1, hi, a[1]);
      load_block<F>(q, lo, hi, r1);
      c[0] = _mm512_fmadd_ps(x0, lo, c[0]);
      c[1] = _mm512_fmadd_ps(x1, hi, c[1]);
    }
    y[i0 * ldy + n] = detail::x512::reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a[0], a[1]), _mm512_add_ps(a[2], a[3])));
    y[i0 * ldy + n + 1] = detail::x512::reduce_add_ps(_mm512_add_ps(_mm512_add_ps(c[0], c[1]), _mm512_add_ps(c[2], c[3])));
  }
  if (n < n1) rows_avx512<F>(w, x, ldx, i0, 1, y, ldy, n, n1);
}
#endif

/// Any format, any ISA: row n of W rebuilt into buf, then dotted with X's rows.
inline void rows_generic(const quantized_matrix& w, const float* x, index_t ldx, index_t i0, index_t mt, float* y,
                         index_t ldy, index_t n0, index_t n1, std::vector<float>& buf) {
  using S = detail::simd_native;
  const index_t k = w.cols();
  buf.resize(static_cast<std::size_t>(k));
  for (index_t n = n0; n < n1; ++n) {
    w.dequantize_row(n, buf.data());
    for (index_t i = 0; i < mt; ++i) {
      const float* xr = x + (i0 + i) * ldx;
      typename S::reg acc = S::zero();
      index_t j = 0;
      for (; j + S::width <= k; j += S::width) acc = S::fmadd(S::load(xr + j), S::load(buf.data() + j), acc);
      float lanes[S::width];
      S::store(lanes, acc);
      float s = 0;
      for (float l : lanes) s += l;
      for (; j < k; ++j) s += xr[j] * buf[static_cast<std::size_t>(j)];
      y[(i0 + i) * ldy + n] = s;
    }
  }
}

/// The decode path: W read once, each slice of it against every 4-row tile of X.
inline void gemm_tiles(const quantized_matrix& w, const float* x, index_t m, index_t ldx, float* y, index_t ldy,
                       int nthreads) {
  const index_t n = w.rows();
  [[maybe_unused]] const index_t k = w.cols();  // the AVX-512 paths
  // A chunk of W's rows is at least ~64 KiB of packed bytes.
  const index_t grain = std::max<index_t>(1, 65536 / std::max<index_t>(1, w.row_bytes()));
  // Rows [n0, n1) of W against X's rows [i0, i0 + mt).
  auto rows = [&](index_t i0, index_t mt, index_t n0, index_t n1) {
#if defined(__AVX512F__) && defined(__AVX512BW__)
    auto go = [&]<qformat F>() {
      // Two rows of W per pass only where X's row leaves L1 (K > 8192: 32 KiB of
      // f32): at K = 4096 it was slower (q4_0 14336×4096: 1.74–1.95 ms against
      // 1.54–1.70), at K = 14336 faster (4096×14336: 2.04–2.24 against 2.57–2.64).
      if (mt == 1 && k > 8192) rows1_avx512<F>(w, x, ldx, i0, y, ldy, n0, n1);
      else rows_avx512<F>(w, x, ldx, i0, mt, y, ldy, n0, n1);
    };
    switch (w.format()) {
      case qformat::q8_0: go.template operator()<qformat::q8_0>(); return;
      case qformat::q4_0: go.template operator()<qformat::q4_0>(); return;
      case qformat::mxfp4: go.template operator()<qformat::mxfp4>(); return;
      case qformat::fp8_e4m3:
        if (k % 32 != 0) break;  // fp8 rows of any length: the generic path
        go.template operator()<qformat::fp8_e4m3>();
        return;
      case qformat::fp8_e5m2:
        if (k % 32 != 0) break;
        go.template operator()<qformat::fp8_e5m2>();
        return;
    }
#endif
    thread_local std::vector<float> buf;
    rows_generic(w, x, ldx, i0, mt, y, ldy, n0, n1, buf);
  };
  // W is read from memory once: each thread takes a chunk of its rows in
  // slices of ~64 KiB (they stay in L2) and runs every tile of X's rows on
  // a slice before the next.
  detail::parallel_for(nthreads, n, grain, [&](std::int64_t n0, std::int64_t n1) {
    for (index_t s0 = n0; s0 < n1; s0 += grain)
      for (index_t i0 = 0; i0 < m; i0 += m_tile)
        rows(i0, std::min(m_tile, m - i0), s0, std::min<index_t>(n1, s0 + grain));
  });
}

}  // namespace quant_detail

/// Y (m × N, leading dimension ldy) = X (m × K, leading dimension ldx) · Wᵀ
/// for a quantized W of N rows of K (the header comment), on up to nthreads
/// threads (0: default_num_threads()). shape_error for m < 1 or leading
/// dimensions below K (X) or N (Y).
inline void gemm_quantized(const quantized_matrix& w, const float* x, index_t m, index_t ldx, float* y, index_t ldy,
                           int nthreads = 0) {
  const index_t n = w.rows(), k = w.cols();
  if (m < 1 || ldx < k || ldy < n)
    throw shape_error("kforge::gemm_quantized: X [" + std::to_string(m) + "x" + std::to_string(k) + "] (ld " +
                      std::to_string(ldx) + ") times W^T [" + std::to_string(k) + "x" + std::to_string(n) + "] into Y (ld " +
                      std::to_string(ldy) + ")");
  if (nthreads <= 0) nthreads = default_num_threads();
  if (m >= quant_detail::packed_rows) detail::gemm_quantized_packed(w, x, m, ldx, y, ldy, nthreads);
  else quant_detail::gemm_tiles(w, x, m, ldx, y, ldy, nthreads);
}

}  // namespace kforge::cpu
