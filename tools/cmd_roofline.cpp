// tools/cmd_roofline.cpp — the roofline columns of `kforge bench`: each
// device's measured bandwidth and peak (kforge's own probes, cached in the
// cache directory: include/kforge/tune/roofline.hpp for the CPU,
// include/kforge/tune/vulkan_roofline.hpp for the Vulkan device), each case's
// arithmetic intensity, attainable bound and achieved fraction, and
// --roofline FILE.svg with both devices' roofs on one chart.
#include "cmd_roofline.hpp"

#include <fstream>
#include <string>
#include <vector>

#include <kforge/tune/roofline.hpp>
#if defined(KFORGE_HAS_VULKAN)
#include <kforge/tune/vulkan_roofline.hpp>
#endif

namespace kforge::tool {

std::string roofline_target(const std::string& policy) { return policy == "vulkan" ? "vulkan" : "cpu"; }

roofline_report roofline_for(const problem& p, const std::string& target, bool remeasure) {
  roofline_report r;
  r.target = target;
  try {
    tune::roofline_peaks peaks;
    if (target == "vulkan") {
#if defined(KFORGE_HAS_VULKAN)
      peaks = tune::vulkan_roofline(vulkan::default_context(), tune::default_cache_dir(), remeasure);
#else
      throw unsupported_error("kforge was built without Vulkan (kforge::vulkan)");
#endif
    } else {
      peaks = tune::cpu_roofline(tune::default_cache_dir(), remeasure);
    }
    r.available = true;
    r.intensity = flops(p) / min_bytes(p);
    r.f16_roof = p.type == dtype::f16 && peaks.flops_f16 > 0;
    tune::roofline_peaks roof = peaks;  // the roof of the problem's dtype
    roof.flops = r.f16_roof ? peaks.flops_f16 : peaks.flops;
    r.bound_flops = tune::attainable(roof, r.intensity);
    r.bandwidth = peaks.bandwidth_Bps;
    r.peak = peaks.flops;
    r.peak_f16 = peaks.flops_f16;
    r.measured_at = peaks.measured_at;
    r.device = peaks.device;
    r.method = peaks.method;
  } catch (const std::exception& e) {
    r.why = e.what();
  }
  return r;
}

double roofline_fraction(const roofline_report& r, const problem& p, double seconds) {
  if (!r.available || seconds <= 0 || r.bound_flops <= 0) return -1;
  return flops(p) / seconds / r.bound_flops;
}

void write_roofline_svg(const std::vector<roofline_report>& roofs, const problem& p,
                        const std::vector<roofline_case>& cases, const std::string& file) {
  std::vector<tune::roofline_series> series;
  std::string why;
  for (const auto& r : roofs) {
    if (!r.available) {
      why += (why.empty() ? "" : "; ") + r.target + ": " + r.why;
      continue;
    }
    tune::roofline_series s;
    s.peaks.device = r.device;
    s.peaks.bandwidth_Bps = r.bandwidth;
    s.peaks.flops = r.peak;
    s.peaks.flops_f16 = r.peak_f16;
    s.label = r.target == "vulkan" ? "Vulkan" : "CPU";
    for (const auto& c : cases)
      if (roofline_target(c.policy) == r.target && c.seconds > 0)
        s.points.push_back({c.policy, r.intensity, flops(p) / c.seconds});
    series.push_back(std::move(s));
  }
  if (series.empty()) throw cache_error("kforge: no roofline for this device: " + why);
  std::ofstream f(file);
  f << tune::roofline_svg(series, describe(p));
  if (!f) throw cache_error("kforge: cannot write " + file);
}

}  // namespace kforge::tool
