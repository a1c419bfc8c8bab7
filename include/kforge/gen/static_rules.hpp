// kforge/gen/static_rules.hpp — the static refusals that are about the
// contract's promise of the same bits on every run, not about races (the
// contract check in runner.hpp reports them at stage interface), and the
// shared memory a kernel declares (for the device-limit check there). Each
// rule reads the kernel's SPIR-V through vulkan/spirv/module.hpp:
//
//  - float atomics: OpAtomicFAddEXT, OpAtomicFMinEXT/FMaxEXT, an atomic on a
//    float, or a compare-exchange whose value is computed from float bits
//    (the CAS loop of an atomic float add): the result's bits depend on the
//    order the invocations arrive in. Integer atomics stay allowed;
//  - RelaxedPrecision (mediump/lowp): many drivers compute such values in 16
//    bits. glslang's own mediump built-ins (gl_SubgroupInvocationID, ...)
//    and integer arithmetic on them are not the kernel's doing and pass.
//
// docs/GENERATION.md ("Static refusals") states them for users.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kforge/gen/shared_access.hpp"

namespace kforge::gen {

/// One Workgroup variable and the bytes it declares (known: false where a
/// length is not a constant the check can work out).
struct shared_variable_use {
  std::string name;
  std::uint64_t bytes = 0;
  bool known = true;
};

namespace detail {

/// Whether value id is computed from float bits (a bitcast of a float, followed
/// through arithmetic and function variables' stores).
inline bool from_float_bits(const spv_module& m, std::uint32_t id) {
  std::set<std::uint32_t> seen;
  std::vector<std::uint32_t> stack{id};
  // Stores per function variable, for following loads through locals.
  std::map<std::uint32_t, std::vector<std::uint32_t>> stored;
  for (const auto& in : m.insts)
    if (in.op == 62 && in.n >= 3) stored[m.w[in.at + 1]].push_back(m.w[in.at + 2]);
  while (!stack.empty() && seen.size() < 4096) {
    const std::uint32_t x = stack.back();
    stack.pop_back();
    if (!seen.insert(x).second) continue;
    const auto* d = m.def_of(x);
    if (!d || vulkan::spirv::result_layout(d->op) != 2) continue;
    const std::uint32_t* a = &m.w[d->at];
    if (d->op == 124 && d->n >= 4 && m.is_float(m.type_of(a[3]))) return true;  // OpBitcast of a float
    if (m.is_float(a[1]) && d->op != 61) return true;                            // float arithmetic on the way
    if (d->op == 61 && d->n >= 4) {
      for (std::uint32_t v : stored[a[3]]) stack.push_back(v);
      continue;
    }
    if (d->op == 59 || d->op == 43 || d->op == 50 || d->op == 44) continue;
    for (std::uint32_t j = 3; j < d->n; ++j)
      if (m.def.count(a[j])) stack.push_back(a[j]);
  }
  return false;
}

/// Float atomics (header comment): one entry per atomic, "float atomic: ...".
inline void float_atomics(const spv_module& m, std::vector<std::string>& out) {
  auto where = [&](const spv_module::inst& in) {
    return in.line ? " at line " + std::to_string(in.line) : std::string();
  };
  // The variable an atomic works on; a member of an unnamed block as Block.member.
  auto target = [&](const spv_module::inst&, std::uint32_t ptr) {
    std::uint32_t p = ptr, first = 0;
    for (int g = 0; g < 64; ++g) {
      const auto* d = m.def_of(p);
      if (!d || !(d->op == 65 || d->op == 66 || d->op == 67 || d->op == 70 || d->op == 83)) break;
      if (d->op != 83 && d->n >= 5) first = m.w[d->at + 4];
      p = m.w[d->at + 3];
    }
    const auto it = m.names.find(p);
    if (it != m.names.end() && !it->second.empty()) return "'" + it->second + "'";
    const spv_type* pt = m.type(m.type_of(p));
    const std::uint32_t block = pt ? pt->elem : 0;
    const auto k = m.eval(first);
    const auto mn = k ? m.member_names.find({block, static_cast<std::uint32_t>(*k)}) : m.member_names.end();
    if (m.names.count(block) && mn != m.member_names.end()) return "'" + m.names.at(block) + "." + mn->second + "'";
    return "'" + m.name(p) + "'";
  };
  for (const auto& in : m.insts) {
    const std::uint32_t* a = &m.w[in.at];
    const std::uint32_t op = in.op;
    if (op == 6035)
      out.push_back("float atomic: atomicAdd on a float (" + target(in, a[3]) + where(in) +
                    "): the sum's bits depend on the order the invocations add in, and the contract promises the same "
                    "bits on every run; reduce in a fixed order instead");
    else if (op == 5614 || op == 5615)
      out.push_back(std::string("float atomic: ") + (op == 5614 ? "atomicMin" : "atomicMax") + " on a float (" +
                    target(in, a[3]) + where(in) +
                    "): which of -0 and +0 (or of two NaNs) is kept depends on the order, and the contract promises the "
                    "same bits on every run; reduce in a fixed order instead");
    else if ((op == 227 || op == 229 || op == 230 || op == 231) && in.n >= 4 && m.is_float(a[1]))
      out.push_back("float atomic: an atomic on a float (" + target(in, a[3]) + where(in) +
                    "): the contract promises the same bits on every run; reduce in a fixed order instead");
    else if ((op == 230 || op == 231) && in.n >= 9 && (from_float_bits(m, a[7])))
      out.push_back("float atomic: a compare-exchange loop on float bits (" + target(in, a[3]) + where(in) +
                    ", its value computed from floatBitsToUint): an atomic float add's bits depend on the order the "
                    "invocations add in, and the contract promises the same bits on every run; reduce in a fixed order "
                    "instead");
  }
}

/// RelaxedPrecision (header comment): one entry naming the values, "RelaxedPrecision: ...".
inline void relaxed_precision(const spv_module& m, std::vector<std::string>& out) {
  // glslang declares some built-ins mediump (gl_SubgroupInvocationID, gl_SubgroupSize: integers the
  // driver gives in full) and marks their loads so: not the kernel's doing.
  auto builtin_input = [&](std::uint32_t id) {
    const auto* d = m.def_of(id);
    if (d && d->op == 61) d = m.def_of(m.w[d->at + 3]);
    return d && d->op == 59 && m.w[d->at + 3] == 1;
  };
  // The built-in a value is computed from (glslang carries the built-in's precision on), or 0.
  auto from_builtin = [&](std::uint32_t id) -> std::uint32_t {
    std::set<std::uint32_t> seen;
    std::vector<std::uint32_t> stack{id};
    while (!stack.empty() && seen.size() < 256) {
      const std::uint32_t x = stack.back();
      stack.pop_back();
      if (!seen.insert(x).second) continue;
      const auto* d = m.def_of(x);
      if (!d || vulkan::spirv::result_layout(d->op) != 2 || d->op == 59) continue;
      if (d->op == 61) {
        if (builtin_input(x)) return m.w[d->at + 3];
        continue;
      }
      for (std::uint32_t j = 3; j < d->n; ++j)
        if (m.def.count(m.w[d->at + j])) stack.push_back(m.w[d->at + j]);
    }
    return 0;
  };
  auto is_int = [&](std::uint32_t t) {
    const spv_type* p = m.type(t);
    if (p && p->kind == spv_type::vector) p = m.type(p->elem);
    return p && p->kind == spv_type::integer;
  };
  std::vector<std::uint32_t> relaxed;
  std::uint32_t via = 0;  // a built-in the refused values come from
  for (std::uint32_t id : m.relaxed) {
    if (builtin_input(id)) continue;
    // Integer arithmetic on such a built-in (gl_SubgroupInvocationID + 1u) is glslang's
    // doing and exact; float arithmetic on it is mediump and refused.
    const std::uint32_t b = m.op_of(id) == 59 ? 0 : from_builtin(id);
    if (b && is_int(m.type_of(id))) continue;
    if (b && !m.names.count(id)) via = b;
    relaxed.push_back(id);
  }
  if (!relaxed.empty() || !m.relaxed_members.empty()) {
    std::string named;
    int unnamed = 0, shown = 0;
    // A variable's line: the first instruction with a line that stores to it or loads from it.
    auto line_of = [&](std::uint32_t id) -> std::uint32_t {
      const auto* d = m.def_of(id);
      if (d && d->op != 59) return d->line;
      for (const auto& in : m.insts)
        if (in.line && ((in.op == 62 && m.w[in.at + 1] == id) || (in.op == 61 && in.n >= 4 && m.w[in.at + 3] == id)))
          return in.line;
      return 0;
    };
    for (std::uint32_t id : relaxed) {
      const auto it = m.names.find(id);
      if (it == m.names.end() || it->second.empty()) {
        ++unnamed;
        continue;
      }
      if (++shown > 6) continue;
      const std::uint32_t line = line_of(id);
      named += (named.empty() ? "'" : ", '") + it->second + "'" + (line ? " (line " + std::to_string(line) + ")" : "");
    }
    for (const auto& [st, k] : m.relaxed_members) {
      if (++shown > 6) continue;
      named += (named.empty() ? "member " : ", member ") + std::to_string(k) + " of '" + m.name(st) + "'";
    }
    if (shown > 6) named += ", " + std::to_string(shown - 6) + " more";
    if (unnamed) named += (named.empty() ? "" : " and ") + std::to_string(unnamed) + (named.empty() ? " values" : " more values");
    if (via)
      named += " (computed from '" + m.name(via) +
               "', which glslang declares mediump: copy it into a variable of your own first)";
    out.push_back("RelaxedPrecision: " + named +
                  " are mediump or lowp (`precision mediump float;` or a qualifier): many drivers compute them in 16 "
                  "bits (fp16 on many mobile GPUs), so results differ from device to device; the contract needs full "
                  "precision (drop the qualifiers)");
  }
}

}  // namespace detail

/// What the kernel uses that the contract's promise of identical bits on
/// every run (and on every device) rules out: float atomics and
/// RelaxedPrecision (header comment). Each entry names the class first
/// ("float atomic: ...", "RelaxedPrecision: ..."); empty when none.
inline std::vector<std::string> static_refusals(const std::vector<std::uint32_t>& spirv) {
  const detail::spv_module m(spirv);
  std::vector<std::string> out;
  detail::float_atomics(m, out);
  detail::relaxed_precision(m, out);
  return out;
}

/// The Workgroup variables a kernel declares and their bytes (packed tight,
/// spec constants at their defaults, as the host runs the kernel).
inline std::vector<shared_variable_use> shared_memory_use(const std::vector<std::uint32_t>& spirv) {
  const detail::spv_module m(spirv);
  std::vector<shared_variable_use> out;
  for (const auto& in : m.insts) {
    if (in.op != 59 || in.n < 4 || m.w[in.at + 3] != 4) continue;
    const detail::spv_type* p = m.type(m.w[in.at + 1]);
    const auto bytes = p ? m.byte_size(p->elem) : std::nullopt;
    out.push_back({m.name(m.w[in.at + 2]), bytes ? *bytes : 0, bytes.has_value()});
  }
  return out;
}

}  // namespace kforge::gen
