// kforge/vulkan/spirv/checker.hpp — a structural check of the SPIR-V kforge
// emits itself (builder.hpp), run before any pipeline is made from it.
//
// Why: Debian 12's SPIRV-Tools (2023.1) and Vulkan validation layer
// (1.3.239) predate SPV_KHR_cooperative_matrix, SPV_NV_cooperative_matrix2,
// SPV_NV_tensor_addressing and SPV_KHR_bfloat16, so neither can read these
// modules ("Invalid capability"). The tests validate the builder's core
// encoding with SPIRV-Tools on modules that use only what it knows; this
// check covers the rest, for every instruction the builder can emit:
//   - header (magic, version <= 1.6, id bound), word counts, no overrun;
//   - the logical layout: sections in the specification's order, function
//     variables only at the start of a function's first block, every block
//     ended by one terminator, merge instructions right before it;
//   - every result id defined once and below the bound; every id operand
//     defined before its use (labels, decoration targets and functions named
//     by OpEntryPoint/OpExecutionMode may come later);
//   - the entry point lists every global variable;
//   - capabilities and extensions each instruction and type needs;
//   - cooperative-matrix typing: MulAdd's A (M×K, use A), B (K×N, use B),
//     C and result (M×N, accumulator), one scope, the same size ids;
//     tensor loads' Object typed as their result; a conversion keeps scope
//     and size, and its use but for accumulator to A or B (which needs
//     CooperativeMatrixConversionsNV; ConvertNV: only the use may change); a per-element op's
//     function takes (uint, uint, the component type, extras...) and returns
//     the component type (an extra of the matrix's type passes its element);
//     a reduction keeps the reduced dimension and combines two components.
// It reads the words with module.hpp (the reader the generation gate's
// analysis uses too) and throws shader_error naming the module, the
// instruction's word offset and what is wrong.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <map>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kforge/vulkan/error.hpp"
#include "kforge/vulkan/spirv/builder.hpp"
#include "kforge/vulkan/spirv/module.hpp"

