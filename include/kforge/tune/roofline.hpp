// kforge/tune/roofline.hpp — the roofline of a device, measured by kforge's
// own probe kernels and cached next to the tuning cache, and an SVG chart.
//
// CPU probes (every hardware thread at once, best of 5 runs):
//   bandwidth  a streaming copy of 2 × 64 MiB per thread (far beyond any L3),
//              counted as bytes read + bytes written, as STREAM's copy does;
//   compute    an FMA loop with 16 independent accumulator vectors per thread
//              (more than latency × FMA ports on current x86), counted as
//              2 flops per lane per FMA.
// The model: attainable(I) = min(peak_flops, I × bandwidth) for arithmetic
// intensity I = flops / bytes, with kforge's own flops() and min_bytes()
// (each operand moved once: the lower bound on traffic).
//
// Stored in <cache dir>/roofline.json as {"format":"kforge-roofline","devices":[...]},
// one object per device identity, written atomically under the cache lock.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "kforge/tune/cache.hpp"

namespace kforge::tune {

struct roofline_peaks {
  std::string device;
  double bandwidth_Bps = 0;  ///< bytes per second
  double flops = 0;          ///< flop per second
  int threads = 0;
  std::string measured_at;
};

namespace detail {

template <class F>
double best_parallel_seconds(int threads, int runs, F&& body) {
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> secs(static_cast<std::size_t>(threads));
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
        body(t);
      });
    while (ready.load() < threads) std::this_thread::yield();
    const auto t0 = std::chrono::steady_clock::now();
    go.store(true, std::memory_order_release);
    for (auto& th : ts) th.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// The FMA probe's vector: the widest the build targets (GCC vector extension;
// a*b+c on it compiles to vfmadd with -march=native because the build enables
// FMA contraction by default in GNU mode; with -ffp-contract=off the probe
// would measure mul+add and under-report the peak by 2×).
#if defined(__AVX512F__)
inline constexpr int probe_lanes = 16;
#elif defined(__AVX__)
inline constexpr int probe_lanes = 8;
#else
inline constexpr int probe_lanes = 4;
#endif
typedef float probe_vec __attribute__((vector_size(probe_lanes * 4)));

inline __attribute__((noinline)) float fma_loop(long iters, float seed) {
  probe_vec acc[16];
  probe_vec m, a;
  for (int l = 0; l < probe_lanes; ++l) m[l] = 0.999999f, a[l] = 1e-7f * seed;
  for (int i = 0; i < 16; ++i)
    for (int l = 0; l < probe_lanes; ++l) acc[i][l] = seed + static_cast<float>(i + l);
  for (long it = 0; it < iters; ++it) {
#pragma GCC unroll 16
    for (int i = 0; i < 16; ++i) acc[i] = acc[i] * m + a;
  }
  float s = 0;
  for (int i = 0; i < 16; ++i)
    for (int l = 0; l < probe_lanes; ++l) s += acc[i][l];
  return s;
}

}  // namespace detail

/// Measures the host CPU's roofline now (about a second).
inline roofline_peaks probe_cpu() {
  roofline_peaks r;
  r.device = cpu_identity().device;
  r.threads = detail::cpu_threads();
  r.measured_at = utc_now();
  const int nt = r.threads;
  const std::size_t bytes = std::size_t{64} << 20;
  std::vector<std::unique_ptr<char[]>> src, dst;
  for (int t = 0; t < nt; ++t) {
    src.emplace_back(new char[bytes]);
    dst.emplace_back(new char[bytes]);
    std::memset(src.back().get(), t + 1, bytes);  // fault the pages in before timing
    std::memset(dst.back().get(), 0, bytes);
  }
  const double copy_s = detail::best_parallel_seconds(nt, 5, [&](int t) {
    std::memcpy(dst[static_cast<std::size_t>(t)].get(), src[static_cast<std::size_t>(t)].get(), bytes);
  });
  r.bandwidth_Bps = 2.0 * static_cast<double>(bytes) * nt / copy_s;
  const long iters = 4'000'000;
  std::atomic<float> sink{0};
  const double fma_s = detail::best_parallel_seconds(nt, 5, [&](int t) {
    sink.store(detail::fma_loop(iters, 1.0f + static_cast<float>(t)), std::memory_order_relaxed);
  });
  r.flops = 2.0 * 16 * detail::probe_lanes * static_cast<double>(iters) * nt / fma_s;
  return r;
}

/// The cached roofline of the host CPU; measured and stored on first use
/// (or when `remeasure`).
inline roofline_peaks cpu_roofline(const std::filesystem::path& dir = default_cache_dir(), bool remeasure = false) {
  const std::filesystem::path file = dir / "roofline.json";
  const std::string device = cpu_identity().device;
  std::vector<roofline_peaks> all;
  bool exists = false;
  const std::string text = detail::read_file(file, exists);
  if (exists) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::array arr;
    if (!parser.parse(simdjson::padded_string(text)).get(doc) && !doc["devices"].get_array().get(arr)) {
      for (auto el : arr) {
        roofline_peaks p;
        std::string_view sv;
        int64_t n = 0;
        if (el["device"].get_string().get(sv) || el["bandwidth_Bps"].get_double().get(p.bandwidth_Bps) ||
            el["flops"].get_double().get(p.flops))
          continue;
        p.device = std::string(sv);
        if (!el["threads"].get_int64().get(n)) p.threads = static_cast<int>(n);
        if (!el["measured_at"].get_string().get(sv)) p.measured_at = std::string(sv);
        all.push_back(p);
      }
    } else {
      std::cerr << "kforge: warning: " << file.string() << " does not parse; measuring the roofline again\n";
    }
  }
  if (!remeasure)
    for (const auto& p : all)
      if (p.device == device && p.bandwidth_Bps > 0 && p.flops > 0) return p;
  const roofline_peaks fresh = probe_cpu();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  detail::file_lock lock(dir / "tuning.lock");
  std::erase_if(all, [&](const roofline_peaks& p) { return p.device == device; });
  all.push_back(fresh);
  json_writer w;
  w.begin_object().field("format", "kforge-roofline").key("devices").begin_array();
  for (const auto& p : all)
    w.begin_object().field("device", p.device).field("bandwidth_Bps", p.bandwidth_Bps).field("flops", p.flops)
        .field("threads", p.threads).field("measured_at", p.measured_at).end_object();
  w.end_array().end_object();
  detail::write_atomically(file, w.str() + "\n");
  return fresh;
}

