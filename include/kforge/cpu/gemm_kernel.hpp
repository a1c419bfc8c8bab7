// kforge/cpu/gemm_kernel.hpp — the blocked, packed gemm every CPU op that
// needs a matrix product runs on (gemm, conv2d; attention reuses the
// micro-kernel).
//
// Tiling (BLIS's five loops, row-major C):
//   jc over N by NC    — a KC×NC slab of B is packed once, shared by all threads
//   pc over K by KC    —   (packed B in L3; partial sums stay in C or in an f32 workspace)
//   ic over M by MC    — an MC×KC block of A is packed per thread (L2)
//   jr over NC by NR   —   the KC×NR micro-panel of B stays in L1
//   ir over MC by MR   —   micro-kernel: MR×NR accumulators in registers
// Packing converts half/bfloat16 to f32 and reads any strides (row-major,
// column-major, sub-blocks), so the micro-kernel only sees dense f32 panels.
//
// Bounds: panels are zero-padded to whole MR×NR tiles, so the micro-kernel
// always computes a full tile; the write-back stores only the mr×nr corner
// that exists. Write-back applies alpha, beta·C (C is not read when beta is
// 0), bias and the activation on the last KC block while the tile is in
// registers/L1 — the epilogue never makes a second pass over C. Full f32
// tiles with contiguous rows and no activation are written straight from
// registers; everything else goes through a 1.5 KiB stack tile.
//
// Threads: the packed B slab is packed cooperatively (each thread a share of
// the NR panels), then the M×NC block is cut into tasks — row blocks, then
// column blocks — that the threads claim from a shared counter (gemm_blocked
// says how tall and how many). Two pool jobs per (jc, K super-block) step.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <type_traits>
#if __has_include(<unistd.h>)
#include <unistd.h>  // sysconf: the L2 size
#endif

#include "kforge/core/tensor.hpp"
#include "kforge/cpu/config.hpp"
#include "kforge/cpu/isa.hpp"
#include "kforge/cpu/thread_pool.hpp"
#include "kforge/cpu/vmath.hpp"

namespace kforge::cpu::detail {

// ---- scratch memory -----------------------------------------------------------

/// A growing 64-byte-aligned float buffer, one per (thread, Tag): kernels
/// reuse it across calls instead of allocating (large mallocs are mmapped and
/// would page-fault on every call).
template <class Tag>
float* scratch(std::size_t n) {
  struct buffer {
    float* p = nullptr;
    std::size_t cap = 0;
    ~buffer() { std::free(p); }
  };
  thread_local buffer b;
  if (n > b.cap) {
    std::free(b.p);
    const std::size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
    b.p = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!b.p) throw std::bad_alloc();
    b.cap = n;
  }
  return b.p;
}
struct tag_pack_a {};
struct tag_pack_b {};
struct tag_work {};

// ---- operands -----------------------------------------------------------------

/// A strided matrix operand: element (i, j) at p[i·rs + j·cs].
template <class T>
struct matrix_source {
  const T* p;
  index_t rs, cs;
};

/// The epilogue of one call, in f32, decided at run time (one instantiation
/// of the kernels serves every epilogue).
struct gemm_epilogue {
  float alpha = 1.0f, beta = 0.0f;
  const float* bias = nullptr;  ///< f32, one per column (or per row)
  bool bias_per_row = false;    ///< conv2d: one bias per output channel = row
  fn act = fn::identity;
  float slope = 0.01f;
};

// ---- micro-kernel ------------------------------------------------------------

/// Writes an accumulator tile to f32 C as F(alpha·acc + beta·C + bias) (C
/// not read when beta == 0), one register at a time: the activation runs on
/// whole registers with cpu/vmath.hpp's functions, between the load of the
/// accumulator and the one store to C, so a fused epilogue costs its
/// arithmetic and no extra pass over C. `acc` is the micro-kernel's
/// accumulator array, or its copy in a stack tile (Tile = const float*).
template <fn F, class S, int MR, int NV, class Tile>
KFORGE_CPU_INLINE void store_tile(Tile acc, float* __restrict c, index_t ldc, float alpha, float beta,
                                  const float* bias_c, const float* bias_r, float slope) {
  using reg = typename S::reg;
  constexpr int W = S::width;
  const reg va = S::set1(alpha), vb = S::set1(beta);
#pragma GCC unroll 64
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      reg r;
      if constexpr (std::is_same_v<Tile, const float*>) r = S::load(acc + (i * NV + v) * W);
      else r = acc[i][v];
      r = S::mul(r, va);
      if (beta != 0.0f) r = S::fmadd(vb, S::load(ci + v * W), r);
      if (bias_c) r = S::add(r, S::load(bias_c + v * W));
      if (bias_r) r = S::add(r, S::set1(bias_r[i]));
      S::store(ci + v * W, vapply<F>(r, slope));
    }
  }
}

