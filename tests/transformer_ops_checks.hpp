// tests/transformer_ops_checks.hpp — the checks of the transformer-block ops
// that the validation suite cannot make (it runs the catalog's problems on
// every backend): the typed errors of bad input, and kv_append's in-place
// property on a cache with a recognisable value in every element. One body
// per property, run for every policy by tests/transformer_ops.cpp (CPU) and
// tests/vulkan_transformer_ops.cpp.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
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
