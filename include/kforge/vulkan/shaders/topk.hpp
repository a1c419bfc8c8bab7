// kforge/vulkan/shaders/topk.hpp — topk (and argmax) over the last axis.
//
// Tiling: one workgroup per row. Every element becomes an unsigned key in
// topk's order (ops/topk.hpp's topk_key, in integer operations only: NaN
// above +Inf, -0 equal to +0) paired with its position; (key, position)
// pairs compare as one total order (larger key first, then lower position).
// Each invocation walks its strided share of the row keeping its own best
// KF_KL pairs in a sorted list (an element is inserted only when it beats the
// list's last; KF_KL = KF_KP, or the smaller length that holds every element
// an invocation walks; the insertion is written out without a loop, so the
// list lives in registers). The lists are merged by selection in two levels,
// one barrier between them: each subgroup picks its first KF_KP over its lanes'
// list heads with subgroupMax (keys) and subgroupMin (positions of the
// largest key) alone — the winner pops its head — and writes them to shared
// memory in order; then subgroup 0 merges those sorted lists the same way
// (lane l reading lists l, l + S, ...) and writes the row's picks. k > KF_KP
// runs rounds of KF_KP, each skipping every pair not after the last one
// written. Bounds: the walk stops at the row's end; lists start with the pair
// (0, 0xffffffff), below every real key, so a short row never yields one;
// KF_SG (the host's ceil(wg / minSubgroupSize)) sizes the shared lists.
//
// Passes (KF_PASS): 0 = rows of x → values, indices (the contract kernel,
// push rows, N, k); for few long rows the row is split: 1 = each workgroup a
// chunk of `chunk` elements of one row → its first k pairs as candidates
// [rows, chunks, k] (chunks shorter than k pad with (0, 0xffffffff)), 2 = the
// chunks·k candidates of a row → values, indices, read back from x by
// position. values are copied from x (exact: T to T); indices are int.
#pragma once

#include <string>

#include "kforge/ops/topk_traits.hpp"
#include "kforge/vulkan/shaders/contract.hpp"