/// store_tile for an activation, out of line: its polynomial constants
/// would otherwise compete with the accumulators for registers and make
/// GCC spill them inside the micro-kernel's K loop. The accumulators reach
/// it through a 1.5 KiB stack tile that stays in L1 (one store and one load
/// per register).
template <fn F, class S, int MR, int NV>
__attribute__((noinline)) void store_tile_activated(const float* tile, float* c, index_t ldc, float alpha, float beta,
                                                    const float* bias_c, const float* bias_r, float slope) {
  store_tile<F, S, MR, NV>(tile, c, ldc, alpha, beta, bias_c, bias_r, slope);
}

/// acc[MR][NR] = Σ_k a[k·MR + i] · b[k·NR + j] over kc steps, then either
/// stored raw into `tile` (ld NR) when to_tile, or written to f32 C as
/// act(alpha·acc + beta·C + bias) (C not read when beta == 0).
template <class S, int MR, int NV>
void microkernel(index_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c, index_t ldc,
                 float alpha, float beta, const float* bias_c, const float* bias_r, bool to_tile,
                 fn act = fn::identity, float slope = 0.0f, bool prefetch_c = false) {
  using reg = typename S::reg;
  constexpr int W = S::width, NR = NV * W;
  reg acc[MR][NV];
#pragma GCC unroll 64
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) acc[i][v] = S::zero();
  // prefetch_c (gemm's tiles of C): the tile the write-back will read and
  // write, asked for now — kc·MR·NV FMAs before it is needed, so lines that
  // left L2 between K steps (C's rows at 768² and up) arrive in time instead
  // of stalling the write-back. On a 2-core Zen 5 (2026-12-02, the same
  // calls alternated in one process): threaded 768²–2048² +3–5 %, one thread
  // 1024²–2048² +3–9 %, 256²–512² within ±1 % (docs/bench/HISTORY.md).
  if (prefetch_c && !to_tile) {
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i) {
#pragma GCC unroll 8
      for (int j = 0; j < NR; j += 16) __builtin_prefetch(c + i * ldc + j, 1);
      __builtin_prefetch(c + i * ldc + NR - 1, 1);
    }
  }
#pragma GCC unroll 4
  for (index_t k = 0; k < kc; ++k) {
    __builtin_prefetch(a + 8 * MR);
    reg bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = S::load(b + v * W);
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i) {
      const reg ai = S::set1(a[i]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[i][v] = S::fmadd(ai, bv[v], acc[i][v]);
    }
    a += MR;
    b += NR;
  }
  if (to_tile) {
#pragma GCC unroll 64
    for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) S::store(c + i * NR + v * W, acc[i][v]);
    return;
  }
  if (act == fn::identity) return store_tile<fn::identity, S, MR, NV>(acc, c, ldc, alpha, beta, bias_c, bias_r, slope);
  alignas(64) float t[MR * NR];
#pragma GCC unroll 64
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) S::store(t + (i * NV + v) * W, acc[i][v]);
  // The epilogues' activations (epilogue::fused accepts only these).
  switch (act) {
    case fn::relu: return store_tile_activated<fn::relu, S, MR, NV>(t, c, ldc, alpha, beta, bias_c, bias_r, slope);
    case fn::leaky_relu:
      return store_tile_activated<fn::leaky_relu, S, MR, NV>(t, c, ldc, alpha, beta, bias_c, bias_r, slope);
    case fn::gelu_tanh:
      return store_tile_activated<fn::gelu_tanh, S, MR, NV>(t, c, ldc, alpha, beta, bias_c, bias_r, slope);
    case fn::gelu_erf:
      return store_tile_activated<fn::gelu_erf, S, MR, NV>(t, c, ldc, alpha, beta, bias_c, bias_r, slope);
    case fn::silu: return store_tile_activated<fn::silu, S, MR, NV>(t, c, ldc, alpha, beta, bias_c, bias_r, slope);
    default: return store_tile<fn::identity, S, MR, NV>(acc, c, ldc, alpha, beta, bias_c, bias_r, slope);
  }
}

// ---- packing ------------------------------------------------------------------

