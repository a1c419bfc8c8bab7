// kforge/core/quant.hpp — low-precision weight formats (issue 48's first
// layer): the formats, bit-exact to their published definitions, and a
// weight matrix quantized along its reduction axis.
//
// A weight matrix W is given as a checkpoint stores a linear layer's weight:
// N rows (output features) of K values (input features), row-major — the
// transpose of op::gemm's B (K×N). Each row is quantized along K, in blocks
// of 32 where the format has blocks, so a GGUF tensor (whose rows are the
// same blocks in the same order) is usable as it is:
//
//   q8_0      34 bytes a block: f16 scale d (little-endian), 32 int8 q;
//             value = q·d. llama.cpp's Q8_0.
//   q4_0      18 bytes a block: f16 scale d, 16 bytes of nibbles — byte j
//             holds element j in its low nibble and element j + 16 in its
//             high one; value = (q − 8)·d. llama.cpp's Q4_0.
//   mxfp4     17 bytes a block: one E8M0 scale byte e (2^(e−127)), 16 bytes
//             of FP4 E2M1 codes in Q4_0's nibble order; value =
//             e2m1(q)·2^(e−127). OCP Microscaling v1.0's MXFP4, in GGUF's
//             block layout (e first).
//   fp8_e4m3  one OCP FP8 E4M3 byte a value (bias 7, no infinities, S.1111.111
//             NaN, max 448) and one f32 scale per row: value = e4m3(q)·s.
//   fp8_e5m2  the same with OCP FP8 E5M2 (bias 15, IEEE-like: infinities,
//             max 57344).
//
// Quantising follows each format's reference: q8_0, q4_0 and mxfp4 do what
// llama.cpp's quantize_row_*_ref do, to the bit, on finite input (d =
// amax/127 and q = round(x/d) half away from zero; d = m/−8 for the m of
// largest magnitude and q = min(15, trunc(x·(1/d) + 8.5)); e = floor(log2
// amax) − 2 + 127 and the nearest E2M1 value, the first on a tie); fp8 takes
// s = amax/max (448 or 57344) per row (s = 1 for a row of zeros) and rounds
// x/s to nearest, ties to even, as PyTorch's casts do. Input with a NaN or an
// infinity, a scale that f16 cannot hold (a block with amax past 65504·127
// for q8_0), a K that is not a multiple of 32 for the block formats: an
// error, never a silent Inf. The codecs (e4m3/e5m2/e2m1/e8m0 ↔ float) are
// exact in both directions for every code; float → fp8 matches PyTorch's
// float8_e4m3fn / float8_e5m2 casts for every float (out of range: NaN for
// e4m3, ±Inf for e5m2). A quantized_matrix holds only codes and scales that
// decode to finite values (adopted bytes are checked: argument_error).
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/core/dtype.hpp"
#include "kforge/core/error.hpp"

