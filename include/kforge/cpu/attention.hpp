// kforge/cpu/attention.hpp — scaled dot-product attention for
// policy::blocked and policy::threaded, flash-style: the S×L score matrix is
// never materialised.
//
// Tiling, per (batch, KV head): Kᵀ (D × L) and V (L × Dv) are packed once into
// the gemm micro-kernel's NR-column panels and serve the H / Hkv query heads
// that share them (grouped-query attention; either layout, through strides). Queries are processed in blocks
// of BR = 4·MR rows (Q block packed as MR-row panels; a shorter last block,
// e.g. decode's one row, only as many MR panels as it has rows); keys in blocks of
// BC = 4·NR columns. For each key block the micro-kernel computes the BR×BC
// scores (times scale) into an L1-resident tile, masked columns (causal, or
// past L) are set to -inf, each row updates its running max m and sum l
// (online softmax: the O accumulator and l are rescaled by exp(m_old -
// m_new)), and the micro-kernel adds P·V_block into the f32 BR × Dv
// accumulator. Causal key blocks right of the block's last query are skipped.
// At the end O = acc / l, converted to T. Masked keys are excluded: in a key
// block that the causal mask cuts and whose V rows hold a non-finite value
// (flagged when V is packed), P·V is done row by row over each row's visible
// keys, since the micro-kernel's 0·Inf would be NaN.
//
// Bounds: Q and V panels are zero-padded to whole tiles, padded score
// columns are -inf (p = 0), padded query rows are computed and dropped.
// Threads claim (batch, head, query-block group) tasks dynamically, so causal
// blocks of unequal cost spread over the threads that are running.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "kforge/cpu/common.hpp"
#include "kforge/cpu/gemm_kernel.hpp"
#include "kforge/cpu/vmath.hpp"
#include "kforge/ops/attention.hpp"

