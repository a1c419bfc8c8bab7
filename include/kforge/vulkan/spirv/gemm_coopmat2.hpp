// kforge/vulkan/spirv/gemm_coopmat2.hpp — the tensor-core gemm on
// workgroup-scope cooperative matrices (SPV_KHR_cooperative_matrix +
// SPV_NV_cooperative_matrix2 + SPV_NV_tensor_addressing), f16 or bf16 data,
// f32 accumulation, emitted as SPIR-V with spirv::module_builder (glslang 12
// cannot compile these extensions; builder.hpp says why).
//
// Tiling: one workgroup computes a BM×BN tile of C (spec constants 1, 2; K
// step BK, spec constant 3) as ONE workgroup-scope cooperative matrix: the
// driver decides how the tile is split over the workgroup's subgroups and
// stages A and B through shared memory itself (on NVIDIA: the tensor cores
// fed as its own GEMMs are). Tile order: bands of group_m tile rows
// (spec constant 4, >= 1; 1 is row-major), as shaders/common.hpp's
// kf_tile_of_group, so workgroups in flight share A and B in L2.
//
// Bounds: A, B, C and bias are addressed through tensor layouts that know
// the operands' dimensions; loads outside them read 0 (clamp mode Constant),
// stores outside them are dropped. So any M, N, K runs, and a K split reads
// its K range as matrices of their own (pointers advanced to the range's start).
//
// Interface (gemm's, shaders/gemm_common.hpp): bindings 0 A [M,K], 1 B
// [K,N], 2 bias [N], 3 C [M,N] (or the f32 partial sums [splits][M][N] of a
// split, as KF_SPLIT); push constants M, N, K, alpha, beta, slope; spec
// constant 0 = local size x, which must be the workgroupInvocations of the
// device's workgroup-scope property for these sizes.
//
// Epilogue (not split): v = alpha·acc (+ beta·C when the variant reads C) (+
// bias[n]) then the activation, per element through
// OpCooperativeMatrixPerElementOpNV with the same formulas as
// shaders/common.hpp's kf_apply; then converted to the storage type. f16 C is
// stored from an f16 accumulator matrix; bf16 C from a bf16 matrix of use A
// (OpFConvert changing the use, CooperativeMatrixConversionsNV): NVIDIA lists
// no bf16 accumulator matrices, and the validation layer (1.4.363, on the
// H200) reports one as VUID-RuntimeSpirv-cooperativeMatrixFlexibleDimensions-10165.
// Its columns are then K-granular (gemm_config_check checks BN for that).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

#include "kforge/ops/functions.hpp"
#include "kforge/vulkan/spirv/builder.hpp"