namespace kforge::vulkan::spirv {

namespace detail {
/// Operand pattern of an instruction after word 0: T result type, R result,
/// i id defined before, L label / G target / F function (may come later),
/// l literal, s string; '*' repeats the next kind to the end, '?' makes it optional.
inline std::string_view operand_pattern(word opcode) {
  switch (static_cast<op>(opcode)) {
    case op::ext_inst_import: return "Rs";
    case op::ext_inst: return "TRil*i";
    case op::memory_model: return "ll";
    case op::entry_point: return "lFs*G";
    case op::execution_mode: return "Fl*l";
    case op::execution_mode_id: return "Fl*G";
    case op::capability: return "l";
    case op::extension: return "s";
    case op::type_void: case op::type_bool: return "R";
    case op::type_int: return "Rll";
    case op::type_float: return "Rl?l";
    case op::type_vector: return "Ril";
    case op::type_array: return "Rii";
    case op::type_runtime_array: return "Ri";
    case op::type_struct: return "R*i";
    case op::type_pointer: return "Rli";
    case op::type_function: return "Ri*i";
    case op::constant_true: case op::constant_false: return "TR";
    case op::constant: case op::spec_constant: return "TR*l";
    case op::constant_composite: case op::spec_constant_composite: return "TR*i";
    case op::spec_constant_op: return "TRl*i";
    case op::function: return "TRli";
    case op::function_parameter: return "TR";
    case op::function_end: return "";
    case op::function_call: return "TRi*i";
    case op::variable: return "TRl?i";
    case op::load: return "TRi*l";
    case op::store: return "ii*l";
    case op::access_chain: return "TRi*i";
    case op::decorate: return "Gl*l";
    case op::member_decorate: return "Gll*l";
    case op::composite_construct: return "TR*i";
    case op::composite_extract: return "TRi*l";
    case op::convert_f_to_u: case op::convert_u_to_f: case op::u_convert: case op::f_convert: case op::bitcast:
    case op::f_negate: case op::is_nan: case op::is_inf: case op::logical_not: return "TRi";
    case op::i_add: case op::f_add: case op::i_sub: case op::f_sub: case op::i_mul: case op::f_mul: case op::u_div:
    case op::f_div: case op::u_mod: case op::matrix_times_scalar: case op::logical_or: case op::logical_and:
    case op::i_equal: case op::i_not_equal: case op::u_greater_than: case op::u_greater_than_equal:
    case op::u_less_than: case op::u_less_than_equal: case op::f_ord_less_than: case op::f_ord_greater_than:
    case op::shift_right_logical: case op::shift_left_logical: case op::bitwise_or: case op::bitwise_and:
      return "TRii";
    case op::select: return "TRiii";
    case op::control_barrier: return "iii";
    case op::memory_barrier: return "ii";
    case op::loop_merge: return "LLl";
    case op::selection_merge: return "Ll";
    case op::label: return "R";
    case op::branch: return "L";
    case op::branch_conditional: return "iLL*l";
    case op::return_: return "";
    case op::return_value: return "i";
    case op::type_cooperative_matrix_khr: return "Riiiii";
    case op::cooperative_matrix_load_khr: return "TRii?i*l";
    case op::cooperative_matrix_store_khr: return "iii?i*l";
    case op::cooperative_matrix_mul_add_khr: return "TRiii?l";
    case op::cooperative_matrix_length_khr: return "TRi";
    case op::cooperative_matrix_reduce_nv: return "TRilF";
    case op::cooperative_matrix_load_tensor_nv: return "TRiiill*i";
    case op::cooperative_matrix_store_tensor_nv: return "iiill*i";
    case op::cooperative_matrix_per_element_op_nv: return "TRiF*i";
    case op::type_tensor_layout_nv: return "Rii";
    case op::type_tensor_view_nv: return "Rii*i";
    case op::create_tensor_layout_nv: case op::create_tensor_view_nv: return "TR";
    case op::tensor_layout_set_dimension_nv: case op::tensor_layout_set_stride_nv: case op::tensor_layout_slice_nv:
    case op::tensor_view_set_dimension_nv: case op::tensor_view_set_stride_nv: case op::tensor_layout_set_block_size_nv:
      return "TRi*i";
    case op::tensor_layout_set_clamp_value_nv: return "TRii";
    case op::tensor_view_set_clip_nv: return "TRiiiii";
    case op::cooperative_matrix_convert_nv: case op::cooperative_matrix_transpose_nv: return "TRi";
  }
  return {};
}

/// The section an opcode belongs to (the specification's logical layout).
inline int section_of(word opcode) {
  switch (static_cast<op>(opcode)) {
    case op::capability: return 0;
    case op::extension: return 1;
    case op::ext_inst_import: return 2;
    case op::memory_model: return 3;
    case op::entry_point: return 4;
    case op::execution_mode: case op::execution_mode_id: return 5;
    case op::decorate: case op::member_decorate: return 7;
    case op::function: return 9;
    default: break;
  }
  const word o = opcode;
  const bool type_or_constant = (o >= 19 && o <= 39) || (o >= 41 && o <= 52) || o == 4456 || o == 5370 || o == 5371;
  return type_or_constant ? 8 : 9;  // a global OpVariable is 8 too (see the caller)
}

inline bool is_terminator(word o) {
  return o == static_cast<word>(op::branch) || o == static_cast<word>(op::branch_conditional) ||
         o == static_cast<word>(op::return_) || o == static_cast<word>(op::return_value) || o == 255 /*OpUnreachable*/;
}
}  // namespace detail

/// Throws shader_error when `w` breaks a rule of the header comment.
inline void check_module(const std::string& name, const std::vector<word>& w) {
  auto fail = [&](std::size_t at, const std::string& what) {
    throw shader_error("kforge::vulkan: SPIR-V of '" + name + "' is malformed at word " + std::to_string(at) + ": " + what);
  };
  const module m(w, name);  // the header's magic number and every word count (module.hpp)
  if (w[1] > 0x00010600u || (w[1] & 0xff0000ffu)) fail(1, "version word " + std::to_string(w[1]) + " is not SPIR-V 1.0..1.6");
  const word bound = w[3];
  if (w[4] != 0) fail(4, "schema word is not 0");

  struct inst {
    std::size_t at;
    word opcode;
    std::span<const word> ops;  // the words after word 0
  };
  std::vector<inst> insts;
  insts.reserve(m.insts.size());
  for (const auto& in : m.insts) insts.push_back({in.at, in.op, std::span<const word>(w.data() + in.at + 1, in.n - 1)});

  // Pass 1: result ids, their instruction, and the kinds of operands.
  std::map<word, std::size_t> def;  // id -> index in insts
  std::vector<std::vector<std::pair<char, word>>> operands(insts.size());
  for (std::size_t n = 0; n < insts.size(); ++n) {
    const inst& x = insts[n];
    const std::string_view pat = detail::operand_pattern(x.opcode);
    if (pat.empty() && x.opcode != static_cast<word>(op::function_end) && x.opcode != static_cast<word>(op::return_))
      fail(x.at, "opcode " + std::to_string(x.opcode) + " is not one kforge's builder emits");
    std::size_t k = 0;
    for (std::size_t p = 0; p < pat.size(); ++p) {
      char kind = pat[p];
      const bool repeat = kind == '*', optional = kind == '?';
      if (repeat || optional) kind = pat[++p];
      if (kind == 's') {
        std::size_t e = k;
        while (e < x.ops.size() && (x.ops[e] >> 24) != 0 && (x.ops[e] & 0xff) && ((x.ops[e] >> 8) & 0xff) &&
               ((x.ops[e] >> 16) & 0xff))
          ++e;
        if (e >= x.ops.size()) fail(x.at, "unterminated string literal");
        k = e + 1;
        continue;
      }
      do {
        if (k >= x.ops.size()) {
          if (repeat || optional) break;
          fail(x.at, "opcode " + std::to_string(x.opcode) + " has too few operands");
        }
        operands[n].push_back({kind, x.ops[k++]});
      } while (repeat && k < x.ops.size());
    }
    if (k != x.ops.size()) fail(x.at, "opcode " + std::to_string(x.opcode) + " has " + std::to_string(x.ops.size() - k) + " extra words");
    for (auto [kind, v] : operands[n])
      if (kind == 'R') {
        if (v == 0 || v >= bound) fail(x.at, "result id " + std::to_string(v) + " outside 1.." + std::to_string(bound - 1));
        if (!def.emplace(v, n).second) fail(x.at, "id " + std::to_string(v) + " defined twice");
      }
  }
  auto def_of = [&](word id) -> const inst* {
    const auto it = def.find(id);
    return it == def.end() ? nullptr : &insts[it->second];
  };
  auto result_type = [&](word id) -> word {
    const auto it = def.find(id);
    if (it == def.end()) return 0;
    for (auto [kind, v] : operands[it->second])
      if (kind == 'T') return v;
    return 0;
  };

  // Pass 2: order, definitions before use, blocks.
  std::set<word> caps, used_globals, interface;
  std::set<std::string> exts;
  int section = 0;
  bool in_function = false, in_block = false, seen_non_variable = false;
  std::size_t first_block = 0;
  int merges_pending = 0;
  for (std::size_t n = 0; n < insts.size(); ++n) {
    const inst& x = insts[n];
    const word o = x.opcode;
    int s = detail::section_of(o);
    if (o == static_cast<word>(op::variable) && !in_function) s = 8;
    if (in_function) s = 9;
    if (s < section) fail(x.at, "opcode " + std::to_string(o) + " out of the module's section order");
    section = s;
    if (o == static_cast<word>(op::capability)) caps.insert(x.ops[0]);
    if (o == static_cast<word>(op::extension)) exts.insert(std::string(reinterpret_cast<const char*>(x.ops.data())));
    if (o == static_cast<word>(op::entry_point))
      for (auto [kind, v] : operands[n])
        if (kind == 'G') interface.insert(v);
    for (auto [kind, v] : operands[n]) {
      if (kind == 'T' || kind == 'i') {
        const auto it = def.find(v);
        if (it == def.end() || it->second >= n) fail(x.at, "id " + std::to_string(v) + " used before it is defined");
        const inst& d = insts[it->second];
        if (in_function && d.opcode == static_cast<word>(op::variable) && d.ops[2] != static_cast<word>(storage::function))
          used_globals.insert(v);
      } else if (kind == 'L' || kind == 'F' || kind == 'G') {
        if (!def.count(v)) fail(x.at, "id " + std::to_string(v) + " is never defined");
      }
    }
    // Blocks.
    if (o == static_cast<word>(op::function)) {
      if (in_function) fail(x.at, "OpFunction inside a function");
      in_function = true, in_block = false, first_block = 0, seen_non_variable = false;
      continue;
    }
    if (!in_function) continue;
    if (o == static_cast<word>(op::function_parameter)) {
      if (in_block) fail(x.at, "OpFunctionParameter after the first block began");
      continue;
    }
    if (o == static_cast<word>(op::function_end)) {
      if (in_block) fail(x.at, "a block is not terminated before OpFunctionEnd");
      in_function = false;
      continue;
    }
    if (o == static_cast<word>(op::label)) {
      if (in_block) fail(x.at, "OpLabel inside an unterminated block");
      in_block = true, merges_pending = 0;
      ++first_block;
      continue;
    }
    if (!in_block) fail(x.at, "instruction outside any block");
    if (o == static_cast<word>(op::variable)) {
      if (x.ops[2] != static_cast<word>(storage::function)) fail(x.at, "global variable inside a function");
      if (first_block != 1 || seen_non_variable) fail(x.at, "function variable not at the start of the first block");
      continue;
    }
    seen_non_variable = true;
    if (merges_pending) {
      if (!detail::is_terminator(o)) fail(x.at, "a merge instruction is not immediately followed by a branch");
    }
    if (o == static_cast<word>(op::loop_merge) || o == static_cast<word>(op::selection_merge)) merges_pending = 1;
    if (detail::is_terminator(o)) in_block = false;
  }
  if (in_function) fail(w.size(), "unterminated function");
  for (word g : used_globals)
    if (!interface.count(g)) fail(0, "global variable " + std::to_string(g) + " is used but not in the entry point's interface");

  // Capabilities and extensions.
  auto need = [&](std::size_t at, word cap, const char* what) {
    if (!caps.count(cap)) fail(at, std::string(what) + " needs capability " + std::to_string(cap));
  };
  auto need_ext = [&](std::size_t at, const char* ext, const char* what) {
    if (!exts.count(ext)) fail(at, std::string(what) + " needs extension " + ext);
  };
  auto is_type = [&](word id, op o) { const inst* d = def_of(id); return d && d->opcode == static_cast<word>(o); };
  for (std::size_t n = 0; n < insts.size(); ++n) {
    const inst& x = insts[n];
    const op o = static_cast<op>(x.opcode);
    if (o == op::type_float && x.ops.size() == 3) {
      if (x.ops[2] != 0) fail(x.at, "unknown floating-point encoding " + std::to_string(x.ops[2]));
      need(x.at, 5116, "a bfloat16 type"), need_ext(x.at, "SPV_KHR_bfloat16", "a bfloat16 type");
    }
    if (o == op::type_float && x.ops.size() == 2 && x.ops[1] == 16 && !caps.count(9) && !caps.count(4433))
      fail(x.at, "a 16-bit float type needs Float16 or StorageBuffer16BitAccess");
    const word code = x.opcode;
    if (code >= 4456 && code <= 4460) need(x.at, 6022, "a cooperative matrix"), need_ext(x.at, "SPV_KHR_cooperative_matrix", "a cooperative matrix");
    if ((code >= 5370 && code <= 5384) || code == 5367 || code == 5368) {
      need(x.at, 5439, "tensor addressing"), need_ext(x.at, "SPV_NV_tensor_addressing", "tensor addressing");
      need_ext(x.at, "SPV_NV_cooperative_matrix2", "tensor addressing");
    }
    if (code == 5367 || code == 5368) need(x.at, 5433, "a tensor load or store");
    if (code == 5369) need(x.at, 5432, "a per-element operation"), need_ext(x.at, "SPV_NV_cooperative_matrix2", "a per-element operation");
    if (code == 5366) need(x.at, 5430, "a reduction");
    if (code == 5293 || code == 5390) need(x.at, 5431, "a matrix conversion");
    if (o == op::type_cooperative_matrix_khr) {
      const inst* comp = def_of(x.ops[1]);
      if (comp && comp->opcode == static_cast<word>(op::type_float) && comp->ops.size() == 3)
        need(x.at, 5118, "a bfloat16 cooperative matrix");
    }
  }

  // Cooperative-matrix typing.
  struct cm {
    word comp = 0, scope = 0, rows = 0, cols = 0, use = 0;
  };
  auto coopmat_of = [&](word type, std::size_t at) {
    const inst* d = def_of(type);
    if (!d || d->opcode != static_cast<word>(op::type_cooperative_matrix_khr))
      fail(at, "id " + std::to_string(type) + " is not a cooperative-matrix type");
    return cm{d->ops[1], d->ops[2], d->ops[3], d->ops[4], d->ops[5]};
  };
  // A constant's value (a specialization constant's id stands for itself).
  auto value = [&](word id) -> std::pair<bool, word> {
    const inst* d = def_of(id);
    if (d && d->opcode == static_cast<word>(op::constant) && d->ops.size() == 3) return {true, d->ops[2]};
    return {false, id};
  };
  auto same = [&](word a, word b) { return a == b || value(a) == value(b); };
  for (std::size_t n = 0; n < insts.size(); ++n) {
    const inst& x = insts[n];
    const op o = static_cast<op>(x.opcode);
    if (o == op::cooperative_matrix_mul_add_khr) {
      const cm r = coopmat_of(x.ops[0], x.at), a = coopmat_of(result_type(x.ops[2]), x.at),
               b = coopmat_of(result_type(x.ops[3]), x.at), c = coopmat_of(result_type(x.ops[4]), x.at);
      if (result_type(x.ops[4]) != x.ops[0]) fail(x.at, "MulAdd: C and the result differ in type");
      if (value(a.use).second != use_a || value(b.use).second != use_b || value(c.use).second != use_accumulator)
        fail(x.at, "MulAdd: operands' uses are not A, B, accumulator");
      if (!same(a.rows, c.rows) || !same(b.cols, c.cols) || !same(a.cols, b.rows))
        fail(x.at, "MulAdd: A is not M×K, B K×N and C M×N");
      if (!same(a.scope, b.scope) || !same(a.scope, c.scope) || !same(r.scope, c.scope)) fail(x.at, "MulAdd: scopes differ");
    } else if (o == op::cooperative_matrix_load_tensor_nv) {
      coopmat_of(x.ops[0], x.at);
      if (result_type(x.ops[3]) != x.ops[0]) fail(x.at, "LoadTensor: Object is not of the result type");
      if (!is_type(result_type(x.ops[4]), op::type_tensor_layout_nv)) fail(x.at, "LoadTensor: operand is not a tensor layout");
    } else if (o == op::cooperative_matrix_store_tensor_nv) {
      coopmat_of(result_type(x.ops[1]), x.at);
      if (!is_type(result_type(x.ops[2]), op::type_tensor_layout_nv)) fail(x.at, "StoreTensor: operand is not a tensor layout");
    } else if (o == op::f_convert || o == op::matrix_times_scalar) {
      const inst* rt = def_of(x.ops[0]);
      if (rt && rt->opcode == static_cast<word>(op::type_cooperative_matrix_khr)) {
        const cm r = coopmat_of(x.ops[0], x.at), s = coopmat_of(result_type(x.ops[2]), x.at);
        if (!same(r.scope, s.scope) || !same(r.rows, s.rows) || !same(r.cols, s.cols))
          fail(x.at, "a matrix conversion or scaling changes scope or size");
        // A conversion may also change the use, accumulator to A or B (CooperativeMatrixConversionsNV).
        if (!same(r.use, s.use) &&
            (o != op::f_convert || value(s.use).second != use_accumulator || value(r.use).second == use_accumulator))
          fail(x.at, "a matrix conversion or scaling changes the use (only a conversion, accumulator to A or B)");
        if (!same(r.use, s.use)) need(x.at, 5431, "a conversion that changes a matrix's use");
        if (o == op::matrix_times_scalar && result_type(x.ops[3]) != r.comp)
          fail(x.at, "MatrixTimesScalar: the scalar is not of the component type");
      }
    } else if (o == op::cooperative_matrix_per_element_op_nv) {
      const cm r = coopmat_of(x.ops[0], x.at);
      if (result_type(x.ops[2]) != x.ops[0]) fail(x.at, "PerElementOp: the matrix is not of the result type");
      const inst* f = def_of(x.ops[3]);
      const inst* ft = f ? def_of(f->ops[3]) : nullptr;
      if (!f || f->opcode != static_cast<word>(op::function) || !ft) fail(x.at, "PerElementOp: operand is not a function");
      const std::span<const word> sig = ft->ops;  // result, return type, params...
      const word u32 = [&] {
        for (const auto& [id, idx] : def)
          if (insts[idx].opcode == static_cast<word>(op::type_int) && insts[idx].ops[1] == 32 && insts[idx].ops[2] == 0) return id;
        return word{0};
      }();
      if (sig.size() != 5 + (x.ops.size() - 4) || sig[1] != r.comp || sig[2] != u32 || sig[3] != u32 || sig[4] != r.comp)
        fail(x.at, "PerElementOp: the function is not (uint row, uint col, component, extras...) -> component");
      // An extra operand of the matrix's own type passes its element at (row, col).
      for (std::size_t e = 4; e < x.ops.size(); ++e)
        if (sig[5 + (e - 4)] != result_type(x.ops[e]) && !(result_type(x.ops[e]) == x.ops[0] && sig[5 + (e - 4)] == r.comp))
          fail(x.at, "PerElementOp: an extra operand's type differs from its parameter");
    } else if (o == op::cooperative_matrix_reduce_nv) {
      const cm r = coopmat_of(x.ops[0], x.at), s = coopmat_of(result_type(x.ops[2]), x.at);
      if (value(r.use).second != use_accumulator || !same(r.comp, s.comp) || !same(r.scope, s.scope))
        fail(x.at, "Reduce: the result is not an accumulator of the matrix's component type and scope");
      if ((x.ops[3] & reduce_row) && !same(r.rows, s.rows)) fail(x.at, "Reduce: a row reduction changes the row count");
      if ((x.ops[3] & reduce_column) && !same(r.cols, s.cols)) fail(x.at, "Reduce: a column reduction changes the column count");
      const inst* f = def_of(x.ops[4]);
      const inst* ft = f ? def_of(f->ops[3]) : nullptr;
      if (!f || !ft || ft->ops.size() != 4 || ft->ops[1] != r.comp || ft->ops[2] != r.comp || ft->ops[3] != r.comp)
        fail(x.at, "Reduce: the combining function is not (component, component) -> component");
    } else if (o == op::cooperative_matrix_convert_nv) {
      const cm r = coopmat_of(x.ops[0], x.at), s = coopmat_of(result_type(x.ops[2]), x.at);
      if (!same(r.comp, s.comp) || !same(r.scope, s.scope) || !same(r.rows, s.rows) || !same(r.cols, s.cols))
        fail(x.at, "ConvertNV: component type, scope or size differ (only the use may change)");
    }
  }
}

}  // namespace kforge::vulkan::spirv
