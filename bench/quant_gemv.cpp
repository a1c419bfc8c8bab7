// bench/quant_gemv.cpp — decode rows against quantized weights on the CPU:
// kforge's cpu::gemm_quantized, the memory's read and copy bandwidth over
// the same packed bytes, and (built with -DKFORGE_PEER_GGML, linked to
// ggml) ggml's CPU mul_mat on the same weights, in one process.
//
//   quant_gemv FORMAT N K [M] [THREADS] [REPS]
//
// Prints one line per measurement: median ms of REPS runs (after 3 warm-up
// runs), GB/s counted in the packed bytes of W, and the ratio to the
// threaded read bandwidth. Build (the dev machine, ggml built as in
// bench/quant_golden.c with -DGGML_NATIVE=ON):
//
//   g++ -std=c++20 -O3 -march=native -I include -I /usr/include/eigen3 bench/quant_gemv.cpp -o quant_gemv
//   g++ -std=c++20 -O3 -march=native -DKFORGE_PEER_GGML -I include -I /usr/include/eigen3 -I ggml/include
//       bench/quant_gemv.cpp ggml/build-native/src/libggml*.so -o quant_gemv_ggml
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kforge/kforge.hpp"

#ifdef KFORGE_PEER_GGML
#include "ggml-cpu.h"
#include "ggml.h"
#endif

using namespace kforge;

