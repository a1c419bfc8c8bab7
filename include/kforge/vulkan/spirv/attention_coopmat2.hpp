// kforge/vulkan/spirv/attention_coopmat2.hpp — flash attention on
// workgroup-scope cooperative matrices (SPV_KHR_cooperative_matrix +
// SPV_NV_cooperative_matrix2 + SPV_NV_tensor_addressing), f16 or bf16 data,
// f32 softmax state, emitted as SPIR-V with spirv::module_builder (glslang
// 12 cannot compile these extensions; builder.hpp says why).
//
// One workgroup computes Br query rows of one (batch, query head) (spec
// constants: 0 local size x, 1 Br, 2 Bc, 3 D, 4 Dv). Per block of Bc keys:
//   S  = Q·Kᵀ (Br×Bc, f32; K read through a transposing tensor view), times
//        scale·log2 e, so that p = exp2(s − m);
//   masked keys (past L, or causal: past the row) -> −Inf, only in the
//        blocks that hold such keys;
//   M' = max(M, rowmax S) (a row reduction, smeared over the row), P =
//        exp2(S − M'), e = exp2(M − M');
//   P rounded to the data type (f16, as PyTorch's SDPA does; bf16: as two
//        parts, see below), its row sums by a product with a Bc×Bc matrix of
//        ones (so numerator and denominator use the same rounded P), L =
//        e·L + rowsum P, O = e·O + P·V.
// At the end O / L is stored. The driver splits the matrices over the
// workgroup's subgroups and stages them through shared memory itself.
//
// Status: correct where it was checked on the H200 (vk_bench's sampled
// double-precision checks: f16, S = L = 2048 and 4096, D 64 and 128, GQA,
// causal and not) but 29–54 TFLOP/s there against the subgroup-fragment
// kernel's 130–180 (docs/bench/HISTORY.md, with timing probes that drop parts
// of the softmax), so no policy picks it; S and L must be whole blocks. Not
// run on a GPU yet: the bf16 variants (attention_coopmat2_check refuses them:
// they use bf16 accumulator matrices, which NVIDIA does not list) and the
// masked-V fix-up below.
//
// M starts at −FLT_MAX/2, so a row whose keys so far are all masked (or all
// −Inf) keeps p = 0 and e = 1; a row of −Inf scores ends 0/0 = NaN, a +Inf
// or NaN score makes its row NaN (the reference's semantics).
//
// Masked keys are excluded (docs/DESIGN.md): their p is 0, but 0·Inf is NaN
// on the tensor cores, so in the blocks the causal mask cuts (keys from the
// first such block on) V is loaded as an accumulator, its non-finite values
// replaced by 0 (setting a shared flag), and converted to a B matrix; when
// the flag is set (rare), each output element adds the non-finite V values
// of those keys its row sees, read again from global memory (Inf + finite =
// Inf, opposite Infs or a NaN give NaN: what p·v gives for p > 0).
//
// Interface (shaders/attention.hpp's): bindings 0 Q, 1 K, 2 V, 3 O; push
// constants BH, S, L, D, Dv, scale, causal, H, G, bshd (40 bytes); layouts
// [B,H,rows,dim] (bshd = 0) or [B,rows,H,dim]; query head h reads KV head
// h / G. Heads vary fastest over the workgroups (the G query heads of a KV
// head run side by side and share its K, V in L2); the last query blocks,
// the longest under a causal mask, go first.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <limits>
#include <string>
#include <vector>

#include "kforge/vulkan/spirv/builder.hpp"
#include "kforge/vulkan/spirv/gemm_coopmat2.hpp"