namespace kforge {

enum class qformat : std::uint8_t { q8_0, q4_0, mxfp4, fp8_e4m3, fp8_e5m2 };

/// What a format stores: elements per block (1 where a scale covers a row),
/// bytes per block, and whether each row carries an f32 scale.
struct qformat_info {
  std::string_view name;
  index_t block = 32;
  index_t block_bytes = 0;
  bool row_scale = false;
  /// Bits per weight in the packed rows (the per-row scale not counted).
  double bits() const { return 8.0 * static_cast<double>(block_bytes) / static_cast<double>(block); }
};

inline constexpr std::array<qformat, 5> all_qformats{qformat::q8_0, qformat::q4_0, qformat::mxfp4, qformat::fp8_e4m3,
                                                     qformat::fp8_e5m2};

constexpr qformat_info info_of(qformat f) {
  switch (f) {
    case qformat::q8_0: return {"q8_0", 32, 34, false};
    case qformat::q4_0: return {"q4_0", 32, 18, false};
    case qformat::mxfp4: return {"mxfp4", 32, 17, false};
    case qformat::fp8_e4m3: return {"fp8_e4m3", 1, 1, true};
    case qformat::fp8_e5m2: return {"fp8_e5m2", 1, 1, true};
  }
  return {};
}

inline std::string_view to_string(qformat f) { return info_of(f).name; }

/// The format named s ("q8_0", "q4_0", "mxfp4", "fp8_e4m3" or "fp8", "fp8_e5m2"); argument_error otherwise.
inline qformat parse_qformat(std::string_view s) {
  if (s == "fp8") return qformat::fp8_e4m3;
  for (qformat f : all_qformats)
    if (s == info_of(f).name) return f;
  throw argument_error("kforge: unknown weight format '" + std::string(s) +
                       "' (expected q8_0, q4_0, mxfp4, fp8_e4m3 (or fp8) or fp8_e5m2)");
}

// ---- the element codecs --------------------------------------------------------

namespace quant_detail {

/// A float format of E exponent bits (bias), M mantissa bits, with or
/// without infinities (without: all-ones exponent and mantissa is NaN and
/// the rest of that binade is finite, as OCP E4M3).
struct minifloat {
  int e_bits, m_bits, bias;
  bool ieee;  // infinities and NaN in the all-ones exponent (E5M2); else only S.1..1.1..1 is NaN (E4M3)
  std::uint8_t nan_code() const { return static_cast<std::uint8_t>((1 << (e_bits + m_bits)) - 1); }
  std::uint8_t inf_code() const { return static_cast<std::uint8_t>(((1 << e_bits) - 1) << m_bits); }
  /// The largest finite code's magnitude bits.
  std::uint8_t max_code() const { return ieee ? static_cast<std::uint8_t>(inf_code() - 1) : static_cast<std::uint8_t>(nan_code() - 1); }

  float decode(std::uint8_t c) const {
    const bool neg = (c >> (e_bits + m_bits)) & 1;
    const int mag = c & ((1 << (e_bits + m_bits)) - 1);
    const int e = mag >> m_bits, m = mag & ((1 << m_bits) - 1);
    float v;
    if (ieee && e == (1 << e_bits) - 1) v = m == 0 ? INFINITY : NAN;
    else if (!ieee && mag == nan_code()) v = NAN;
    else if (e == 0) v = std::ldexp(static_cast<float>(m), 1 - bias - m_bits);
    else v = std::ldexp(static_cast<float>((1 << m_bits) | m), e - bias - m_bits);
    return neg ? -v : v;
  }

