// tests/transformer_ops_checks.hpp — the checks of the transformer-block ops
// that the validation suite cannot make (it runs the catalog's problems on
// every backend): the typed errors of bad input, kv_append's in-place
// property on a cache with a recognisable value in every element, attention's
// kv_len, embedding's strided ids and its ids out of range, topk's order
// (ties, NaN, signed zeros) written out by hand, bf16 moved bit for bit by
// embedding and topk. One body per property, run
// for every policy by tests/transformer_ops.cpp (CPU) and
// tests/vulkan_transformer_ops.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <kforge/kforge.hpp>

namespace transformer_checks {

using namespace kforge;

/// Message of the exception f throws as E ("" when it throws none).
template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

/// silu, gelu and gelu_tanh of known values, and every typed error.
template <class P>
void check_gated() {
  // rows [gate | up]: y = act(gate) * up
  std::vector<float> x{1.0f, -2.0f, 2.0f, 0.5f, 0.0f, 3.0f, -1.0f, 4.0f};  // [2, 4]: F = 2
  std::vector<float> y(4, -7.0f);
  const tensor_view<const float> xv(x.data(), shape{2, 4});
  const tensor_view<float> yv(y.data(), shape{2, 2});
  const double s1 = 1.0 / (1.0 + std::exp(-1.0)), sm2 = -2.0 / (1.0 + std::exp(2.0));
  run<P>(op::gated<float>{fn::silu}, xv, yv);
  CHECK(y[0] == doctest::Approx(s1 * 2.0).epsilon(1e-5));
  CHECK(y[1] == doctest::Approx(sm2 * 0.5).epsilon(1e-5));
  CHECK(y[2] == 0.0f);
  CHECK(y[3] == doctest::Approx(3.0 / (1.0 + std::exp(-3.0)) * 4.0).epsilon(1e-5));
  run<P>(op::gated<float>{fn::gelu_erf}, xv, yv);
  CHECK(y[0] == doctest::Approx(0.5 * (1.0 + std::erf(1.0 / std::sqrt(2.0))) * 2.0).epsilon(1e-5));
  run<P>(op::gated<float>{fn::gelu_tanh}, xv, yv);
  CHECK(y[0] == doctest::Approx(0.5 * (1.0 + std::tanh(0.7978845608028654 * 1.044715)) * 2.0).epsilon(1e-5));

  // F a multiple of 4 (the Vulkan kernel's vector path), rows not filling a workgroup's vectors.
  const index_t rows = 3, f = 12;
  std::vector<float> xw(static_cast<std::size_t>(rows * 2 * f)), yw(static_cast<std::size_t>(rows * f), -7.0f);
  for (std::size_t i = 0; i < xw.size(); ++i) xw[i] = static_cast<float>(static_cast<int>(i * 37 % 23) - 11) / 4.0f;
  run<P>(op::gated<float>{fn::silu}, tensor_view<const float>(xw.data(), shape{rows, 2 * f}),
         tensor_view<float>(yw.data(), shape{rows, f}));
  for (index_t r = 0; r < rows; ++r)
    for (index_t j = 0; j < f; ++j) {
      const double a = xw[static_cast<std::size_t>(r * 2 * f + j)], b = xw[static_cast<std::size_t>(r * 2 * f + f + j)];
      CHECK(yw[static_cast<std::size_t>(r * f + j)] == doctest::Approx(a / (1.0 + std::exp(-a)) * b).epsilon(1e-5).scale(1e-6));
    }

  const tensor_view<const float> odd(x.data(), shape{1, 7});
  const std::string m1 = message_of<shape_error>([&] { run<P>(op::gated<float>{}, odd, tensor_view<float>(y.data(), shape{1, 3})); });
  CHECK(m1.find("kforge::gated") != std::string::npos);
  CHECK(m1.find("[1x7]") != std::string::npos);  // what came
  CHECK(m1.find("2F") != std::string::npos);      // what was expected
  CHECK_THROWS_AS(run<P>(op::gated<float>{}, xv, tensor_view<float>(y.data(), shape{2, 4})), shape_error);
  CHECK_THROWS_AS(run<P>(op::gated<float>{}, xv, tensor_view<float>(y.data(), shape{4, 2})), shape_error);
  const std::string m2 = message_of<argument_error>([&] { run<P>(op::gated<float>{fn::relu}, xv, yv); });
  CHECK(m2.find("kforge::gated: activation") != std::string::npos);
  CHECK(m2.find("relu") != std::string::npos);
}

/// kv_append writes rows [pos, pos + T) of every batch and nothing else.
template <class P, class T>
void check_kv_append_in_place() {
  const index_t b = 2, t = 3, h = 2, d = 5, lmax = 9, pos = 4;
  std::vector<T> x(static_cast<std::size_t>(b * t * h * d)), cache(static_cast<std::size_t>(b * lmax * h * d));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<T>(-1.0f - static_cast<float>(i));
  for (std::size_t i = 0; i < cache.size(); ++i) cache[i] = static_cast<T>(static_cast<float>(i));  // exact in f16/bf16 < 256
  run<P>(op::kv_append<T>{pos}, tensor_view<const T>(x.data(), shape{b, t, h, d}),
         tensor_view<T>(cache.data(), shape{b, lmax, h, d}));
  int changed_outside = 0, wrong_inside = 0;
  for (index_t bi = 0; bi < b; ++bi)
    for (index_t l = 0; l < lmax; ++l)
      for (index_t e = 0; e < h * d; ++e) {
        const index_t i = (bi * lmax + l) * h * d + e;
        const float got = static_cast<float>(cache[static_cast<std::size_t>(i)]);
        if (l >= pos && l < pos + t)
          wrong_inside += got != static_cast<float>(x[static_cast<std::size_t>((bi * t + l - pos) * h * d + e)]);
        else
          changed_outside += got != static_cast<float>(i);
      }
  CHECK(wrong_inside == 0);
  CHECK(changed_outside == 0);
}

template <class P>
void check_kv_append_errors() {
  std::vector<float> x(2 * 3 * 2 * 4), cache(2 * 8 * 2 * 4);
  const tensor_view<const float> xv(x.data(), shape{2, 3, 2, 4});
  const tensor_view<float> cv(cache.data(), shape{2, 8, 2, 4});
  run<P>(op::kv_append<float>{5}, xv, cv);  // ends exactly at Lmax
  const std::string m = message_of<argument_error>([&] { run<P>(op::kv_append<float>{6}, xv, cv); });
  CHECK(m.find("kforge::kv_append: pos 6 + T 3") != std::string::npos);
  CHECK(m.find("Lmax 8") != std::string::npos);
  CHECK_THROWS_AS(run<P>(op::kv_append<float>{-1}, xv, cv), argument_error);
  CHECK_THROWS_AS(run<P>(op::kv_append<float>{0}, xv, tensor_view<float>(cache.data(), shape{2, 8, 4, 2})), shape_error);
  CHECK_THROWS_AS(run<P>(op::kv_append<float>{0}, xv, tensor_view<float>(cache.data(), shape{1, 16, 2, 4})), shape_error);
  CHECK_THROWS_AS(run<P>(op::kv_append<float>{0}, tensor_view<const float>(x.data(), shape{6, 2, 4}), cv), shape_error);
}

/// Known rows gathered (ids of rank 2, and strided), every dtype.
template <class P, class T>
void check_embedding_values() {
  const index_t v = 5, d = 3;
  std::vector<T> table(static_cast<std::size_t>(v * d));
  for (index_t i = 0; i < v * d; ++i) table[static_cast<std::size_t>(i)] = static_cast<T>(static_cast<float>(i) - 4.5f);
  const tensor_view<const T> tv(table.data(), shape{v, d});
  const std::vector<std::int32_t> ids{4, 0, 2, 1, 1, 4};
  std::vector<T> out(6 * d, static_cast<T>(-99.0f));
  run<P>(op::embedding<T>{}, tv, make_view(ids, shape{2, 3}), tensor_view<T>(out.data(), shape{2, 3, d}));
  int bad = 0;
  for (std::size_t i = 0; i < ids.size(); ++i)
    for (index_t j = 0; j < d; ++j)
      bad += static_cast<float>(out[i * d + static_cast<std::size_t>(j)]) !=
             static_cast<float>(table[static_cast<std::size_t>(ids[i] * d + j)]);
  CHECK(bad == 0);
  // Every other id of a strided view, into a strided output (rows 2 apart).
  std::vector<T> wide(2 * 3 * d, static_cast<T>(7.0f));
  run<P>(op::embedding<T>{}, tv, tensor_view<const std::int32_t>(ids.data(), shape{3}, shape{2}),
         tensor_view<T>(wide.data(), shape{3, d}, shape{2 * d, 1}));
  bad = 0;
  for (std::size_t r = 0; r < 3; ++r)
    for (index_t j = 0; j < d; ++j) {
      bad += static_cast<float>(wide[2 * r * d + static_cast<std::size_t>(j)]) !=
             static_cast<float>(table[static_cast<std::size_t>(ids[2 * r] * d + j)]);
      bad += static_cast<float>(wide[(2 * r + 1) * d + static_cast<std::size_t>(j)]) != 7.0f;  // untouched
    }
  CHECK(bad == 0);
}

/// Ids out of range and wrong shapes: typed errors, and nothing written.
template <class P>
void check_embedding_errors() {
  std::vector<float> table(5 * 3, 1.0f), out(4 * 3, -1.0f);
  const tensor_view<const float> tv(table.data(), shape{5, 3});
  const tensor_view<float> ov(out.data(), shape{4, 3});
  const std::vector<std::int32_t> high{0, 1, 4, 5}, low{0, -1, 2, 3};
  const std::string m = message_of<argument_error>([&] { run<P>(op::embedding<float>{}, tv, make_view(high, shape{4}), ov); });
  CHECK(m.find("kforge::embedding: id 5 at position 3") != std::string::npos);
  CHECK(m.find("V = 5") != std::string::npos);
  const std::string n = message_of<argument_error>([&] { run<P>(op::embedding<float>{}, tv, make_view(low, shape{4}), ov); });
  CHECK(n.find("id -1 at position 1") != std::string::npos);
  CHECK(std::count(out.begin(), out.end(), -1.0f) == 12);  // checked before anything was written
  CHECK_THROWS_AS(run<P>(op::embedding<float>{}, tensor_view<const float>(table.data(), shape{15}), make_view(high, shape{4}), ov),
                  shape_error);
  CHECK_THROWS_AS(run<P>(op::embedding<float>{}, tv, make_view(high, shape{4}), tensor_view<float>(out.data(), shape{3, 4})),
                  shape_error);
  CHECK_THROWS_AS(run<P>(op::embedding<float>{}, tv, make_view(high, shape{2, 2}), ov), shape_error);
}

/// topk's order on one row with every kind of value: NaNs first (by position),
/// +Inf, equal values by position (-0 and +0 equal), values copied exactly.
template <class P, class T>
void check_topk_order() {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> row{1.0f, 3.0f, nan, 3.0f, -inf, inf, nan, -0.0f, 0.0f, 2.0f};
  const std::vector<std::int32_t> order{2, 6, 5, 1, 3, 9, 0, 7, 8, 4};
  std::vector<T> x(row.size());
  for (std::size_t i = 0; i < row.size(); ++i) x[i] = static_cast<T>(row[i]);
  for (index_t k : {index_t{10}, index_t{3}, index_t{1}}) {
    std::vector<T> v(static_cast<std::size_t>(k), static_cast<T>(-7.0f));
    std::vector<std::int32_t> i(static_cast<std::size_t>(k), -7);
    run<P>(op::topk<T>{k}, tensor_view<const T>(x.data(), shape{1, 10}), tensor_view<T>(v.data(), shape{1, k}),
           tensor_view<std::int32_t>(i.data(), shape{1, k}));
    CAPTURE(k);
    CHECK(i == std::vector<std::int32_t>(order.begin(), order.begin() + k));
    for (index_t j = 0; j < k; ++j) {
      const float got = static_cast<float>(v[static_cast<std::size_t>(j)]), want = row[static_cast<std::size_t>(order[static_cast<std::size_t>(j)])];
      CHECK(((std::isnan(want) && std::isnan(got)) || (got == want && std::signbit(got) == std::signbit(want))));
    }
  }
}

/// argmax on rows of ties, NaNs, -Inf and signed zeros; a long row whose
/// largest repeats across the CPU kernel's 512-element chunks; strided rows
/// of a rank-3 x.
template <class P, class T>
void check_argmax_rows() {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<float> rows{1, 5, 5, 2, -inf, -inf, -inf, -inf, 0, nan, 7, nan, -0.0f, 0.0f, -1, -2};
  std::vector<T> x(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) x[r] = static_cast<T>(rows[r]);
  std::vector<T> v(4);
  std::vector<std::int32_t> i(4, -7);
  run<P>(op::topk<T>{1}, tensor_view<const T>(x.data(), shape{4, 4}), tensor_view<T>(v.data(), shape{4, 1}),
         tensor_view<std::int32_t>(i.data(), shape{4, 1}));
  CHECK(i == std::vector<std::int32_t>{1, 0, 1, 0});
  CHECK(std::signbit(static_cast<float>(v[3])));  // -0 at position 0 ties +0 and wins: its sign is kept

  const index_t n = 2000;
  std::vector<T> big(static_cast<std::size_t>(2 * n));
  for (index_t j = 0; j < 2 * n; ++j) big[static_cast<std::size_t>(j)] = static_cast<T>(static_cast<float>(j % 97) - 50.0f);
  big[1500] = big[1700] = static_cast<T>(99.0f);    // row 0: 99 at 1500 and 1700
  big[n + 4] = big[n + 1998] = static_cast<T>(nan);  // row 1: NaN at 4 and 1998

  std::vector<T> v2(2);
  std::vector<std::int32_t> i2(2, -7);
  run<P>(op::topk<T>{1}, tensor_view<const T>(big.data(), shape{2, n}), tensor_view<T>(v2.data(), shape{2, 1}),
         tensor_view<std::int32_t>(i2.data(), shape{2, 1}));
  CHECK(i2 == std::vector<std::int32_t>{1500, 4});
  // Every other element of both rows: [2, 1, 1000] with strides [2000, 2000, 2].
  run<P>(op::topk<T>{2}, tensor_view<const T>(big.data(), shape{2, 1, n / 2}, shape{n, n, 2}),
         tensor_view<T>(std::vector<T>(4).data(), shape{2, 1, 2}), tensor_view<std::int32_t>(i.data(), shape{2, 1, 2}));
  CHECK(i == std::vector<std::int32_t>{750, 850, 2, 999});  // the 99s at 1500 and 1700, the NaNs at 4 and 1998, halved
}

/// k out of [1, N] and wrong output shapes: typed errors.
template <class P>
void check_topk_errors() {
  std::vector<float> x(3 * 7, 1.0f), v(3 * 8);
  std::vector<std::int32_t> i(3 * 8);
  const tensor_view<const float> xv(x.data(), shape{3, 7});
  auto values = [&](index_t k) { return tensor_view<float>(v.data(), shape{3, k}); };
  auto indices = [&](index_t k) { return tensor_view<std::int32_t>(i.data(), shape{3, k}); };
  const std::string m0 = message_of<argument_error>([&] { run<P>(op::topk<float>{0}, xv, values(1), indices(1)); });
  CHECK(m0.find("kforge::topk: k must be in [1, N] for rows of N = 7, got k = 0") != std::string::npos);
  const std::string m8 = message_of<argument_error>([&] { run<P>(op::topk<float>{8}, xv, values(8), indices(8)); });
  CHECK(m8.find("got k = 8") != std::string::npos);
  CHECK_THROWS_AS(run<P>(op::topk<float>{-2}, xv, values(2), indices(2)), argument_error);
  const std::string ms = message_of<shape_error>([&] { run<P>(op::topk<float>{2}, xv, values(3), indices(2)); });
  CHECK(ms.find("kforge::topk: values has shape [3x3], expected [3x2]") != std::string::npos);
  CHECK_THROWS_AS(run<P>(op::topk<float>{2}, xv, values(2), indices(3)), shape_error);
  CHECK_THROWS_AS(run<P>(op::topk<float>{2}, xv, values(2), tensor_view<std::int32_t>(i.data(), shape{6})), shape_error);
  CHECK_THROWS_AS(run<P>(op::topk<float>{1}, tensor_view<const float>(x.data(), shape{}), tensor_view<float>(v.data(), shape{1}),
                         tensor_view<std::int32_t>(i.data(), shape{1})),
                  shape_error);
}

/// The bits of a bfloat16, and the bfloat16 of some bits.
inline std::uint16_t bf16_bits(bfloat16 v) { return Eigen::numext::bit_cast<std::uint16_t>(v); }
inline bfloat16 bf16_of(std::uint16_t b) { return Eigen::numext::bit_cast<bfloat16>(b); }

/// Elements of `got` whose bits differ from `want`'s; without `nan_payloads`
/// a NaN matches any NaN.
inline std::size_t bf16_bit_mismatches(const std::vector<bfloat16>& got, const std::vector<bfloat16>& want, bool nan_payloads) {
  std::size_t bad = got.size() == want.size() ? 0 : 1;
  for (std::size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    const std::uint16_t g = bf16_bits(got[i]), w = bf16_bits(want[i]);
    const bool nan = (w & 0x7fffu) > 0x7f80u;
    bad += !(g == w || (!nan_payloads && nan && (g & 0x7fffu) > 0x7f80u));
  }
  return bad;
}

/// An embedding table [512, 128] holding every bf16 bit pattern once (NaNs
/// of every payload, ±Inf, ±0, denormals).
inline std::vector<bfloat16> every_bf16() {
  std::vector<bfloat16> t(65536);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = bf16_of(static_cast<std::uint16_t>(i));
  return t;
}

/// [rows, n] bf16 of few distinct values (many ties), with +Inf, -0 and +0 in
/// every row and, in row 0, two NaNs: a quiet one with a payload and a
/// negative signalling one.
inline std::vector<bfloat16> bf16_tied_rows(index_t rows, index_t n, std::uint64_t seed) {
  std::vector<bfloat16> x(static_cast<std::size_t>(rows * n));
  std::mt19937_64 r(seed);
  for (auto& e : x) e = bf16_of(static_cast<std::uint16_t>(0x3f80u + (r() % 8) * 0x20u + ((r() & 1) << 15)));
  for (index_t i = 0; i < rows; ++i) {
    x[static_cast<std::size_t>(i * n + n / 3)] = bf16_of(0x7f80);
    x[static_cast<std::size_t>(i * n + n / 2)] = bf16_of(0x8000);
    x[static_cast<std::size_t>(i * n + n / 2 + 1)] = bf16_of(0x0000);
  }
  x[17] = bf16_of(0x7fc1);
  x[static_cast<std::size_t>(n - 2)] = bf16_of(0xffa0);
  return x;
}

/// bf16 through embedding and topk is moved, never converted: the rows
/// gathered from a table of every bf16 bit pattern are its rows' bits, and
/// topk's values (of rows with ties, NaNs, Inf and signed zeros; a few rows
/// of 5000 and one of 20001, which the Vulkan kernel splits across
/// workgroups) are policy::eigen's bits, its indices eigen's. Without
/// `nan_payloads` a NaN need only stay a NaN (data that passes through f32:
/// Vulkan without 16-bit storage).
template <class P>
void check_bf16_moved(bool nan_payloads = true) {
  const index_t v = 512, d = 128;
  const std::vector<bfloat16> table = every_bf16();
  std::vector<std::int32_t> ids(300);
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 263 + 7) % 257 * 2 % v);  // repeats
  std::vector<bfloat16> out(ids.size() * d), want(out.size());
  run<P>(op::embedding<bfloat16>{}, tensor_view<const bfloat16>(table.data(), shape{v, d}), make_view(ids, shape{3, 100}),
         make_view(out, shape{3, 100, d}));
  for (std::size_t i = 0; i < ids.size(); ++i)
    std::copy_n(table.begin() + ids[i] * d, d, want.begin() + static_cast<std::ptrdiff_t>(i) * d);
  CHECK(bf16_bit_mismatches(out, want, nan_payloads) == 0);

  for (const auto& [rows, n] : {std::pair<index_t, index_t>{3, 5000}, {1, 20001}})
    for (const index_t k : {index_t{1}, index_t{40}}) {
      CAPTURE(n);
      CAPTURE(k);
      const std::vector<bfloat16> x = bf16_tied_rows(rows, n, 5);
      const tensor_view<const bfloat16> xv(x.data(), shape{rows, n});
      std::vector<bfloat16> got(static_cast<std::size_t>(rows * k)), ref(got.size());
      std::vector<std::int32_t> gi(got.size(), -1), ri(got.size(), -2);
      run<P>(op::topk<bfloat16>{k}, xv, make_view(got, shape{rows, k}), make_view(gi, shape{rows, k}));
      run<policy::eigen>(op::topk<bfloat16>{k}, xv, make_view(ref, shape{rows, k}), make_view(ri, shape{rows, k}));
      CHECK(bf16_bits(ref[0]) == 0x7fc1);  // row 0 starts with its NaNs, in position order
      CHECK(gi == ri);
      CHECK(bf16_bit_mismatches(got, ref, nan_payloads) == 0);
    }
}

