// kforge/vulkan/quant.hpp — low-precision weights on the device (issue 48):
// quantized_tensor, a core/quant.hpp quantized_matrix in device memory;
// record_gemm_quantized_rows, Y = X · Wᵀ on it (the decode kernel,
// shaders/gemm_quant.hpp); record_dequantize, the prefill path's first pass.
// vulkan/gemm.hpp picks between the two (record_gemm_quantized) and holds
// the device-tensor and host-view calls (gemm_quantized).
//
// Upload repacks each row once, on the host, into the kernel's layout: the
// codes of each 32-element unit in one array, the scales in another (GGUF
// keeps a block's scale beside its codes, 18 or 34 bytes a block, which no
// 16-byte load can fetch aligned). The device holds exactly the packed bytes
// of the format plus padding to 16 bytes: q4_0 4.5 bits a weight, mxfp4
// 4.25, q8_0 8.5, fp8 8 (+ one f32 a row). The repack is a copy of the
// matrix's bytes: the codes in chunks of ≤ 16 MiB of staging memory, the
// scales (1/9 of q4_0's bytes, 1/17 of q8_0's and mxfp4's, 4 bytes a row
// for fp8) gathered on the host and uploaded in one piece. The kernel has no
// NaN path: a quantized_matrix holds only finite codes and scales (core
// refuses the rest when it is built).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "kforge/core/quant.hpp"
#include "kforge/ops/functions.hpp"
#include "kforge/vulkan/launch.hpp"
#include "kforge/vulkan/shaders/gemm_quant.hpp"
#include "kforge/vulkan/tensor.hpp"

namespace kforge::vulkan {

/// A quantized_matrix (N rows × K) in device memory, in the decode kernel's layout.
class quantized_tensor {
 public:
  quantized_tensor() = default;
  quantized_tensor(context& ctx, const quantized_matrix& w)
      : ctx_(&ctx), format_(w.format()), n_(w.rows()), k_(w.cols()), nb_((w.cols() + 31) / 32) {
    const qformat_info in = info_of(format_);
    detail::u32(n_ * nb_ * unit_bytes() / 4, "words of quantized weights");
    codes_ = ctx.device_memory().allocate(code_bytes());
    scales_ = ctx.device_memory().allocate(scale_bytes());
    // Rows per upload chunk: ≤ 16 MiB of staging (at least one row).
    const std::size_t row_dev = static_cast<std::size_t>(nb_) * unit_bytes();
    const index_t chunk = std::max<index_t>(1, static_cast<index_t>((std::size_t{16} << 20) / row_dev));
    const bool per_unit_scale = !in.row_scale;
    std::vector<std::uint8_t> sc(scale_bytes(), 0);
    for (index_t r0 = 0; r0 < n_; r0 += chunk) {
      const index_t rows = std::min(chunk, n_ - r0);
      stream s(ctx);
      auto& st = s.staging(static_cast<std::size_t>(rows) * row_dev);
      auto* dst = static_cast<std::uint8_t*>(st.mapped());
      std::memset(dst, 0, static_cast<std::size_t>(rows) * row_dev);
      for (index_t r = r0; r < r0 + rows; ++r) {
        const std::uint8_t* src = w.row(r);
        std::uint8_t* d = dst + static_cast<std::size_t>(r - r0) * row_dev;
        if (!per_unit_scale) {
          std::memcpy(d, src, static_cast<std::size_t>(k_));
          const float f = w.scale(r);
          const auto& mf = format_ == qformat::fp8_e4m3 ? kforge::quant_detail::e4m3 : kforge::quant_detail::e5m2;
          max_abs_ = std::max(max_abs_, std::fabs(f) * mf.decode(mf.max_code()));
          std::memcpy(sc.data() + 4 * static_cast<std::size_t>(r), &f, 4);
          continue;
        }
        const index_t sb = format_ == qformat::mxfp4 ? 1 : 2;  // scale bytes in a GGUF block
        for (index_t b = 0; b < nb_; ++b, src += in.block_bytes) {
          std::memcpy(d + b * unit_bytes(), src + sb, static_cast<std::size_t>(in.block_bytes - sb));
          std::memcpy(sc.data() + static_cast<std::size_t>((r * nb_ + b) * sb), src, static_cast<std::size_t>(sb));
          // The largest magnitude the unit's codes can reach with its scale.
          const float m = format_ == qformat::mxfp4 ? 12.0f * kforge::quant_detail::mxfp4_half_scale(src[0])
                                                    : (format_ == qformat::q8_0 ? 128.0f : 8.0f) *
                                                          std::fabs(kforge::quant_detail::get_f16(src));
          max_abs_ = std::max(max_abs_, m);
        }
      }
      buffer_ref dst_ref = codes_.ref();
      dst_ref.offset += static_cast<VkDeviceSize>(r0) * row_dev;
      s.copy(st.ref(), dst_ref, static_cast<std::size_t>(rows) * row_dev);
      s.run();
    }
    stream s(ctx);
    auto& st = s.staging(sc.size());
    std::memcpy(st.mapped(), sc.data(), sc.size());
    s.copy(st.ref(), scales_.ref(), sc.size());
    s.run();
  }

