// kforge/cpu/isa.hpp — the SIMD register abstraction the CPU micro-kernels are
// written against, chosen at compile time from the target ISA macros:
//   __AVX512F__            → simd_avx512 (16 floats per zmm, 32 registers)
//   __AVX2__ && __FMA__    → simd_avx2   (8 floats per ymm, 16 registers)
//   otherwise              → simd_scalar (1 float per "register")
// Only float is computed; half and bfloat16 are converted while packing.
#pragma once

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#define KFORGE_CPU_INLINE inline __attribute__((always_inline))

namespace kforge::cpu {
namespace detail {

#if defined(__AVX512F__)
/// The AVX-512 intrinsics kforge uses whose GCC 12 definitions pass
/// _mm512_undefined_*() (a self-initialised variable) as the source of
/// masked-off lanes: once inlined, GCC 12 reports it as (maybe-)uninitialized
/// in every caller, and a pragma around the caller does not silence it (GCC
/// PR 105593, fixed in GCC 13). These are the masked forms with every lane
/// selected, which compile to the same unmasked instructions and leave
/// nothing undefined; kforge's headers call them instead, so that a user's
/// `-Wall -Wextra -Werror` build passes (tests: compile_warnings_*).
namespace x512 {
KFORGE_CPU_INLINE __m512 max_ps(__m512 a, __m512 b) { return _mm512_mask_max_ps(a, 0xFFFF, a, b); }
KFORGE_CPU_INLINE __m512 min_ps(__m512 a, __m512 b) { return _mm512_mask_min_ps(a, 0xFFFF, a, b); }
KFORGE_CPU_INLINE __m512 scalef_ps(__m512 a, __m512 b) { return _mm512_maskz_scalef_ps(0xFFFF, a, b); }
template <int Imm>
KFORGE_CPU_INLINE __m512 roundscale_ps(__m512 a) { return _mm512_maskz_roundscale_ps(0xFFFF, a, Imm); }
KFORGE_CPU_INLINE __m512 cvtepi32_ps(__m512i a) { return _mm512_maskz_cvtepi32_ps(0xFFFF, a); }
KFORGE_CPU_INLINE __m512i cvtepi8_epi32(__m128i a) { return _mm512_maskz_cvtepi8_epi32(0xFFFF, a); }
KFORGE_CPU_INLINE __m512i cvtepu8_epi32(__m128i a) { return _mm512_maskz_cvtepu8_epi32(0xFFFF, a); }
KFORGE_CPU_INLINE __m512i cvtepu16_epi32(__m256i a) { return _mm512_maskz_cvtepu16_epi32(0xFFFF, a); }
KFORGE_CPU_INLINE __m512 cvtph_ps(__m256i a) { return _mm512_maskz_cvtph_ps(0xFFFF, a); }
template <int Imm>
KFORGE_CPU_INLINE __m256i cvtps_ph(__m512 a) { return _mm512_maskz_cvtps_ph(0xFFFF, a, Imm); }
KFORGE_CPU_INLINE __m512 permutexvar_ps(__m512i idx, __m512 a) { return _mm512_maskz_permutexvar_ps(0xFFFF, idx, a); }
template <unsigned Imm>
KFORGE_CPU_INLINE __m512i slli_epi32(__m512i a) { return _mm512_maskz_slli_epi32(0xFFFF, a, Imm); }
/// _mm512_reduce_add_ps's tree (halves, then quarters, then pairs) without its undefined sources.
KFORGE_CPU_INLINE float reduce_add_ps(__m512 v) {
  const __m512d d = _mm512_castps_pd(v);  // (GCC 12's _mm512_castps512_ps256 is an extract with an undefined source too)
  const __m256 h = _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, d, 0)) + _mm256_castpd_ps(_mm512_maskz_extractf64x4_pd(0xF, d, 1));
  const __m128 q = _mm256_extractf128_ps(h, 1) + _mm256_castps256_ps128(h);
  const __m128 r = q + _mm_movehl_ps(q, q);
  return r[0] + r[1];
}
}  // namespace x512
#endif

// The registers are GCC/Clang vector types (the intrinsics' __m256/__m512
// are the same types with an aliasing attribute), so that cpu/vmath.hpp's
// functions, written once with operators, run on a whole register.
typedef float f32x8 __attribute__((vector_size(32)));
typedef std::int32_t i32x8 __attribute__((vector_size(32)));
typedef float f32x16 __attribute__((vector_size(64)));
typedef std::int32_t i32x16 __attribute__((vector_size(64)));