/// Packs rows [i0, i0+mc) × depth [k0, k0+kc) of A into MR-row panels, each
/// laid out [k][MR]; rows past mc are zero.
template <int MR, class T>
void pack_a(const matrix_source<T>& A, index_t i0, index_t mc, index_t k0, index_t kc, float* __restrict dst) {
  for (index_t p = 0; p < mc; p += MR, dst += MR * kc) {
    const int mr = static_cast<int>(std::min<index_t>(MR, mc - p));
    const T* src = A.p + (i0 + p) * A.rs + k0 * A.cs;
    if (A.cs == 1 && mr == MR) {
      // Rows contiguous along k: read MR rows side by side, write [k][MR].
      const T* rows[MR];
      for (int i = 0; i < MR; ++i) rows[i] = src + i * A.rs;
      for (index_t k = 0; k < kc; ++k)
#pragma GCC unroll 16
        for (int i = 0; i < MR; ++i) dst[k * MR + i] = to_f32(rows[i][k]);
    } else {
      for (index_t k = 0; k < kc; ++k) {
        const T* col = src + k * A.cs;
        for (int i = 0; i < mr; ++i) dst[k * MR + i] = to_f32(col[i * A.rs]);
        for (int i = mr; i < MR; ++i) dst[k * MR + i] = 0.0f;
      }
    }
  }
}

/// Packs depth [k0, k0+kc) × columns [j0, j0+nc) of B into NR-column panels,
/// each laid out [k][NR]; columns past nc are zero.
template <int NR, class T>
void pack_b(const matrix_source<T>& B, index_t k0, index_t kc, index_t j0, index_t nc, float* __restrict dst) {
  for (index_t p = 0; p < nc; p += NR, dst += NR * kc) {
    const int nr = static_cast<int>(std::min<index_t>(NR, nc - p));
    const T* src = B.p + k0 * B.rs + (j0 + p) * B.cs;
    if (B.rs == 1 && B.cs != 1) {
      // Column-major B: walk each column along k (contiguous reads).
      for (int j = 0; j < nr; ++j) {
        const T* col = src + j * B.cs;
        for (index_t k = 0; k < kc; ++k) dst[k * NR + j] = to_f32(col[k]);
      }
      for (index_t k = 0; k < kc; ++k)
        for (int j = nr; j < NR; ++j) dst[k * NR + j] = 0.0f;
    } else {
      for (index_t k = 0; k < kc; ++k) {
        load_row(src + k * B.rs, B.cs, nr, dst + k * NR);
        for (int j = nr; j < NR; ++j) dst[k * NR + j] = 0.0f;
      }
    }
  }
}

// ---- write-back of a stack tile -------------------------------------------------

/// Finishes an mr×nr corner of a raw accumulator tile: alpha·acc plus either
/// beta·C (first KC block) or the f32 partial sum of the earlier blocks; on the
/// last block adds the bias, applies the activation and stores T, otherwise
/// stores the f32 partial sum (into C for f32, into `work` for half/bf16).
template <class T, int NR>
void finish_tile(float* __restrict tile, int mr, int nr, index_t i0, index_t j0, bool first, bool last,
                 const gemm_epilogue& ep, T* c, index_t rs, index_t cs, float* work, index_t ldw, index_t wj0) {
  // 1. alpha·acc + (beta·C | partial) [+ bias], in place in the tile.
  for (int i = 0; i < mr; ++i) {
    float* v = tile + i * NR;
    const T* crow = c + (i0 + i) * rs + j0 * cs;
    for (int j = 0; j < NR; ++j) v[j] *= ep.alpha;
    if (first) {
      if (ep.beta != 0.0f)
        for (int j = 0; j < nr; ++j) v[j] += ep.beta * to_f32(crow[j * cs]);
    } else if constexpr (std::is_same_v<T, float>) {
      for (int j = 0; j < nr; ++j) v[j] += crow[j * cs];
    } else {
      const float* wrow = work + (i0 + i) * ldw + wj0;
      for (int j = 0; j < nr; ++j) v[j] += wrow[j];
    }
    if (last && ep.bias) {
      if (ep.bias_per_row) {
        const float bv = ep.bias[i0 + i];
        for (int j = 0; j < NR; ++j) v[j] += bv;
      } else if (nr == NR) {
        for (int j = 0; j < NR; ++j) v[j] += ep.bias[j0 + j];
      } else {
        for (int j = 0; j < nr; ++j) v[j] += ep.bias[j0 + j];
      }
    }
  }
  // 2. The activation over the whole tile at once: one long vectorised loop
  // instead of one short call per row.
  if (last) apply_activation(ep.act, ep.slope, tile, static_cast<std::int64_t>(mr) * NR);
  // 3. Store T (last block) or the f32 partial sum.
  for (int i = 0; i < mr; ++i) {
    const float* v = tile + i * NR;
    T* crow = c + (i0 + i) * rs + j0 * cs;
    if (last || std::is_same_v<T, float>) {
      store_row<T>(v, nr, crow, cs);
    } else {
      float* wrow = work + (i0 + i) * ldw + wj0;
      for (int j = 0; j < nr; ++j) wrow[j] = v[j];
    }
  }
}

