// kforge/gen/shared_fill.hpp — the kernel with its shared memory filled
// before it runs, for the gate (gate.hpp): a read of a shared slot no
// invocation wrote returns what the device left there, zeros on every device
// tried, so a reduction whose lanes past the row's end skip their store gets
// the right sums everywhere and only its first run on a device with other
// leftovers shows the bug. The gate validates this variant instead: every
// float component of every Workgroup variable holds +Inf, -Inf or NaN when
// the kernel's own code starts, so a result that depends on an unwritten
// slot is wrong on the suite's cases whatever the device keeps.
//
// How: the source's main is renamed (`#define main` after #version) and a
// new main appended that fills the variables — each invocation takes the
// slots gl_LocalInvocationIndex, + workgroup size, ... of each variable's
// leading arrays, and every float component below them (struct members by
// their OpName, inner arrays by .length(), matrix columns) — then calls
// barrier() and the kernel's main. The value of slot f is chosen by
// (f + gl_WorkGroupID.x + .y + .z) mod 3, so each slot meets each of the
// three in some workgroup: a sum meets Inf or NaN, a max meets +Inf, a min
// -Inf (NaN alone would pass a max that drops NaN operands). Integer and
// boolean components are not filled (an index read from garbage could
// address outside a buffer; the race check's rule 4 still looks at them);
// variables with an initializer (none in GLSL) neither. The names and types
// come from the kernel's SPIR-V (vulkan/spirv/module.hpp).
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kforge/gen/shared_access.hpp"