namespace kforge::vulkan::spirv {

/// One variant of the kernel (tiling and head dims are specialization constants).
struct attention_coopmat2_spec {
  bool bf16 = false;    ///< Q, K, V and O are bfloat16 (else float16)
  bool causal = false;  ///< top-left causal mask (key <= query row)
  /// Timing probes (vk_bench --attention-probes; the results are wrong): 0 the kernel; 1 without
  /// the row-max reduction (M stays); 2 also without rescaling O (no smear reduction); 3 also
  /// without the row sums' product; 4 only the two products (S = Q·Kᵀ, O += S·V).
  word probe = 0;
  std::string name() const {
    return std::string("attention_coopmat2_") + (bf16 ? "bf16" : "f16") + (causal ? "_causal" : "") +
           (probe ? "_probe" + std::to_string(probe) : "");
  }
};

/// The SPIR-V (1.6) words of one variant.
inline std::vector<word> attention_coopmat2(const attention_coopmat2_spec& v) {
  module_builder mb;
  detail::coopmat2_prelude(mb, v.bf16, {cap::cooperative_matrix_per_element_nv, cap::cooperative_matrix_reductions_nv,
                                        cap::cooperative_matrix_conversions_nv});

  const id u32 = mb.type_uint(), f32 = mb.type_float(32), t16 = v.bf16 ? mb.type_bfloat16() : mb.type_float(16);
  const id b_t = mb.type_bool(), v3u = mb.type_vector(u32, 3);
  auto buffer = [&](word binding, bool readonly) { return mb.storage_buffer(binding, t16, 2, readonly); };
  const id buf_q = buffer(0, true), buf_k = buffer(1, true), buf_v = buffer(2, true), buf_o = buffer(3, false);
  const id push_t = mb.type_struct({u32, u32, u32, u32, u32, f32, u32, u32, u32, u32});
  mb.decorate(push_t, decoration::block);
  for (word i = 0; i < 10; ++i) mb.member_decorate(push_t, i, decoration::offset, {4 * i});
  const id push = mb.global(storage::push_constant, push_t);
  const id wg_id = mb.builtin_input(builtin::workgroup_id, v3u);
  const id num_wg = mb.builtin_input(builtin::num_workgroups, v3u);
  // The cut blocks' flag: a non-finite V value was replaced by 0.
  const id flag = v.causal ? mb.global(storage::workgroup, u32) : 0;

  const id wg_x = mb.spec_uint(0, 128);
  const id br = mb.spec_uint(1, 64), bc = mb.spec_uint(2, 64), dq = mb.spec_uint(3, 128), dv = mb.spec_uint(4, 128);
  const id zero = mb.const_uint(0), one = mb.const_uint(1);
  const id scope_wg = mb.const_uint(static_cast<word>(scope::workgroup));
  const id ua = mb.const_uint(use_a), ub = mb.const_uint(use_b), uacc = mb.const_uint(use_accumulator);
  const id q_t = mb.type_coopmat(t16, scope_wg, br, dq, ua);
  const id kt_t = mb.type_coopmat(t16, scope_wg, dq, bc, ub);
  const id s_t = mb.type_coopmat(f32, scope_wg, br, bc, uacc);
  const id s16_t = mb.type_coopmat(t16, scope_wg, br, bc, uacc);
  const id p_t = mb.type_coopmat(t16, scope_wg, br, bc, ua);
  const id ones_t = mb.type_coopmat(t16, scope_wg, bc, bc, ub);
  const id v_t = mb.type_coopmat(t16, scope_wg, bc, dv, ub);
  const id vacc_t = mb.type_coopmat(t16, scope_wg, bc, dv, uacc);
  const id o_t = mb.type_coopmat(f32, scope_wg, br, dv, uacc);
  const id o16_t = mb.type_coopmat(t16, scope_wg, br, dv, uacc);
  const id layout_t = mb.type_tensor_layout(mb.const_uint(2), mb.const_uint(clamp_undefined));
  const id view_t = mb.type_tensor_view(mb.const_uint(2), mb.const_bool(false), {one, zero});
  const id zero16 = mb.const_bits(t16, 0), one16 = mb.const_bits(t16, v.bf16 ? 0x3f80u : 0x3c00u);
  const id zero_s = mb.const_composite(s_t, {mb.const_float(0.0f)});
  const id m_init = mb.const_composite(s_t, {mb.const_float(-1.7014117e38f)});  // -FLT_MAX/2
  const id zero_o = mb.const_composite(o_t, {mb.const_float(0.0f)});
  const id ones = mb.const_composite(ones_t, {one16});
  const id zero_q = mb.const_composite(q_t, {zero16}), zero_kt = mb.const_composite(kt_t, {zero16}),
           zero_v = mb.const_composite(v_t, {zero16}), zero_vacc = mb.const_composite(vacc_t, {zero16});
  const id ptr_sb16 = mb.type_pointer(storage::storage_buffer, t16);
  const id neg_inf = mb.const_float(-std::numeric_limits<float>::infinity());

  auto ui = [&](op o, id p, id q) { return mb.inst(o, u32, {p, q}); };
  auto test = [&](op o, id p, id q) { return mb.inst(o, b_t, {p, q}); };
  auto umin = [&](id p, id q) { return mb.ext(u32, glsl::umin, {p, q}); };
  auto finite = [&](id x) {
    return mb.inst(op::logical_not, b_t, {mb.inst(op::logical_or, b_t, {mb.inst(op::is_nan, b_t, {x}), mb.inst(op::is_inf, b_t, {x})})});
  };

  // ---- per-element and combining functions ---------------------------------------
  detail::fmath fm{mb};
  auto fmax = [&](id a, id b) { return mb.ext(f32, glsl::fmax, {a, b}); };
  // max(a, b) as a reduction's combiner and (row, col, a, b) per element; a reduction's smear (a).
  const id max2 = mb.function(f32, {f32, f32}, [&](const std::vector<id>& a) { return fmax(a[0], a[1]); });
  const id smear = mb.function(f32, {f32, f32}, [&](const std::vector<id>& a) { return a[0]; });
  const id max_elem = mb.function(f32, {u32, u32, f32, f32}, [&](const std::vector<id>& a) { return fmax(a[2], a[3]); });
  const id exp2_elem = mb.function(f32, {u32, u32, f32}, [&](const std::vector<id>& a) { return mb.ext(f32, glsl::exp2, {a[2]}); });
  // (row, col, s, k0, q0, L) -> −Inf where key k0 + col is past L (or, causal, past row q0 + row).
  const id mask_elem = mb.function(f32, {u32, u32, f32, u32, u32, u32}, [&](const std::vector<id>& a) {
    const id key = ui(op::i_add, a[3], a[1]);
    id masked = test(op::u_greater_than_equal, key, a[5]);
    if (v.causal) masked = mb.inst(op::logical_or, b_t, {masked, test(op::u_greater_than, key, ui(op::i_add, a[4], a[0]))});
    return mb.inst(op::select, f32, {masked, neg_inf, a[2]});
  });
  // (row, col, v) -> v, or 0 with the flag set where v is not finite (V of the cut blocks).
  const id sanitize_elem = !v.causal ? 0 : mb.function(t16, {u32, u32, t16}, [&](const std::vector<id>& a) {
    const id xf = mb.inst(op::f_convert, f32, {a[2]}), ok = finite(xf);
    mb.if_then(mb.inst(op::logical_not, b_t, {ok}), [&] { mb.store(flag, one); });
    // (selected in f32: bfloat16 scalars take conversions only; the value converts back exactly)
    return mb.inst(op::f_convert, t16, {mb.inst(op::select, f32, {ok, xf, mb.const_float(0.0f)})});
  });
  // (row, col, o, q0, k_from, L, vbase, vrs) -> o plus the non-finite V values of keys
  // [k_from, min(L, q0 + row + 1)) in column col.
  const id fixup_elem = !v.causal ? 0 : mb.function(f32, {u32, u32, f32, u32, u32, u32, u32, u32}, [&](const std::vector<id>& a) {
    const id acc = mb.local(f32), j = mb.local(u32);
    mb.store(acc, a[2]);
    const id end = umin(a[5], ui(op::i_add, ui(op::i_add, a[3], a[0]), one));
    mb.for_loop(j, a[4], end, one, [&] {
      const id at = ui(op::i_add, ui(op::i_add, a[6], ui(op::i_mul, mb.load(u32, j), a[7])), a[1]);
      const id x = mb.inst(op::f_convert, f32, {mb.load(t16, mb.access(ptr_sb16, buf_v, {zero, at}))});
      mb.if_then(mb.inst(op::logical_not, b_t, {finite(x)}), [&] { mb.store(acc, mb.inst(op::f_add, f32, {mb.load(f32, acc), x})); });
    });
    return mb.load(f32, acc);
  });
  // bf16 output: each value rounded to the nearest even bf16 in f32 first (fmath::round_bf16).
  const id round_elem = !v.bf16 ? 0 : mb.function(f32, {u32, u32, f32}, [&](const std::vector<id>& a) { return fm.round_bf16(a[2]); });

  // ---- main ----------------------------------------------------------------------------
  const id void_t = mb.type_void();
  const id main_fn = mb.begin_function(void_t, mb.type_function(void_t, {}));
  mb.label(mb.new_label());
  const id ptr_push_u = mb.type_pointer(storage::push_constant, u32), ptr_push_f = mb.type_pointer(storage::push_constant, f32);
  auto push_u = [&](word i) { return mb.load(u32, mb.access(ptr_push_u, push, {mb.const_uint(i)})); };
  auto extract = [&](id vec, word i) { return mb.inst(op::composite_extract, u32, {vec, i}); };
  const id BH = push_u(0), S = push_u(1), L = push_u(2), H = push_u(7), G = push_u(8);
  const id bshd = test(op::i_not_equal, push_u(9), zero);
  const id scale = mb.load(f32, mb.access(ptr_push_f, push, {mb.const_uint(5)}));
  const id wid = mb.load(v3u, wg_id), nwg = mb.load(v3u, num_wg);
  const id flat = ui(op::i_add, ui(op::i_mul, extract(wid, 1), extract(nwg, 0)), extract(wid, 0));
  const id nqb = ui(op::u_div, ui(op::i_sub, ui(op::i_add, S, br), one), br);
  const id body = mb.new_label(), done = mb.new_label();
  const id live = test(op::u_less_than, flat, ui(op::i_mul, BH, nqb));  // the grid may hold a few more workgroups
  mb.inst_void(op::selection_merge, {done, 0});
  mb.inst_void(op::branch_conditional, {live, body, done});
  mb.label(body);
  const id bh = ui(op::u_mod, flat, BH);
  const id q0 = ui(op::i_mul, ui(op::i_sub, ui(op::i_sub, nqb, one), ui(op::u_div, flat, BH)), br);
  const id b = ui(op::u_div, bh, H), h = ui(op::u_mod, bh, H), hk_n = ui(op::u_div, H, G), hk = ui(op::u_div, h, G);
  auto sel = [&](id c, id p, id q) { return mb.inst(op::select, u32, {c, p, q}); };
  // Row strides and bases (elements).
  const id qrs = sel(bshd, ui(op::i_mul, H, dq), dq), ors = sel(bshd, ui(op::i_mul, H, dv), dv);
  const id krs = sel(bshd, ui(op::i_mul, hk_n, dq), dq), vrs = sel(bshd, ui(op::i_mul, hk_n, dv), dv);
  const id bsh = ui(op::i_add, ui(op::i_mul, ui(op::i_mul, b, S), H), h);      // (b·S·H + h)
  const id blh = ui(op::i_add, ui(op::i_mul, ui(op::i_mul, b, L), hk_n), hk);  // (b·L·HK + hk)
  const id bk = ui(op::i_add, ui(op::i_mul, b, hk_n), hk);                     // b·HK + hk
  const id qbase = sel(bshd, ui(op::i_mul, bsh, dq), ui(op::i_mul, ui(op::i_mul, bh, S), dq));
  const id obase = sel(bshd, ui(op::i_mul, bsh, dv), ui(op::i_mul, ui(op::i_mul, bh, S), dv));
  const id kbase = sel(bshd, ui(op::i_mul, blh, dq), ui(op::i_mul, ui(op::i_mul, bk, L), dq));
  const id vbase = sel(bshd, ui(op::i_mul, blh, dv), ui(op::i_mul, ui(op::i_mul, bk, L), dv));
  const id pq = mb.access(ptr_sb16, buf_q, {zero, qbase}), pk = mb.access(ptr_sb16, buf_k, {zero, kbase});
  const id pv = mb.access(ptr_sb16, buf_v, {zero, vbase}), po = mb.access(ptr_sb16, buf_o, {zero, obase});
  // Keys the block's rows see, its key blocks, and the first block that needs masks (past L, or
  // causal: the first block holding a key past the first row, q0 + 1 keys and up).
  const id kend = v.causal ? umin(L, ui(op::i_add, q0, br)) : L;
  const id nkb = ui(op::u_div, ui(op::i_sub, ui(op::i_add, kend, bc), one), bc);
  const id jm = umin(nkb, v.causal ? umin(ui(op::u_div, L, bc), ui(op::u_div, ui(op::i_add, q0, one), bc)) : ui(op::u_div, L, bc));
  const id c2 = mb.inst(op::f_mul, f32, {scale, mb.const_float(1.4426950408889634f)});
  if (v.causal) {
    mb.store(flag, zero);
    mb.inst_void(op::control_barrier, {scope_wg, scope_wg, mb.const_uint(semantics_workgroup_acq_rel)});
  }
  const id mask7 = mb.const_uint(~7u);

  // The caller runs the kernel on S and L in whole blocks (vulkan/attention.hpp), so every load is
  // in bounds: read through unclamped layouts with strides masked to multiples of 8. (Clamped
  // layouts — loads outside Q, K, V reading 0, stores outside O dropped — would take any S and L;
  // that form ran into the tests' time limits on the H200 and was removed.)
  {
    const id lt = layout_t;
    auto layout = [&](id d0, id d1, id ld) {
      const id l0 = mb.inst(op::create_tensor_layout_nv, lt, {});
      const id l1 = mb.inst(op::tensor_layout_set_dimension_nv, lt, {l0, d0, d1});
      return mb.inst(op::tensor_layout_set_stride_nv, lt, {l1, ui(op::bitwise_and, ld, mask7), one});
    };
    auto slice = [&](id l, id o0, id s0, id o1, id s1) { return mb.inst(op::tensor_layout_slice_nv, lt, {l, o0, s0, o1, s1}); };
    const id lq = layout(S, dq, qrs), lk = layout(L, dq, krs), lv = layout(L, dv, vrs), lo = layout(S, dv, ors);
    const id view = mb.inst(op::create_tensor_view_nv, view_t, {});
    const id qa = mb.inst(op::cooperative_matrix_load_tensor_nv, q_t, {pq, zero_q, slice(lq, q0, br, zero, dq), 0, 0});
    const id o_var = mb.local(o_t), m_var = mb.local(s_t), l_var = mb.local(s_t), j_var = mb.local(u32);
    mb.store(o_var, zero_o), mb.store(m_var, m_init), mb.store(l_var, zero_s);
    auto block = [&](bool masked) {
      const id k0 = ui(op::i_mul, mb.load(u32, j_var), bc);
      const id kt = mb.inst(op::cooperative_matrix_load_tensor_nv, kt_t, {pk, zero_kt, slice(lk, k0, bc, zero, dq), 0, 1, view});
      id s = mb.inst(op::cooperative_matrix_mul_add_khr, s_t, {qa, kt, zero_s});
      s = mb.inst(op::matrix_times_scalar, s_t, {s, c2});
      if (masked && v.probe < 4) s = mb.inst(op::cooperative_matrix_per_element_op_nv, s_t, {s, mask_elem, k0, q0, L});
      const id m_old = mb.load(s_t, m_var);
      const id m_new = v.probe >= 1 ? m_old
                                    : mb.inst(op::cooperative_matrix_per_element_op_nv, s_t,
                                              {mb.inst(op::cooperative_matrix_reduce_nv, s_t, {s, reduce_row, max2}), max_elem, m_old});
      const id p = v.probe >= 4 ? s
                                : mb.inst(op::cooperative_matrix_per_element_op_nv, s_t, {mb.inst(op::f_sub, s_t, {s, m_new}), exp2_elem});
      const id e = v.probe >= 4 ? m_old
                                : mb.inst(op::cooperative_matrix_per_element_op_nv, s_t, {mb.inst(op::f_sub, s_t, {m_old, m_new}), exp2_elem});
      const id p16 = mb.inst(op::f_convert, s16_t, {p});
      const id pa = mb.inst(op::cooperative_matrix_convert_nv, p_t, {p16});
      id rsum = v.probe >= 3 ? zero_s : mb.inst(op::cooperative_matrix_mul_add_khr, s_t, {pa, ones, zero_s});
      // bf16: P as two bf16 parts, P ≈ hi + lo (hi = P rounded; lo = the rest, exact in f32, rounded):
      // one bf16 P would err by 2^-9 of a weight (2^-8 where the driver truncates), the pair by 2^-17.
      id pa_lo = 0;
      if (v.bf16) {
        const id rest = mb.inst(op::f_sub, s_t, {p, mb.inst(op::f_convert, s_t, {p16})});
        pa_lo = mb.inst(op::cooperative_matrix_convert_nv, p_t, {mb.inst(op::f_convert, s16_t, {rest})});
        rsum = mb.inst(op::cooperative_matrix_mul_add_khr, s_t, {pa_lo, ones, rsum});
      }
      if (v.probe < 3) mb.store(l_var, mb.inst(op::f_add, s_t, {mb.inst(op::f_mul, s_t, {e, mb.load(s_t, l_var)}), rsum}));
      mb.store(m_var, m_new);
      const id o = v.probe >= 2 ? mb.load(o_t, o_var)
                                : mb.inst(op::f_mul, o_t, {mb.load(o_t, o_var), mb.inst(op::cooperative_matrix_reduce_nv, o_t, {e, reduce_row, smear})});
      id vm;
      const id vslice = slice(lv, k0, bc, zero, dv);
      if (masked && v.causal && v.probe < 4) {
        const id raw = mb.inst(op::cooperative_matrix_load_tensor_nv, vacc_t, {pv, zero_vacc, vslice, 0, 0});
        vm = mb.inst(op::cooperative_matrix_convert_nv, v_t,
                     {mb.inst(op::cooperative_matrix_per_element_op_nv, vacc_t, {raw, sanitize_elem})});
      } else {
        vm = mb.inst(op::cooperative_matrix_load_tensor_nv, v_t, {pv, zero_v, vslice, 0, 0});
      }
      id o2 = mb.inst(op::cooperative_matrix_mul_add_khr, o_t, {pa, vm, o});
      if (v.bf16) o2 = mb.inst(op::cooperative_matrix_mul_add_khr, o_t, {pa_lo, vm, o2});
      mb.store(o_var, o2);
    };
    mb.for_loop(j_var, zero, jm, one, [&] { block(false); });
    mb.for_loop(j_var, jm, nkb, one, [&] { block(true); });
    const id ld = mb.inst(op::cooperative_matrix_reduce_nv, o_t, {mb.load(s_t, l_var), reduce_row, smear});
    mb.store(o_var, mb.inst(op::f_div, o_t, {mb.load(o_t, o_var), ld}));
    if (v.causal) {
      mb.inst_void(op::control_barrier, {scope_wg, scope_wg, mb.const_uint(semantics_workgroup_acq_rel)});
      const id hit = test(op::i_not_equal, mb.load(u32, flag), zero);
      mb.if_then(hit, [&] {
        mb.store(o_var, mb.inst(op::cooperative_matrix_per_element_op_nv, o_t,
                                {mb.load(o_t, o_var), fixup_elem, q0, ui(op::i_mul, jm, bc), L, vbase, vrs}));
      });
    }
    id out = mb.load(o_t, o_var);
    if (v.bf16) out = mb.inst(op::cooperative_matrix_per_element_op_nv, o_t, {out, round_elem});
    mb.inst_void(op::cooperative_matrix_store_tensor_nv,
                 {po, mb.inst(op::f_convert, o16_t, {out}), slice(lo, q0, br, zero, dv), 0, 0});
  }
  mb.branch(done);
  mb.label(done);
  mb.ret();
  mb.end_function();
  mb.entry_point(main_fn, mb.interface());
  mb.execution_mode_id(main_fn, 38, {wg_x, one, one});  // LocalSizeId
  return mb.words(0x00010600u);
}

}  // namespace kforge::vulkan::spirv