  /// Round to nearest, ties to even; past the largest finite value: NaN
  /// (no infinities) or ±Inf (IEEE-like), as PyTorch's casts.
  std::uint8_t encode(float x) const {
    const std::uint8_t sign = std::signbit(x) ? static_cast<std::uint8_t>(1 << (e_bits + m_bits)) : 0;
    if (std::isnan(x)) return static_cast<std::uint8_t>(sign | nan_code());
    const float a = std::fabs(x);
    const std::uint8_t over = ieee ? inf_code() : nan_code();
    if (std::isinf(a)) return static_cast<std::uint8_t>(sign | over);
    const int min_e = 1 - bias;  // the smallest normal's exponent
    int e = 0;
    (void)std::frexp(a, &e);
    e -= 1;  // a = 1.f * 2^e
    int code;
    if (a == 0) {
      code = 0;
    } else if (e < min_e) {
      // Subnormal: units of 2^(min_e - M); a rounded count of 2^M is the smallest normal.
      code = static_cast<int>(std::nearbyint(std::ldexp(a, m_bits - min_e)));
    } else {
      int r = static_cast<int>(std::nearbyint(std::ldexp(a, m_bits - e)));  // in [2^M, 2^(M+1)]
      if (r == (2 << m_bits)) r >>= 1, ++e;
      const long field = static_cast<long>(e) + bias;
      if (field >= (1L << e_bits)) return static_cast<std::uint8_t>(sign | over);
      code = static_cast<int>((field << m_bits) | (r & ((1 << m_bits) - 1)));
    }
    if (code > max_code()) return static_cast<std::uint8_t>(sign | over);
    return static_cast<std::uint8_t>(sign | code);
  }
};

inline constexpr minifloat e4m3{4, 3, 7, false};
inline constexpr minifloat e5m2{5, 2, 15, true};

/// Every code's value (decode), built once: dequantising by table.
inline const std::array<float, 256>& fp8_values(const minifloat& mf) {
  auto make = [](const minifloat& f) {
    std::array<float, 256> t{};
    for (int c = 0; c < 256; ++c) t[static_cast<std::size_t>(c)] = f.decode(static_cast<std::uint8_t>(c));
    return t;
  };
  static const std::array<float, 256> t4 = make(e4m3), t5 = make(e5m2);
  return mf.ieee ? t5 : t4;
}

/// E2M1 (FP4) values times two, by code: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
inline constexpr std::array<std::int8_t, 16> e2m1_doubled{0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/// x kept as a rounded float: the compiler may not fuse it into the add that
/// follows (an FMA rounds once where the reference quantiser rounds twice).
inline float rounded(float x) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  __asm__("" : "+x"(x));
#elif defined(__GNUC__) && defined(__aarch64__)
  __asm__("" : "+w"(x));
#else
  volatile float v = x;
  x = v;
#endif
  return x;
}

/// An mxfp4 block's scale for the doubled E2M1 table: 2^(e − 128) (half of
/// E8M0's 2^(e − 127)); 0xFF is NaN.
/// Built from the bits (a library ldexp per block costs more than the block).
inline float mxfp4_half_scale(std::uint8_t e) {
  if (e == 0xff) return NAN;
  const std::uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<std::uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline void put_f16(std::uint8_t* p, float v) {
  const std::uint16_t h = Eigen::numext::bit_cast<std::uint16_t>(half(v));
  p[0] = static_cast<std::uint8_t>(h & 0xff);
  p[1] = static_cast<std::uint8_t>(h >> 8);
}
inline float get_f16(const std::uint8_t* p) {
  return static_cast<float>(Eigen::numext::bit_cast<half>(static_cast<std::uint16_t>(p[0] | (p[1] << 8))));
}

}  // namespace quant_detail

/// OCP FP8 E4M3 and E5M2, FP4 E2M1 and the E8M0 scale: code → value (exact).
inline float e4m3_to_float(std::uint8_t c) { return quant_detail::e4m3.decode(c); }
inline float e5m2_to_float(std::uint8_t c) { return quant_detail::e5m2.decode(c); }
inline float e2m1_to_float(std::uint8_t c) { return 0.5f * quant_detail::e2m1_doubled[c & 15]; }
/// 2^(e − 127); 0xFF is NaN.
inline float e8m0_to_float(std::uint8_t e) { return e == 0xff ? NAN : std::ldexp(1.0f, static_cast<int>(e) - 127); }
/// value → code, round to nearest even (out of range: NaN for E4M3, ±Inf for E5M2).
inline std::uint8_t float_to_e4m3(float x) { return quant_detail::e4m3.encode(x); }
inline std::uint8_t float_to_e5m2(float x) { return quant_detail::e5m2.encode(x); }

// ---- the quantized matrix ------------------------------------------------------

/// A weight matrix of N rows of K values (the transpose of op::gemm's B),
/// each row quantized along K in `format`: row n is row_bytes() bytes at
/// data() + n·row_bytes(), and for fp8 scale(n) multiplies it.
class quantized_matrix {
 public:
  quantized_matrix() = default;

