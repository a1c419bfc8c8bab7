// kforge/vulkan/spirv/builder.hpp — a small typed SPIR-V module builder.
//
// Why it exists: the tensor-core instructions newer drivers offer
// (SPV_KHR_cooperative_matrix, SPV_NV_cooperative_matrix2 with workgroup-scope
// matrices and tensor addressing, SPV_KHR_bfloat16) cannot be reached from
// GLSL with Debian 12's glslang 12, which compiles only
// GL_NV_cooperative_matrix. kforge emits the SPIR-V of those kernels itself
// (vulkan/spirv/gemm_coopmat2.hpp) with this builder; every other kernel stays
// GLSL.
//
// What it does: hands out result ids; interns types and constants (asking for
// the same type twice gives the same id); keeps the module's sections in the
// order the SPIR-V specification requires (capabilities, extensions,
// imports, memory model, entry point, execution modes, annotations, types /
// constants / globals, functions) and writes the words. Function-local
// variables are hoisted to the first block, as SPIR-V wants. Structured
// control flow (a counted loop, an if) comes as helpers that emit the merge
// instructions the specification requires.
//
// What it does not do: check that a program is meaningful. checker.hpp is a
// separate structural check of the words it writes (ids defined once and
// before use, word counts, sections in order); SPIRV-Tools validates modules
// that use only instructions its Debian release knows (the tests do).
//
// Numbers are those of the SPIR-V 1.6 unified specification and its
// extensions (SPIRV-Headers' spirv.core.grammar.json).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kforge::vulkan::spirv {

using id = std::uint32_t;
using word = std::uint32_t;

/// The opcodes the builder emits.
enum class op : std::uint16_t {
  ext_inst_import = 11,
  ext_inst = 12,
  memory_model = 14,
  entry_point = 15,
  execution_mode = 16,
  capability = 17,
  extension = 10,
  type_void = 19,
  type_bool = 20,
  type_int = 21,
  type_float = 22,
  type_vector = 23,
  type_array = 28,
  type_runtime_array = 29,
  type_struct = 30,
  type_pointer = 32,
  type_function = 33,
  constant_true = 41,
  constant_false = 42,
  constant = 43,
  constant_composite = 44,
  spec_constant = 50,
  spec_constant_composite = 51,
  spec_constant_op = 52,
  function = 54,
  function_parameter = 55,
  function_end = 56,
  function_call = 57,
  variable = 59,
  load = 61,
  store = 62,
  access_chain = 65,
  decorate = 71,
  member_decorate = 72,
  composite_construct = 80,
  composite_extract = 81,
  convert_f_to_u = 109,
  convert_u_to_f = 112,
  u_convert = 113,
  f_convert = 115,
  bitcast = 124,
  f_negate = 127,
  i_add = 128,
  f_add = 129,
  i_sub = 130,
  f_sub = 131,
  i_mul = 132,
  f_mul = 133,
  u_div = 134,
  f_div = 136,
  u_mod = 137,
  matrix_times_scalar = 143,
  is_nan = 156,
  is_inf = 157,
  logical_or = 166,
  logical_and = 167,
  logical_not = 168,
  select = 169,
  i_equal = 170,
  i_not_equal = 171,
  u_greater_than = 172,
  u_greater_than_equal = 174,
  u_less_than = 176,
  u_less_than_equal = 178,
  f_ord_less_than = 184,
  f_ord_greater_than = 186,
  shift_right_logical = 194,
  shift_left_logical = 196,
  bitwise_or = 197,
  bitwise_and = 199,
  control_barrier = 224,
  memory_barrier = 225,
  loop_merge = 246,
  selection_merge = 247,
  label = 248,
  branch = 249,
  branch_conditional = 250,
  return_ = 253,
  return_value = 254,
  execution_mode_id = 331,
  // SPV_KHR_cooperative_matrix
  type_cooperative_matrix_khr = 4456,
  cooperative_matrix_load_khr = 4457,
  cooperative_matrix_store_khr = 4458,
  cooperative_matrix_mul_add_khr = 4459,
  cooperative_matrix_length_khr = 4460,
  // SPV_NV_cooperative_matrix2 / SPV_NV_tensor_addressing
  cooperative_matrix_reduce_nv = 5366,
  cooperative_matrix_load_tensor_nv = 5367,
  cooperative_matrix_store_tensor_nv = 5368,
  cooperative_matrix_per_element_op_nv = 5369,
  type_tensor_layout_nv = 5370,
  type_tensor_view_nv = 5371,
  create_tensor_layout_nv = 5372,
  tensor_layout_set_dimension_nv = 5373,
  tensor_layout_set_stride_nv = 5374,
  tensor_layout_slice_nv = 5375,
  tensor_layout_set_clamp_value_nv = 5376,
  create_tensor_view_nv = 5377,
  tensor_view_set_dimension_nv = 5378,
  tensor_view_set_stride_nv = 5379,
  tensor_view_set_clip_nv = 5382,
  tensor_layout_set_block_size_nv = 5384,
  cooperative_matrix_convert_nv = 5293,
  cooperative_matrix_transpose_nv = 5390,
};