/// attention's kv_len: keys [0, kv_len) of a longer cache whose other rows
/// hold NaN and Inf give what attention over exactly those keys gives; 0
/// keys give zeros; a kv_len outside [0, L] (or below -1) is an
/// argument_error naming it and L. Two sequences, so that a cache row stride
/// taken as kv_len's would read the wrong rows.
template <class P>
void check_attention_kv_len() {
  const index_t b = 2, s = 3, h = 4, hkv = 2, d = 8, lmax = 9, kv = 5;
  std::vector<float> q(static_cast<std::size_t>(b * s * h * d)), kc(static_cast<std::size_t>(b * lmax * hkv * d)),
      vc(kc.size()), ks(static_cast<std::size_t>(b * kv * hkv * d)), vs(ks.size());
  for (std::size_t i = 0; i < q.size(); ++i) q[i] = std::sin(0.37f * static_cast<float>(i));
  for (index_t bi = 0; bi < b; ++bi)
    for (index_t l = 0; l < lmax; ++l)
      for (index_t e = 0; e < hkv * d; ++e) {
        const std::size_t i = static_cast<std::size_t>((bi * lmax + l) * hkv * d + e);
        const float kval = std::cos(0.11f * static_cast<float>(i)), vval = std::sin(0.07f * static_cast<float>(i) + 1.0f);
        kc[i] = l < kv ? kval : std::numeric_limits<float>::quiet_NaN();
        vc[i] = l < kv ? vval : std::numeric_limits<float>::infinity();
        if (l < kv) {
          ks[static_cast<std::size_t>((bi * kv + l) * hkv * d + e)] = kval;
          vs[static_cast<std::size_t>((bi * kv + l) * hkv * d + e)] = vval;
        }
      }
  std::vector<float> o(q.size(), -7.0f), ref(q.size(), -9.0f);
  const shape qs{b, s, h, d}, cs{b, lmax, hkv, d};
  for (bool causal : {false, true}) {
    op::attention<float> a{.causal = causal, .layout = attention_layout::bshd};
    run<policy::eigen>(a, tensor_view<const float>(q.data(), qs), tensor_view<const float>(ks.data(), shape{b, kv, hkv, d}),
                       tensor_view<const float>(vs.data(), shape{b, kv, hkv, d}), tensor_view<float>(ref.data(), qs));
    a.kv_len = kv;
    run<P>(a, tensor_view<const float>(q.data(), qs), tensor_view<const float>(kc.data(), cs),
           tensor_view<const float>(vc.data(), cs), tensor_view<float>(o.data(), qs));
    double err = 0;
    for (std::size_t i = 0; i < o.size(); ++i) err = std::isfinite(o[i]) ? std::max(err, std::fabs(double(o[i]) - ref[i])) : 1e30;
    CHECK_MESSAGE(err < 1e-5, "causal " << causal << ": max error " << err);
  }
  op::attention<float> none{.layout = attention_layout::bshd, .kv_len = 0};
  run<P>(none, tensor_view<const float>(q.data(), qs), tensor_view<const float>(kc.data(), cs),
         tensor_view<const float>(vc.data(), cs), tensor_view<float>(o.data(), qs));
  CHECK(std::all_of(o.begin(), o.end(), [](float x) { return x == 0.0f; }));
  for (index_t bad : {index_t{-2}, lmax + 1}) {
    op::attention<float> a{.layout = attention_layout::bshd, .kv_len = bad};
    const std::string m = message_of<argument_error>([&] {
      run<P>(a, tensor_view<const float>(q.data(), qs), tensor_view<const float>(kc.data(), cs),
             tensor_view<const float>(vc.data(), cs), tensor_view<float>(o.data(), qs));
    });
    CHECK(m.find("kforge::attention: kv_len " + std::to_string(bad)) != std::string::npos);
    CHECK(m.find("L = 9") != std::string::npos);
  }
}

}  // namespace transformer_checks