  /// Adopts packed rows (a GGUF tensor's data, say): the sizes are checked,
  /// the bytes taken as they are. scales: one per row for fp8, none otherwise.
  quantized_matrix(qformat f, index_t n, index_t k, std::vector<std::uint8_t> bytes, std::vector<float> scales = {})
      : format_(f), n_(n), k_(k), data_(std::move(bytes)), scales_(std::move(scales)) {
    check_shape(f, n, k);
    const auto want = static_cast<std::size_t>(n) * static_cast<std::size_t>(row_bytes());
    if (data_.size() != want)
      throw shape_error("kforge::quantized_matrix: " + std::string(to_string(f)) + " [" + std::to_string(n) + "x" +
                        std::to_string(k) + "] takes " + std::to_string(want) + " bytes, got " + std::to_string(data_.size()));
    const std::size_t want_scales = info_of(f).row_scale ? static_cast<std::size_t>(n) : 0;
    if (scales_.size() != want_scales)
      throw shape_error("kforge::quantized_matrix: " + std::string(to_string(f)) + " takes " + std::to_string(want_scales) +
                        " row scales, got " + std::to_string(scales_.size()));
    for (float s : scales_)
      if (!std::isfinite(s)) throw argument_error("kforge::quantized_matrix: a row scale is not finite");
    for (index_t r = 0; r < n_; ++r) check_finite_row(r);
  }

  qformat format() const { return format_; }
  index_t rows() const { return n_; }  ///< N: output features
  index_t cols() const { return k_; }  ///< K: the reduction axis
  index_t row_bytes() const { return k_ / info_of(format_).block * info_of(format_).block_bytes; }
  const std::uint8_t* data() const { return data_.data(); }
  const std::uint8_t* row(index_t n) const { return data_.data() + static_cast<std::size_t>(n) * static_cast<std::size_t>(row_bytes()); }
  std::size_t bytes() const { return data_.size() + scales_.size() * sizeof(float); }
  float scale(index_t n) const { return scales_.empty() ? 1.0f : scales_[static_cast<std::size_t>(n)]; }
  const std::vector<float>& scales() const { return scales_; }

  /// Row r's codes and scales decode to finite values: argument_error naming
  /// the row otherwise (an E4M3 S.1111.111, an E5M2 exponent of all ones, an
  /// E8M0 0xFF, an f16 scale of Inf or NaN), as quantize refuses non-finite
  /// input — every kernel may then decode without a NaN path.
  void check_finite_row(index_t r) const {
    const std::uint8_t* p = row(r);
    auto bad = [&](const char* what) {
      throw argument_error("kforge::quantized_matrix: row " + std::to_string(r) + " of the " +
                           std::string(to_string(format_)) + " weights holds " + what +
                           " (only finite weights are admitted)");
    };
    const qformat_info in = info_of(format_);
    const index_t nb = k_ / in.block;
    switch (format_) {
      case qformat::q8_0:
      case qformat::q4_0:
        for (index_t b = 0; b < nb; ++b)
          if (((p[b * in.block_bytes + 1] >> 2) & 31) == 31) bad("an f16 scale of Inf or NaN");
        break;
      case qformat::mxfp4:
        for (index_t b = 0; b < nb; ++b)
          if (p[b * in.block_bytes] == 0xff) bad("the E8M0 scale 0xFF (NaN)");
        break;
      case qformat::fp8_e4m3:
        for (index_t j = 0; j < k_; ++j)
          if ((p[j] & 0x7f) == 0x7f) bad("an E4M3 NaN code");
        break;
      case qformat::fp8_e5m2:
        for (index_t j = 0; j < k_; ++j)
          if ((p[j] & 0x7c) == 0x7c) bad("an E5M2 Inf or NaN code");
        break;
    }
  }

  /// Throws shape_error unless N, K > 0 and K is a multiple of the format's block.
  static void check_shape(qformat f, index_t n, index_t k) {
    const index_t b = info_of(f).block;
    if (n <= 0 || k <= 0 || k % b != 0)
      throw shape_error("kforge::quantized_matrix: " + std::string(to_string(f)) + " needs N, K > 0 and K a multiple of " +
                        std::to_string(b) + ", got [" + std::to_string(n) + "x" + std::to_string(k) + "]");
  }

  /// Row n as floats (K values into out): exactly the format's definition.
  void dequantize_row(index_t n, float* out) const { dequantize_range(n, 0, k_, out); }