enum class storage : word {
  uniform_constant = 0,
  input = 1,
  uniform = 2,
  workgroup = 4,
  function = 7,
  push_constant = 9,
  storage_buffer = 12,
};

enum class decoration : word {
  spec_id = 1,
  block = 2,
  array_stride = 6,
  builtin = 11,
  non_writable = 24,
  non_readable = 25,
  binding = 33,
  descriptor_set = 34,
  offset = 35,
};

enum class builtin : word {
  num_workgroups = 24,
  workgroup_size = 25,
  workgroup_id = 26,
  local_invocation_id = 27,
  global_invocation_id = 28,
  local_invocation_index = 29,
};

/// Scope values (also the component of cooperative-matrix types).
enum class scope : word { device = 1, workgroup = 2, subgroup = 3, invocation = 4 };

/// GLSL.std.450 extended instructions used by kforge's kernels.
enum class glsl : word { fabs = 4, exp = 27, exp2 = 29, fmin = 37, umin = 38, fmax = 40, umax = 41, fma = 50, nmin = 79, nmax = 80 };

/// Capability numbers (SPIR-V unified grammar).
namespace cap {
inline constexpr word shader = 1, float16 = 9, int16 = 22, storage_buffer_16bit = 4433, vulkan_memory_model = 5345;
inline constexpr word cooperative_matrix_khr = 6022;
inline constexpr word cooperative_matrix_reductions_nv = 5430, cooperative_matrix_conversions_nv = 5431, cooperative_matrix_per_element_nv = 5432,
                      cooperative_matrix_tensor_addressing_nv = 5433, tensor_addressing_nv = 5439;
inline constexpr word bfloat16_type_khr = 5116, bfloat16_cooperative_matrix_khr = 5118;
}  // namespace cap

/// TensorClampMode: Undefined (every access must be in bounds), or Constant
/// (out-of-bounds loads read the clamp value, 0 unless set; stores are dropped).
inline constexpr word clamp_undefined = 0, clamp_constant = 1;
/// CooperativeMatrixUse.
inline constexpr word use_a = 0, use_b = 1, use_accumulator = 2;
/// CooperativeMatrixReduce mask bits (SPV_NV_cooperative_matrix2).
inline constexpr word reduce_row = 1, reduce_column = 2;
/// Memory semantics: AcquireRelease | WorkgroupMemory (a workgroup barrier's).
inline constexpr word semantics_workgroup_acq_rel = 0x8 | 0x100;

/// A SPIR-V module under construction (see the header comment).
class module_builder {
 public:
  module_builder() = default;

  // ---- module-level declarations --------------------------------------------
  void capability(word c) {
    for (std::size_t i = 0; i < caps_.size(); i += 2)
      if (caps_[i + 1] == c) return;
    put(caps_, op::capability, {c});
  }
  void extension(std::string_view name) {
    if (!ext_names_.emplace(std::string(name), 0).second) return;
    std::vector<word> w = words_of(name);
    put(exts_, op::extension, w);
  }
  id glsl_std() {
    if (!glsl_) {
      glsl_ = next_++;
      std::vector<word> w{glsl_};
      const auto s = words_of("GLSL.std.450");
      w.insert(w.end(), s.begin(), s.end());
      put(imports_, op::ext_inst_import, w);
    }
    return glsl_;
  }
  /// OpMemoryModel Logical, Vulkan (the cooperative-matrix extensions require it).
  void memory_model_vulkan() {
    memory_model_.clear();
    put(memory_model_, op::memory_model, {0, 3});
  }
  /// OpEntryPoint GLCompute fn "main" interface...
  void entry_point(id fn, const std::vector<id>& interface) {
    std::vector<word> w{5, fn};
    const auto s = words_of("main");
    w.insert(w.end(), s.begin(), s.end());
    w.insert(w.end(), interface.begin(), interface.end());
    entry_.clear();
    put(entry_, op::entry_point, w);
  }
  void decorate(id target, decoration d, std::initializer_list<word> literals = {}) {
    std::vector<word> w{target, static_cast<word>(d)};
    w.insert(w.end(), literals);
    put(annotations_, op::decorate, w);
  }
  void member_decorate(id type, word member, decoration d, std::initializer_list<word> literals = {}) {
    std::vector<word> w{type, member, static_cast<word>(d)};
    w.insert(w.end(), literals);
    put(annotations_, op::member_decorate, w);
  }

