// kforge/vulkan/spirv/module.hpp — one reader of a SPIR-V module's words,
// shared by everything in kforge that reads SPIR-V: the structural check of
// the modules kforge emits (checker.hpp), the generation gate's static rules
// (gen/race.hpp, gen/unwritten.hpp, gen/static_rules.hpp) and the shared-memory
// fill (gen/shared_fill.hpp); flow.hpp adds the control flow and data-flow
// facts on top.
//
// What it gives: the instructions in order (opcode, word count, offset, the
// OpLine line in force, the function they are in), each result id's
// instruction, the types, names and member names, the decorations the
// readers use (BuiltIn, SpecId, RelaxedPrecision), the GLCompute entry point,
// the value of a constant or a spec constant at its default (OpSpecConstantOp
// evaluated for the integer operations array sizes use) and a type's packed
// size. It checks only what it needs to read safely — the magic number and
// that every word count fits the module — and throws shader_error where
// those fail; checker.hpp is where a module is validated.
//
// Numbers are those of the SPIR-V 1.6 unified specification and its
// extensions (SPIRV-Headers' spirv.core.grammar.json).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kforge/vulkan/error.hpp"

namespace kforge::vulkan::spirv {

using word = std::uint32_t;

/// Where an instruction's result id is: 0 none, 1 word 1 (types, labels), 2 word 2 (after the result type).
inline int result_layout(word op) {
  switch (op) {
    case 7: case 11: case 73: case 248: case 4456: case 5358: case 322: case 4472: case 5341: case 5370: case 5371:
      return 1;
    case 0: case 2: case 3: case 4: case 5: case 6: case 8: case 10: case 14: case 15: case 16: case 17: case 39:
    case 62: case 63: case 64: case 71: case 72: case 74: case 75: case 224: case 225: case 228: case 246: case 247:
    case 249: case 250: case 251: case 252: case 253: case 254: case 255: case 256: case 257: case 317: case 330:
    case 331: case 332: case 4416: case 4458: case 5360: case 5380: case 5632: case 5633:
      return 0;
    default:
      return op >= 19 && op <= 38 ? 1 : 2;
  }
}

struct type_info {
  enum kind_t { other, boolean, integer, floating, vector, matrix, array, runtime_array, structure, pointer } kind = other;
  std::uint32_t width = 0, sign = 0, elem = 0, length = 0, storage = 0;  // length: components, or the array length's id
  std::vector<std::uint32_t> members;
};

/// A SPIR-V module as a table of instructions, with names, decorations,
/// types and the constants' values (spec constants at their defaults).
class module {
 public:
  struct inst {
    std::uint32_t op = 0, n = 0;
    std::size_t at = 0;
    std::uint32_t line = 0, fn = 0;
  };