  /// Elements [k0, k1) of row n as floats into out (k1 − k0 values); k0 and
  /// k1 are multiples of the format's block (k1 may be K).
  void dequantize_range(index_t n, index_t k0, index_t k1, float* out) const {
    const index_t blk = info_of(format_).block;
    if (n < 0 || n >= n_ || k0 < 0 || k1 > k_ || k0 > k1 || k0 % blk != 0 || (k1 % blk != 0 && k1 != k_))
      throw shape_error("kforge::quantized_matrix::dequantize_range: row " + std::to_string(n) + ", [" + std::to_string(k0) +
                        ", " + std::to_string(k1) + ") of a " + std::to_string(n_) + "x" + std::to_string(k_) + " " +
                        std::string(to_string(format_)) + " matrix");
    const std::uint8_t* p = row(n) + k0 / blk * info_of(format_).block_bytes;
    const index_t nb = (k1 - k0) / 32;
    switch (format_) {
      case qformat::q8_0:
        for (index_t b = 0; b < nb; ++b, p += 34) {
          const float d = quant_detail::get_f16(p);
          for (int j = 0; j < 32; ++j) out[b * 32 + j] = static_cast<float>(static_cast<std::int8_t>(p[2 + j])) * d;
        }
        break;
      case qformat::q4_0:
        for (index_t b = 0; b < nb; ++b, p += 18) {
          const float d = quant_detail::get_f16(p);
          for (int j = 0; j < 16; ++j) {
            out[b * 32 + j] = static_cast<float>((p[2 + j] & 15) - 8) * d;
            out[b * 32 + j + 16] = static_cast<float>((p[2 + j] >> 4) - 8) * d;
          }
        }
        break;
      case qformat::mxfp4:
        for (index_t b = 0; b < nb; ++b, p += 17) {
          // E2M1 values are doubled in the table: half the scale (2^(e-128)).
          const float d = quant_detail::mxfp4_half_scale(p[0]);
          for (int j = 0; j < 16; ++j) {
            out[b * 32 + j] = static_cast<float>(quant_detail::e2m1_doubled[p[1 + j] & 15]) * d;
            out[b * 32 + j + 16] = static_cast<float>(quant_detail::e2m1_doubled[p[1 + j] >> 4]) * d;
          }
        }
        break;
      case qformat::fp8_e4m3:
      case qformat::fp8_e5m2: {
        const float s = scale(n);
        const auto& t = quant_detail::fp8_values(format_ == qformat::fp8_e4m3 ? quant_detail::e4m3 : quant_detail::e5m2);
        for (index_t j = 0; j < k1 - k0; ++j) out[j] = t[p[j]] * s;
        break;
      }
    }
  }

  /// The whole matrix as floats, N×K row-major.
  std::vector<float> dequantize() const {
    std::vector<float> out(static_cast<std::size_t>(n_) * static_cast<std::size_t>(k_));
    for (index_t n = 0; n < n_; ++n) dequantize_row(n, out.data() + n * k_);
    return out;
  }