  qformat format() const { return format_; }
  index_t rows() const { return n_; }  ///< N
  index_t cols() const { return k_; }  ///< K
  /// 32-element units per row (K padded to 32 for fp8).
  index_t units() const { return nb_; }
  /// Device bytes held (codes and scales).
  std::size_t bytes() const { return code_bytes() + scale_bytes(); }
  buffer_ref codes() const { return sized(codes_, code_bytes()); }
  buffer_ref scales() const { return sized(scales_, scale_bytes()); }
  context& ctx() const { return *ctx_; }
  /// A bound on |value| of every weight (its scale times the format's largest code).
  float max_abs() const { return max_abs_; }
  /// argument_error for a default-constructed tensor (no weights, no context).
  void check_not_empty() const {
    if (!ctx_) throw argument_error("kforge::vulkan::gemm_quantized: the quantized_tensor holds no weights");
  }

 private:
  std::size_t unit_bytes() const {
    return format_ == qformat::q4_0 || format_ == qformat::mxfp4 ? 16 : 32;
  }
  std::size_t code_bytes() const { return static_cast<std::size_t>(n_) * static_cast<std::size_t>(nb_) * unit_bytes(); }
  std::size_t scale_bytes() const {
    const std::size_t units = static_cast<std::size_t>(n_) * static_cast<std::size_t>(nb_);
    switch (format_) {
      case qformat::q8_0:
      case qformat::q4_0: return (2 * units + 3) / 4 * 4;
      case qformat::mxfp4: return (units + 3) / 4 * 4;
      default: return 4 * static_cast<std::size_t>(n_);
    }
  }
  static buffer_ref sized(const buffer_slice& b, std::size_t bytes) {
    buffer_ref r = b.ref();
    r.size = bytes;
    return r;
  }
  context* ctx_ = nullptr;
  qformat format_ = qformat::q8_0;
  index_t n_ = 0, k_ = 0, nb_ = 0;
  float max_abs_ = 0;
  buffer_slice codes_, scales_;
};

/// The decode kernel's knobs: WG invocations, NR rows of W and BM rows of X per workgroup.
struct qgemv_config {
  std::uint32_t wg = 128, rows = 4, bm = 1;
  /// q8_0 and q4_0: decode two codes at a time through f16 pairs (shaders/gemm_quant.hpp, KF_QPAIRS).
  std::uint32_t pairs = 0;
  /// Benchmarks only: a timing probe that leaves part of the work out (1: decoding, 2: loading X); wrong results.
  std::uint32_t probe = 0;
};

/// The default knobs for M rows of X: one band of BM ≥ M rows up to 16 (W read once). From the
/// H100's sweep (docs/bench/2026-12-07-quant/h100_sweep_a6acfe1.txt): two rows of W a workgroup
/// were fastest or within 3 % at every shape and format, 64 invocations when BM > 1.
inline qgemv_config default_qgemv_config(index_t m) {
  if (m <= 1) return {128, 2, 1};
  if (m <= 2) return {64, 2, 2};
  if (m <= 4) return {64, 2, 4};
  if (m <= 8) return {64, 2, 8};
  return {64, 2, 16};
}

/// op::gemm's epilogue applied by the kernel's store: Y = act(alpha·X·Wᵀ + beta·Y + bias).
struct quant_epilogue {
  float alpha = 1.0f, beta = 0.0f;
  fn act = fn::identity;
  float slope = 0.01f;
  const buffer_ref* bias = nullptr;  ///< N elements of dt, or none
};

namespace detail {
/// The push constants of shaders/gemm_quant.hpp's kernels (Push: M, N, K, NB, alpha, beta, slope).
struct quant_push {
  std::uint32_t m, n, k, nb;
  float alpha, beta, slope;
};

/// What every quantized gemm call checks first: weights, their context, M, the activation.
inline void check_quantized_call(const stream& s, const quantized_tensor& w, index_t m, const quant_epilogue& ep) {
  w.check_not_empty();
  if (&s.ctx() != &w.ctx()) throw argument_error("kforge::vulkan::gemm_quantized: the weights live in another context");
  if (m <= 0) throw shape_error("kforge::vulkan::gemm_quantized: M must be positive, got " + std::to_string(m));
  if (!is_activation(ep.act))
    throw argument_error("kforge::vulkan::gemm_quantized: " + std::string(to_string(ep.act)) + " is not an epilogue activation");
}
}  // namespace detail

/// Records the decode kernel: Y [M, N] = X [M, K] · Wᵀ (then the epilogue)
/// with the knobs cfg (default_qgemv_config(M) if none); x, y and the bias
/// dense row-major of storage dtype dt (f32, f16 or bf16). W is read once
/// per band of cfg.bm rows of X. vulkan/gemm.hpp's record_gemm_quantized
/// picks between this and the prefill path.
inline void record_gemm_quantized_rows(stream& s, const quantized_tensor& w, dtype dt, index_t m, buffer_ref x, buffer_ref y,
                                       const qgemv_config* cfg = nullptr, const quant_epilogue& ep = {}) {
  using namespace detail;
  context& ctx = s.ctx();
  check_quantized_call(s, w, m, ep);
  const qgemv_config c = cfg ? *cfg : default_qgemv_config(m);
  check_wg(ctx, c.wg, "gemm_quantized");
  if (c.rows == 0 || c.rows > 64 || c.bm == 0 || c.bm > 16 || c.rows * c.bm > 64 || c.pairs > 1 || c.probe > 2)
    throw argument_error("kforge::vulkan::gemm_quantized: rows per workgroup " + std::to_string(c.rows) + " and X rows " +
                         std::to_string(c.bm) + " must be in [1, 64] and [1, 16] with a product ≤ 64, pairs 0 or 1, probe 0 to 2");
  const std::uint32_t min_sg = std::max<std::uint32_t>(1, ctx.info().min_subgroup_size ? ctx.info().min_subgroup_size
                                                                                      : ctx.info().subgroup_size);
  const std::uint32_t max_sg = (c.wg + min_sg - 1) / min_sg;
  if (4ull * c.rows * c.bm * max_sg + 4ull * c.wg > ctx.info().max_shared_memory)
    throw unsupported_error("kforge::vulkan::gemm_quantized: rows " + std::to_string(c.rows) + " × X rows " +
                            std::to_string(c.bm) + " × " + std::to_string(max_sg) + " subgroups of partial sums exceed the device's " +
                            std::to_string(ctx.info().max_shared_memory) + " bytes of shared memory");
  u32(m * w.cols(), "elements of X");
  u32(m * w.rows(), "elements of Y");
  const quant_push pc{u32(m, "M"), u32(w.rows(), "N"), u32(w.cols(), "K"), u32(w.units(), "units"), ep.alpha, ep.beta, ep.slope};
  const bool vec = w.cols() % 32 == 0;
  auto groups = grid((static_cast<std::uint64_t>(w.rows()) + c.rows - 1) / c.rows);
  groups[2] = static_cast<std::uint32_t>((m + c.bm - 1) / c.bm);
  if (groups[2] > 65535) throw unsupported_error("kforge::vulkan::gemm_quantized: M = " + std::to_string(m) + " needs too many bands");
  const auto& p = ctx.get_pipeline(make_variant("gemm_quant", shaders::gemm_quant(), dt,
                                                {{"KF_QF", std::to_string(static_cast<int>(w.format()))},
                                                 {"KF_VEC", vec ? "1" : "0"},
                                                 {"KF_QPROBE", std::to_string(c.probe)},
                                                 {"KF_QPAIRS", c.pairs ? "1" : "0"},
                                                 {"KF_BIAS", ep.bias ? "1" : "0"},
                                                 {"KF_ACT", std::to_string(static_cast<int>(ep.act))}}),
                                   {5, sizeof pc, {0, 1, 2, 3}}, {c.wg, c.rows, c.bm, max_sg});
  s.dispatch(p, {{w.codes()}, {w.scales()}, {x}, {y, true}, {ep.bias ? *ep.bias : x}}, &pc, sizeof pc, groups,
             "gemm_quantized " + std::string(to_string(w.format())));
}

/// The prefill path's first pass: B [K, N] row-major of storage dtype dt,
/// B[k][n] = W[n][k] rounded once to dt (shaders/gemm_quant.hpp,
/// gemm_quant_dense), into b (K·N elements).
inline void record_dequantize(stream& s, const quantized_tensor& w, dtype dt, buffer_ref b) {
  using namespace detail;
  constexpr std::uint32_t wg = 256;
  check_wg(s.ctx(), wg, "gemm_quantized");
  const quant_push pc{1, u32(w.rows(), "N"), u32(w.cols(), "K"), u32(w.units(), "units"), 1.0f, 0.0f, 0.0f};
  u32(w.rows() * w.cols(), "elements of the dequantized weights");
  const std::uint64_t gx = (static_cast<std::uint64_t>(w.rows()) + wg - 1) / wg;
  if (gx > 65535 || pc.nb > 65535)
    throw unsupported_error("kforge::vulkan::gemm_quantized: " + std::to_string(w.rows()) + " rows of " + std::to_string(w.cols()) +
                            " need a larger grid than the device's 65535 workgroups per axis");
  const auto& p = s.ctx().get_pipeline(make_variant("gemm_quant_dense", shaders::gemm_quant_to_dense(), dt,
                                                    {{"KF_QF", std::to_string(static_cast<int>(w.format()))},
                                                     {"KF_QPROBE", "0"},
                                                     {"KF_QPAIRS", "0"}}),
                                       {3, sizeof pc, {0}}, {wg});
  s.dispatch(p, {{w.codes()}, {w.scales()}, {b, true}}, &pc, sizeof pc, {static_cast<std::uint32_t>(gx), pc.nb, 1},
             "dequantize " + std::string(to_string(w.format())));
}

}  // namespace kforge::vulkan