  // ---- types (interned) ------------------------------------------------------
  id type_void() { return intern(op::type_void, {}); }
  id type_bool() { return intern(op::type_bool, {}); }
  id type_uint() { return intern(op::type_int, {32, 0}); }
  id type_int() { return intern(op::type_int, {32, 1}); }
  id type_float(word width) { return intern(op::type_float, {width}); }
  /// bfloat16: OpTypeFloat 16 with FP encoding BFloat16KHR (SPV_KHR_bfloat16).
  id type_bfloat16() { return intern(op::type_float, {16, 0}); }
  id type_vector(id component, word n) { return intern(op::type_vector, {component, n}); }
  id type_array(id element, id length_constant) { return intern(op::type_array, {element, length_constant}); }
  /// Runtime arrays are not interned: each gets its own ArrayStride decoration.
  id type_runtime_array(id element, word stride) {
    const id t = fresh_type(op::type_runtime_array, {element});
    decorate(t, decoration::array_stride, {stride});
    return t;
  }
  /// A new struct type (never interned: structs carry their own decorations).
  id type_struct(const std::vector<id>& members) { return fresh_type(op::type_struct, members); }
  id type_pointer(storage sc, id pointee) { return intern(op::type_pointer, {static_cast<word>(sc), pointee}); }
  id type_function(id ret, const std::vector<id>& params) {
    std::vector<word> w{ret};
    w.insert(w.end(), params.begin(), params.end());
    return intern(op::type_function, w);
  }
  /// Cooperative matrix: use 0 = A, 1 = B, 2 = accumulator.
  id type_coopmat(id component, id scope_const, id rows_const, id cols_const, id use_const) {
    return intern(op::type_cooperative_matrix_khr, {component, scope_const, rows_const, cols_const, use_const});
  }
  id type_tensor_layout(id dim_const, id clamp_mode_const) {
    return intern(op::type_tensor_layout_nv, {dim_const, clamp_mode_const});
  }
  id type_tensor_view(id dim_const, id has_dimensions_const, const std::vector<id>& permutation) {
    std::vector<word> w{dim_const, has_dimensions_const};
    w.insert(w.end(), permutation.begin(), permutation.end());
    return intern(op::type_tensor_view_nv, w);
  }

  // ---- constants (interned) --------------------------------------------------
  id const_uint(word v) { return intern(op::constant, {type_uint(), v}); }
  id const_int(std::int32_t v) { return intern(op::constant, {type_int(), static_cast<word>(v)}); }
  id const_float(float v) {
    word b;
    std::memcpy(&b, &v, 4);
    return intern(op::constant, {type_float(32), b});
  }
  id const_bool(bool v) { return intern(v ? op::constant_true : op::constant_false, {type_bool()}); }
  /// A constant of scalar `type` from its bits (16-bit types: the value in the low half).
  id const_bits(id type, word bits) { return intern(op::constant, {type, bits}); }
  id const_composite(id type, const std::vector<id>& parts) {
    std::vector<word> w{type};
    w.insert(w.end(), parts.begin(), parts.end());
    return intern(op::constant_composite, w);
  }
  /// A 32-bit unsigned specialization constant with SpecId `spec_id` (not interned).
  id spec_uint(word spec_id, word default_value) {
    const id r = next_++;
    put(globals_, op::spec_constant, {type_uint(), r, default_value});
    decorate(r, decoration::spec_id, {spec_id});
    return r;
  }
  id spec_composite(id type, const std::vector<id>& parts) {
    const id r = next_++;
    std::vector<word> w{type, r};
    w.insert(w.end(), parts.begin(), parts.end());
    put(globals_, op::spec_constant_composite, w);
    return r;
  }
  /// OpSpecConstantOp: a constant computed from (specialization) constants.
  id spec_op(id type, op o, const std::vector<id>& operands) {
    const id r = next_++;
    std::vector<word> w{type, r, static_cast<word>(o)};
    w.insert(w.end(), operands.begin(), operands.end());
    put(globals_, op::spec_constant_op, w);
    return r;
  }