#if defined(__AVX512F__)
struct simd_avx512 {
  using reg = f32x16;
  static constexpr int width = 16;
  static constexpr int registers = 32;
  static constexpr const char* name = "avx512";
  static KFORGE_CPU_INLINE reg zero() { return _mm512_setzero_ps(); }
  static KFORGE_CPU_INLINE reg load(const float* p) { return _mm512_loadu_ps(p); }
  static KFORGE_CPU_INLINE void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  /// Non-temporal store (p 64-byte aligned): no read-for-ownership of the line.
  static KFORGE_CPU_INLINE void stream(float* p, reg v) { _mm512_stream_ps(p, v); }
  static KFORGE_CPU_INLINE reg load_f16(const void* p) {
    return x512::cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
  }
  static KFORGE_CPU_INLINE reg load_bf16(const void* p) {
    const __m512i w = x512::cvtepu16_epi32(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(x512::slli_epi32<16>(w));
  }
  static KFORGE_CPU_INLINE reg set1(float v) { return _mm512_set1_ps(v); }
  static KFORGE_CPU_INLINE reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static KFORGE_CPU_INLINE reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static KFORGE_CPU_INLINE reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
};
#endif

#if defined(__AVX2__) && defined(__FMA__)
struct simd_avx2 {
  using reg = f32x8;
  static constexpr int width = 8;
  static constexpr int registers = 16;
  static constexpr const char* name = "avx2+fma";
  static KFORGE_CPU_INLINE reg zero() { return _mm256_setzero_ps(); }
  static KFORGE_CPU_INLINE reg load(const float* p) { return _mm256_loadu_ps(p); }
  static KFORGE_CPU_INLINE void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
  /// Non-temporal store (p 32-byte aligned): no read-for-ownership of the line.
  static KFORGE_CPU_INLINE void stream(float* p, reg v) { _mm256_stream_ps(p, v); }
#if defined(__F16C__)
  static KFORGE_CPU_INLINE reg load_f16(const void* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
  }
#endif
  static KFORGE_CPU_INLINE reg load_bf16(const void* p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(static_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  static KFORGE_CPU_INLINE reg set1(float v) { return _mm256_set1_ps(v); }
  static KFORGE_CPU_INLINE reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static KFORGE_CPU_INLINE reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static KFORGE_CPU_INLINE reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
};
#endif

struct simd_scalar {
  using reg = float;
  static constexpr int width = 1;
  static constexpr int registers = 16;
  static constexpr const char* name = "scalar";
  static KFORGE_CPU_INLINE reg zero() { return 0.0f; }
  static KFORGE_CPU_INLINE reg load(const float* p) { return *p; }
  static KFORGE_CPU_INLINE void store(float* p, reg v) { *p = v; }
  static KFORGE_CPU_INLINE void stream(float* p, reg v) { *p = v; }
  static KFORGE_CPU_INLINE reg set1(float v) { return v; }
  static KFORGE_CPU_INLINE reg fmadd(reg a, reg b, reg c) { return a * b + c; }
  static KFORGE_CPU_INLINE reg mul(reg a, reg b) { return a * b; }
  static KFORGE_CPU_INLINE reg add(reg a, reg b) { return a + b; }
};

#if defined(__AVX512F__)
using simd_native = simd_avx512;
// 12×32: 24 zmm accumulators + 2 for the B row + broadcasts from memory fit
// the 32 registers; per k it issues 24 FMAs against 2 vector loads and 12
// broadcasts (BLIS's skx sgemm tile, transposed for row-major C).
inline constexpr int default_mr = 12, default_nr = 32;
#elif defined(__AVX2__) && defined(__FMA__)
using simd_native = simd_avx2;
// 6×16: 12 ymm accumulators + 2 for B + 1 broadcast of the 16 registers.
inline constexpr int default_mr = 6, default_nr = 16;
#else
using simd_native = simd_scalar;
inline constexpr int default_mr = 4, default_nr = 4;
#endif

/// Orders this thread's non-temporal stores before its later stores (a
/// task that streamed its output runs it before it reports completion).
KFORGE_CPU_INLINE void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace detail

/// The instruction set the CPU micro-kernels were compiled for: "avx512",
/// "avx2+fma" or "scalar".
inline const char* isa_name() { return detail::simd_native::name; }

}  // namespace kforge::cpu