namespace kforge::gen {

/// A kernel's source with its shared memory filled (the header comment).
struct shared_fill {
  std::string glsl;                 ///< the filled source; empty where nothing is filled
  std::vector<std::string> filled;  ///< the variables filled
  std::vector<std::string> left;    ///< "name: why" for variables (or parts) left as they are
};

namespace detail {

/// GLSL's name of a float scalar (n == 1) or vector type of this width, or "" where it has none.
inline std::string fill_float_type(std::uint32_t width, std::uint32_t n) {
  const char* scalar = width == 16 ? "float16_t" : width == 32 ? "float" : width == 64 ? "double" : nullptr;
  const char* vec = width == 16 ? "f16vec" : width == 32 ? "vec" : "dvec";
  if (!scalar || n > 4) return "";
  return n == 1 ? scalar : vec + std::to_string(n);
}

/// Appends statements that write the fill value (salted by the GLSL uint
/// expression salt) to every float component of expr, of SPIR-V type t.
/// widths collects the float widths used; why says what was left out.
/// Returns whether anything is written.
inline bool emit_fill(const spv_module& m, std::uint32_t t, const std::string& expr, const std::string& salt, int depth,
                      std::string& out, std::set<std::uint32_t>& widths, std::vector<std::string>& why) {
  const spv_type* ty = m.type(t);
  if (!ty || depth > 8) {
    why.push_back(expr + ": a type the fill does not follow");
    return false;
  }
  const std::string ind(static_cast<std::size_t>(2 * depth + 4), ' ');
  switch (ty->kind) {
    case spv_type::floating:
    case spv_type::vector: {
      const spv_type* e = ty->kind == spv_type::vector ? m.type(ty->elem) : ty;
      if (!e || e->kind != spv_type::floating) {
        why.push_back(expr + ": not a float (integers and booleans are not filled)");
        return false;
      }
      const std::uint32_t n = ty->kind == spv_type::vector ? ty->length : 1;
      const std::string name = fill_float_type(e->width, n);
      if (name.empty()) {
        why.push_back(expr + ": a float type GLSL cannot name");
        return false;
      }
      widths.insert(e->width);
      out += ind + expr + " = " + name + "(kforge_fill" + std::to_string(e->width) + "(" + salt + "));\n";
      return true;
    }
    case spv_type::matrix: {
      bool any = false;
      for (std::uint32_t c = 0; c < ty->length; ++c)
        any = emit_fill(m, ty->elem, expr + "[" + std::to_string(c) + "]", salt + " + " + std::to_string(c) + "u", depth,
                        out, widths, why) ||
              any;
      return any;
    }
    case spv_type::array: {
      const std::string i = "kforge_i" + std::to_string(depth);
      std::string body;
      if (!emit_fill(m, ty->elem, expr + "[" + i + "]", salt + " + " + i, depth + 1, body, widths, why)) return false;
      out += ind + "for (uint " + i + " = 0u; " + i + " < uint(" + expr + ".length()); ++" + i + ") {\n" + body + ind + "}\n";
      return true;
    }
    case spv_type::structure: {
      bool any = false;
      for (std::size_t k = 0; k < ty->members.size(); ++k) {
        const auto it = m.member_names.find({t, static_cast<std::uint32_t>(k)});
        if (it == m.member_names.end() || it->second.empty()) {
          why.push_back(expr + ": member " + std::to_string(k) + " has no name");
          continue;
        }
        any = emit_fill(m, ty->members[k], expr + "." + it->second, salt + " + " + std::to_string(7 * k) + "u", depth, out,
                        widths, why) ||
              any;
      }
      return any;
    }
    default:
      why.push_back(expr + ": not a float (integers and booleans are not filled)");
      return false;
  }
}

}  // namespace detail

/// What the fill writes: the three specials (the header comment), or zeros —
/// what unwritten slots hold on the devices tried, for the gate to tell
/// whether a failure of the filled kernel is the fill's doing.
enum class fill_value { specials, zeros };

/// The source with every float Workgroup variable that spirv (glsl's module)
/// declares filled before main runs; glsl empty where there is nothing to fill.
inline shared_fill fill_shared_memory(const std::string& glsl, const std::vector<std::uint32_t>& spirv,
                                      fill_value v = fill_value::specials) {
  shared_fill r;
  const detail::spv_module m(spirv);
  std::string code;
  std::set<std::uint32_t> widths;
  for (const auto& in : m.insts) {
    if (in.op != 59 || in.n < 4) continue;  // OpVariable
    const std::uint32_t* a = m.at(static_cast<std::size_t>(&in - m.insts.data()));
    if (a[3] != 4) continue;  // Workgroup
    const auto nit = m.names.find(a[2]);
    if (nit == m.names.end() || nit->second.empty()) {
      r.left.push_back("%" + std::to_string(a[2]) + ": no name");
      continue;
    }
    const std::string& name = nit->second;
    if (in.n > 4) {
      r.left.push_back(name + ": has an initializer");
      continue;
    }
    const detail::spv_type* pt = m.type(a[1]);
    if (!pt || pt->kind != detail::spv_type::pointer) continue;
    // The leading arrays are spread over the workgroup's invocations.
    std::uint32_t t = pt->elem;
    std::vector<std::string> dims;
    std::string elem = name;
    while (m.type(t) && m.type(t)->kind == detail::spv_type::array && dims.size() < 8) {
      dims.push_back("uint(" + elem + ".length())");
      elem += "[0]";
      t = m.type(t)->elem;
    }
    std::string idx = name;
    std::string split = "      uint kforge_r = kforge_f;\n";
    for (std::size_t d = 0; d < dims.size(); ++d) idx += "[kforge_x" + std::to_string(d) + "]";
    for (std::size_t d = dims.size(); d-- > 0;) {
      const std::string x = "kforge_x" + std::to_string(d);
      if (d == 0) split += "      uint " + x + " = kforge_r;\n";
      else split += "      uint " + x + " = kforge_r % " + dims[d] + ";\n      kforge_r /= " + dims[d] + ";\n";
    }
    std::string body;
    std::vector<std::string> why;
    const bool any = detail::emit_fill(m, t, idx, "kforge_f", 1, body, widths, why);
    for (const auto& y : why) r.left.push_back(y);
    if (!any) continue;
    std::string total = "1u";
    for (const auto& d : dims) total += " * " + d;
    code += "  for (uint kforge_f = gl_LocalInvocationIndex; kforge_f < " + total + "; kforge_f += kforge_wg) {\n" + split +
            body + "  }\n";
    r.filled.push_back(name);
  }
  if (r.filled.empty()) return r;

  // #define main after #version (or first, where the source has none: glslang then refuses both alike).
  std::size_t at = 0;
  for (std::size_t pos = 0; pos < glsl.size();) {
    std::size_t e = glsl.find('\n', pos);
    if (e == std::string::npos) e = glsl.size();
    std::size_t s = glsl.find_first_not_of(" \t", pos);
    if (s < e && glsl.compare(s, 8, "#version") == 0) {
      at = e < glsl.size() ? e + 1 : e;
      break;
    }
    pos = e + 1;
  }
  std::string src = glsl.substr(0, at);
  if (!src.empty() && src.back() != '\n') src += '\n';
  src += "#define main kforge_user_main\n" + glsl.substr(at) + "\n#undef main\n";
  src += "uint kforge_fill_kind(uint s) { return (s + gl_WorkGroupID.x + gl_WorkGroupID.y + gl_WorkGroupID.z) % 3u; }\n";
  if (v == fill_value::zeros) src += "float kforge_fill32(uint s) { return 0.0; }\n";
  else
    src += "float kforge_fill32(uint s) {\n  uint k = kforge_fill_kind(s);\n"
           "  return uintBitsToFloat(k == 0u ? 0x7f800000u : (k == 1u ? 0xff800000u : 0x7fc00000u));\n}\n";
  if (widths.count(16)) src += "float16_t kforge_fill16(uint s) { return float16_t(kforge_fill32(s)); }\n";
  if (widths.count(64)) src += "double kforge_fill64(uint s) { return double(kforge_fill32(s)); }\n";
  src += "void main() {\n  uint kforge_wg = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;\n" + code +
         "  barrier();\n  kforge_user_main();\n}\n";
  r.glsl = std::move(src);
  return r;
}

}  // namespace kforge::gen