// ---- the driver -----------------------------------------------------------------

/// A packed gemm of fewer flops than this runs on the calling thread alone:
/// KFORGE_GEMM_PARALLEL_MIN_FLOPS if set (0 = always use the pool's
/// threads), else 2·112³ + 1: the caller works alone up to 112³, the pool
/// from 113³ (128³ included). Measured on the 2-core Zen 5 VM
/// (bench/cpu_calls.sh, threshold scenario: threaded with the threshold off
/// beside blocked, back to back; docs/bench/HISTORY.md), whose two cores hand
/// work over in one of two regimes that change from process to process and
/// hour to hour: in the fast one the pool gains 1.3× at 96³ and 1.5× at
/// 128³; in the slow one (a job's hand-over costs several µs) it loses 1.8×
/// at 96³ and 1.13× at 128³ and gains from 160³. 113³ keeps the loss of the
/// slow regime small where the fast one gains most.
inline double gemm_parallel_min_flops() {
  static const double v = [] {
    // A finite number >= 0 (env_var_error otherwise).
    return env_number("KFORGE_GEMM_PARALLEL_MIN_FLOPS", number_ranges::non_negative, 2.0 * 112 * 112 * 112 + 1);
  }();
  return v;
}

/// While a worker sleeps on the futex, a packed gemm of fewer flops than
/// gemm_wake_factor × gemm_parallel_min_flops() (2·224³ by default) runs on
/// the caller alone and wakes nobody: a woken worker needs tens of µs to
/// reach a core (on the development VM ~30–40 µs), so below ~200³ it would
/// join too late to help while the wake-up and the wait for its last task
/// cost the caller (measured after 5 ms of idle with the pool forced: 128³
/// 32.6 µs through the pool vs 23.7 alone; 160³ even; 256³ 112 vs 158). A
/// call that finds the workers spinning (within spin_before_sleep() of the
/// last call) uses them from gemm_parallel_min_flops() up; so does one that
/// finds them woken by the last call and not yet back on a core
/// (thread_pool::sleeping() no longer counts them: they are on their way).
inline constexpr double gemm_wake_factor = 8;

/// Threads a packed m×n×k gemm runs on, given the policy's count: one below
/// gemm_parallel_min_flops(), one below gemm_wake_factor times that while a
/// worker sleeps, else nthreads.
inline int gemm_threads(index_t m, index_t n, index_t k, int nthreads, bool workers_asleep) {
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(std::max<index_t>(k, 1));
  const double min = gemm_parallel_min_flops();
  if (nthreads <= 1 || flops < min) return 1;
  if (workers_asleep && flops < gemm_wake_factor * min) return 1;
  return nthreads;
}

/// The same, for the pool as it is now.
inline int gemm_threads(index_t m, index_t n, index_t k, int nthreads) {
  return gemm_threads(m, n, k, nthreads, thread_pool::instance().sleeping() > 0);
}

/// Packed B of one (jc, K super-block) step is at most this many floats
/// (16 MiB, half the L3 of the development machine): one packing job then
/// serves every compute task of the step, and K is cut into super-blocks
/// only when KC·NC·(K / KC) exceeds it (e.g. 4096³: four super-blocks of 1024).
inline constexpr index_t gemm_packed_b_floats = index_t{4} << 20;

/// The L2 cache of one core in bytes (sysconf; 1 MiB where it is not known).
inline index_t l2_cache_bytes() {
  static const index_t bytes = [] {
    long v = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE)
    v = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
    return v >= (long{64} << 10) ? static_cast<index_t>(v) : index_t{1} << 20;  // 0, -1 or nonsense: 1 MiB
  }();
  return bytes;
}