namespace kforge::cpu::detail {

struct tag_attn_k {};
struct tag_attn_v {};
struct tag_attn_q {};
struct tag_attn_s {};
struct tag_attn_p {};
struct tag_attn_o {};
struct tag_attn_vbad {};

template <class S, int MR, int NV, class T>
void attention_compute(const attention_args<T>& g, int nthreads) {
  constexpr int NR = NV * S::width, BR = 4 * MR, BC = 4 * NR;
  const index_t B = g.b, H = g.h, SQ = g.s, L = g.l, D = g.d, DV = g.dv, G = g.hkv ? g.group() : 1;
  if (B * H * SQ * DV == 0) return;
  const index_t lpad = (L + NR - 1) / NR * NR, dvpad = (DV + NR - 1) / NR * NR;
  const index_t nblk_q = (SQ + BR - 1) / BR, nblk_k = (L + BC - 1) / BC;
  constexpr float ninf = -std::numeric_limits<float>::infinity();

  // Tasks: (batch, head, group of consecutive query blocks), claimed
  // dynamically; a head is cut into groups only when there are fewer heads
  // than 8 tasks per thread (K/V are packed once per task).
  const index_t heads = B * H;
  const index_t want = nthreads > 1 ? index_t{8} * nthreads : 1;
  const index_t groups = std::clamp<index_t>((want + heads - 1) / heads, 1, nblk_q);
  auto body = [&](std::int64_t task) {
    float* kp = scratch<tag_attn_k>(static_cast<std::size_t>(std::max<index_t>(D, 1) * lpad));
    float* vp = scratch<tag_attn_v>(static_cast<std::size_t>(nblk_k * BC * dvpad + 1));
    float* qp = scratch<tag_attn_q>(static_cast<std::size_t>(BR * std::max<index_t>(D, 1)));
    float* sc = scratch<tag_attn_s>(static_cast<std::size_t>(BR * BC));
    float* pp = scratch<tag_attn_p>(static_cast<std::size_t>(BR * BC));
    float* acc = scratch<tag_attn_o>(static_cast<std::size_t>(BR * dvpad));
    float* vbad = scratch<tag_attn_vbad>(static_cast<std::size_t>(nblk_k + 1));  // 1: the key block's V has Inf/NaN
    float m[BR], l[BR];
    index_t packed = -1, q0, q1;
    split_range(nblk_q, static_cast<int>(task % groups), static_cast<int>(groups), q0, q1);
    const index_t first_item = task / groups * nblk_q;
    for (index_t it = first_item + q0; it < first_item + q1; ++it) {
      const index_t bh = it / nblk_q, qb = it % nblk_q, b = bh / H, h = bh % H, bhk = b * (H / G) + h / G;
      // brp: the block's rows rounded up to whole MR panels; a short block
      // (decode: one query row) computes those panels only, not all of BR.
      const index_t i0 = qb * BR, br = std::min<index_t>(BR, SQ - i0), brp = (br + MR - 1) / MR * MR;
      const tensor_view<T> o = g.head(g.o, b, h);
      if (L == 0) {
        for (index_t i = 0; i < br; ++i)
          for (index_t j = 0; j < DV; ++j) o.data[(i0 + i) * o.stride(0) + j * o.stride(1)] = from_f32<T>(0.0f);
        continue;
      }
      const tensor_view<const T> kh = g.head(g.k, b, h / G), vh = g.head(g.v, b, h / G), qh = g.head(g.q, b, h);
      if (packed != bhk) {
        // Kᵀ as a [D × L] matrix: element (d, j) = K[j, d].
        pack_b<NR>(matrix_source<T>{kh.data, kh.stride(1), kh.stride(0)}, 0, D, 0, L, kp);
        for (index_t kb = 0; kb < nblk_k; ++kb) {
          const index_t j0 = kb * BC, bc = std::min<index_t>(BC, L - j0);
          float* vb = vp + kb * BC * dvpad;
          pack_b<NR>(matrix_source<T>{vh.data, vh.stride(0), vh.stride(1)}, j0, bc, 0, DV, vb);
          bool finite = true;
          for (index_t e = 0; e < bc * dvpad; ++e) finite = finite && std::isfinite(vb[e]);
          vbad[kb] = finite ? 0.0f : 1.0f;
        }
        packed = bhk;
      }
      pack_a<MR>(matrix_source<T>{qh.data, qh.stride(0), qh.stride(1)}, i0, br, 0, D, qp);
      for (index_t i = 0; i < BR; ++i) {
        m[i] = ninf;
        l[i] = 0.0f;
      }
      std::fill(acc, acc + BR * dvpad, 0.0f);
      const index_t last_q = i0 + br - 1;
      for (index_t kb = 0; kb < nblk_k; ++kb) {
        const index_t j0 = kb * BC;
        if (g.causal && j0 > last_q) break;
        const index_t bc = std::min<index_t>(BC, L - j0), bcpad = (bc + NR - 1) / NR * NR;
        // Scores: sc[BR × BC] = scale · Q_blk · Kᵀ_blk.
        for (index_t jr = 0; jr < bcpad; jr += NR)
          for (index_t ir = 0; ir < brp; ir += MR)
            microkernel<S, MR, NV>(D, qp + ir * D, kp + (j0 + jr) * D, sc + ir * BC + jr, BC, g.scale, 0.0f, nullptr,
                                   nullptr, false);
        // Online softmax per row; p is written row-major into sc.
        for (index_t i = 0; i < br; ++i) {
          float* srow = sc + i * BC;
          const index_t visible = g.causal ? std::clamp<index_t>(i0 + i - j0 + 1, 0, bc) : bc;
          for (index_t j = visible; j < bcpad; ++j) srow[j] = ninf;
          // Max and sum in 16 independent lanes (a single running sum would
          // keep GCC from vectorising the exp).
          constexpr index_t LN = 16;
          const index_t vend = bcpad / LN * LN;
          float lane[LN];
          for (index_t t = 0; t < LN; ++t) lane[t] = m[i];
          for (index_t j = 0; j < vend; j += LN)
            for (index_t t = 0; t < LN; ++t) {
              const float v = srow[j + t];
              lane[t] = (v > lane[t] || v != v) ? v : lane[t];
            }
          float mx = m[i];
          for (index_t t = 0; t < LN; ++t) mx = math::nan_max(mx, lane[t]);
          for (index_t j = vend; j < bcpad; ++j) mx = math::nan_max(mx, srow[j]);
          const float alpha = mx == m[i] ? 1.0f : vexp(m[i] - mx);
          for (index_t t = 0; t < LN; ++t) lane[t] = 0.0f;
          for (index_t j = 0; j < vend; j += LN)
            for (index_t t = 0; t < LN; ++t) {
              const float p = vexp(srow[j + t] - mx);
              srow[j + t] = p;
              lane[t] += p;
            }
          float sum = 0.0f;
          for (index_t t = 0; t < LN; ++t) sum += lane[t];
          for (index_t j = vend; j < bcpad; ++j) {
            const float p = vexp(srow[j] - mx);
            srow[j] = p;
            sum += p;
          }
          l[i] = l[i] * alpha + sum;
          m[i] = mx;
          if (alpha != 1.0f)
            for (index_t j = 0; j < DV; ++j) acc[i * dvpad + j] *= alpha;
        }
        if (g.causal && j0 + bc - 1 > i0 && vbad[kb] != 0.0f) {
          // Masked keys with a non-finite V row: each row over its visible keys only.
          for (index_t i = 0; i < br; ++i) {
            const index_t visible = std::clamp<index_t>(i0 + i - j0 + 1, 0, bc);
            for (index_t j = 0; j < visible; ++j) {
              const float p = sc[i * BC + j];
              const T* vr = vh.data + (j0 + j) * vh.stride(0);
              for (index_t c = 0; c < DV; ++c) acc[i * dvpad + c] += p * to_f32(vr[c * vh.stride(1)]);
            }
          }
          continue;
        }
        for (index_t i = br; i < brp; ++i)
          for (index_t j = 0; j < bcpad; ++j) sc[i * BC + j] = 0.0f;
        // acc += P · V_blk  (P packed as MR-row panels of depth bc).
        pack_a<MR>(matrix_source<float>{sc, BC, 1}, 0, brp, 0, bc, pp);
        const float* vb = vp + kb * BC * dvpad;
        for (index_t jr = 0; jr < dvpad; jr += NR)
          for (index_t ir = 0; ir < brp; ir += MR)
            microkernel<S, MR, NV>(bc, pp + ir * bc, vb + jr * bc, acc + ir * dvpad + jr, dvpad, 1.0f, 1.0f, nullptr,
                                   nullptr, false);
      }
      alignas(64) float row[1024];
      for (index_t i = 0; i < br; ++i) {
        const float inv = 1.0f / l[i];
        for (index_t j0 = 0; j0 < DV; j0 += 1024) {
          const index_t len = std::min<index_t>(1024, DV - j0);
          for (index_t j = 0; j < len; ++j) row[j] = acc[i * dvpad + j0 + j] * inv;
          store_row(row, len, o.data + (i0 + i) * o.stride(0) + j0 * o.stride(1), o.stride(1));
        }
      }
    }
  };
  // One item is BR·L·(D + Dv)·2 flops; below ~1 MFLOP in total stay on one thread.
  const double flops = 2.0 * static_cast<double>(B * H * SQ) * static_cast<double>(L) * static_cast<double>(D + DV);
  thread_pool::instance().run_tasks(flops < 1e6 ? 1 : nthreads, heads * groups, body);
}

struct tag_attn_dec_part {};

/// The sum of a register's lanes.
template <class S>
KFORGE_CPU_INLINE float lane_sum(typename S::reg v) {
#if defined(__AVX512F__)
  if constexpr (S::width == 16) return x512::reduce_add_ps(v);  // (S::reg against __m512: -Wignored-attributes)
#endif
#if defined(__AVX__)
  if constexpr (S::width == 8) {
    __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    x = _mm_add_ps(x, _mm_movehl_ps(x, x));
    return _mm_cvtss_f32(_mm_add_ss(x, _mm_shuffle_ps(x, x, 1)));
  }
#endif
  if constexpr (std::is_same_v<typename S::reg, float>) {
    return v;
  } else {
    alignas(64) float t[S::width];
    S::store(t, v);
    float sum = 0.0f;
    for (int i = 0; i < S::width; ++i) sum += t[i];
    return sum;
  }
}

/// Attention for few query rows per KV head (decode: G·S <= 16 rows), the
/// way flash-decoding does it: no packing of K or V (the flash path above
/// packs Kᵀ and V per head — all L rows written and read again for one query
/// row). A task takes one (batch, KV head) and a chunk of the keys; it reads
/// each K and V row once, for all G·S rows that use it. Per block of W keys
/// (W = the vector width): each row's score with each key is a dot product
/// over D in registers and one sum of lanes (transposing the block to
/// broadcast-FMA the rows instead costs D moves per key: 2.5x slower at one
/// row per KV head); online softmax per row; P·V adds p · v_j to the rows' f32
/// accumulators, only for keys a row sees (a masked V row is never read: an
/// Inf there stays out).
/// Chunks of one (batch, KV head) write their (max, sum, accumulator) and
/// are merged at the end. Bandwidth-bound: K and V are read once in all.
template <class S, class T>
void attention_decode(const attention_args<T>& g, int nthreads) {
  constexpr int W = S::width;
  const index_t G = g.group(), R = G * g.s, D = g.d, DV = g.dv, L = g.l, nbk = g.b * g.hkv;
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  // Key chunks: enough tasks for the threads (4 per thread), but no chunk under 256 keys.
  const double kv_bytes = static_cast<double>(nbk) * static_cast<double>(L) * static_cast<double>(D + DV) * sizeof(T);
  const int threads = kv_bytes < 256.0 * 1024 ? 1 : nthreads;
  const index_t nsplit = std::clamp<index_t>((4 * threads + nbk - 1) / nbk, 1, std::max<index_t>(1, L / 256));
  const index_t chunk = (L + nsplit - 1) / nsplit;
  const index_t stride = R * (DV + 2);  // one task's partials: acc [R][DV], then m [R], l [R]
  float* part = scratch<tag_attn_dec_part>(static_cast<std::size_t>(nbk * nsplit * stride));
  auto body = [&](std::int64_t task) {
    const index_t bk = task / nsplit, sp = task % nsplit, b = bk / g.hkv, hk = bk % g.hkv;
    const index_t j0 = sp * chunk, j1 = std::min(L, j0 + chunk);
    float* acc = part + task * stride;
    float* m = acc + R * DV;
    float* l = m + R;
    alignas(64) float q[16][256 + W];  // rows' queries, f32, times scale (D <= 256 here)
    alignas(64) float kf[256 + W];     // a key row, f32
    alignas(64) float p[16][W];
    const index_t dfull = D / W * W;
    index_t vis[16];
    for (index_t r = 0; r < R; ++r) {
      const index_t h = hk * G + r / g.s, i = r % g.s;
      const tensor_view<const T> qh = g.head(g.q, b, h);
      for (index_t d = 0; d < D; ++d) q[r][d] = g.scale * to_f32(qh.data[i * qh.stride(0) + d * qh.stride(1)]);
      vis[r] = std::min(j1, g.visible(i));  // keys [j0, vis) of this chunk
      m[r] = ninf;
      l[r] = 0.0f;
      std::fill(acc + r * DV, acc + (r + 1) * DV, 0.0f);
    }
    const tensor_view<const T> kh = g.head(g.k, b, hk), vh = g.head(g.v, b, hk);
    index_t jend = j0;
    for (index_t r = 0; r < R; ++r) jend = std::max(jend, vis[r]);
    for (index_t jb = j0; jb < jend; jb += W) {
      const int nk = static_cast<int>(std::min<index_t>(W, jend - jb));
      for (index_t r = 0; r < R; ++r)
        for (int j = nk; j < W; ++j) p[r][j] = 0.0f;
      for (int j = 0; j < nk; ++j) {
        const T* kr = kh.data + (jb + j) * kh.stride(0);
        for (index_t d = 0; d < dfull; d += W) S::store(kf + d, load_b<S>(kr + d));
        for (index_t d = dfull; d < D; ++d) kf[d] = to_f32(kr[d]);
        for (index_t r = 0; r < R; ++r) {
          typename S::reg sc = S::zero();
          for (index_t d = 0; d < dfull; d += W) sc = S::fmadd(S::load(q[r] + d), S::load(kf + d), sc);
          float dot = lane_sum<S>(sc);
          for (index_t d = dfull; d < D; ++d) dot += q[r][d] * kf[d];
          p[r][j] = dot;
        }
      }
      for (index_t r = 0; r < R; ++r) {
        const index_t seen = std::clamp<index_t>(vis[r] - jb, 0, nk);
        float mx = m[r];
        for (index_t j = 0; j < seen; ++j) mx = math::nan_max(mx, p[r][j]);
        if (seen == 0) {
          for (int j = 0; j < W; ++j) p[r][j] = 0.0f;
          continue;
        }
        const float alpha = mx == m[r] ? 1.0f : vexp(m[r] - mx);
        float sum = 0.0f;
        for (int j = 0; j < W; ++j) {
          const float e = vexp(p[r][j] - mx);
          p[r][j] = j < seen ? e : 0.0f;
          sum += p[r][j];
        }
        l[r] = l[r] * alpha + sum;
        m[r] = mx;
        if (alpha != 1.0f)
          for (index_t c = 0; c < DV; ++c) acc[r * DV + c] *= alpha;
      }
      for (int j = 0; j < nk; ++j) {
        const T* vr = vh.data + (jb + j) * vh.stride(0);
        for (index_t r = 0; r < R; ++r) {
          if (jb + j >= vis[r]) continue;  // a masked key: its V row is not used
          const float pj = p[r][j];
          float* ar = acc + r * DV;
          index_t c = 0;
          for (; c + W <= DV; c += W) S::store(ar + c, S::fmadd(S::set1(pj), load_b<S>(vr + c), S::load(ar + c)));
          for (; c < DV; ++c) ar[c] += pj * to_f32(vr[c]);
        }
      }
    }
  };
  thread_pool::instance().run_tasks(threads, nbk * nsplit, body);
  // Merge the chunks of each (batch, KV head) row and write O.
  for (index_t bk = 0; bk < nbk; ++bk) {
    const index_t b = bk / g.hkv, hk = bk % g.hkv;
    for (index_t r = 0; r < R; ++r) {
      const index_t h = hk * G + r / g.s, i = r % g.s;
      float mx = ninf;
      for (index_t sp = 0; sp < nsplit; ++sp) {
        const float* mt = part + (bk * nsplit + sp) * stride + R * DV;
        if (mt[R + r] > 0.0f || mt[r] != mt[r]) mx = math::nan_max(mx, mt[r]);
      }
      float lsum = 0.0f;
      alignas(64) float row[256 + W];
      std::fill(row, row + DV, 0.0f);
      for (index_t sp = 0; sp < nsplit; ++sp) {
        const float* at = part + (bk * nsplit + sp) * stride;
        const float mt = at[R * DV + r], lt = at[R * DV + R + r];
        if (!(lt > 0.0f) && mt == mt) continue;  // a chunk this row sees no key of
        const float w = vexp(mt - mx);
        lsum += lt * w;
        for (index_t c = 0; c < DV; ++c) row[c] += w * at[r * DV + c];
      }
      const float inv = 1.0f / lsum;
      for (index_t c = 0; c < DV; ++c) row[c] *= inv;
      const tensor_view<T> o = g.head(g.o, b, h);
      store_row(row, DV, o.data + i * o.stride(0), o.stride(1));
    }
  }
}

/// Few query rows per KV head, contiguous head dims up to 256, some keys: the
/// decode path above; everything else the flash path.
template <class S, class T>
bool attention_decode_applies(const attention_args<T>& g) {
  return g.l > 0 && g.hkv > 0 && g.group() * g.s <= 16 && g.d <= 256 && g.dv <= 256 && g.k.stride(3) == 1 &&
         g.v.stride(3) == 1 && g.b * g.h * g.s * g.dv > 0;
}

}  // namespace kforge::cpu::detail

namespace kforge::detail {
template <class P, class T>
  requires(cpu::detail::cpu_policy<P> && cpu::detail::cpu_element<T>)
struct impl<P, op::attention<T>> : attention_entry<impl<P, op::attention<T>>, op::attention<T>> {
  static void compute(const op::attention<T>&, const attention_args<T>& g) {
    using C = cpu::detail::cpu_config<P>;
    if (cpu::detail::attention_decode_applies<typename C::simd>(g))
      cpu::detail::attention_decode<typename C::simd>(g, C::threads());
    else
      cpu::detail::attention_compute<typename C::simd, C::mr, C::nr / C::simd::width>(g, C::threads());
  }
};
}  // namespace kforge::detail