namespace {

template <class F>
double median_ms(int reps, F&& f) {
  for (int i = 0; i < 3; ++i) f();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto a = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void line(const char* what, double ms, double bytes, double read_gbs) {
  const double gbs = bytes / ms / 1e6;
  std::printf("%-28s %9.3f ms %8.1f GB/s (packed)  %5.2fx read bandwidth\n", what, ms, gbs, read_gbs > 0 ? gbs / read_gbs : 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: quant_gemv FORMAT N K [M] [THREADS] [REPS]\n");
    return 2;
  }
  try {
    const qformat f = parse_qformat(argv[1]);
    const index_t n = std::atol(argv[2]), k = std::atol(argv[3]);
    const index_t m = argc > 4 ? std::atol(argv[4]) : 1;
    const int threads = argc > 5 ? std::atoi(argv[5]) : cpu::default_num_threads();
    const int reps = argc > 6 ? std::atoi(argv[6]) : 50;
    std::mt19937 rng(1);
    std::normal_distribution<float> nd(0.0f, 0.02f);
    std::vector<float> w(static_cast<std::size_t>(n * k));
    for (auto& v : w) v = nd(rng);
    const quantized_matrix q = quantize(f, w.data(), n, k);
    std::vector<float> x(static_cast<std::size_t>(m * k)), y(static_cast<std::size_t>(m * n));
    for (auto& v : x) v = nd(rng);
    const double bytes = static_cast<double>(q.bytes());
    std::printf("%s N=%ld K=%ld M=%ld threads=%d reps=%d: W %.1f MB packed (%.2f bits a weight)\n", argv[1], static_cast<long>(n),
                static_cast<long>(k), static_cast<long>(m), threads, reps, bytes / 1e6, 8.0 * bytes / static_cast<double>(n * k));

    // The memory: a threaded read (sum of 64-bit words) and copy of as many bytes.
    const std::size_t words = q.bytes() / 8;
    std::vector<std::uint64_t> src(words, 1), dst(words);
    std::vector<std::uint64_t> part(64);
    const double read_ms = median_ms(reps, [&] {
      cpu::detail::parallel_for(threads, static_cast<std::int64_t>(words), 1 << 16, [&](std::int64_t a, std::int64_t b) {
        std::uint64_t s = 0;
        for (std::int64_t i = a; i < b; ++i) s += src[static_cast<std::size_t>(i)];
        part[static_cast<std::size_t>(a * 63 / static_cast<std::int64_t>(words))] += s;
      });
    });
    const double read_gbs = bytes / read_ms / 1e6;
    line("read (threaded)", read_ms, bytes, read_gbs);
    const double copy_ms = median_ms(reps, [&] {
      cpu::detail::parallel_for(threads, static_cast<std::int64_t>(words), 1 << 16, [&](std::int64_t a, std::int64_t b) {
        std::memcpy(dst.data() + a, src.data() + a, static_cast<std::size_t>(b - a) * 8);
      });
    });
    line("copy (threaded, bytes read)", copy_ms, bytes, read_gbs);

    const double ms = median_ms(reps, [&] { cpu::gemm_quantized(q, x.data(), m, k, y.data(), n, threads); });
    line("kforge gemm_quantized", ms, bytes, read_gbs);
    if (m >= 8) {
      // Prefill rows: both paths, and the f32 gemm of X and dequantize(W) (B = Wᵀ, read column-major) beside them.
      const double flop = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
      std::vector<float> y2(y.size());
      const double tiles = median_ms(reps, [&] { cpu::quant_detail::gemm_tiles(q, x.data(), m, k, y2.data(), n, threads); });
      const double packed = median_ms(reps, [&] { cpu::detail::gemm_quantized_packed(q, x.data(), m, k, y2.data(), n, threads); });
      const std::vector<float> dq = q.dequantize();
      const tensor_view<const float> xa(x.data(), {m, k}), wb(dq.data(), {k, n}, {1, k});
      const double f32 = median_ms(reps, [&] { run<policy::threaded<>>(op::gemm<float>{}, xa, wb, tensor_view<float>(y2.data(), {m, n})); });
      std::printf("%-28s tiles %.3f ms %.1f GFLOP/s | packed %.3f ms %.1f GFLOP/s | f32 gemm (dequantized W) %.3f ms %.1f GFLOP/s | packed/f32 rate %.2f\n",
                  "prefill paths", tiles, flop / tiles / 1e6, packed, flop / packed / 1e6, f32, flop / f32 / 1e6, f32 / packed);
    }

#ifdef KFORGE_PEER_GGML
    if (f == qformat::q8_0 || f == qformat::q4_0 || f == qformat::mxfp4) {
      const ggml_type t = f == qformat::q8_0 ? GGML_TYPE_Q8_0 : f == qformat::q4_0 ? GGML_TYPE_Q4_0 : GGML_TYPE_MXFP4;
      ggml_init_params ip{static_cast<std::size_t>(bytes) + static_cast<std::size_t>((m * k + m * n) * 4) + (64 << 20), nullptr, false};
      ggml_context* ctx = ggml_init(ip);
      ggml_tensor* W = ggml_new_tensor_2d(ctx, t, k, n);
      std::memcpy(W->data, q.data(), static_cast<std::size_t>(n * q.row_bytes()));  // the same blocks, GGUF's row layout
      ggml_tensor* X = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, k, m);
      std::memcpy(X->data, x.data(), x.size() * 4);
      ggml_tensor* Y = ggml_mul_mat(ctx, W, X);
      ggml_cgraph* g = ggml_new_graph(ctx);
      ggml_build_forward_expand(g, Y);
      const double gms = median_ms(reps, [&] { ggml_graph_compute_with_ctx(ctx, g, threads); });
      line("ggml mul_mat (peer)", gms, bytes, read_gbs);
      double maxrel = 0;
      for (index_t i = 0; i < m * n; ++i)
        maxrel = std::max(maxrel, static_cast<double>(std::fabs(static_cast<float*>(Y->data)[i] - y[static_cast<std::size_t>(i)])) /
                                      (std::fabs(y[static_cast<std::size_t>(i)]) + 1e-3));
      std::printf("%-28s kforge/ggml time %.2fx; max rel. difference of the outputs %.2g (ggml rounds X to q8)\n", "", ms / gms, maxrel);
      ggml_free(ctx);
    }
#endif
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "quant_gemv: %s\n", e.what());
    return 1;
  }
}