/// attainable(I) = min(peak, I × bandwidth), in flop/s.
inline double attainable(const roofline_peaks& r, double intensity) {
  return std::min(r.flops, intensity * r.bandwidth_Bps);
}

struct roofline_point {
  std::string label;
  double intensity = 0;  ///< flop per byte
  double achieved = 0;   ///< flop per second
};

/// A log-log roofline chart (SVG 1.1, no scripts) with the measured points.
inline std::string roofline_svg(const roofline_peaks& r, const std::vector<roofline_point>& pts,
                                const std::string& title) {
  const double W = 760, H = 480, L = 80, R = 30, T = 50, B = 60;
  double imin = 1.0 / 16, imax = 256, fmax = r.flops * 2, fmin = r.flops / 1e4;
  for (const auto& p : pts) {
    if (p.intensity > 0) imin = std::min(imin, p.intensity / 2), imax = std::max(imax, p.intensity * 2);
    if (p.achieved > 0) fmin = std::min(fmin, p.achieved / 2);
  }
  const double lx0 = std::floor(std::log10(imin)), lx1 = std::ceil(std::log10(imax));
  const double ly0 = std::floor(std::log10(fmin)), ly1 = std::ceil(std::log10(fmax));
  auto X = [&](double i) { return L + (std::log10(i) - lx0) / (lx1 - lx0) * (W - L - R); };
  auto Y = [&](double f) { return H - B - (std::log10(f) - ly0) / (ly1 - ly0) * (H - T - B); };
  auto num = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return std::string(b);
  };
  auto esc = [](const std::string& s) {
    std::string o;
    for (char c : s) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : std::string(1, c);
    return o;
  };
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + num(W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + esc(title) + "</text>\n";
  for (double e = lx0; e <= lx1; ++e) {
    const double x = X(std::pow(10, e));
    s += "<line x1=\"" + num(x) + "\" y1=\"" + num(T) + "\" x2=\"" + num(x) + "\" y2=\"" + num(H - B) +
         "\" stroke=\"#ddd\"/><text x=\"" + num(x) + "\" y=\"" + num(H - B + 16) +
         "\" text-anchor=\"middle\">1e" + std::to_string(static_cast<int>(e)) + "</text>\n";
  }
  for (double e = ly0; e <= ly1; ++e) {
    const double y = Y(std::pow(10, e));
    s += "<line x1=\"" + num(L) + "\" y1=\"" + num(y) + "\" x2=\"" + num(W - R) + "\" y2=\"" + num(y) +
         "\" stroke=\"#ddd\"/><text x=\"" + num(L - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">1e" +
         std::to_string(static_cast<int>(e)) + "</text>\n";
  }
  s += "<text x=\"" + num((L + W - R) / 2) + "\" y=\"" + num(H - 18) +
       "\" text-anchor=\"middle\">arithmetic intensity (flop/byte)</text>\n";
  s += "<text transform=\"translate(18," + num((T + H - B) / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">flop/s</text>\n";
  // The roof: the bandwidth slope up to the ridge point, then the flat peak.
  const double ridge = r.flops / r.bandwidth_Bps;
  const double x0 = std::pow(10, lx0), x1 = std::pow(10, lx1);
  const double y_start = std::max(attainable(r, x0), std::pow(10, ly0));
  const double x_start = y_start / r.bandwidth_Bps;
  s += "<polyline fill=\"none\" stroke=\"#1f4e9c\" stroke-width=\"2\" points=\"" + num(X(std::max(x0, x_start))) + "," +
       num(Y(y_start)) + " " + num(X(ridge)) + "," + num(Y(r.flops)) + " " + num(X(x1)) + "," + num(Y(r.flops)) +
       "\"/>\n";
  s += "<text x=\"" + num(X(x1) - 4) + "\" y=\"" + num(Y(r.flops) - 6) + "\" text-anchor=\"end\" fill=\"#1f4e9c\">peak " +
       num(r.flops / 1e9) + " GFLOP/s, " + num(r.bandwidth_Bps / 1e9) + " GB/s</text>\n";
  for (const auto& p : pts) {
    if (p.intensity <= 0 || p.achieved <= 0) continue;
    s += "<circle cx=\"" + num(X(p.intensity)) + "\" cy=\"" + num(Y(p.achieved)) +
         "\" r=\"5\" fill=\"#c0392b\"/><text x=\"" + num(X(p.intensity) + 8) + "\" y=\"" + num(Y(p.achieved) + 4) +
         "\">" + esc(p.label) + "</text>\n";
  }
  return s + "</svg>\n";
}

}  // namespace kforge::tune