 private:
  qformat format_ = qformat::q8_0;
  index_t n_ = 0, k_ = 0;
  std::vector<std::uint8_t> data_;
  std::vector<float> scales_;
};

namespace quant_detail {

inline void q8_0_block(const float* x, std::uint8_t* y) {
  float amax = 0;
  for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_f16(y, d);
  for (int j = 0; j < 32; ++j) y[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(std::round(x[j] * id)));
}

inline void q4_0_block(const float* x, std::uint8_t* y) {
  float amax = 0, max = 0;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]), max = x[j];
  const float d = max / -8;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  put_f16(y, d);
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(15, static_cast<int>(static_cast<std::int8_t>(rounded(x[j] * id) + 8.5f)));
    const int q1 = std::min(15, static_cast<int>(static_cast<std::int8_t>(rounded(x[j + 16] * id) + 8.5f)));
    y[2 + j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
  }
}

inline void mxfp4_block(const float* x, std::uint8_t* y) {
  float amax = 0;
  for (int j = 0; j < 32; ++j)
    if (amax < std::fabs(x[j])) amax = std::fabs(x[j]);
  // llama.cpp converts a negative exponent (amax < 2^-125) to uint8_t, which
  // C leaves undefined: 0 here (every value of such a block rounds to 0 or
  // the smallest step anyway).
  const float ef = amax > 0 ? std::floor(std::log2(amax)) - 2 + 127 : 0.0f;
  const std::uint8_t e = static_cast<std::uint8_t>(ef < 0 ? 0.0f : ef);
  const float d = mxfp4_half_scale(e);
  auto nearest = [&](float v) {
    int best = 0;
    float err = std::fabs(e2m1_doubled[0] * d - v);
    for (int i = 1; i < 16; ++i) {
      const float ei = std::fabs(e2m1_doubled[static_cast<std::size_t>(i)] * d - v);
      if (ei < err) best = i, err = ei;
    }
    return best;
  };
  y[0] = e;
  for (int j = 0; j < 16; ++j) y[1 + j] = static_cast<std::uint8_t>(nearest(x[j]) | (nearest(x[j + 16]) << 4));
}

}  // namespace quant_detail

/// W (N rows of K floats, row-major, leading dimension ldw >= K; 0: K)
/// quantized row by row along K (the header comment says how).
inline quantized_matrix quantize(qformat f, const float* w, index_t n, index_t k, index_t ldw = 0) {
  quantized_matrix::check_shape(f, n, k);
  if (ldw == 0) ldw = k;
  if (ldw < k) throw shape_error("kforge::quantize: leading dimension " + std::to_string(ldw) + " < K = " + std::to_string(k));
  const qformat_info in = info_of(f);
  const index_t rb = k / in.block * in.block_bytes;
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n) * static_cast<std::size_t>(rb));
  std::vector<float> scales(in.row_scale ? static_cast<std::size_t>(n) : 0);
  for (index_t r = 0; r < n; ++r) {
    const float* x = w + r * ldw;
    float amax = 0;
    for (index_t j = 0; j < k; ++j) {
      if (!std::isfinite(x[j]))
        throw argument_error("kforge::quantize: W[" + std::to_string(r) + "," + std::to_string(j) + "] is not finite");
      amax = std::max(amax, std::fabs(x[j]));
    }
    std::uint8_t* y = bytes.data() + static_cast<std::size_t>(r) * static_cast<std::size_t>(rb);
    if (f == qformat::q8_0 || f == qformat::q4_0) {
      // The block's scale is stored as f16: past 65504 it would be Inf.
      const float limit = f == qformat::q8_0 ? 65504.0f * 127 : 65504.0f * 8;
      if (amax > limit)
        throw argument_error("kforge::quantize: row " + std::to_string(r) + " of W holds |x| = " + std::to_string(amax) +
                             ", past what " + std::string(in.name) + "'s f16 scale can hold (" + std::to_string(limit) + ")");
    }
    switch (f) {
      case qformat::q8_0:
        for (index_t b = 0; b < k / 32; ++b) quant_detail::q8_0_block(x + b * 32, y + b * 34);
        break;
      case qformat::q4_0:
        for (index_t b = 0; b < k / 32; ++b) quant_detail::q4_0_block(x + b * 32, y + b * 18);
        break;
      case qformat::mxfp4:
        for (index_t b = 0; b < k / 32; ++b) quant_detail::mxfp4_block(x + b * 32, y + b * 17);
        break;
      case qformat::fp8_e4m3:
      case qformat::fp8_e5m2: {
        const auto& mf = f == qformat::fp8_e4m3 ? quant_detail::e4m3 : quant_detail::e5m2;
        const float s = amax > 0 ? amax / mf.decode(mf.max_code()) : 1.0f;
        scales[static_cast<std::size_t>(r)] = s;
        for (index_t j = 0; j < k; ++j) y[j] = mf.encode(x[j] / s);
        break;
      }
    }
  }
  return quantized_matrix(f, n, k, std::move(bytes), std::move(scales));
}

}  // namespace kforge