  /// Splits `words` into instructions. Throws shader_error naming `name`,
  /// the word offset and what is wrong where there is no SPIR-V header or a
  /// word count is zero or runs past the end; nothing else is checked here.
  explicit module(const std::vector<word>& words, const std::string& name = "kernel") : w(words) {
    auto fail = [&](std::size_t at, const std::string& what) {
      throw shader_error("kforge::vulkan: SPIR-V of '" + name + "' is malformed at word " + std::to_string(at) + ": " + what);
    };
    if (w.size() < 5 || w[0] != 0x07230203u) fail(0, "no SPIR-V header");
    std::uint32_t line = 0, fn = 0;
    for (std::size_t i = 5; i < w.size();) {
      const std::uint32_t op = w[i] & 0xffffu, n = w[i] >> 16;
      if (n == 0 || i + n > w.size()) fail(i, "word count " + std::to_string(n) + " overruns the module");
      const std::uint32_t* a = &w[i];
      if (op == 8 && n >= 3) line = a[2];
      if (op == 317 || op == 56) line = 0;
      if (op == 54 && n >= 3) fn = a[2];
      insts.push_back({op, n, i, line, fn});
      const std::size_t k = insts.size() - 1;
      const int lay = result_layout(op);
      if (lay == 1 && n >= 2) def[a[1]] = k;
      if (lay == 2 && n >= 3) def[a[2]] = k;
      switch (op) {
        case 5:  // OpName
          if (n >= 3) names[a[1]] = std::string(reinterpret_cast<const char*>(&a[2]), strnlen(reinterpret_cast<const char*>(&a[2]), (n - 2) * 4));
          break;
        case 6:  // OpMemberName
          if (n >= 4)
            member_names[{a[1], a[2]}] =
                std::string(reinterpret_cast<const char*>(&a[3]), strnlen(reinterpret_cast<const char*>(&a[3]), (n - 3) * 4));
          break;
        case 15:  // OpEntryPoint
          if (n >= 3 && a[1] == 5 && !entry) entry = a[2];  // GLCompute
          break;
        case 71:  // OpDecorate
          if (n >= 3 && a[2] == 0) relaxed.push_back(a[1]);
          if (n >= 4 && a[2] == 11) builtin[a[1]] = a[3];
          if (n >= 4 && a[2] == 1) spec_id[a[1]] = a[3];
          break;
        case 72:  // OpMemberDecorate
          if (n >= 4 && a[3] == 0) relaxed_members.push_back({a[1], a[2]});
          break;
        case 20: if (n >= 2) types[a[1]].kind = type_info::boolean; break;
        case 21: if (n >= 4) types[a[1]] = {type_info::integer, a[2], a[3], 0, 0, 0, {}}; break;
        case 22: if (n >= 3) types[a[1]] = {type_info::floating, a[2], 0, 0, 0, 0, {}}; break;
        case 23: if (n >= 4) types[a[1]] = {type_info::vector, 0, 0, a[2], a[3], 0, {}}; break;
        case 24: if (n >= 4) types[a[1]] = {type_info::matrix, 0, 0, a[2], a[3], 0, {}}; break;
        case 28: if (n >= 4) types[a[1]] = {type_info::array, 0, 0, a[2], a[3], 0, {}}; break;
        case 29: if (n >= 3) types[a[1]] = {type_info::runtime_array, 0, 0, a[2], 0, 0, {}}; break;
        case 30: {
          if (n < 2) break;
          type_info t;
          t.kind = type_info::structure;
          t.members.assign(a + 2, a + n);
          types[a[1]] = t;
          break;
        }
        case 32: if (n >= 4) types[a[1]] = {type_info::pointer, 0, 0, a[3], 0, a[2], {}}; break;
        case 56: fn = 0; break;
        default: break;
      }
      i += n;
    }
  }

  std::vector<std::uint32_t> w;
  std::vector<inst> insts;
  std::unordered_map<std::uint32_t, std::size_t> def;  // result id -> instruction
  std::map<std::uint32_t, type_info> types;
  std::map<std::uint32_t, std::string> names;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> member_names;
  std::map<std::uint32_t, std::uint32_t> builtin, spec_id;
  std::vector<std::uint32_t> relaxed;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> relaxed_members;
  std::uint32_t entry = 0;