namespace kforge::vulkan::spirv {

/// One variant of the kernel (everything else is a specialization constant).
struct gemm_coopmat2_spec {
  bool bf16 = false;  ///< A, B, bias and C are bfloat16 (else float16)
  bool bias = false;
  fn act = fn::identity;
  bool read_c = false;  ///< beta != 0: C is read
  bool split = false;   ///< write raw f32 partial sums of a K split (binding 3), no epilogue
  word unroll = 4;      ///< K steps per iteration of the main loop
  bool fast_path = true;  ///< inner tiles with aligned rows skip the bounds checks (see the kernel)
  // Experiments (vk_bench --coopmat2-variants; not in gemm_config): A and B bound as arrays of uvec4
  // (16-byte elements; the layouts stay in f16 elements), and B stored [N, K] (K contiguous, as
  // PyTorch's Linear weights), read through a transposing tensor view.
  bool vec_pointers = false;
  bool b_kmajor = false;
  std::string name() const {
    std::string s = std::string("gemm_coopmat2_") + (bf16 ? "bf16" : "f16") + "_u" + std::to_string(unroll) +
                    (fast_path ? "" : "_clamped") + (vec_pointers ? "_vec" : "") + (b_kmajor ? "_bt" : "");
    if (split) return s + "_split";
    if (bias) s += "_bias";
    if (act != fn::identity) s += "_" + std::string(to_string(act));
    if (read_c) s += "_beta";
    return s;
  }
};

namespace detail {
/// The declarations every workgroup-scope tensor-core module starts with: its capabilities
/// (those of `extra` added), extensions, f16 or bf16 types, and the Vulkan memory model.
inline void coopmat2_prelude(module_builder& mb, bool bf16, std::initializer_list<word> extra) {
  for (word c : {cap::shader, cap::vulkan_memory_model, cap::storage_buffer_16bit, cap::cooperative_matrix_khr,
                 cap::cooperative_matrix_tensor_addressing_nv, cap::tensor_addressing_nv})
    mb.capability(c);
  for (word c : extra) mb.capability(c);
  if (bf16) {
    mb.capability(cap::bfloat16_type_khr);
    mb.capability(cap::bfloat16_cooperative_matrix_khr);
  } else {
    mb.capability(cap::float16);
  }
  mb.extension("SPV_KHR_cooperative_matrix");
  mb.extension("SPV_NV_cooperative_matrix2");
  mb.extension("SPV_NV_tensor_addressing");
  if (bf16) mb.extension("SPV_KHR_bfloat16");
  mb.memory_model_vulkan();
}

/// Scalar float helpers over a builder (f32 arithmetic inside a function).
struct fmath {
  module_builder& mb;
  id f32 = mb.type_float(32), b = mb.type_bool();
  id c(float v) const { return mb.const_float(v); }
  id mul(id p, id q) const { return mb.inst(op::f_mul, f32, {p, q}); }
  id add(id p, id q) const { return mb.inst(op::f_add, f32, {p, q}); }
  id sub(id p, id q) const { return mb.inst(op::f_sub, f32, {p, q}); }
  id div(id p, id q) const { return mb.inst(op::f_div, f32, {p, q}); }
  id neg(id p) const { return mb.inst(op::f_negate, f32, {p}); }
  id lt(id p, id q) const { return mb.inst(op::f_ord_less_than, b, {p, q}); }
  id sel(id cond, id p, id q) const { return mb.inst(op::select, f32, {cond, p, q}); }
  id abs(id p) const { return mb.ext(f32, glsl::fabs, {p}); }
  id exp(id p) const { return mb.ext(f32, glsl::exp, {p}); }
  /// kf_tanh (shaders/common.hpp): Cephes' polynomial below 0.625, 1 - 2/(exp(2|x|)+1) above.
  id tanh(id v) const {
    const id a = abs(v), z = mul(v, v);
    id p = c(-5.70498872745e-3f);
    for (float k : {2.06390887954e-2f, -5.37397155531e-2f, 1.33314422036e-1f, -3.33332819422e-1f}) p = add(mul(p, z), c(k));
    const id small = add(mul(mul(p, z), v), v);
    const id r = sub(c(1.0f), div(c(2.0f), add(exp(mul(c(2.0f), a)), c(1.0f))));
    return sel(lt(a, c(0.625f)), small, sel(lt(v, c(0.0f)), neg(r), r));
  }
  /// kf_erf: erfc(|x|) by Numerical Recipes' Chebyshev fit; erf = 1 - erfc with the sign of x.
  id erf(id v) const {
    const id z = abs(v);
    const id t = div(c(1.0f), add(c(1.0f), mul(c(0.5f), z)));
    id p = c(0.17087277f);
    for (float k : {-0.82215223f, 1.48851587f, -1.13520398f, 0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                    1.00002368f})
      p = add(c(k), mul(t, p));
    const id e = sub(c(1.0f), mul(t, exp(add(sub(neg(mul(z, z)), c(1.26551223f)), mul(t, p)))));
    return sel(lt(v, c(0.0f)), neg(e), e);
  }
  /// kf_bf16_bits (shaders/common.hpp) kept in f32: x rounded to the nearest even bf16 value, NaN
  /// -> quiet NaN of its sign (NVIDIA converts f32 matrices to bf16 toward zero, seen on the H100:
  /// a value rounded first converts exactly under any rounding mode).
  id round_bf16(id x) const {
    const id u32 = mb.type_uint();
    auto ui = [&](op o, id p, id q) { return mb.inst(o, u32, {p, q}); };
    const id u = mb.inst(op::bitcast, u32, {x});
    const id is_nan = mb.inst(op::u_greater_than, b, {ui(op::bitwise_and, u, mb.const_uint(0x7fffffffu)), mb.const_uint(0x7f800000u)});
    const id odd = ui(op::bitwise_and, ui(op::shift_right_logical, u, mb.const_uint(16)), mb.const_uint(1));
    const id rounded = ui(op::bitwise_and, ui(op::i_add, ui(op::i_add, u, mb.const_uint(0x7fffu)), odd), mb.const_uint(0xffff0000u));
    const id quiet = ui(op::bitwise_or, ui(op::bitwise_and, u, mb.const_uint(0x80000000u)), mb.const_uint(0x7fc00000u));
    return mb.inst(op::bitcast, f32, {mb.inst(op::select, u32, {is_nan, quiet, rounded})});
  }
  /// kf_apply for the activations a gemm epilogue fuses (relu and leaky_relu keep NaN:
  /// NVIDIA's compiler folds x < 0 ? 0 : x into max, which drops it).
  id activation(fn act, id x, id slope) const {
    const id nan = mb.inst(op::is_nan, b, {x});
    switch (act) {
      case fn::identity: return x;
      case fn::relu: {  // kf_apply's test on the bits: keeps NaN and -0, which NVIDIA's float compares do not
        const id u32 = mb.type_uint();
        auto ui = [&](op o, id p, id q) { return mb.inst(o, u32, {p, q}); };
        auto test = [&](op o, id p, id q) { return mb.inst(o, b, {p, q}); };
        const id u = mb.inst(op::bitcast, u32, {x}), a = ui(op::bitwise_and, u, mb.const_uint(0x7fffffffu));
        const id negative = mb.inst(op::logical_and, b, {test(op::i_not_equal, ui(op::shift_right_logical, u, mb.const_uint(31)), mb.const_uint(0)),
                                                         mb.inst(op::logical_and, b, {test(op::i_not_equal, a, mb.const_uint(0)),
                                                                                      test(op::u_less_than_equal, a, mb.const_uint(0x7f800000u))})});
        return mb.inst(op::bitcast, f32, {mb.inst(op::select, u32, {negative, mb.const_uint(0), u})});
      }
      case fn::leaky_relu: return sel(nan, x, sel(lt(x, c(0.0f)), mul(slope, x), x));
      case fn::gelu_tanh:
        return mul(mul(c(0.5f), x),
                   add(c(1.0f), tanh(mul(c(0.7978845608028654f), add(x, mul(c(0.044715f), mul(mul(x, x), x)))))));
      case fn::gelu_erf: return mul(mul(c(0.5f), x), add(c(1.0f), erf(mul(x, c(0.7071067811865476f)))));
      case fn::silu: return mul(x, div(c(1.0f), add(c(1.0f), exp(neg(x)))));
      default: break;
    }
    throw std::invalid_argument("kforge::vulkan::spirv: no gemm epilogue activation " + std::string(to_string(act)));
  }
};
}  // namespace detail

/// The SPIR-V (1.6) words of one variant.
inline std::vector<word> gemm_coopmat2(const gemm_coopmat2_spec& v) {
  module_builder mb;
  // The epilogue runs per element (alpha, beta·C, bias, activation) where it is more than alpha·acc,
  // and always for bf16 C: NVIDIA converts a f32 coopmat to bf16 rounding toward zero (seen on the
  // H100), so the epilogue rounds each value to the nearest even bf16 first, which any rounding mode
  // then converts exactly.
  const bool per_element = !v.split && (v.bf16 || v.bias || v.read_c || v.act != fn::identity);
  const bool bf16_out = v.bf16 && !v.split;  // C stored through a matrix of use A (see the top)
  if (bf16_out) detail::coopmat2_prelude(mb, v.bf16, {cap::cooperative_matrix_per_element_nv, cap::cooperative_matrix_conversions_nv});
  else if (per_element) detail::coopmat2_prelude(mb, v.bf16, {cap::cooperative_matrix_per_element_nv});
  else detail::coopmat2_prelude(mb, v.bf16, {});

  const id u32 = mb.type_uint(), f32 = mb.type_float(32), t16 = v.bf16 ? mb.type_bfloat16() : mb.type_float(16);
  const id v3u = mb.type_vector(u32, 3);

  auto buffer = [&](word binding, id elem, word stride, bool readonly) { return mb.storage_buffer(binding, elem, stride, readonly); };
  const id v4u = mb.type_vector(mb.type_uint(), 4);
  const id ab_t = v.vec_pointers ? v4u : t16;
  const word ab_stride = v.vec_pointers ? 16 : 2;
  const id buf_a = buffer(0, ab_t, ab_stride, true), buf_b = buffer(1, ab_t, ab_stride, true),
           buf_bias = buffer(2, t16, 2, true);
  const id buf_c = v.split ? buffer(3, f32, 4, false) : buffer(3, t16, 2, false);
  const id push_t = mb.type_struct({u32, u32, u32, f32, f32, f32});
  mb.decorate(push_t, decoration::block);
  for (word i = 0; i < 6; ++i) mb.member_decorate(push_t, i, decoration::offset, {4 * i});
  const id push = mb.global(storage::push_constant, push_t);
  const id wg_id = mb.builtin_input(builtin::workgroup_id, v3u);
  const id num_wg = mb.builtin_input(builtin::num_workgroups, v3u);

  // Specialization constants: local size x (0), BM (1), BN (2), BK (3), group_m (4); the
  // local size comes first: workgroup-scope matrix types need it declared before them.
  const id wg_x = mb.spec_uint(0, 256);
  const id bm = mb.spec_uint(1, 128), bn = mb.spec_uint(2, 128), bk = mb.spec_uint(3, 32), group_m = mb.spec_uint(4, 8);
  const id zero = mb.const_uint(0), one = mb.const_uint(1);

  const id scope_wg = mb.const_uint(static_cast<word>(scope::workgroup));
  const id mat_a = mb.type_coopmat(t16, scope_wg, bm, bk, mb.const_uint(use_a));
  const id mat_b = mb.type_coopmat(t16, scope_wg, bk, bn, mb.const_uint(use_b));
  const id acc_t = mb.type_coopmat(f32, scope_wg, bm, bn, mb.const_uint(use_accumulator));
  const id out_t = v.split ? acc_t : mb.type_coopmat(t16, scope_wg, bm, bn, mb.const_uint(bf16_out ? use_a : use_accumulator));
  const id layout_t = mb.type_tensor_layout(mb.const_uint(2), mb.const_uint(clamp_constant));
  const id zero16 = mb.const_bits(t16, 0);
  const id zero_a = mb.const_composite(mat_a, {zero16}), zero_b = mb.const_composite(mat_b, {zero16});
  const id zero_acc = mb.const_composite(acc_t, {mb.const_float(0.0f)});
  const id ptr_sb16 = mb.type_pointer(storage::storage_buffer, t16);

  // The epilogue callback: (row, col, acc, alpha, beta, slope, m0, n0, M, N) -> f32.
  id epilogue = 0;
  if (per_element) {
    const id fty = mb.type_function(f32, {u32, u32, f32, f32, f32, f32, u32, u32, u32, u32});
    epilogue = mb.begin_function(f32, fty);
    const id row = mb.param(u32), col = mb.param(u32), acc = mb.param(f32), alpha = mb.param(f32), beta = mb.param(f32),
             slope = mb.param(f32), m0 = mb.param(u32), n0 = mb.param(u32), mm = mb.param(u32), nn = mb.param(u32);
    mb.label(mb.new_label());
    detail::fmath f{mb};
    auto ui = [&](op o, id p, id q) { return mb.inst(o, u32, {p, q}); };
    auto umin = [&](id p, id q) { return mb.ext(u32, glsl::umin, {p, q}); };
    // Elements outside C are computed too (the store drops them): their indices are clamped.
    const id gm = ui(op::i_add, m0, row), gn = ui(op::i_add, n0, col);
    auto read16 = [&](id buf, id index) { return mb.inst(op::f_convert, f32, {mb.load(t16, mb.access(ptr_sb16, buf, {zero, index}))}); };
    id x = f.mul(acc, alpha);
    if (v.read_c) {
      // beta·C only inside C: C elsewhere may be another workgroup's tile, being written.
      const id cvar = mb.local(f32);
      mb.store(cvar, f.c(0.0f));
      const id inside = mb.inst(op::logical_and, f.b, {mb.inst(op::u_less_than, f.b, {gm, mm}), mb.inst(op::u_less_than, f.b, {gn, nn})});
      mb.if_then(inside, [&] { mb.store(cvar, read16(buf_c, ui(op::i_add, ui(op::i_mul, gm, nn), gn))); });
      x = f.add(x, f.mul(beta, mb.load(f32, cvar)));
    }
    // Columns past N read the last bias (their results are dropped by the store).
    if (v.bias) x = f.add(x, read16(buf_bias, umin(gn, ui(op::i_sub, nn, one))));
    x = f.activation(v.act, x, slope);
    if (v.bf16) x = f.round_bf16(x);
    mb.inst_void(op::return_value, {x});
    mb.end_function();
  }

  const id void_t = mb.type_void();
  const id main_fn = mb.begin_function(void_t, mb.type_function(void_t, {}));
  mb.label(mb.new_label());
  const id ptr_push_u = mb.type_pointer(storage::push_constant, u32), ptr_push_f = mb.type_pointer(storage::push_constant, f32);
  auto push_u = [&](word i) { return mb.load(u32, mb.access(ptr_push_u, push, {mb.const_uint(i)})); };
  auto push_f = [&](word i) { return mb.load(f32, mb.access(ptr_push_f, push, {mb.const_uint(i)})); };
  auto ui = [&](op o, id p, id q) { return mb.inst(o, u32, {p, q}); };
  auto umin = [&](id p, id q) { return mb.ext(u32, glsl::umin, {p, q}); };
  auto extract = [&](id vec, word i) { return mb.inst(op::composite_extract, u32, {vec, i}); };
  const id m = push_u(0), n = push_u(1), k = push_u(2);
  const id wid = mb.load(v3u, wg_id), nwg = mb.load(v3u, num_wg);
  const id gx = extract(wid, 0), gy = extract(wid, 1), gz = extract(wid, 2);
  const id nx = extract(nwg, 0), ny = extract(nwg, 1), nz = extract(nwg, 2);
  // Grouped tile order (kf_tile_of_group; group_m >= 1, and 1 is row-major).
  const id flat = ui(op::i_add, ui(op::i_mul, gy, nx), gx);
  const id width = ui(op::i_mul, group_m, nx), first = ui(op::i_mul, ui(op::u_div, flat, width), group_m);
  const id rows = umin(ui(op::i_sub, ny, first), group_m), r = ui(op::u_mod, flat, width);
  const id m0 = ui(op::i_mul, ui(op::i_add, first, ui(op::u_mod, r, rows)), bm);
  const id n0 = ui(op::i_mul, ui(op::u_div, r, rows), bn);
  // K range of this split, [k_off, k_off + k_len) (kf_split_k with align = BK). A split reads its K range
  // as a matrix of its own: A and B from pointers advanced to its first column (row of B), K
  // coordinates from 0 to the range's length. (Slicing the whole matrices at K offsets k_off + ...
  // instead ran 3-4x slower per FLOP on the H100/H200, driver 580: 512x6144x4096 128x128 split 2
  // 0.57 ms against 0.15; docs/bench/HISTORY.md.)
  id k_off = zero, k_len = k;
  if (v.split) {
    const id chunk0 = ui(op::u_div, ui(op::i_sub, ui(op::i_add, k, nz), one), nz);
    const id chunk = ui(op::i_mul, ui(op::u_div, ui(op::i_sub, ui(op::i_add, chunk0, bk), one), bk), bk);
    k_off = umin(k, ui(op::i_mul, gz, chunk));
    k_len = ui(op::i_sub, umin(k, ui(op::i_add, k_off, chunk)), k_off);
  }
  // Row-major layouts of dims (d0, d1) and row stride `ld`, of layout type `lt`.
  auto layout_of = [&](id lt, id d0, id d1, id ld) {
    const id l0 = mb.inst(op::create_tensor_layout_nv, lt, {});
    const id l1 = mb.inst(op::tensor_layout_set_dimension_nv, lt, {l0, d0, d1});
    return mb.inst(op::tensor_layout_set_stride_nv, lt, {l1, ld, one});
  };
  auto layout = [&](id d0, id d1, id ld) { return layout_of(layout_t, d0, d1, ld); };
  auto slice_of = [&](id lt, id l, id o0, id s0, id o1, id s1) {
    return mb.inst(op::tensor_layout_slice_nv, lt, {l, o0, s0, o1, s1});
  };
  const id ptr_ab = mb.type_pointer(storage::storage_buffer, ab_t);
  // (vec_pointers: in uvec4 elements; k_off is a multiple of BK >= 8.)
  const id vdiv = mb.const_uint(v.vec_pointers ? 8 : 1);
  const id a_off = v.split ? ui(op::u_div, k_off, vdiv) : zero;
  const id b_off = v.split ? ui(op::u_div, v.b_kmajor ? k_off : ui(op::i_mul, k_off, n), vdiv) : zero;
  const id pa = mb.access(ptr_ab, buf_a, {zero, a_off}), pb = mb.access(ptr_ab, buf_b, {zero, b_off});
  // B [N, K] read as K×N through a view that swaps the two coordinates.
  const id view_t = mb.type_tensor_view(mb.const_uint(2), mb.const_bool(false), {one, zero});
  const id bt_view = v.b_kmajor ? mb.inst(op::create_tensor_view_nv, view_t, {}) : 0;
  const id b_t = mb.type_bool();
  const id fast_t = mb.type_tensor_layout(mb.const_uint(2), mb.const_uint(clamp_undefined));
  const id mask = mb.const_uint(~7u);
  // One path through the kernel with its own accumulator: the K loop and the store. fast: the tile lies
  // inside M×N with rows aligned to 8 elements, so full K steps read through unclamped layouts (no bounds
  // checks) whose row strides are masked to multiples of 8 (so the driver can prove 16-byte alignment),
  // `unroll` steps per loop iteration; the last partial K step, and every step of an edge tile, read
  // through the clamped layouts (A's K dimension ends where the split does: past it, 0).
  auto path = [&](bool fast) {
    const id acc_var = mb.local(acc_t);
    mb.store(acc_var, zero_acc);
    auto step = [&](id lt, id la, id lb, id kk) {
      const id a = mb.inst(op::cooperative_matrix_load_tensor_nv, mat_a, {pa, zero_a, slice_of(lt, la, m0, bm, kk, bk), 0, 0});
      const id b = v.b_kmajor ? mb.inst(op::cooperative_matrix_load_tensor_nv, mat_b,
                                        {pb, zero_b, slice_of(lt, lb, n0, bn, kk, bk), 0, 1, bt_view})
                              : mb.inst(op::cooperative_matrix_load_tensor_nv, mat_b,
                                        {pb, zero_b, slice_of(lt, lb, kk, bk, n0, bn), 0, 0});
      mb.store(acc_var, mb.inst(op::cooperative_matrix_mul_add_khr, acc_t, {a, b, mb.load(acc_t, acc_var)}));
    };
    const id layout_a = layout(m, k_len, k), layout_b = v.b_kmajor ? layout(n, k_len, k) : layout(k_len, n, n);
    id from = zero;
    if (fast || v.unroll > 1) {
      const id lt = fast ? fast_t : layout_t;
      const id la = fast ? layout_of(fast_t, m, k_len, ui(op::bitwise_and, k, mask)) : layout_a;
      const id lb = !fast ? layout_b
                    : v.b_kmajor ? layout_of(fast_t, n, k_len, ui(op::bitwise_and, k, mask))
                                 : layout_of(fast_t, k_len, n, ui(op::bitwise_and, n, mask));
      const id span = ui(op::i_mul, bk, mb.const_uint(v.unroll));
      const id iters = ui(op::u_div, k_len, span);
      const id ivar = mb.local(u32);
      mb.for_loop(ivar, zero, iters, one, [&] {
        const id base = ui(op::i_mul, mb.load(u32, ivar), span);
        for (word j = 0; j < v.unroll; ++j) step(lt, la, lb, j ? ui(op::i_add, base, ui(op::i_mul, bk, mb.const_uint(j))) : base);
      });
      from = ui(op::i_mul, iters, span);
    }
    const id kvar = mb.local(u32);
    mb.for_loop(kvar, from, k_len, bk, [&] { step(layout_t, layout_a, layout_b, mb.load(u32, kvar)); });
    id res = mb.load(acc_t, acc_var);
    const id lt = fast ? fast_t : layout_t;
    const id lc = fast ? layout_of(fast_t, m, n, ui(op::bitwise_and, n, mask)) : layout(m, n, n);
    if (v.split) {
      // Raw partial sums of split z at [z][M][N]: split z's M×N block (from element z·M·N) as a 2-D
      // tensor, so a tile's rows past M are dropped instead of landing in the next split's rows.
      const id pp = mb.access(mb.type_pointer(storage::storage_buffer, f32), buf_c, {zero, ui(op::i_mul, gz, ui(op::i_mul, m, n))});
      mb.inst_void(op::cooperative_matrix_store_tensor_nv, {pp, res, slice_of(lt, lc, m0, bm, n0, bn), 0, 0});
      return;
    }
    const id alpha = push_f(3);
    if (per_element)
      res = mb.inst(op::cooperative_matrix_per_element_op_nv, acc_t, {res, epilogue, alpha, push_f(4), push_f(5), m0, n0, m, n});
    else
      res = mb.inst(op::matrix_times_scalar, acc_t, {res, alpha});
    res = mb.inst(op::f_convert, out_t, {res});
    mb.inst_void(op::cooperative_matrix_store_tensor_nv,
                 {mb.access(ptr_sb16, buf_c, {zero, zero}), res, slice_of(lt, lc, m0, bm, n0, bn), 0, 0});
  };
  if (!v.fast_path) {
    path(false);
  } else {
    auto ult = [&](op o, id p, id q) { return mb.inst(o, b_t, {p, q}); };
    const id low3 = mb.const_uint(7);
    const id inside = mb.inst(op::logical_and, b_t, {ult(op::u_less_than_equal, ui(op::i_add, m0, bm), m),
                                                    ult(op::u_less_than_equal, ui(op::i_add, n0, bn), n)});
    const id aligned = mb.inst(op::logical_and, b_t, {ult(op::i_equal, ui(op::bitwise_and, k, low3), zero),
                                                     ult(op::i_equal, ui(op::bitwise_and, n, low3), zero)});
    mb.if_then(mb.inst(op::logical_and, b_t, {inside, aligned}), [&] { path(true); }, [&] { path(false); });
  }
  mb.ret();
  mb.end_function();
  mb.entry_point(main_fn, mb.interface());
  mb.execution_mode_id(main_fn, 38, {wg_x, one, one});  // LocalSizeId
  return mb.words(0x00010600u);
}

}  // namespace kforge::vulkan::spirv