/// Compute tasks of a threaded gemm: at least gemm_tasks_per_thread per
/// thread, cut from row blocks first and then, where the rows give too few,
/// column blocks. How tall the row blocks are: where a KC slab of packed B
/// fits L2 (KC·NC·4 B ≤ l2_cache_bytes(); on a 1 MiB L2 at KC 256, N ≤ 1024),
/// short, so that each task's rows of C take at most 1/gemm_c_l2_fraction of
/// L2 and stay there across the K steps; each task then reads all of packed B
/// once, which L3 serves at these sizes. Past it (larger B), tall:
/// gemm_tasks_per_thread_b_in_l3 row blocks per thread (up to MC rows each),
/// so each B micro-panel fetched serves many rows. The slab test is a proxy
/// measured on one machine (the best count switched between 1024² and 1536²
/// there), so N just past it changes rule. Against 6 row blocks per thread, in
/// one process call by call on a 2-core Zen 5 (2026-12-02,
/// docs/bench/HISTORY.md): 1024² +11 %, 1536²–2048² +6–10 %, 256 × 4096 × 4096
/// and 512 × 4096 × 4096 +14–17 %, other shapes within ±2 %. Tasks are claimed
/// dynamically, so a thread that joins late or is descheduled still leaves
/// work to the others.
inline constexpr int gemm_tasks_per_thread = 6;
inline constexpr int gemm_tasks_per_thread_b_in_l3 = 3;
inline constexpr index_t gemm_c_l2_fraction = 16;

/// C[m×n] (strides rs_c, cs_c) = epilogue(A[m×k] · B[k×n]) on up to nthreads
/// threads. BSrc is matrix_source<T> or another source with a pack_b overload
/// (conv2d's implicit im2col).
///
/// Per NC block of columns and per K super-block (usually all of K), two pool
/// jobs: (1) pack B, NR panels claimed in groups; (2) compute, a grid of
/// tasks over C — row blocks of at most MC rows (A packed once per task and
/// KC step), cut into column blocks only when the rows alone give fewer than
/// gemm_tasks_per_thread tasks per thread (the row blocks' height: above).
/// Tasks are claimed dynamically (cpu/thread_pool.hpp), so no thread waits
/// for a share that has not started.
template <class S, int MR, int NV, class T, class BSrc>
void gemm_blocked(index_t m, index_t n, index_t k, const matrix_source<T>& a, const BSrc& b, T* c, index_t rs_c,
                  index_t cs_c, const gemm_epilogue& ep, blocking bl, int nthreads) {
  constexpr int NR = NV * S::width;
  if (m <= 0 || n <= 0) return;
  const index_t KC = bl.kc, NC = bl.nc;
  const index_t MC = std::max<index_t>(MR, bl.mc / MR * MR);
  const index_t ncmax = std::min<index_t>(NC, (n + NR - 1) / NR * NR);
  const index_t kslabs = std::max<index_t>(1, (k + KC - 1) / KC);  // KC steps (one when k == 0)
  const index_t slabs_per_super = std::clamp<index_t>(gemm_packed_b_floats / (KC * ncmax), 1, kslabs);
  const int nt = gemm_threads(m, n, k, nthreads);
  float* work = nullptr;
  index_t ldw = 0;
  if constexpr (!std::is_same_v<T, float>) {
    if (k > KC) {
      ldw = ncmax;
      work = scratch<tag_work>(static_cast<std::size_t>(m * ldw));
    }
  }
  const index_t slab_floats = KC * ncmax;
  float* pb = scratch<tag_pack_b>(static_cast<std::size_t>(slabs_per_super * slab_floats));
  thread_pool& pool = thread_pool::instance();
  const index_t row_panels = (m + MR - 1) / MR, panels_per_mc = MC / MR;
  const index_t l2 = l2_cache_bytes(), c_bytes = m * ncmax * static_cast<index_t>(sizeof(float));
  const bool b_in_l2 = slab_floats * static_cast<index_t>(sizeof(float)) <= l2;
  const index_t want = nt <= 1 ? 1 : index_t{gemm_tasks_per_thread} * nt;  // tasks
  const index_t want_rows = nt <= 1  ? 1
                            : b_in_l2 ? std::max(want, (c_bytes + l2 / gemm_c_l2_fraction - 1) / (l2 / gemm_c_l2_fraction))
                                      : index_t{gemm_tasks_per_thread_b_in_l3} * nt;  // row blocks
  const index_t rb = std::max(std::min(row_panels, want_rows), (row_panels + panels_per_mc - 1) / panels_per_mc);

  for (index_t jc = 0; jc < n; jc += NC) {
    const index_t nc = std::min<index_t>(NC, n - jc);
    const index_t col_panels = (nc + NR - 1) / NR;
    const index_t cb = rb >= want ? 1 : std::min(col_panels, (want + rb - 1) / rb);
    for (index_t s0 = 0; s0 < kslabs; s0 += slabs_per_super) {
      const index_t s1 = std::min(kslabs, s0 + slabs_per_super);
      // (1) Pack B[s0·KC, s1·KC) × [jc, jc + nc): slab s at pb + (s - s0)·slab_floats.
      const index_t pack_tasks = nt > 1 ? std::min(col_panels, index_t{4} * nt) : 1;
      pool.run_tasks(nt, pack_tasks, [&](std::int64_t t) {
        index_t p0, p1;
        split_range(col_panels, static_cast<int>(t), static_cast<int>(pack_tasks), p0, p1);
        if (p0 >= p1) return;
        for (index_t s = s0; s < s1; ++s) {
          const index_t pc = s * KC, kc = std::max<index_t>(0, std::min<index_t>(KC, k - pc));
          pack_b<NR>(b, pc, kc, jc + p0 * NR, std::min<index_t>(nc, p1 * NR) - p0 * NR,
                     pb + (s - s0) * slab_floats + p0 * NR * kc);
        }
      });
      // (2) Compute: task t is row block t / cb, column block t % cb.
      pool.run_tasks(nt, rb * cb, [&](std::int64_t t) {
        index_t m0, m1, n0, n1;
        split_range(row_panels, static_cast<int>(t / cb), static_cast<int>(rb), m0, m1);
        split_range(col_panels, static_cast<int>(t % cb), static_cast<int>(cb), n0, n1);
        m0 *= MR;
        m1 = std::min<index_t>(m1 * MR, m);
        n0 *= NR;
        n1 = std::min<index_t>(n1 * NR, nc);
        if (m0 >= m1 || n0 >= n1) return;
        float* pa = scratch<tag_pack_a>(static_cast<std::size_t>(MC * KC));
        alignas(64) float tile[MR * NR];
        for (index_t s = s0; s < s1; ++s) {
          const index_t pc = s * KC, kc = std::max<index_t>(0, std::min<index_t>(KC, k - pc));
          const bool first = pc == 0, last = pc + KC >= k;
          const float* slab = pb + (s - s0) * slab_floats;
          for (index_t ic = m0; ic < m1; ic += MC) {
            const index_t mc = std::min<index_t>(MC, m1 - ic);
            pack_a<MR>(a, ic, mc, pc, kc, pa);
            for (index_t jr = n0; jr < n1; jr += NR) {
              const int nr = static_cast<int>(std::min<index_t>(NR, n1 - jr));
              const float* bp = slab + jr * kc;
              for (index_t ir = 0; ir < mc; ir += MR) {
                const int mr = static_cast<int>(std::min<index_t>(MR, mc - ir));
                const float* ap = pa + ir * kc;
                const index_t i = ic + ir, j = jc + jr;
                bool direct = false;
                if constexpr (std::is_same_v<T, float>) direct = cs_c == 1 && mr == MR && nr == NR;
                if (direct) {
                  const float* bc = last && ep.bias && !ep.bias_per_row ? ep.bias + j : nullptr;
                  const float* br = last && ep.bias && ep.bias_per_row ? ep.bias + i : nullptr;
                  microkernel<S, MR, NV>(kc, ap, bp, reinterpret_cast<float*>(c) + i * rs_c + j, rs_c, ep.alpha,
                                         first ? ep.beta : 1.0f, bc, br, false, last ? ep.act : fn::identity,
                                         ep.slope, /*prefetch_c=*/true);
                } else {
                  microkernel<S, MR, NV>(kc, ap, bp, tile, NR, 1.0f, 0.0f, nullptr, nullptr, true);
                  finish_tile<T, NR>(tile, mr, nr, i, j, first, last, ep, c, rs_c, cs_c, work, ldw, jr);
                }
              }
            }
          }
        }
      });
    }
  }
}

