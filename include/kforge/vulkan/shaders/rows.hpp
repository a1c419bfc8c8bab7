// kforge/vulkan/shaders/rows.hpp — last-axis row kernels: online softmax,
// layer_norm and rms_norm.
//
// Tiling: one workgroup per row (2-D grid of groups); invocation t handles
// columns t, t+WG, … < cols (bounds by the loop); row statistics combine with
// subgroup operations plus one shared slot per subgroup.
//
// softmax_online: one pass keeps a running (max m, sum s) per invocation,
// rescaling s when m grows; partials merge as s·exp(m - M). A second pass
// writes exp(x - M)/S. As in the reference, a NaN or +Inf anywhere, or a row
// that is all -Inf, makes the whole row NaN.
// norms: mean first, then the mean of squared deviations (two passes, as the
// reference computes it), then the output; rms_norm (KF_RMS) skips the mean.
//
// softmax_rowreg / norm_rowreg (chosen by the host when cols % 4 == 0 and a
// row fits KF_R four-vectors per invocation, KF_R <= 16): the row is read from
// memory once into registers (vec4 loads, invocation t holding vectors t,
// t+WG, …), statistics are computed from the registers, and the output is
// written from them: one read and one write per element. Same formulas and
// NaN rules as above (softmax: NaN counts as +Inf in the max, so one max and
// one sum reduction suffice; norms: mean, then mean of squared deviations).
#pragma once

#include "kforge/ops/norm_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* softmax_rowreg = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T4 x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T4 y_[]; };
layout(push_constant) uniform Push { uint rows, cols; } pc;
void main() {
  uint row = kf_group_id();
  if (row >= pc.rows) return;  // uniform per workgroup
  uint nv = pc.cols / 4, base = row * nv, t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  vec4 v[KF_R];
  float m = -KF_INF;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = t + r * WG;
    v[r] = j < nv ? kf_ld4(x_[base + j]) : vec4(-KF_INF);
    [[unroll]] for (uint e = 0; e < 4; ++e) m = isnan(v[r][e]) ? KF_INF : max(m, v[r][e]);
  }
  float M = kf_wg_max(m);
  bool bad = isinf(M);  // NaN or +Inf somewhere, or every element -Inf
  float s = 0.0;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    v[r] = exp(v[r] - M);
    s += (v[r].x + v[r].y) + (v[r].z + v[r].w);
  }
  float inv = 1.0 / kf_wg_sum(s);
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = t + r * WG;
    if (j < nv) y_[base + j] = kf_st4(bad ? vec4(KF_NAN) : v[r] * inv);
  }
}
)glsl";

inline constexpr const char* norm_rowreg = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T4 x_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufG { T4 gamma_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufB { T4 beta_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { T4 y_[]; };
layout(push_constant) uniform Push { uint rows, cols; float eps; } pc;
void main() {
  uint row = kf_group_id();
  if (row >= pc.rows) return;  // uniform per workgroup
  uint nv = pc.cols / 4, base = row * nv, t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  float n = float(pc.cols);
  vec4 v[KF_R];
  float s = 0.0;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = t + r * WG;
    v[r] = j < nv ? kf_ld4(x_[base + j]) : vec4(0.0);
    s += (v[r].x + v[r].y) + (v[r].z + v[r].w);
  }
  float mean = 0.0;
#if !KF_RMS
  mean = kf_wg_sum(s) / n;
#endif
  float q = 0.0;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = t + r * WG;
    vec4 d = j < nv ? v[r] - mean : vec4(0.0);
    q += dot(d, d);
  }
  float inv = 1.0 / sqrt(kf_wg_sum(q) / n + pc.eps);
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = t + r * WG;
    if (j < nv) {
      vec4 o = (v[r] - mean) * inv * kf_ld4(gamma_[j]);
#if !KF_RMS
      o += kf_ld4(beta_[j]);
#endif
      y_[base + j] = kf_st4(o);
    }
  }
}
)glsl";

