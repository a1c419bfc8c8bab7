// kforge/vulkan/shaders/reduce.hpp — sum/mean/max/min over one axis.
//
// Tiling: the input is dense [outer, n, inner]; one workgroup per output
// element (o, i) walks j = t, t+WG, … < n (bounds by the loop), keeps a local
// partial, then combines with subgroup operations and one shared slot per
// subgroup (kf_wg_*). max/min track NaN with a separate flag, since
// subgroupMax/Min are undefined on NaN; sums let NaN/Inf propagate through
// addition as the reference does.
#pragma once

#include "kforge/ops/reduce_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* reduce = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint outer, n, inner; } pc;
void main() {
  uint id = kf_group_id();
  if (id >= pc.outer * pc.inner) return;   // uniform per workgroup
  uint o = id / pc.inner, i = id % pc.inner;
  uint base = o * pc.n * pc.inner + i;
#if KF_RED <= 1
  float s = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < pc.n; j += gl_WorkGroupSize.x) s += kf_ld(x_[base + j * pc.inner]);
  s = kf_wg_sum(s);
  if (KF_RED == 1) s /= float(pc.n);
#else
  bool nan = false;
  float s = KF_RED == 2 ? -KF_INF : KF_INF;
  for (uint j = gl_LocalInvocationID.x; j < pc.n; j += gl_WorkGroupSize.x) {
    float v = kf_ld(x_[base + j * pc.inner]);
    if (isnan(v)) nan = true;
    else s = KF_RED == 2 ? max(s, v) : min(s, v);
  }
  s = KF_RED == 2 ? kf_wg_max(s) : kf_wg_min(s);
  if (kf_wg_any(nan)) s = KF_NAN;
#endif
  if (gl_LocalInvocationID.x == 0) y_[id] = kf_st(s);
}
)glsl";

template <>
struct contract_form<reduce_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    return {reduce, {{"KF_RED", std::to_string(static_cast<int>(*parse_reduce_fn(p.op.substr(7))))}}, k.wg};
  }
  static std::vector<edit> edits(const problem&) {
    auto is = [](std::string op) { return [op](const problem& p) { return p.op == op; }; };
    return {
        {"off_by_one", "loop_bound", "the loop over the axis runs to j <= n", "j < pc.n; j += gl_WorkGroupSize.x)",
         "j <= pc.n; j += gl_WorkGroupSize.x)"},
        {"wrong_init", "sum_init", "the sum starts at 1", "  float s = 0.0;\n  for", "  float s = 1.0;\n  for",
         [](const problem& p) { return p.op == "reduce_sum" || p.op == "reduce_mean"; }},
        {"wrong_init", "extreme_init", "max starts at +inf (min at -inf)", "float s = KF_RED == 2 ? -KF_INF : KF_INF;",
         "float s = KF_RED == 2 ? KF_INF : -KF_INF;", [](const problem& p) { return p.op == "reduce_max" || p.op == "reduce_min"; }},
        {"dropped_scale", "mean_divide", "the mean is not divided by n", "  if (KF_RED == 1) s /= float(pc.n);\n", "",
         is("reduce_mean")},
        // Issue 46's classes (each named by the suite's case that catches it).
        {"negative_rows", "max_from_zero", "the max (min) starts at 0 instead of -inf (+inf)",
         "float s = KF_RED == 2 ? -KF_INF : KF_INF;", "float s = 0.0;",
         [](const problem& p) { return p.op == "reduce_max" || p.op == "reduce_min"; }},
        {"signed_specials", "max_from_lowest", "the max starts at -FLT_MAX (the min at FLT_MAX), so a row of -Inf gives -FLT_MAX",
         "float s = KF_RED == 2 ? -KF_INF : KF_INF;", "float s = KF_RED == 2 ? -3.4028234664e38 : 3.4028234664e38;",
         [](const problem& p) { return p.op == "reduce_max" || p.op == "reduce_min"; }},
        {"missing_barrier", "wg_sum_barrier", "no barrier between writing and reading the per-subgroup partials",
         k_barrier_sum, k_barrier_sum_mut, [](const problem& p) { return p.op == "reduce_sum" || p.op == "reduce_mean"; }},
        {"missing_barrier", "wg_max_barrier", "no barrier between writing and reading the per-subgroup partials",
         k_barrier_max, k_barrier_max_mut, [](const problem& p) { return p.op == "reduce_max" || p.op == "reduce_min"; }},
        {"partial_output", "skip_last", "the last output element is never written",
         "if (gl_LocalInvocationID.x == 0) y_[id] = kf_st(s);",
         "if (gl_LocalInvocationID.x == 0 && id + 1u < pc.outer * pc.inner) y_[id] = kf_st(s);"},
        {"returns_input", "copy_x", "y receives x's elements", "y_[id] = kf_st(s);", "y_[id] = x_[id];"},
        {"f16_accumulation", "sum_f16", "the partial sum is rounded to f16 after every addition",
         "s += kf_ld(x_[base + j * pc.inner]);",
         "s = uintBitsToFloat((floatBitsToUint(s + kf_ld(x_[base + j * pc.inner])) + 0x1000u) & 0xffffe000u);",
         [](const problem& p) { return p.op == "reduce_sum" || p.op == "reduce_mean"; }},
    };
  }
};

}  // namespace kforge::vulkan::shaders