// ---- skinny M: no packing ---------------------------------------------------------

struct tag_skinny_a {};

/// A register of W consecutive B elements as f32: half and bfloat16 are
/// converted in registers (F16C / a 16-bit shift) as B streams in.
template <class S, class TB>
KFORGE_CPU_INLINE typename S::reg load_b(const TB* p) {
  if constexpr (std::is_same_v<TB, float>) {
    return S::load(p);
  } else if constexpr (S::width == 1) {
    return to_f32(*p);
  } else if constexpr (std::is_same_v<TB, bfloat16>) {
    return S::load_bf16(p);
  } else if constexpr (requires { S::load_f16(p); }) {
    return S::load_f16(p);
  } else {
    alignas(64) float t[S::width];
    for (int i = 0; i < S::width; ++i) t[i] = to_f32(p[i]);
    return S::load(t);
  }
}

/// Rows of A per register block of the skinny path: 8, then what is left in
/// one block (the kernel, A's panels and the partial sums' tiles use the same
/// split). One block per leftover, not 4 + 2 + 1: each block reads the band
/// of B again, and a 1- or 2-row block of 2-register columns has too few
/// independent FMA chains to keep the FMA units busy.
KFORGE_CPU_INLINE index_t skinny_rows(index_t left) { return left >= 8 ? 8 : left; }

