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
// Vulkan devices have their own probes (kforge/tune/vulkan_roofline.hpp,
// only with kforge::vulkan) and share the cache below.
//
// Stored in <cache dir>/roofline.json as {"format":"kforge-roofline","devices":[...]},
// one object per device identity (device and driver), written atomically under
// the cache lock (cached_roofline); a file that does not parse is set aside as
// roofline.json.corrupt-<unix time> and reported, never fatal. One chart can
// hold several devices' roofs (roofline_svg over roofline_series).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "kforge/tune/cache.hpp"

namespace kforge::tune {

struct roofline_peaks {
  std::string device;
  double bandwidth_Bps = 0;  ///< bytes per second
  double flops = 0;          ///< flop per second (f32)
  int threads = 0;           ///< CPU: threads the probes ran on
  std::string measured_at;
  std::string driver;        ///< Vulkan: the driver of the identity (empty for the CPU)
  double flops_f16 = 0;      ///< f16 vector FMA peak where measured (Vulkan with shaderFloat16), else 0
  std::string method;        ///< how the numbers were measured, in words
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
  r.method = "copy 2 x 64 MiB per thread (memcpy), FMA loop of 16 accumulators x " +
             std::to_string(detail::probe_lanes) + " lanes per thread; " + std::to_string(nt) +
             " threads, steady clock, best of 5";
  return r;
}

namespace detail {
/// The entries of roofline.json; `corrupt` when the text does not parse as
/// one (an entry without its numbers is skipped, not fatal).
inline std::vector<roofline_peaks> parse_rooflines(const std::string& text, bool& corrupt) {
  std::vector<roofline_peaks> all;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array arr;
  std::string_view format;
  corrupt = parser.parse(simdjson::padded_string(text)).get(doc) || doc["format"].get_string().get(format) ||
            format != "kforge-roofline" || doc["devices"].get_array().get(arr);
  if (corrupt) return all;
  for (auto el : arr) {
    roofline_peaks p;
    std::string_view sv;
    int64_t n = 0;
    if (el["device"].get_string().get(sv) || el["bandwidth_Bps"].get_double().get(p.bandwidth_Bps) ||
        el["flops"].get_double().get(p.flops))
      continue;
    p.device = std::string(sv);
    if (!el["driver"].get_string().get(sv)) p.driver = std::string(sv);
    if (!el["threads"].get_int64().get(n)) p.threads = static_cast<int>(n);
    if (!el["measured_at"].get_string().get(sv)) p.measured_at = std::string(sv);
    if (el["flops_f16"].get_double().get(p.flops_f16)) p.flops_f16 = 0;
    if (!el["method"].get_string().get(sv)) p.method = std::string(sv);
    all.push_back(p);
  }
  return all;
}

inline std::string rooflines_json(const std::vector<roofline_peaks>& all) {
  json_writer w;
  w.begin_object().field("format", "kforge-roofline").key("devices").begin_array();
  for (const auto& p : all) {
    w.begin_object().field("device", p.device).field("driver", p.driver).field("bandwidth_Bps", p.bandwidth_Bps);
    w.field("flops", p.flops).field("flops_f16", p.flops_f16).field("threads", p.threads);
    w.field("measured_at", p.measured_at).field("method", p.method).end_object();
  }
  w.end_array().end_object();
  return w.str() + "\n";
}

inline void warn_on_stderr(const std::string& w) { std::cerr << "kforge: warning: " << w << "\n"; }
}  // namespace detail

/// The roofline of device `id` from <dir>/roofline.json, or measured now by
/// `probe` and stored there (also when `remeasure`). Entries of other devices
/// are kept. A file that does not parse is reported through `warn`, renamed
/// to roofline.json.corrupt-<unix time> and replaced by a fresh one (its
/// other devices are measured again when they are next asked for).
///
/// A miss is handled under the cache lock (<dir>/tuning.lock): the file is
/// read again there (another process may just have measured this device) and
/// the probe runs while the lock is held, so that two processes never probe
/// one device at once and measure each other.
inline roofline_peaks cached_roofline(const std::filesystem::path& dir, const device_identity& id, bool remeasure,
                                      const std::function<roofline_peaks()>& probe,
                                      const std::function<void(const std::string&)>& warn = detail::warn_on_stderr) {
  const std::filesystem::path file = dir / "roofline.json";
  auto find = [&](const std::vector<roofline_peaks>& all) -> const roofline_peaks* {
    for (const auto& p : all)
      if (p.device == id.device && p.driver == id.driver && p.bandwidth_Bps > 0 && p.flops > 0) return &p;
    return nullptr;
  };
  bool exists = false, corrupt = false;
  if (!remeasure) {
    const std::string text = detail::read_file(file, exists);
    if (exists)
      if (const auto all = detail::parse_rooflines(text, corrupt); !corrupt)
        if (const roofline_peaks* p = find(all)) return *p;
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw cache_error("kforge::tune: cannot create cache directory " + dir.string() + ": " + ec.message());
  detail::file_lock lock(dir / "tuning.lock");
  const std::string text = detail::read_file(file, exists);
  std::vector<roofline_peaks> all = exists ? detail::parse_rooflines(text, corrupt) : std::vector<roofline_peaks>{};
  if (exists && corrupt) {
    std::string why;
    const std::filesystem::path aside = detail::set_aside(file, why);
    if (warn)
      warn("roofline cache " + file.string() + " is corrupt or truncated; " +
           (aside.empty() ? "could not move it aside (" + why + ")" : "moved to " + aside.string()) +
           "; measuring the roofline again");
  }
  if (!remeasure)
    if (const roofline_peaks* p = find(all)) return *p;
  roofline_peaks fresh = probe();
  fresh.device = id.device;
  fresh.driver = id.driver;
  if (fresh.measured_at.empty()) fresh.measured_at = utc_now();
  std::erase_if(all, [&](const roofline_peaks& p) { return p.device == id.device && p.driver == id.driver; });
  all.push_back(fresh);
  detail::write_atomically(file, detail::rooflines_json(all));
  return fresh;
}

/// The cached roofline of the host CPU; measured and stored on first use
/// (or when `remeasure`). Its entry's driver is empty: the CPU probes do not
/// depend on the compiler or kernel release the way tuned kernels do.
inline roofline_peaks cpu_roofline(const std::filesystem::path& dir = default_cache_dir(), bool remeasure = false,
                                   const std::function<void(const std::string&)>& warn = detail::warn_on_stderr) {
  return cached_roofline(dir, {cpu_identity().device, ""}, remeasure, probe_cpu, warn);
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

/// One device on a chart: its roof and the points measured on it.
struct roofline_series {
  roofline_peaks peaks;
  std::string label;  ///< e.g. "CPU", "Vulkan"; shown in the legend
  std::vector<roofline_point> points;
};

/// A log-log roofline chart (SVG 1.1, no scripts): one roof per device (its
/// bandwidth slope up to the ridge point, then its f32 peak; a dashed line at
/// its f16 peak where measured), the measured points in the device's colour,
/// and a legend naming each device and its numbers.
inline std::string roofline_svg(const std::vector<roofline_series>& series, const std::string& title) {
  static constexpr const char* colours[] = {"#1f4e9c", "#c0392b", "#1e8449", "#7d3c98"};
  const double W = 760, H = 480, L = 80, R = 30, T = 50, B = 60;
  double imin = 1.0 / 16, imax = 256, fmax = 0, fmin = 1e300;
  for (const auto& sr : series) {
    const double top = std::max(sr.peaks.flops, sr.peaks.flops_f16);
    fmax = std::max(fmax, top * 2);
    fmin = std::min(fmin, sr.peaks.flops / 1e4);
    if (sr.peaks.bandwidth_Bps > 0) imax = std::max(imax, top / sr.peaks.bandwidth_Bps * 4);
    for (const auto& p : sr.points) {
      if (p.intensity > 0) imin = std::min(imin, p.intensity / 2), imax = std::max(imax, p.intensity * 2);
      if (p.achieved > 0) fmin = std::min(fmin, p.achieved / 2), fmax = std::max(fmax, p.achieved * 2);
    }
  }
  if (!(fmax > 0) || fmin >= fmax) fmax = 1e12, fmin = 1e8;
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
    for (char c : s) o += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : std::string(1, c);
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
  const double x0 = std::pow(10, lx0), x1 = std::pow(10, lx1), floor_f = std::pow(10, ly0);
  for (std::size_t k = 0; k < series.size(); ++k) {
    const roofline_peaks& r = series[k].peaks;
    const std::string c = colours[k % std::size(colours)];
    const std::string cls = "roof-" + std::to_string(k);
    if (r.bandwidth_Bps <= 0 || r.flops <= 0) continue;
    // The roof: the bandwidth slope up to the ridge point, then the flat peak.
    auto roof = [&](double peak, const std::string& dash) {
      const double ridge = peak / r.bandwidth_Bps;
      const double y_start = std::max(std::min(peak, x0 * r.bandwidth_Bps), floor_f);
      const double x_start = std::max(x0, y_start / r.bandwidth_Bps);
      s += "<polyline class=\"" + cls + "\" fill=\"none\" stroke=\"" + c + "\" stroke-width=\"2\"" + dash +
           " points=\"" + num(X(x_start)) + "," + num(Y(y_start)) + " " + num(X(ridge)) + "," + num(Y(peak)) + " " +
           num(X(x1)) + "," + num(Y(peak)) + "\"/>\n";
    };
    roof(r.flops, "");
    if (r.flops_f16 > 0) {
      roof(r.flops_f16, " stroke-dasharray=\"6,4\"");
      s += "<text x=\"" + num(X(x1) - 4) + "\" y=\"" + num(Y(r.flops_f16) - 6) + "\" text-anchor=\"end\" fill=\"" + c +
           "\">f16</text>\n";
    }
    // Legend, top left: one line per device.
    const double ly = T + 16 + 16 * static_cast<double>(k);
    s += "<rect x=\"" + num(L + 8) + "\" y=\"" + num(ly - 9) + "\" width=\"10\" height=\"10\" fill=\"" + c +
         "\"/><text x=\"" + num(L + 24) + "\" y=\"" + num(ly) + "\" fill=\"" + c + "\">" +
         esc((series[k].label.empty() ? "" : series[k].label + ": ") + r.device + ": peak " + num(r.flops / 1e9) +
             " GFLOP/s" + (r.flops_f16 > 0 ? " (f16 " + num(r.flops_f16 / 1e9) + ")" : "") + ", " +
             num(r.bandwidth_Bps / 1e9) + " GB/s") +
         "</text>\n";
    for (const auto& p : series[k].points) {
      if (p.intensity <= 0 || p.achieved <= 0) continue;
      s += "<circle class=\"point " + cls + "\" cx=\"" + num(X(p.intensity)) + "\" cy=\"" + num(Y(p.achieved)) +
           "\" r=\"5\" fill=\"" + c + "\"/><text x=\"" + num(X(p.intensity) + 8) + "\" y=\"" +
           num(Y(p.achieved) + 4) + "\">" + esc(p.label) + "</text>\n";
    }
  }
  return s + "</svg>\n";
}

/// The chart of one device.
inline std::string roofline_svg(const roofline_peaks& r, const std::vector<roofline_point>& pts,
                                const std::string& title) {
  return roofline_svg(std::vector<roofline_series>{{r, "", pts}}, title);
}

}  // namespace kforge::tune