namespace kforge::vulkan::shaders {

inline constexpr const char* topk_body = R"glsl(
layout(std430, set = 0, binding = 0) readonly buffer BufX { T x_[]; };
#if KF_PASS == 1
layout(std430, set = 0, binding = 1) writeonly buffer BufCand { uvec2 cand_[]; };
#elif KF_PASS == 2
layout(std430, set = 0, binding = 1) readonly buffer BufCand { uvec2 cand_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufV { T values_[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufI { int indices_[]; };
#else
layout(std430, set = 0, binding = 1) writeonly buffer BufV { T values_[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufI { int indices_[]; };
#endif
#if KF_PASS == 0
layout(push_constant) uniform Push { uint rows, N, k; } pc;
#else
layout(push_constant) uniform Push { uint rows, N, k, chunk, chunks; } pc;
#endif

const uint KP = KF_KP;  // picks per round
const uint KL = KF_KL;  // entries of each invocation's list: KP, or fewer where no invocation has more elements
const uint SG = KF_SG;  // the most subgroups a workgroup can have
const uint NONE = 0xffffffffu;
shared uint tk_key[SG * KP];  // each subgroup's picks of the round, in order
shared uint tk_pos[SG * KP];
shared uint tk_head[SG];      // subgroup 0's read positions in those lists
shared uint tk_last[2];       // the round's last pick, for the next round

uint tk_key_of(float v) {
  uint b = floatBitsToUint(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;
  if ((b & 0x7fffffffu) == 0u) b = 0u;
  return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}
// (ka, pa) comes before (kb, pb): the larger key, then the lower position.
bool tk_before(uint ka, uint pa, uint kb, uint pb) { return ka > kb || (ka == kb && pa < pb); }

void main() {
  uint g = kf_group_id();
#if KF_PASS == 1
  uint row = g / pc.chunks;
  if (row >= pc.rows) return;
  uint lo = (g % pc.chunks) * pc.chunk, hi = min(lo + pc.chunk, pc.N);
#else
  uint row = g;
  if (row >= pc.rows) return;
#if KF_PASS == 2
  uint lo = row * pc.chunks * pc.k, hi = lo + pc.chunks * pc.k;
#else
  uint lo = 0u, hi = pc.N;
#endif
#endif
  uint xrow = row * pc.N;
  uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
  uint bk = 0u, bp = 0u;
  bool bounded = false;
  for (uint base = 0u; base < pc.k; base += KP) {
    uint lk[KL], lp[KL];
    TK_CLEAR_LIST
    for (uint e = lo + lid; e < hi; e += wg) {
#if KF_PASS == 2
      uvec2 c = cand_[e];
      uint key = c.x, pos = c.y;
#else
      uint key = tk_key_of(kf_ld(x_[xrow + e])), pos = e;
#endif
      if (bounded && !tk_before(bk, bp, key, pos)) continue;
      if (!tk_before(key, pos, lk[KL - 1u], lp[KL - 1u])) continue;
      // Insertion, written out step by step from the back (no loop, constant indices): slot i
      // takes slot i - 1 where the pair comes before that, else the pair where it comes before
      // slot i, else keeps its own.
      bool below = true;
      TK_INSERT
    }
    uint take = min(KP, pc.k - base);
    // Each subgroup's first `take` over its lanes' lists, with subgroup operations alone.
    uint head = 0u;
    for (uint s = 0u; s < take; ++s) {
      uint mk = head < KL ? lk[head] : 0u, mp = head < KL ? lp[head] : NONE;
      uint sk = subgroupMax(mk);
      uint sp = subgroupMin(mk == sk ? mp : NONE);
      if (mk == sk && mp == sp) ++head;
      if (subgroupElect()) {
        tk_key[gl_SubgroupID * KP + s] = sk;
        tk_pos[gl_SubgroupID * KP + s] = sp;
      }
    }
    barrier();
    // The workgroup's first `take`: subgroup 0 merges the subgroups' lists, lane l reading lists l, l + S, ...
    if (gl_SubgroupID == 0u) {
      for (uint q = gl_SubgroupInvocationID; q < gl_NumSubgroups; q += gl_SubgroupSize) tk_head[q] = 0u;
      for (uint s = 0u; s < take; ++s) {
        uint mk = 0u, mp = NONE, mq = NONE;
        for (uint q = gl_SubgroupInvocationID; q < gl_NumSubgroups; q += gl_SubgroupSize) {
          uint h = tk_head[q];
          if (h < take && tk_before(tk_key[q * KP + h], tk_pos[q * KP + h], mk, mp)) {
            mk = tk_key[q * KP + h];
            mp = tk_pos[q * KP + h];
            mq = q;
          }
        }
        uint gk = subgroupMax(mk);
        uint gp = subgroupMin(mk == gk ? mp : NONE);
        if (mq != NONE && mk == gk && mp == gp) ++tk_head[mq];
        if (subgroupElect()) {
#if KF_PASS == 1
          cand_[g * pc.k + base + s] = uvec2(gk, gp);
#else
          values_[row * pc.k + base + s] = x_[xrow + gp];
          indices_[row * pc.k + base + s] = int(gp);
#endif
          tk_last[0] = gk;
          tk_last[1] = gp;
        }
      }
    }
    barrier();
    bk = tk_last[0];
    bp = tk_last[1];
    bounded = true;
  }
}
)glsl";

/// Per-invocation list length KF_KP for k: 1 for argmax (a compare per
/// element), else the first of 4, 16, 64 that holds k; larger k runs rounds.
inline std::uint32_t topk_list_length(index_t k) { return k == 1 ? 1 : k <= 4 ? 4 : k <= 16 ? 16 : 64; }

/// The topk kernel for lists of kl entries: topk_body with the list's
/// clearing and insertion written out statement by statement. Loops there
/// would index the lists with variables, which puts them in memory on GPUs,
/// and lavapipe stops a shader invocation after 65535 loop iterations in all
/// (gallivm's loop limiter, shared by every loop of the shader): insertion
/// loops took most of that on long rows.
inline std::string topk_kernel_text(std::uint32_t kl) {
  std::string clear, insert;
  for (std::uint32_t i = 0; i < kl; ++i)
    clear += "lk[" + std::to_string(i) + "] = 0u; lp[" + std::to_string(i) + "] = NONE;\n    ";
  for (std::uint32_t i = kl - 1; i > 0; --i) {
    const std::string a = std::to_string(i), b = std::to_string(i - 1);
    insert += "{ bool above = tk_before(key, pos, lk[" + b + "], lp[" + b + "]);\n        lk[" + a + "] = above ? lk[" + b +
              "] : (below ? key : lk[" + a + "]); lp[" + a + "] = above ? lp[" + b + "] : (below ? pos : lp[" + a +
              "]);\n        below = above; }\n      ";
  }
  insert += "if (below) { lk[0] = key; lp[0] = pos; }";
  std::string s = topk_body;
  s.replace(s.find("TK_CLEAR_LIST"), 13, clear);
  s.replace(s.find("TK_INSERT"), 9, insert);
  return s;
}
/// topk_kernel_text(kl), made once per list length (1, 4, 16 or 64).
inline const std::string& topk_kernel(std::uint32_t kl) {
  static const std::string texts[4] = {topk_kernel_text(1), topk_kernel_text(4), topk_kernel_text(16), topk_kernel_text(64)};
  return texts[kl == 1 ? 0 : kl == 4 ? 1 : kl == 16 ? 2 : 3];
}

/// Shared memory of the kernel for workgroups of wg invocations, subgroups
/// of at least min_subgroup (KF_SG = ceil(wg / min_subgroup)) and lists of kp.
inline std::uint32_t topk_shared_bytes(std::uint32_t wg, std::uint32_t min_subgroup, std::uint32_t kp) {
  const std::uint32_t sg = (wg + min_subgroup - 1) / min_subgroup;
  return 4 * (2 * sg * kp + sg + 2 + wg);  // + the prelude's kf_red
}

template <>
struct contract_form<topk_traits> {
  /// Without a device: subgroups of at least 4 invocations, and a workgroup
  /// small enough that the shared memory fits the 16 KiB every device has.
  static contract_kernel kernel(const problem& p, const template_knobs& k) {
    const std::uint32_t kp = topk_list_length(topk_traits::k(p));
    std::uint32_t wg = k.wg;
    while (wg > 32 && topk_shared_bytes(wg, 4, kp) > 16384) wg /= 2;
    return {topk_kernel(kp),
            {{"KF_PASS", "0"}, {"KF_KP", std::to_string(kp)}, {"KF_KL", std::to_string(kp)}, {"KF_SG", std::to_string((wg + 3) / 4)}},
            wg};
  }
  static std::vector<edit> edits(const problem&) {
    return {
        {"off_by_one", "index_plus_one", "indices are one past the positions", "indices_[row * pc.k + base + s] = int(gp);",
         "indices_[row * pc.k + base + s] = int(gp + 1u);"},
        {"missing_tail", "whole_groups_only", "the walk stops at a multiple of the workgroup size",
         "for (uint e = lo + lid; e < hi; e += wg) {", "for (uint e = lo + lid; e < hi / wg * wg; e += wg) {"},
        {"wrong_init", "ties_to_higher_position", "equal values go to the higher position first",
         "return ka > kb || (ka == kb && pa < pb);", "return ka > kb || (ka == kb && pa > pb);"},
        {"wrong_index", "nan_smallest", "NaN counts as smaller than every number",
         "if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;", "if ((b & 0x7fffffffu) > 0x7f800000u) return 1u;"},
        {"partial_output", "last_pick_dropped", "the workgroup's last pick of each round is not written",
         "if (mq != NONE && mk == gk && mp == gp) ++tk_head[mq];\n        if (subgroupElect()) {",
         "if (mq != NONE && mk == gk && mp == gp) ++tk_head[mq];\n        if (subgroupElect() && s + 1u < take) {"},
        {"missing_barrier", "no_barrier_before_merge", "subgroup 0 merges before the other subgroups have written their picks",
         "    barrier();\n    // The workgroup's first", "    // The workgroup's first",
         [](const problem& p) { return topk_traits::k(p) > 1; }},
        {"returns_input", "values_in_row_order", "values are x's first k, not the picked ones",
         "values_[row * pc.k + base + s] = x_[xrow + gp];", "values_[row * pc.k + base + s] = x_[xrow + base + s];"},
        {"off_by_one", "last_row_skipped", "the last row is never written", k_row_guard, k_row_guard_mut},
        // Issue 46's classes: orders on raw bits.
        {"signed_specials", "zero_sign_order", "-0 orders below +0 (the key keeps the zero's sign bit)",
         "if ((b & 0x7fffffffu) == 0u) b = 0u;\n", "\n"},
        {"signed_specials", "nan_sign_order", "a NaN with its sign bit set orders below every number",
         "if ((b & 0x7fffffffu) > 0x7f800000u) return 0xffffffffu;", "if (b > 0x7f800000u && b < 0x80000000u) return 0xffffffffu;"},
    };
  }
};

}  // namespace kforge::vulkan::shaders
