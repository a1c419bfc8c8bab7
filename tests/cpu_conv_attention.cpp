// tests/cpu_conv_attention.cpp — policy::blocked and policy::threaded conv2d
// (stride, padding, dilation, groups, bias + activation, 1×1 fast path,
// strided tensors) and attention (causal or not, S != L, strided Q/K/V/O,
// sequences longer than one key block, grouped KV heads, [B,S,H,D], masked
// keys excluded) against the Eigen reference.
#include "cpu_check.hpp"

namespace {

using namespace cpu_test;
using kforge::bfloat16;
using kforge::half;
namespace policy = kforge::policy;
namespace epilogue = kforge::epilogue;
namespace op = kforge::op;

struct conv_case {
  shape x, w;
  int sh, sw, ph, pw, dh, dw, groups;
  layout lx, ly;
};

template <class P, class T, class E>
void check_conv(const conv_case& cc) {
  op::conv2d<T, E> o;
  o.stride_h = cc.sh, o.stride_w = cc.sw, o.pad_h = cc.ph, o.pad_w = cc.pw;
  o.dilation_h = cc.dh, o.dilation_w = cc.dw, o.groups = cc.groups;
  o.epilogue.slope = 0.1f;
  const kforge::conv2d_dims d =
      kforge::make_conv2d_dims(cc.sh, cc.sw, cc.ph, cc.pw, cc.dh, cc.dw, cc.groups, cc.x, cc.w);
  const shape ys{d.n, d.k, d.p, d.q};
  auto x = make<T>(cc.x, cc.lx);
  auto w = make<T>(cc.w, layout::row);
  auto bias = make<T>(shape{d.k}, layout::row);
  auto y = make<T>(ys, cc.ly);
  auto r = make<T>(ys, layout::row);
  fill(x.v, 51);
  fill(w.v, 52);
  fill(bias.v, 53);
  if constexpr (E::has_bias) {
    kforge::run<P>(o, x.cv(), w.cv(), bias.cv(), y.v);
    kforge::run<policy::eigen>(o, x.cv(), w.cv(), bias.cv(), r.v);
  } else {
    kforge::run<P>(o, x.cv(), w.cv(), y.v);
    kforge::run<policy::eigen>(o, x.cv(), w.cv(), r.v);
  }
  // Error scale: the same convolution of |x|, |w| plus |bias|.
  auto ax = make<T>(cc.x, layout::row), aw = make<T>(cc.w, layout::row), ab = make<T>(shape{d.k}, layout::row);
  auto sv = make<T>(ys, layout::row);
  {
    const auto xv = values(x.v), wv = values(w.v), bv = values(bias.v);
    for (std::size_t i = 0; i < xv.size(); ++i) ax.buf[i] = static_cast<T>(std::fabs(xv[i]));
    for (std::size_t i = 0; i < wv.size(); ++i) aw.buf[i] = static_cast<T>(std::fabs(wv[i]));
    for (std::size_t i = 0; i < bv.size(); ++i) ab.buf[i] = static_cast<T>(E::has_bias ? std::fabs(bv[i]) : 0.0f);
    op::conv2d<T, epilogue::bias> so;
    so.stride_h = cc.sh, so.stride_w = cc.sw, so.pad_h = cc.ph, so.pad_w = cc.pw;
    so.dilation_h = cc.dh, so.dilation_w = cc.dw, so.groups = cc.groups;
    kforge::run<policy::eigen>(so, ax.cv(), aw.cv(), ab.cv(), sv.v);
  }
  std::vector<float> scale = values(sv.v);
  for (float& s : scale) s += 1e-30f;
  compare(values(y.v), values(r.v), scale, kforge::conv2d_tolerance(kforge::dtype_of<T>(), cc.w[1] * cc.w[2] * cc.w[3]),
          kforge::dtype_of<T>(),
          std::string(P::name()) + " conv2d<" + std::string(kforge::to_string(kforge::dtype_of<T>())) + ", " +
              epilogue::epilogue_name<E>() + "> x " + cc.x.str() + " w " + cc.w.str() + " stride " +
              std::to_string(cc.sh) + "x" + std::to_string(cc.sw) + " pad " + std::to_string(cc.ph) + "x" +
              std::to_string(cc.pw) + " dil " + std::to_string(cc.dh) + "x" + std::to_string(cc.dw) + " groups " +
              std::to_string(cc.groups));
}

const conv_case conv_cases[] = {
    {shape{1, 3, 7, 7}, shape{4, 3, 3, 3}, 1, 1, 0, 0, 1, 1, 1, layout::row, layout::row},
    {shape{2, 4, 17, 17}, shape{6, 2, 3, 3}, 2, 2, 1, 1, 1, 1, 2, layout::strided, layout::row},
    {shape{1, 3, 17, 13}, shape{5, 3, 3, 2}, 1, 1, 0, 2, 2, 1, 1, layout::row, layout::strided},
    {shape{1, 6, 7, 7}, shape{6, 1, 3, 3}, 1, 1, 1, 1, 1, 1, 6, layout::col, layout::row},
    {shape{2, 33, 9, 11}, shape{40, 33, 1, 1}, 1, 1, 0, 0, 1, 1, 1, layout::row, layout::row},    // 1×1 path
    {shape{1, 16, 20, 20}, shape{17, 16, 1, 1}, 2, 2, 0, 0, 1, 1, 1, layout::row, layout::col},   // strided 1×1
    {shape{1, 3, 33, 33}, shape{20, 3, 7, 7}, 2, 2, 3, 3, 1, 1, 1, layout::row, layout::row},     // conv1-like
    {shape{1, 40, 12, 12}, shape{70, 40, 3, 3}, 1, 1, 1, 1, 1, 1, 1, layout::row, layout::row},   // K > KC·… blocks
};

template <class P, class T>
void all_conv() {
  for (const auto& cc : conv_cases) check_conv<P, T, epilogue::none>(cc);
  check_conv<P, T, epilogue::bias_relu>(conv_cases[2]);
  check_conv<P, T, epilogue::bias_gelu>(conv_cases[3]);
  check_conv<P, T, epilogue::bias_silu>(conv_cases[7]);
}

struct attn_shape {
  index_t b, h, hkv, s, l, d, dv;
  bool causal = false, bshd = false;
  shape dims(index_t heads, index_t rows, index_t dim) const {
    return bshd ? shape{b, rows, heads, dim} : shape{b, heads, rows, dim};
  }
  std::string str() const {
    return "B" + std::to_string(b) + " H" + std::to_string(h) + " Hkv" + std::to_string(hkv) + " S" + std::to_string(s) +
           " L" + std::to_string(l) + " D" + std::to_string(d) + " Dv" + std::to_string(dv) + (causal ? " causal" : "") +
           (bshd ? " bshd" : "");
  }
};

/// Runs attention on P and on Eigen (V row `inf_key` of every KV head gets
/// an Inf in column 0 when >= 0) and compares; returns P's output.
template <class P, class T>
std::vector<float> check_attention(const attn_shape& a, layout lay, index_t inf_key = -1) {
  auto q = make<T>(a.dims(a.h, a.s, a.d), lay);
  auto k = make<T>(a.dims(a.hkv, a.l, a.d), layout::row);
  auto v = make<T>(a.dims(a.hkv, a.l, a.dv), lay);
  auto o = make<T>(a.dims(a.h, a.s, a.dv), lay == layout::row ? layout::strided : layout::row);
  auto r = make<T>(a.dims(a.h, a.s, a.dv), layout::row);
  fill(q.v, 61, -2.0f, 2.0f);
  fill(k.v, 62, -2.0f, 2.0f);
  fill(v.v, 63);
  if (inf_key >= 0)
    for (index_t b = 0; b < a.b; ++b)
      for (index_t hk = 0; hk < a.hkv; ++hk) {
        const index_t at = b * v.v.stride(0) + hk * v.v.stride(a.bshd ? 2 : 1) + inf_key * v.v.stride(a.bshd ? 1 : 2);
        v.v.data[at] = static_cast<T>(std::numeric_limits<float>::infinity());
      }
  op::attention<T> at;
  at.causal = a.causal;
  at.layout = a.bshd ? kforge::attention_layout::bshd : kforge::attention_layout::bhsd;
  kforge::run<P>(at, q.cv(), k.cv(), v.cv(), o.v);
  kforge::run<policy::eigen>(at, q.cv(), k.cv(), v.cv(), r.v);
  float vmax = 0;
  for (float x : values(v.v))
    if (std::isfinite(x)) vmax = std::max(vmax, std::fabs(x));
  const std::vector<float> scale(static_cast<std::size_t>(o.v.numel()), vmax);
  compare(values(o.v), values(r.v), scale, kforge::attention_tolerance(kforge::dtype_of<T>(), a.d, a.l),
          kforge::dtype_of<T>(),
          std::string(P::name()) + " attention<" + std::string(kforge::to_string(kforge::dtype_of<T>())) + "> " + a.str() +
              " " + name(lay) + (inf_key >= 0 ? " Inf in V row " + std::to_string(inf_key) : ""));
  return values(o.v);
}

template <class P, class T>
void all_attention() {
  for (bool causal : {false, true}) {
    check_attention<P, T>({1, 1, 1, 1, 3, 3, 3, causal}, layout::row);
    check_attention<P, T>({2, 3, 3, 33, 17, 7, 7, causal}, layout::strided);
    check_attention<P, T>({1, 2, 2, 7, 100, 17, 33, causal}, layout::col);
    check_attention<P, T>({1, 2, 2, 100, 33, 33, 17, causal}, layout::row);
    check_attention<P, T>({1, 2, 2, 257, 300, 64, 64, causal}, layout::row);  // several query and key blocks
    // grouped KV heads (4 over 2, 6 over 1) in both layouts
    check_attention<P, T>({2, 4, 2, 40, 70, 16, 16, causal}, layout::row);
    check_attention<P, T>({1, 6, 1, 70, 40, 32, 8, causal, true}, layout::strided);
    check_attention<P, T>({2, 4, 2, 33, 65, 24, 24, causal, true}, layout::row);
  }
  check_attention<P, T>({1, 1, 1, 5, 0, 4, 3}, layout::row);  // no keys: zeros
}

/// Causal: an Inf in V row 50 reaches only the rows that see key 50.
template <class P, class T>
void masked_inf_attention() {
  for (const bool bshd : {false, true}) {
    const attn_shape a{1, 4, 2, 90, 90, 16, 16, true, bshd};
    const auto o = check_attention<P, T>(a, layout::row, 50);
    for (index_t hh = 0; hh < a.h; ++hh)
      for (index_t i = 0; i < a.s; ++i)
        for (index_t e = 0; e < a.dv; ++e) {
          const index_t at = bshd ? (i * a.h + hh) * a.dv + e : (hh * a.s + i) * a.dv + e;  // B = 1, row-major
          CHECK(std::isfinite(o[static_cast<std::size_t>(at)]) == (i < 50 || e != 0));
        }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("cpu conv2d matches the Eigen reference", T, float, half, bfloat16) {
  all_conv<policy::blocked<>, T>();
  all_conv<policy::threaded<>, T>();
}

TEST_CASE_TEMPLATE("cpu attention matches the Eigen reference", T, float, half, bfloat16) {
  all_attention<policy::blocked<>, T>();
  all_attention<policy::threaded<>, T>();
}

TEST_CASE_TEMPLATE("cpu attention: an Inf in a masked V row does not reach the output", T, float, half, bfloat16) {
  masked_inf_attention<policy::blocked<>, T>();
  masked_inf_attention<policy::threaded<>, T>();
}
