// tests/core_quant.cpp — the low-precision weight formats (core/quant.hpp):
// q8_0, q4_0 and mxfp4 bit-identical to llama.cpp's reference quantisers and
// dequantisers on the same input (golden hashes from bench/quant_golden.c,
// built against ggml: docs/bench/2026-12-06-quant/NOTES.md); the FP8 codecs
// exact on every code and rounding to nearest even at every midpoint;
// quantisation error within each format's bound; bad input refused.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kforge/core/quant.hpp"

using namespace kforge;

namespace {

constexpr index_t gn = 16, gk = 256;

/// bench/quant_golden.c's input, value for value.
std::vector<float> golden_input() {
  std::vector<float> w(static_cast<std::size_t>(gn * gk));
  std::uint64_t state = 20261206;
  auto next = [&] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  for (index_t r = 0; r < gn; ++r)
    for (index_t j = 0; j < gk; ++j) {
      const float u = static_cast<float>(next() >> 40) * (1.0f / 16777216.0f);
      w[static_cast<std::size_t>(r * gk + j)] = std::ldexp(2.0f * u - 1.0f, static_cast<int>(r) - 8);
    }
  auto at = [&](index_t r, index_t j) -> float& { return w[static_cast<std::size_t>(r * gk + j)]; };
  for (int j = 0; j < 32; ++j) at(3, j) = 0.0f;
  for (int j = 0; j < 32; ++j) at(5, 32 + j) = static_cast<float>(j % 17) - 8.5f;
  for (int j = 0; j < 32; ++j) at(7, 64 + j) = j % 2 ? -3.0f : 3.0f;
  for (int j = 0; j < 32; ++j) at(9, 96 + j) = 0.25f * static_cast<float>(j - 16);
  for (int j = 0; j < 32; ++j) at(11, j) = j == 5 ? -1e-30f : 1e-31f * static_cast<float>(j);
  for (int j = 0; j < 32; ++j) at(13, 128 + j) = static_cast<float>(j - 16) * 1000.0f;
  return w;
}

std::uint64_t fnv(const void* data, std::size_t n) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

std::string hex(const std::uint8_t* p, std::size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (std::size_t i = 0; i < n; ++i) s += d[p[i] >> 4], s += d[p[i] & 15];
  return s;
}

float bits_float(std::uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

}  // namespace

TEST_CASE("q8_0, q4_0 and mxfp4 are bit-identical to llama.cpp's reference quantisers and dequantisers") {
  const std::vector<float> w = golden_input();
  struct golden {
    qformat f;
    std::uint64_t packed, dequantized;
    const char* first;  // the first block
  };
  // bench/quant_golden.c against ggml d99724f2 (docs/bench/2026-12-06-quant/NOTES.md).
  const golden g[] = {
      {qformat::q8_0, 0xa114e3f94e685b28ull, 0x3d436790a98a2654ull, "f001b85f5a6847e57b32697aa3c2c481ff7834dc058cbdfc5d39ea13b3e087737a77"},
      {qformat::q4_0, 0xbd8a8157da7f6790ull, 0x94818e318ebdec87ull, "b20fb36e8e1f4c86efcb7f9f326404f0f8ff"},
      {qformat::mxfp4, 0xb66526af84a735b3ull, 0x8fb8b3486bf8a775ull, "745ec717f7e60b7755b727efcefe7f7077"},
  };
  for (const auto& x : g) {
    CAPTURE(to_string(x.f));
    const quantized_matrix q = quantize(x.f, w.data(), gn, gk);
    REQUIRE(q.rows() == gn);
    REQUIRE(q.row_bytes() == gk / 32 * info_of(x.f).block_bytes);
    CHECK(hex(q.data(), static_cast<std::size_t>(info_of(x.f).block_bytes)) == x.first);
    CHECK(fnv(q.data(), static_cast<std::size_t>(gn * q.row_bytes())) == x.packed);
    const std::vector<float> d = q.dequantize();
    CHECK(fnv(d.data(), d.size() * sizeof(float)) == x.dequantized);
    // Adopting the same bytes (a GGUF tensor's) gives the same matrix.
    const quantized_matrix a(x.f, gn, gk, std::vector<std::uint8_t>(q.data(), q.data() + gn * q.row_bytes()));
    CHECK(a.dequantize() == d);
  }
}

TEST_CASE("FP8 E4M3 and E5M2: every code decodes to its value, encodes back, and midpoints round to even") {
  // Values from the OCP FP8 definition.
  CHECK(e4m3_to_float(0x7e) == 448.0f);
  CHECK(e4m3_to_float(0x08) == std::ldexp(1.0f, -6));  // smallest normal
  CHECK(e4m3_to_float(0x01) == std::ldexp(1.0f, -9));  // smallest subnormal
  CHECK(e4m3_to_float(0x07) == 7 * std::ldexp(1.0f, -9));
  CHECK(e4m3_to_float(0x38) == 1.0f);
  CHECK(e4m3_to_float(0xb8) == -1.0f);
  CHECK(std::isnan(e4m3_to_float(0x7f)));
  CHECK(std::isnan(e4m3_to_float(0xff)));
  CHECK(std::isinf(e4m3_to_float(0x78)) == false);  // 256: E4M3 has no infinities
  CHECK(e4m3_to_float(0x78) == 256.0f);
  CHECK(e5m2_to_float(0x7b) == 57344.0f);
  CHECK(e5m2_to_float(0x3c) == 1.0f);
  CHECK(e5m2_to_float(0x01) == std::ldexp(1.0f, -16));
  CHECK(e5m2_to_float(0x04) == std::ldexp(1.0f, -14));
  CHECK(std::isinf(e5m2_to_float(0x7c)));
  CHECK(e5m2_to_float(0xfc) == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(e5m2_to_float(0x7d)));
  CHECK(std::signbit(e4m3_to_float(0x80)));
  CHECK(e2m1_to_float(7) == 6.0f);
  CHECK(e2m1_to_float(9) == -0.5f);
  CHECK(e8m0_to_float(127) == 1.0f);
  CHECK(e8m0_to_float(0) == std::ldexp(1.0f, -127));
  CHECK(std::isnan(e8m0_to_float(255)));

  for (int fmt = 0; fmt < 2; ++fmt) {
    auto dec = fmt == 0 ? e4m3_to_float : e5m2_to_float;
    auto enc = fmt == 0 ? float_to_e4m3 : float_to_e5m2;
    CAPTURE(fmt);
    float prev = -1;
    int finite = 0;
    for (int c = 0; c < 128; ++c) {
      const float v = dec(static_cast<std::uint8_t>(c));
      if (std::isnan(v) || std::isinf(v)) continue;
      ++finite;
      CHECK(v > prev);  // positive codes in increasing order
      CHECK(enc(v) == c);
      CHECK(enc(-v) == (c | 0x80));
      if (c > 0 && !std::isnan(prev) && prev >= 0) {
        // The midpoint rounds to the even code; just past it rounds up.
        const float mid = 0.5f * (prev + v);
        CHECK(enc(mid) == ((c - 1) % 2 == 0 ? c - 1 : c));
        CHECK(enc(std::nextafter(mid, 1e9f)) == c);
        CHECK(enc(std::nextafter(mid, -1e9f)) == c - 1);
      }
      prev = v;
    }
    CHECK(finite == (fmt == 0 ? 127 : 124));
  }
  // Past the largest finite value, as PyTorch's casts: E4M3 to NaN from
  // 464 (the tie rounds down to 448), E5M2 to Inf from 61440.
  CHECK(float_to_e4m3(464.0f) == 0x7e);
  CHECK(float_to_e4m3(std::nextafter(464.0f, 1e9f)) == 0x7f);
  CHECK(float_to_e4m3(-1e30f) == 0xff);
  CHECK(float_to_e5m2(std::nextafter(61440.0f, 0.0f)) == 0x7b);
  CHECK(float_to_e5m2(61440.0f) == 0x7c);
  CHECK(float_to_e5m2(-std::numeric_limits<float>::infinity()) == 0xfc);
  CHECK((float_to_e4m3(std::numeric_limits<float>::quiet_NaN()) & 0x7f) == 0x7f);
  // Below the smallest subnormal's half: zero of the sign; at it: the tie to even (0).
  CHECK(float_to_e4m3(std::ldexp(1.0f, -10)) == 0x00);
  CHECK(float_to_e4m3(std::nextafter(std::ldexp(1.0f, -10), 1.0f)) == 0x01);
  CHECK(float_to_e4m3(-std::ldexp(1.0f, -12)) == 0x80);
  CHECK(float_to_e4m3(bits_float(1)) == 0x00);
}

TEST_CASE("quantisation error stays within each format's bound; fp8 rows carry their scale") {
  const std::vector<float> w = golden_input();
  for (qformat f : all_qformats) {
    CAPTURE(to_string(f));
    const quantized_matrix q = quantize(f, w.data(), gn, gk);
    const std::vector<float> d = q.dequantize();
    for (index_t r = 0; r < gn; ++r)
      for (index_t b = 0; b < gk / 32; ++b) {
        float amax = 0;
        for (index_t j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(w[static_cast<std::size_t>(r * gk + b * 32 + j)]));
        float rowmax = 0;
        for (index_t j = 0; j < gk; ++j) rowmax = std::max(rowmax, std::fabs(w[static_cast<std::size_t>(r * gk + j)]));
        for (index_t j = 0; j < 32; ++j) {
          const std::size_t i = static_cast<std::size_t>(r * gk + b * 32 + j);
          const float x = w[i], err = std::fabs(x - d[i]);
          float bound = 0;
          switch (f) {
            case qformat::q8_0: bound = amax / 127 * (0.5f + 128 * std::ldexp(1.0f, -11)) + 6e-8f * 127; break;
            // Half a step, but a whole one where x meets the largest
            // magnitude's opposite sign: q = 16 is clipped to 15.
            case qformat::q4_0: bound = amax / 8 * (1.0f + 9 * std::ldexp(1.0f, -11)) + 6e-8f * 8; break;
            case qformat::mxfp4: bound = amax > 0 ? std::ldexp(1.0f, static_cast<int>(std::floor(std::log2(amax))) - 1) : 0; break;
            case qformat::fp8_e4m3: bound = std::max(std::fabs(x) * 0.0625f, q.scale(r) * std::ldexp(1.0f, -10)); break;
            case qformat::fp8_e5m2: bound = std::max(std::fabs(x) * 0.125f, q.scale(r) * std::ldexp(1.0f, -17)); break;
          }
          CAPTURE(r);
          CAPTURE(b * 32 + j);
          CHECK_MESSAGE(err <= bound * 1.000001f, x << " -> " << d[i] << " (bound " << bound << ")");
        }
        if (info_of(f).row_scale) CHECK(q.scale(r) == doctest::Approx(rowmax / (f == qformat::fp8_e4m3 ? 448 : 57344)));
      }
  }
  // A row of zeros: zeros back, and for fp8 a scale of 1.
  const std::vector<float> zeros(64, 0.0f);
  for (qformat f : all_qformats) {
    const quantized_matrix q = quantize(f, zeros.data(), 2, 32);
    CHECK(q.dequantize() == zeros);
    CHECK(q.scale(1) == 1.0f);
  }
  // The storage is what the format says: 8.5, 4.5, 4.25 and 8 bits a weight.
  CHECK(info_of(qformat::q8_0).bits() == 8.5);
  CHECK(info_of(qformat::q4_0).bits() == 4.5);
  CHECK(info_of(qformat::mxfp4).bits() == 4.25);
  CHECK(quantize(qformat::fp8_e4m3, w.data(), gn, gk).bytes() == static_cast<std::size_t>(gn * gk + gn * 4));
}

TEST_CASE("bad weights and shapes are refused with a clear error") {
  std::vector<float> w(64, 1.0f);
  CHECK_THROWS_AS(quantize(qformat::q4_0, w.data(), 2, 31), shape_error);
  CHECK_THROWS_AS(quantize(qformat::q8_0, w.data(), 0, 32), shape_error);
  CHECK_THROWS_AS(quantize(qformat::q8_0, w.data(), 1, 64, 32), shape_error);  // ldw < K
  CHECK_NOTHROW(quantize(qformat::fp8_e4m3, w.data(), 2, 31));                 // no blocks: any K
  w[40] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH_AS(quantize(qformat::q8_0, w.data(), 2, 32), "kforge::quantize: W[1,8] is not finite", argument_error);
  w[40] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(quantize(qformat::fp8_e5m2, w.data(), 2, 32), argument_error);
  w[40] = 1e10f;  // q8_0's f16 scale would be Inf
  CHECK_THROWS_AS(quantize(qformat::q8_0, w.data(), 2, 32), argument_error);
  CHECK_NOTHROW(quantize(qformat::mxfp4, w.data(), 2, 32));  // E8M0 holds it
  CHECK_THROWS_AS(quantized_matrix(qformat::q4_0, 2, 32, std::vector<std::uint8_t>(35)), shape_error);
  CHECK_THROWS_AS(quantized_matrix(qformat::fp8_e4m3, 2, 4, std::vector<std::uint8_t>(8)), shape_error);  // no scales
  CHECK_THROWS_AS(quantized_matrix(qformat::fp8_e4m3, 1, 4, std::vector<std::uint8_t>(4), {NAN}), argument_error);
  CHECK(parse_qformat("fp8") == qformat::fp8_e4m3);
  CHECK(parse_qformat("mxfp4") == qformat::mxfp4);
  CHECK_THROWS_AS(parse_qformat("q4_k"), argument_error);
}

TEST_CASE("quantized_matrix::dequantize_range is the row's slice, on block boundaries only") {
  std::vector<float> w(3 * 96);
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = std::sin(0.37f * static_cast<float>(i)) * 2.0f;
  for (qformat f : all_qformats) {
    CAPTURE(to_string(f));
    const quantized_matrix q = quantize(f, w.data(), 3, 96);
    std::vector<float> row(96), part(64, -1.0f);
    q.dequantize_row(2, row.data());
    q.dequantize_range(2, 32, 96, part.data());
    for (int j = 0; j < 64; ++j) CHECK(part[static_cast<std::size_t>(j)] == row[static_cast<std::size_t>(32 + j)]);
    CHECK_THROWS_AS(q.dequantize_range(3, 0, 32, part.data()), shape_error);   // no row 3
    CHECK_THROWS_AS(q.dequantize_range(0, 32, 128, part.data()), shape_error);  // past K
    if (info_of(f).block == 32) CHECK_THROWS_AS(q.dequantize_range(0, 16, 48, part.data()), shape_error);  // mid-block
  }
}

TEST_CASE("adopted bytes whose codes or scales decode to NaN or an infinity are refused, naming the row") {
  std::vector<std::uint8_t> b(64, 0x10);
  b[37] = 0x7f;  // E4M3 NaN in row 1
  CHECK_THROWS_WITH_AS(quantized_matrix(qformat::fp8_e4m3, 2, 32, b, {1.0f, 1.0f}), doctest::Contains("row 1"), argument_error);
  b[37] = 0xfc;  // E5M2 -Inf
  CHECK_THROWS_AS(quantized_matrix(qformat::fp8_e5m2, 2, 32, b, {1.0f, 1.0f}), argument_error);
  b[37] = 0x7b;  // E5M2's largest finite code, and a finite E4M3 one
  CHECK_NOTHROW(quantized_matrix(qformat::fp8_e5m2, 2, 32, b, {1.0f, 1.0f}));
  CHECK_NOTHROW(quantized_matrix(qformat::fp8_e4m3, 2, 32, b, {1.0f, 1.0f}));
  std::vector<std::uint8_t> mx(17, 0x11);
  mx[0] = 0xff;  // E8M0 NaN
  CHECK_THROWS_AS(quantized_matrix(qformat::mxfp4, 1, 32, mx), argument_error);
  mx[0] = 0xfe;
  CHECK_NOTHROW(quantized_matrix(qformat::mxfp4, 1, 32, mx));
  std::vector<std::uint8_t> q4(18, 0x11);
  q4[1] = 0x7c;  // f16 scale +Inf
  CHECK_THROWS_AS(quantized_matrix(qformat::q4_0, 1, 32, q4), argument_error);
  std::vector<std::uint8_t> q8(34, 0x11);
  q8[1] = 0xfe;  // f16 scale NaN
  CHECK_THROWS_AS(quantized_matrix(qformat::q8_0, 1, 32, q8), argument_error);
}
