// tools/cmd_roofline.hpp — the roofline part of `kforge bench`, implemented in
// cmd_roofline.cpp (only where kforge::tune is built, KFORGE_TOOL_HAS_TUNE).
#pragma once

#include <string>
#include <vector>

#include <kforge/validate/problem.hpp>

namespace kforge::tool {

/// One measured case of the bench: the policy and the time its roofline
/// fraction is computed from.
struct roofline_case {
  std::string policy;
  double seconds = 0;
};

/// The roofline of the device one family of policies runs on, and a
/// problem's intensity and attainable bound on it.
struct roofline_report {
  std::string target;       ///< "cpu" or "vulkan"
  bool available = false;
  std::string why;          ///< when not available
  double intensity = 0;     ///< flop/byte: flops() / min_bytes()
  double bound_flops = 0;   ///< min(roof, intensity × bandwidth), flop/s
  double bandwidth = 0;     ///< B/s
  double peak = 0;          ///< f32 flop/s
  double peak_f16 = 0;      ///< f16 flop/s where measured, else 0
  bool f16_roof = false;    ///< the bound uses peak_f16 (an f16 problem on a device with an f16 probe)
  std::string measured_at, device, method;
};

/// The device a policy runs on: "vulkan" for the Vulkan policy, else "cpu".
std::string roofline_target(const std::string& policy);
/// The target's roofline (probed once, cached in the cache dir) for problem p;
/// `available` false (and `why`) when it cannot be had.
roofline_report roofline_for(const problem& p, const std::string& target, bool remeasure);
/// flops(p) / seconds / bound; < 0 when the report is not available or seconds <= 0.
double roofline_fraction(const roofline_report& r, const problem& p, double seconds);
/// Writes one chart with every available device's roof and its cases' points
/// (each case on the roof of roofline_target(policy)); throws cache_error when
/// no roofline is available or the file cannot be written.
void write_roofline_svg(const std::vector<roofline_report>& roofs, const problem& p,
                        const std::vector<roofline_case>& cases, const std::string& file);

}  // namespace kforge::tool