  const std::uint32_t* at(std::size_t i) const { return &w[insts[i].at]; }
  const inst* def_of(std::uint32_t id) const {
    const auto it = def.find(id);
    return it == def.end() ? nullptr : &insts[it->second];
  }
  std::uint32_t op_of(std::uint32_t id) const {
    const inst* d = def_of(id);
    return d ? d->op : 0;
  }
  std::uint32_t type_of(std::uint32_t id) const {
    const inst* d = def_of(id);
    return d && result_layout(d->op) == 2 ? w[d->at + 1] : 0;
  }
  const type_info* type(std::uint32_t t) const {
    const auto it = types.find(t);
    return it == types.end() ? nullptr : &it->second;
  }
  /// A float scalar or vector type.
  bool is_float(std::uint32_t t) const {
    const type_info* p = type(t);
    if (p && p->kind == type_info::vector) p = type(p->elem);
    return p && p->kind == type_info::floating;
  }
  bool is_unsigned_int(std::uint32_t t) const {
    const type_info* p = type(t);
    return p && p->kind == type_info::integer && p->sign == 0;
  }
  std::string name(std::uint32_t id) const {
    const auto it = names.find(id);
    if (it != names.end() && !it->second.empty()) return it->second;
    std::string s = "%";
    s += std::to_string(id);
    return s;
  }
  /// A constant's value, spec constants at their defaults (OpSpecConstantOp evaluated for
  /// the integer operations array sizes use); nothing where it is not a constant.
  std::optional<std::uint64_t> eval(std::uint32_t id, int depth = 0) const {
    const inst* d = def_of(id);
    if (!d || depth > 64) return std::nullopt;
    const std::uint32_t* a = &w[d->at];
    switch (d->op) {
      case 41: case 48: return 1;  // true
      case 42: case 49: return 0;
      case 43: case 50: return d->n >= 4 ? std::optional<std::uint64_t>(a[3]) : std::nullopt;
      case 46: return 0;  // OpConstantNull
      case 52: {  // OpSpecConstantOp: type, result, opcode, operands
        if (d->n < 5) return std::nullopt;
        const std::uint32_t sop = a[3];
        if (sop == 81) {  // CompositeExtract: composite, literal indices
          const inst* c = def_of(a[4]);
          if (!c || (c->op != 44 && c->op != 51) || d->n < 6) return std::nullopt;
          const std::uint32_t k = a[5];
          if (3 + k >= c->n) return std::nullopt;
          return eval(w[c->at + 3 + k], depth + 1);
        }
        const auto x = eval(a[4], depth + 1);
        const auto y = d->n >= 6 ? eval(a[5], depth + 1) : std::nullopt;
        if (!x) return std::nullopt;
        const std::uint32_t u = static_cast<std::uint32_t>(*x), v = y ? static_cast<std::uint32_t>(*y) : 0;
        switch (sop) {
          case 113: case 114: case 124: return u;  // UConvert, SConvert, Bitcast
          case 126: return static_cast<std::uint32_t>(-static_cast<std::int32_t>(u));
          case 200: return ~u;
          default: break;
        }
        if (!y) return std::nullopt;
        switch (sop) {
          case 128: return u + v;
          case 130: return u - v;
          case 132: return static_cast<std::uint64_t>(u) * v;
          case 134: return v ? std::optional<std::uint64_t>(u / v) : std::nullopt;
          case 135: return v ? std::optional<std::uint64_t>(static_cast<std::uint32_t>(static_cast<std::int32_t>(u) / static_cast<std::int32_t>(v))) : std::nullopt;
          case 137: return v ? std::optional<std::uint64_t>(u % v) : std::nullopt;
          case 194: return v < 32 ? u >> v : 0;
          case 196: return v < 32 ? u << v : 0;
          case 197: return u | v;
          case 198: return u ^ v;
          case 199: return u & v;
          case 170: return u == v;
          case 171: return u != v;
          case 172: return u > v;
          case 176: return u < v;
          case 169: {  // Select: cond, a, b
            const auto z = d->n >= 7 ? eval(a[6], depth + 1) : std::nullopt;
            if (!z) return std::nullopt;
            return u ? v : static_cast<std::uint32_t>(*z);
          }
          default: return std::nullopt;
        }
      }
      default: return std::nullopt;
    }
  }
  /// Bytes a type takes, packed tight (vec3 12, no padding); nothing where a length is not a constant.
  std::optional<std::uint64_t> byte_size(std::uint32_t t, int depth = 0) const {
    const type_info* p = type(t);
    if (!p || depth > 32) return std::nullopt;
    switch (p->kind) {
      case type_info::boolean: return 4;
      case type_info::integer: case type_info::floating: return p->width / 8;
      case type_info::vector: case type_info::matrix: {
        const auto e = byte_size(p->elem, depth + 1);
        if (!e) return std::nullopt;
        return *e * p->length;
      }
      case type_info::array: {
        const auto e = byte_size(p->elem, depth + 1);
        const auto n = eval(p->length);
        if (!e || !n) return std::nullopt;
        return *e * *n;
      }
      case type_info::runtime_array: return 0;
      case type_info::structure: {
        std::uint64_t s = 0;
        for (std::uint32_t m : p->members) {
          const auto e = byte_size(m, depth + 1);
          if (!e) return std::nullopt;
          s += *e;
        }
        return s;
      }
      default: return std::nullopt;
    }
  }
};

}  // namespace kforge::vulkan::spirv
