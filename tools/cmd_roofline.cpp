// tools/cmd_roofline.cpp — the roofline columns of `kforge bench`: the
// device's measured bandwidth and peak (kforge's own probes, cached in the
// cache directory: include/kforge/tune/roofline.hpp), each case's arithmetic
// intensity, attainable bound and achieved fraction, and --roofline FILE.svg.
#include <fstream>
#include <string>
#include <vector>

#include <kforge/tune/roofline.hpp>
#include <kforge/validate/problem.hpp>

namespace kforge::tool {

struct roofline_case {
  std::string policy;
  double seconds = 0;
};

/// Intensity, bound and the fraction each policy reaches, as JSON fields and
/// text; empty text when `policy` runs on a device without a probe.
struct roofline_report {
  bool available = false;
  std::string why;          // when not available
  double intensity = 0;     // flop/byte
  double bound_flops = 0;   // flop/s
  double bandwidth = 0, peak = 0;
  std::string measured_at, device;
};

roofline_report roofline_for(const problem& p, bool remeasure) {
  roofline_report r;
  try {
    const tune::roofline_peaks peaks = tune::cpu_roofline(tune::default_cache_dir(), remeasure);
    r.available = true;
    r.intensity = flops(p) / min_bytes(p);
    r.bound_flops = tune::attainable(peaks, r.intensity);
    r.bandwidth = peaks.bandwidth_Bps;
    r.peak = peaks.flops;
    r.measured_at = peaks.measured_at;
    r.device = peaks.device;
  } catch (const std::exception& e) {
    r.why = e.what();
  }
  return r;
}

/// Achieved fraction of the bound for a CPU policy; < 0 for policies that
/// run elsewhere (Vulkan has no probe yet).
double roofline_fraction(const roofline_report& r, const problem& p, const std::string& policy, double seconds) {
  if (!r.available || policy == "vulkan" || seconds <= 0) return -1;
  return flops(p) / seconds / r.bound_flops;
}

/// Writes the chart; throws cache_error when the file cannot be written.
void write_roofline_svg(const roofline_report& r, const problem& p, const std::vector<roofline_case>& cases,
                        const std::string& file) {
  if (!r.available) throw cache_error("kforge: no roofline for this device: " + r.why);
  tune::roofline_peaks peaks{r.device, r.bandwidth, r.peak, 0, r.measured_at};
  std::vector<tune::roofline_point> pts;
  for (const auto& c : cases)
    if (c.policy != "vulkan" && c.seconds > 0) pts.push_back({c.policy, r.intensity, flops(p) / c.seconds});
  std::ofstream f(file);
  f << tune::roofline_svg(peaks, pts, describe(p) + " on " + r.device);
  if (!f) throw cache_error("kforge: cannot write " + file);
}

}  // namespace kforge::tool