// rows_subgroup (KF_KIND 0 softmax, 1 layer_norm, 2 rms_norm): one subgroup
// per row, gl_NumSubgroups rows per workgroup, for rows that fit KF_R values
// per lane (the host picks it from the device's fixed subgroup size): lane l
// holds elements l, l + SG, ... (scalar loads, coalesced across the
// subgroup). Statistics are subgroup operations only: no shared memory, no
// barrier, so short rows (64 to 1024 columns) keep every lane busy. Same
// formulas and NaN rules as the row kernels above.
inline constexpr const char* rows_subgroup = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
#if KF_KIND == 0
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, cols; } pc;
#else
layout(std430, set = 0, binding = 1) readonly buffer BufG { T gamma_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufB { T beta_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, cols; float eps; } pc;
#endif
void main() {
  uint row = kf_group_id() * gl_NumSubgroups + gl_SubgroupID;
  if (row >= pc.rows) return;  // uniform per subgroup; nothing below synchronises the workgroup
  uint lane = gl_SubgroupInvocationID, SG = gl_SubgroupSize, base = row * pc.cols;
  float v[KF_R];
#if KF_KIND == 0
  float m = -KF_INF;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = lane + r * SG;
    v[r] = j < pc.cols ? kf_ld(x_[base + j]) : -KF_INF;
    m = isnan(v[r]) ? KF_INF : max(m, v[r]);
  }
  float M = subgroupMax(m);
  bool bad = isinf(M);  // NaN or +Inf somewhere, or every element -Inf
  float s = 0.0;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    v[r] = exp(v[r] - M);
    s += v[r];
  }
  float inv = 1.0 / subgroupAdd(s);
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = lane + r * SG;
    if (j < pc.cols) y_[base + j] = kf_st(bad ? KF_NAN : v[r] * inv);
  }
#else
  float n = float(pc.cols), s = 0.0;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = lane + r * SG;
    v[r] = j < pc.cols ? kf_ld(x_[base + j]) : 0.0;
    s += v[r];
  }
  float mean = KF_KIND == 1 ? subgroupAdd(s) / n : 0.0;
  float q = 0.0;
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    float d = lane + r * SG < pc.cols ? v[r] - mean : 0.0;
    q += d * d;
  }
  float inv = 1.0 / sqrt(subgroupAdd(q) / n + pc.eps);
  [[unroll]] for (uint r = 0; r < KF_R; ++r) {
    uint j = lane + r * SG;
    if (j < pc.cols) {
      float o = (v[r] - mean) * inv * kf_ld(gamma_[j]);
#if KF_KIND == 1
      o += kf_ld(beta_[j]);
#endif
      y_[base + j] = kf_st(o);
    }
  }
#endif
}
)glsl";

// softmax_long: rows too long for registers (vocabularies: 50257, 128256
// columns), read twice. The statistics pass keeps a running (max m, sum s)
// per invocation and takes its loads four at a time (columns j, j + WG,
// j + 2·WG, j + 3·WG: four loads in flight before the first use, and one
// rescale per four), then the workgroup merges them; the write pass recomputes
// exp(x - M) / S four columns at a time. KF_PASS 0: one workgroup per row.
// KF_PASS 1 and 2, for few rows (the host splits each row into `chunks`
// chunks of `chunk` columns, one workgroup each, so that a handful of rows
// still fill the device): pass 1 writes each chunk's (m, s) to `part` (m =
// +Inf marks a NaN in the chunk), pass 2 merges its row's chunks and writes
// its own chunk. NaN rules as softmax above.
inline constexpr const char* softmax_long = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
#if KF_PASS == 1
layout(std430, set = 0, binding = 1) writeonly buffer BufP { vec2 part_[]; };
#elif KF_PASS == 2
layout(std430, set = 0, binding = 1) readonly buffer BufP { vec2 part_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { T y_[]; };
#else
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
#endif
layout(push_constant) uniform Push { uint rows, cols, chunk, chunks; } pc;

void main() {
  uint id = kf_group_id();
  if (id >= pc.rows * pc.chunks) return;  // uniform per workgroup
  uint row = id / pc.chunks, c = id % pc.chunks, t = gl_LocalInvocationID.x, WG = gl_WorkGroupSize.x;
  uint base = row * pc.cols, j0 = c * pc.chunk, j1 = min(pc.cols, j0 + pc.chunk);
  float M, S;
  bool bad;
#if KF_PASS != 2
  float m = -KF_INF, s = 0.0;
  bool nan = false;
  for (uint j = j0 + t; j < j1; j += 4u * WG) {
    float a[4];
    [[unroll]] for (uint u = 0; u < 4; ++u) a[u] = j + u * WG < j1 ? kf_ld(x_[base + j + u * WG]) : -KF_INF;
    float mx = m;
    [[unroll]] for (uint u = 0; u < 4; ++u) {
      nan = nan || isnan(a[u]);
      mx = isnan(a[u]) ? mx : max(mx, a[u]);
    }
    if (mx == -KF_INF) continue;  // only -Inf so far: nothing to add
    s *= exp(m - mx);
    [[unroll]] for (uint u = 0; u < 4; ++u) s += isnan(a[u]) ? 0.0 : exp(a[u] - mx);
    m = mx;
  }
  M = kf_wg_max(m);
  nan = kf_wg_any(nan);
  S = kf_wg_sum(m == -KF_INF || isinf(M) ? 0.0 : s * exp(m - M));
#if KF_PASS == 1
  if (t == 0u) part_[id] = vec2(nan ? KF_INF : M, S);
#else
  bad = nan || isinf(M);
#endif
#else
  M = -KF_INF;
  for (uint k = 0; k < pc.chunks; ++k) M = max(M, part_[row * pc.chunks + k].x);
  S = 0.0;
  for (uint k = 0; k < pc.chunks; ++k) {
    vec2 p = part_[row * pc.chunks + k];
    S += p.x == -KF_INF || isinf(M) ? 0.0 : p.y * exp(p.x - M);
  }
  bad = isinf(M);
#endif
#if KF_PASS != 1
  float inv = 1.0 / S;
  for (uint j = j0 + t; j < j1; j += 4u * WG) {
    float a[4];
    [[unroll]] for (uint u = 0; u < 4; ++u) a[u] = j + u * WG < j1 ? kf_ld(x_[base + j + u * WG]) : 0.0;
    [[unroll]] for (uint u = 0; u < 4; ++u)
      if (j + u * WG < j1) y_[base + j + u * WG] = kf_st(bad ? KF_NAN : exp(a[u] - M) * inv);
  }
#endif
}
)glsl";