/// tile[R × NV·W] += A[R × kb] · B[kb × NV·W], reading row-major B in place;
/// A is a k-major panel (ap[q·R + r] = A[r][q]) and the tile's rows are NV·W
/// floats apart, so every address but B's rows is a constant offset from one
/// pointer (with A's and the partial sums' strides at run time, the 8-row
/// form spent as many instructions on addresses as on FMAs). For M ≤ 8 the
/// product is bound by reading B once; packing it would read and write B a
/// second time (gemm_compute also sends up to 32 rows here over a wide B).
template <class S, int R, int NV, class TB>
void skinny_kernel(index_t kb, const float* __restrict ap, const TB* __restrict b, index_t ldb, float* __restrict tile) {
  using reg = typename S::reg;
  constexpr int W = S::width, CW = NV * W;
  reg c[R][NV];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[r][v] = S::load(tile + r * CW + v * W);
#pragma GCC unroll 4
  for (index_t kk = 0; kk < kb; ++kk) {
    const TB* brow = b + kk * ldb;
    reg bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = load_b<S>(brow + v * W);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const reg ar = S::set1(ap[kk * R + r]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) c[r][v] = S::fmadd(ar, bv[v], c[r][v]);
    }
  }
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) S::store(tile + r * CW + v * W, c[r][v]);
}

/// skinny_kernel for a block of `rows` ≤ MAXR rows (the row count as a
/// template argument).
template <class S, int NV, int MAXR, class TB>
KFORGE_CPU_INLINE void skinny_block(index_t rows, index_t kb, const float* ap, const TB* b, index_t ldb, float* tile) {
  if constexpr (MAXR > 1) {
    if (rows == MAXR) skinny_kernel<S, MAXR, NV>(kb, ap, b, ldb, tile);
    else skinny_block<S, NV, MAXR - 1>(rows, kb, ap, b, ldb, tile);
  } else {
    skinny_kernel<S, 1, NV>(kb, ap, b, ldb, tile);
  }
}

