/* bench/quant_golden.c — the golden bytes of tests/core_quant.cpp, from an
 * independent implementation: llama.cpp's reference quantisers
 * (quantize_row_{q8_0,q4_0,mxfp4}_ref in ggml's ggml-quants.c).
 *
 * It builds the test's input matrix (the same splitmix64 stream and special
 * blocks as tests/core_quant.cpp's golden_input) and prints, per format, the
 * FNV-1a 64 hash of the packed rows, the first two blocks in hex, and the
 * hash of the floats ggml's dequantize_row_* gives back. Build
 * against a ggml checkout (ggml-base only, a minute on 2 cores):
 *
 *   cmake -S ggml -B ggml/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF
 *   ninja -C ggml/build ggml-base
 *   cc -O2 -I ggml/include -I ggml/src bench/quant_golden.c ggml/build/src/libggml-base.so -lm -o quant_golden
 *   LD_LIBRARY_PATH=ggml/build/src ./quant_golden
 *
 * docs/bench/2026-12-06-quant/NOTES.md has its output and the ggml commit.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ggml-common.h"
#include "ggml-quants.h"

enum { N = 16, K = 256 };

static uint64_t state;
static uint64_t next(void) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Row r: uniform in [-1, 1) times 2^(r - 8); then the special blocks. */
static void golden_input(float* w) {
  state = 20261206;
  for (int r = 0; r < N; ++r)
    for (int j = 0; j < K; ++j) {
      const float u = (float)(next() >> 40) * (1.0f / 16777216.0f);
      w[r * K + j] = ldexpf(2.0f * u - 1.0f, r - 8);
    }
  for (int j = 0; j < 32; ++j) w[3 * K + j] = 0.0f;                          /* a block of zeros */
  for (int j = 0; j < 32; ++j) w[5 * K + 32 + j] = (float)(j % 17) - 8.5f;   /* q4_0: d = 1 (max -8.5 -> d 1.0625) */
  for (int j = 0; j < 32; ++j) w[7 * K + 64 + j] = (j % 2 ? -3.0f : 3.0f);   /* equal magnitudes: the first max wins */
  for (int j = 0; j < 32; ++j) w[9 * K + 96 + j] = 0.25f * (float)(j - 16); /* mxfp4 ties between grid points */
  for (int j = 0; j < 32; ++j) w[11 * K + j] = (j == 5 ? -1e-30f : 1e-31f * (float)j); /* tiny: f16 scale underflows */
  for (int j = 0; j < 32; ++j) w[13 * K + 128 + j] = (float)(j - 16) * 1000.0f; /* large: d near f16's range */
}

static uint64_t fnv(const uint8_t* p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

static void show(const char* name, const uint8_t* p, size_t bytes, size_t block, const float* deq) {
  printf("%s fnv1a64=%016llx dequantized=%016llx first blocks:", name, (unsigned long long)fnv(p, bytes),
         (unsigned long long)fnv((const uint8_t*)deq, sizeof(float) * N * K));
  for (size_t i = 0; i < 2 * block; ++i) printf("%s%02x", i % block ? "" : " ", p[i]);
  printf("\n");
}

int main(void) {
  static float w[N * K];
  static block_q8_0 q8[N * K / 32];
  static block_q4_0 q4[N * K / 32];
  static block_mxfp4 mx[N * K / 32];
  golden_input(w);
  for (int r = 0; r < N; ++r) {
    quantize_row_q8_0_ref(w + r * K, q8 + r * K / 32, K);
    quantize_row_q4_0_ref(w + r * K, q4 + r * K / 32, K);
    quantize_row_mxfp4_ref(w + r * K, mx + r * K / 32, K);
  }
  static float d8[N * K], d4[N * K], dm[N * K];
  dequantize_row_q8_0(q8, d8, N * K);
  dequantize_row_q4_0(q4, d4, N * K);
  dequantize_row_mxfp4(mx, dm, N * K);
  show("q8_0", (const uint8_t*)q8, sizeof q8, sizeof(block_q8_0), d8);
  show("q4_0", (const uint8_t*)q4, sizeof q4, sizeof(block_q4_0), d4);
  show("mxfp4", (const uint8_t*)mx, sizeof mx, sizeof(block_mxfp4), dm);
  return 0;
}