inline constexpr const char* softmax = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, cols; } pc;
void main() {
  uint row = kf_group_id();
  if (row >= pc.rows) return;  // uniform per workgroup
  uint base = row * pc.cols;
  float m = -KF_INF, s = 0.0;
  bool nan = false;
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {
    float v = kf_ld(x_[base + j]);
    if (isnan(v)) nan = true;
    else if (v == -KF_INF) continue;
    else if (v > m) { s = s * exp(m - v) + 1.0; m = v; }
    else s += exp(v - m);
  }
  float M = kf_wg_max(m);
  bool bad = kf_wg_any(nan) || isinf(M);
  float S = kf_wg_sum((m == -KF_INF || bad) ? 0.0 : s * exp(m - M));
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x)
    y_[base + j] = kf_st(bad ? KF_NAN : exp(kf_ld(x_[base + j]) - M) / S);
}
)glsl";

inline constexpr const char* norm = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufG { T gamma_[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufB { T beta_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufY { T y_[]; };
layout(push_constant) uniform Push { uint rows, cols; float eps; } pc;
void main() {
  uint row = kf_group_id();
  if (row >= pc.rows) return;  // uniform per workgroup
  uint base = row * pc.cols;
  float n = float(pc.cols);
  float mean = 0.0;
#if !KF_RMS
  float s = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) s += kf_ld(x_[base + j]);
  mean = kf_wg_sum(s) / n;
#endif
  float q = 0.0;
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {
    float d = kf_ld(x_[base + j]) - mean;
    q += d * d;
  }
  float inv = 1.0 / sqrt(kf_wg_sum(q) / n + pc.eps);
  for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {
    float v = (kf_ld(x_[base + j]) - mean) * inv * kf_ld(gamma_[j]);
#if !KF_RMS
    v += kf_ld(beta_[j]);
#endif
    y_[base + j] = kf_st(v);
  }
}
)glsl";

template <>
struct contract_form<softmax_traits> {
  static contract_kernel kernel(const problem&, const template_knobs& k) { return {softmax, {}, k.wg}; }
  static std::vector<edit> edits(const problem&) {
    return {
        // (The per-invocation running sum's init is overwritten by its first
        // element, so that mutant would be equivalent; the workgroup sum's is not.)
        {"wrong_init", "wg_sum_init", "the workgroup sum starts at 1", "  float r = 0.0;\n", "  float r = 1.0;\n"},
        {"dropped_scale", "no_max_shift", "exp is taken without subtracting the row max",
         "exp(kf_ld(x_[base + j]) - M) / S", "exp(kf_ld(x_[base + j])) / S"},
        {"off_by_one", "write_bound", "the write loop runs to j <= cols",
         "j < pc.cols; j += gl_WorkGroupSize.x)\n    y_[base + j]", "j <= pc.cols; j += gl_WorkGroupSize.x)\n    y_[base + j]"},
        {"missing_barrier", "wg_max_barrier", "no barrier in the workgroup max", k_barrier_max, k_barrier_max_mut},
        {"missing_tail", "last_row", "the last row is skipped", k_row_guard, k_row_guard_mut},
        {"returns_input", "copy_x", "y = x", "y_[base + j] = kf_st(bad ? KF_NAN : exp(kf_ld(x_[base + j]) - M) / S);",
         "y_[base + j] = x_[base + j];"},
        // Issue 46's classes.
        {"negative_rows", "max_from_zero", "the running row max starts at 0 (exact for mild rows, 0/0 for very negative ones)",
         "float m = -KF_INF, s = 0.0;", "float m = 0.0, s = 0.0;"},
        {"tolerance", "sum_f16", "each invocation's running sum is rounded to f16 (a long row's outputs drift by ~1e-3 of themselves)",
         "else s += exp(v - m);", "else s = uintBitsToFloat((floatBitsToUint(s + exp(v - m)) + 0x1000u) & 0xffffe000u);"},
        {"held_out", "row_fits_workgroup", "only a row's first local-size elements enter the max and the sum",
         "for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {\n    float v = kf_ld(x_[base + j]);",
         "for (uint j = gl_LocalInvocationID.x; j < min(pc.cols, gl_WorkGroupSize.x); j += gl_WorkGroupSize.x) {\n    float v = kf_ld(x_[base + j]);"},
    };
  }
};

/// layer_norm and rms_norm share the norm kernel; rms_norm's contract has no beta binding.
template <>
struct contract_form<norm_traits> {
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    const bool rms = !norm_traits::layer(p);
    contract_kernel c{norm, {{"KF_RMS", rms ? "1" : "0"}}, k.wg};
    if (rms) {
      c.body = replace_all(c.body, "layout(std430, set = 0, binding = 2) readonly buffer BufB { T beta_[]; };\n", "",
                           "drop rms_norm's beta binding");
      c.body = replace_all(c.body, "binding = 3) writeonly buffer BufY", "binding = 2) writeonly buffer BufY", "renumber y");
    }
    return c;
  }
  static std::vector<edit> edits(const problem&) {
    return {
        {"dropped_scale", "unbiased_variance", "the variance divides by cols - 1 (unbiased) instead of cols",
         "sqrt(kf_wg_sum(q) / n + pc.eps)", "sqrt(kf_wg_sum(q) / (n - 1.0) + pc.eps)"},
        {"dropped_scale", "no_gamma", "gamma is not applied", " * inv * kf_ld(gamma_[j]);", " * inv;"},
        {"wrong_init", "sq_init", "the sum of squares starts at 1", "float q = 0.0;", "float q = 1.0;"},
        {"missing_barrier", "wg_sum_barrier", "no barrier in the workgroup sum", k_barrier_sum, k_barrier_sum_mut},
        {"missing_tail", "last_row", "the last row is skipped", k_row_guard, k_row_guard_mut},
        {"off_by_one", "write_bound", "the write loop runs to j <= cols",
         "for (uint j = gl_LocalInvocationID.x; j < pc.cols; j += gl_WorkGroupSize.x) {\n    float v = (kf_ld(x_[base + j]) - mean)",
         "for (uint j = gl_LocalInvocationID.x; j <= pc.cols; j += gl_WorkGroupSize.x) {\n    float v = (kf_ld(x_[base + j]) - mean)"},
        {"returns_input", "copy_x", "y = x", "    y_[base + j] = kf_st(v);", "    y_[base + j] = x_[base + j];"},
        // Issue 46's classes.
        {"offset_rows", "one_pass_variance", "the variance is E[x²] - E[x]² in one f32 pass",
         "    float d = kf_ld(x_[base + j]) - mean;\n    q += d * d;\n  }\n  float inv = 1.0 / sqrt(kf_wg_sum(q) / n + pc.eps);",
         "    float d = kf_ld(x_[base + j]);\n    q += d * d;\n  }\n  float inv = 1.0 / sqrt(max(kf_wg_sum(q) / n - mean * mean, 0.0) + pc.eps);",
         [](const problem& p) { return norm_traits::layer(p); }},
    };
  }
};

}  // namespace kforge::vulkan::shaders