  /// A global variable (its id goes into the entry point's interface).
  id global(storage sc, id pointee) {
    const id r = next_++;
    put(globals_, op::variable, {type_pointer(sc, pointee), r, static_cast<word>(sc)});
    interface_.push_back(r);
    return r;
  }
  /// A storage buffer `struct { elem data[]; }` (array stride `stride`) in set 0 at `binding`.
  id storage_buffer(word binding, id elem, word stride, bool readonly) {
    const id st = type_struct({type_runtime_array(elem, stride)});
    decorate(st, decoration::block);
    member_decorate(st, 0, decoration::offset, {0});
    if (readonly) member_decorate(st, 0, decoration::non_writable);
    const id var = global(storage::storage_buffer, st);
    decorate(var, decoration::descriptor_set, {0});
    decorate(var, decoration::binding, {binding});
    return var;
  }
  /// A variable decorated as built-in input `b`.
  id builtin_input(builtin b, id type) {
    const id v = global(storage::input, type);
    decorate(v, decoration::builtin, {static_cast<word>(b)});
    return v;
  }
  const std::vector<id>& interface() const { return interface_; }

  // ---- functions ---------------------------------------------------------------
  /// Starts a function; returns its id. Parameters via param(); then label().
  id begin_function(id ret_type, id fn_type) {
    if (in_function_) throw std::logic_error("kforge::vulkan::spirv: nested function");
    in_function_ = true;
    const id f = next_++;
    fn_head_.clear(), fn_vars_.clear(), fn_body_.clear();
    put(fn_head_, op::function, {ret_type, f, 0, fn_type});
    first_label_ = true;
    return f;
  }
  /// A whole function: ret f(params...) { return body(parameter ids); } (body emits into its one
  /// entry block and may add structured control flow). Returns the function's id.
  template <class Body>
  id function(id ret, const std::vector<id>& params, Body&& body) {
    const id f = begin_function(ret, type_function(ret, params));
    std::vector<id> args;
    for (id t : params) args.push_back(param(t));
    label(new_label());
    const id r = body(args);
    inst_void(op::return_value, {r});
    end_function();
    return f;
  }
  id param(id type) {
    const id r = next_++;
    put(fn_head_, op::function_parameter, {type, r});
    return r;
  }
  /// A variable of Function storage (hoisted to the function's first block).
  id local(id pointee) {
    const id r = next_++;
    put(fn_vars_, op::variable, {type_pointer(storage::function, pointee), r, static_cast<word>(storage::function)});
    return r;
  }
  id new_label() { return next_++; }
  /// Starts block `l` (the first block of a function holds its variables).
  void label(id l) {
    put(first_label_ ? fn_head_ : fn_body_, op::label, {l});
    first_label_ = false;
  }
  void end_function() {
    put(fn_body_, op::function_end, {});
    functions_.insert(functions_.end(), fn_head_.begin(), fn_head_.end());
    functions_.insert(functions_.end(), fn_vars_.begin(), fn_vars_.end());
    functions_.insert(functions_.end(), fn_body_.begin(), fn_body_.end());
    in_function_ = false;
  }

  /// An instruction with a result: (type, result, operands...). Returns the result.
  id inst(op o, id type, std::initializer_list<word> operands) { return inst(o, type, std::vector<word>(operands)); }
  id inst(op o, id type, const std::vector<word>& operands) {
    const id r = next_++;
    std::vector<word> w{type, r};
    w.insert(w.end(), operands.begin(), operands.end());
    put(fn_body_, o, w);
    return r;
  }
  /// An instruction without a result.
  void inst_void(op o, std::initializer_list<word> operands) { inst_void(o, std::vector<word>(operands)); }
  void inst_void(op o, const std::vector<word>& operands) { put(fn_body_, o, operands); }
  id ext(id type, glsl f, std::initializer_list<id> args) {
    std::vector<word> w{glsl_std(), static_cast<word>(f)};
    w.insert(w.end(), args);
    return inst(op::ext_inst, type, w);
  }

  id load(id type, id pointer) { return inst(op::load, type, {pointer}); }
  void store(id pointer, id value) { inst_void(op::store, {pointer, value}); }
  id access(id pointer_type, id base, std::initializer_list<id> indices) {
    std::vector<word> w{base};
    w.insert(w.end(), indices);
    return inst(op::access_chain, pointer_type, w);
  }
  void branch(id target) { inst_void(op::branch, {target}); }
  void ret() { inst_void(op::return_, {}); }