/// gemm with m ≤ 8 and row-major B (LLM decoding: bound by reading B once;
/// gemm_compute also sends up to 32 rows over a wide B on AVX-512).
/// Threads split K: each task takes a contiguous range of B's rows and reads
/// them in bands of KB full rows (KB sequential streams the hardware
/// prefetchers follow), accumulating into its own f32 partial sums (m × N,
/// walked in column blocks that stay in L2); one pass then adds the tasks'
/// partial sums and applies alpha, beta, bias and the activation. Splitting N
/// among tasks instead (each walking its column strip down all of K) reads
/// B in strips: with the pool's 8 tasks per thread that was 256 B per row at
/// N = 768, and decode read B at 16 GB/s where this reads it at 30 (2-core
/// Zen 5, 35 GB/s single-thread read; docs/bench/HISTORY.md, "transformer").
/// One and two rows use 4-register columns, more rows 2-register ones (8
/// rows × 4 registers would spill); bands of 8 rows (16 or 4 measured slower).
/// Half/bfloat16 B is converted to f32 in registers as it streams (never
/// packed); A (m × k, small) arrives as f32 k-major panels, one per block of
/// skinny_rows rows (`ap`, block i at ap + i·k). A task's partial sums are
/// m × ldp floats laid out as the finishing pass reads them: the block of
/// rows i..i+R at i·ldp, inside it one R × CW tile per CW columns.
template <class S, int NV, int MAXR, index_t KB, class T>
void gemm_skinny_ksplit(index_t m, index_t n, index_t k, const float* ap, const matrix_source<T>& b, T* c,
                        index_t rs_c, index_t cs_c, const gemm_epilogue& ep, int nthreads) {
  constexpr int CW = NV * S::width;
  const index_t ldp = (n + CW - 1) / CW * CW;
  // Tasks: K ranges of at least 512 KiB of B (less is not worth a worker's
  // wake-up), at most two per thread (dynamic claiming).
  const double b_bytes = static_cast<double>(k) * static_cast<double>(n) * sizeof(T);
  const index_t most = std::max<index_t>(1, std::min<index_t>(2 * std::max(nthreads, 1), (k + KB - 1) / KB));
  // Each task writes m × N partial sums that the finishing pass reads back:
  // at most a quarter of B's bytes in all (binds with many rows or threads).
  const double part_bytes = 2.0 * 4.0 * static_cast<double>(m) * static_cast<double>(n);
  const index_t by_part = std::max<index_t>(1, static_cast<index_t>(b_bytes / (4.0 * std::max(part_bytes, 1.0))));
  const index_t nt = std::clamp<index_t>(static_cast<index_t>(b_bytes / (512.0 * 1024)), 1, std::min(most, by_part));
  // Columns per pass over a task's rows: its partial sums (m × nb floats, 256 KiB) stay in L2.
  const index_t nb = std::max<index_t>(CW, (index_t{256 * 1024 / 4} / std::max<index_t>(m, 1)) / CW * CW);
  float* part = scratch<tag_work>(static_cast<std::size_t>(std::max<index_t>(nt * m * ldp, 1)));
  thread_pool::instance().run_tasks(nt > 1 ? nthreads : 1, nt, [&](std::int64_t t) {
    index_t k0, k1;
    split_range(k, static_cast<int>(t), static_cast<int>(nt), k0, k1);
    float* acc = part + t * m * ldp;
    std::fill(acc, acc + m * ldp, 0.0f);
    for (index_t j0 = 0; j0 < n; j0 += nb) {
      const index_t nloc = std::min(nb, n - j0), full = nloc / CW * CW;
      for (index_t kk = k0; kk < k1; kk += KB) {
        const index_t kb = std::min<index_t>(KB, k1 - kk);
        for (index_t i = 0; i < m;) {
          const index_t rows = skinny_rows(m - i);
          const float* ai = ap + i * k + kk * rows;
          const T* bk = b.p + kk * b.rs + j0 * b.cs;
          float* ac = acc + i * ldp + j0 * rows;  // the tile of columns j0.. (j0 is a multiple of CW)
          for (index_t j = 0; j < full; j += CW) {
            skinny_block<S, NV, MAXR>(rows, kb, ai, bk + j, b.rs, ac + j * rows);
          }
          float* edge = ac + full * rows;  // right edge: fewer than CW columns, in the next tile
          for (index_t r = 0; r < rows; ++r)
            for (index_t j = full; j < nloc; ++j) {
              float sum = edge[r * CW + (j - full)];
              for (index_t q = 0; q < kb; ++q) sum += ai[q * rows + r] * to_f32(bk[q * b.rs + j * b.cs]);
              edge[r * CW + (j - full)] = sum;
            }
          i += rows;
        }
      }
    }
  });
  // The tasks' partial sums added, finished tile by tile.
  const index_t chunks = ldp / CW;
  parallel_for(nthreads, chunks, std::max<index_t>(1, 8192 / (CW * nt * m)), [&](index_t c0, index_t c1) {
    for (index_t ch = c0; ch < c1; ++ch) {
      const index_t j = ch * CW;
      const int nr = static_cast<int>(std::min<index_t>(CW, n - j));
      for (index_t i = 0; i < m;) {
        const index_t rows = skinny_rows(m - i);
        const index_t len = rows * CW;
        alignas(64) float tile[8 * CW];
        const float* p0 = part + i * ldp + ch * len;
        for (index_t e = 0; e < len; ++e) tile[e] = p0[e];
        for (index_t t = 1; t < nt; ++t) {
          const float* pt = p0 + t * m * ldp;
          for (index_t e = 0; e < len; ++e) tile[e] += pt[e];
        }
        finish_tile<T, CW>(tile, static_cast<int>(rows), nr, i, j, true, true, ep, c, rs_c, cs_c, nullptr, 0, 0);
        i += rows;
      }
    }
  });
}

template <class S, class T>
void gemm_skinny(index_t m, index_t n, index_t k, const matrix_source<T>& a, const matrix_source<T>& b, T* c,
                 index_t rs_c, index_t cs_c, const gemm_epilogue& ep, int nthreads) {
  // A as f32 k-major panels of skinny_rows rows (m × k floats: small beside B).
  float* ap = scratch<tag_skinny_a>(static_cast<std::size_t>(std::max<index_t>(m * k, 1)));
  for (index_t i = 0; i < m;) {
    const index_t rows = skinny_rows(m - i);
    float* dst = ap + i * k;
    for (index_t r = 0; r < rows; ++r) {
      const T* src = a.p + (i + r) * a.rs;
      for (index_t q = 0; q < k; ++q) dst[q * rows + r] = to_f32(src[q * a.cs]);
    }
    i += rows;
  }
  constexpr int W = S::width;
  if (m <= 2) gemm_skinny_ksplit<S, W >= 8 ? 4 : 16 / W, 2, 8>(m, n, k, ap, b, c, rs_c, cs_c, ep, nthreads);
  else gemm_skinny_ksplit<S, W >= 8 ? 2 : 8 / W, 8, 8>(m, n, k, ap, b, c, rs_c, cs_c, ep, nthreads);
}

}  // namespace kforge::cpu::detail
