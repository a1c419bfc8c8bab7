// kforge/cpu/isa.hpp — the SIMD register abstraction the CPU micro-kernels are
// written against, chosen at compile time from the target ISA macros:
//   __AVX512F__            → simd_avx512 (16 floats per zmm, 32 registers)
//   __AVX2__ && __FMA__    → simd_avx2   (8 floats per ymm, 16 registers)
//   otherwise              → simd_scalar (1 float per "register")
// Only float is computed; half and bfloat16 are converted while packing.
#pragma once

#include <cstdint>

#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#endif

#define KFORGE_CPU_INLINE inline __attribute__((always_inline))

namespace kforge::cpu {
namespace detail {

#if defined(__AVX512F__)
struct simd_avx512 {
  using reg = __m512;
  static constexpr int width = 16;
  static constexpr int registers = 32;
  static constexpr const char* name = "avx512";
  static KFORGE_CPU_INLINE reg zero() { return _mm512_setzero_ps(); }
  static KFORGE_CPU_INLINE reg load(const float* p) { return _mm512_loadu_ps(p); }
  static KFORGE_CPU_INLINE void store(float* p, reg v) { _mm512_storeu_ps(p, v); }
  static KFORGE_CPU_INLINE reg set1(float v) { return _mm512_set1_ps(v); }
  static KFORGE_CPU_INLINE reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static KFORGE_CPU_INLINE reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static KFORGE_CPU_INLINE reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
};
#endif

#if defined(__AVX2__) && defined(__FMA__)
struct simd_avx2 {
  using reg = __m256;
  static constexpr int width = 8;
  static constexpr int registers = 16;
  static constexpr const char* name = "avx2+fma";
  static KFORGE_CPU_INLINE reg zero() { return _mm256_setzero_ps(); }
  static KFORGE_CPU_INLINE reg load(const float* p) { return _mm256_loadu_ps(p); }
  static KFORGE_CPU_INLINE void store(float* p, reg v) { _mm256_storeu_ps(p, v); }
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

}  // namespace detail

/// The instruction set the CPU micro-kernels were compiled for: "avx512",
/// "avx2+fma" or "scalar".
inline const char* isa_name() { return detail::simd_native::name; }

}  // namespace kforge::cpu