  /// for (*counter = begin; *counter < end; *counter += step) body();
  /// `counter` is a Function variable of uint; body must not leave the loop.
  void for_loop(id counter, id begin, id end, id step, const std::function<void()>& body) {
    const id u = type_uint(), b = type_bool();
    const id header = new_label(), test = new_label(), body_l = new_label(), cont = new_label(), merge = new_label();
    store(counter, begin);
    branch(header);
    label(header);
    inst_void(op::loop_merge, {merge, cont, 0});
    branch(test);
    label(test);
    const id c = load(u, counter);
    const id keep = inst(op::u_less_than, b, {c, end});
    inst_void(op::branch_conditional, {keep, body_l, merge});
    label(body_l);
    body();
    branch(cont);
    label(cont);
    const id c2 = load(u, counter);
    store(counter, inst(op::i_add, u, {c2, step}));
    branch(header);
    label(merge);
  }
  /// if (cond) then_body(); [else else_body();]
  void if_then(id cond, const std::function<void()>& then_body, const std::function<void()>& else_body = {}) {
    const id t = new_label(), e = else_body ? new_label() : 0, merge = new_label();
    inst_void(op::selection_merge, {merge, 0});
    inst_void(op::branch_conditional, {cond, t, e ? e : merge});
    label(t);
    then_body();
    branch(merge);
    if (e) {
      label(e);
      else_body();
      branch(merge);
    }
    label(merge);
  }

  /// The module's words (SPIR-V `version`, e.g. 0x00010600 for 1.6).
  std::vector<word> words(word version) const {
    if (in_function_) throw std::logic_error("kforge::vulkan::spirv: a function is still open");
    std::vector<word> out{0x07230203u, version, kforge_generator, next_, 0};
    for (const auto* s : {&caps_, &exts_, &imports_, &memory_model_, &entry_, &modes_, &annotations_, &globals_, &functions_})
      out.insert(out.end(), s->begin(), s->end());
    return out;
  }

  /// OpExecutionMode fn mode literals...
  void execution_mode(id fn, word mode, std::initializer_list<word> literals = {}) {
    std::vector<word> w{fn, mode};
    w.insert(w.end(), literals);
    put(modes_, op::execution_mode, w);
  }
  /// OpExecutionModeId fn mode ids... (e.g. LocalSizeId = 38 with specialization constants).
  void execution_mode_id(id fn, word mode, std::initializer_list<id> ids) {
    std::vector<word> w{fn, mode};
    w.insert(w.end(), ids);
    put(modes_, op::execution_mode_id, w);
  }

  /// Generator magic: 0 in the upper half (no registered tool id), kforge's version 1 in the lower.
  static constexpr word kforge_generator = 1;

  /// A string literal as words (nul-terminated, zero-padded).
  static std::vector<word> words_of(std::string_view s) {
    std::vector<word> w(s.size() / 4 + 1, 0);
    std::memcpy(w.data(), s.data(), s.size());
    return w;
  }

 private:
  static void put(std::vector<word>& sec, op o, std::initializer_list<word> operands) {
    put(sec, o, std::vector<word>(operands));
  }
  static void put(std::vector<word>& sec, op o, const std::vector<word>& operands) {
    const std::size_t n = operands.size() + 1;
    if (n > 0xffff) throw std::length_error("kforge::vulkan::spirv: instruction too long");
    sec.push_back(static_cast<word>(n << 16) | static_cast<word>(o));
    sec.insert(sec.end(), operands.begin(), operands.end());
  }
  /// Types and constants: operands without the result id (constants: the type first).
  id intern(op o, std::vector<word> operands) {
    std::vector<word> key{static_cast<word>(o)};
    key.insert(key.end(), operands.begin(), operands.end());
    if (auto it = interned_.find(key); it != interned_.end()) return it->second;
    const id r = next_++;
    const bool is_constant = o == op::constant || o == op::constant_true || o == op::constant_false ||
                             o == op::constant_composite;
    std::vector<word> w;
    if (is_constant) {
      w.push_back(operands.front());
      w.push_back(r);
      w.insert(w.end(), operands.begin() + 1, operands.end());
    } else {
      w.push_back(r);
      w.insert(w.end(), operands.begin(), operands.end());
    }
    put(globals_, o, w);
    interned_.emplace(std::move(key), r);
    return r;
  }
  id fresh_type(op o, const std::vector<word>& operands) {
    const id r = next_++;
    std::vector<word> w{r};
    w.insert(w.end(), operands.begin(), operands.end());
    put(globals_, o, w);
    return r;
  }

  id next_ = 1, glsl_ = 0;
  std::vector<word> caps_, exts_, imports_, memory_model_, entry_, modes_, annotations_, globals_, functions_;
  std::vector<word> fn_head_, fn_vars_, fn_body_;
  std::map<std::string, int> ext_names_;
  std::map<std::vector<word>, id> interned_;
  std::vector<id> interface_;
  bool in_function_ = false, first_label_ = false;
};

}  // namespace kforge::vulkan::spirv
