// kforge/gen/contract.hpp — the kernel contract: what a GLSL compute kernel
// for each op must declare so that the host can bind, size and dispatch it
// without knowing anything else about it. docs/KERNEL_CONTRACT.md is the
// prose version of this table; contract_text() is what prompts quote.
//
// Every kernel: set 0, storage buffers at bindings 0..n-1 (inputs in call
// order, then the output or outputs), all dense row-major, element type
// `float` (f32 and bf16 problems; bf16 is widened to f32 on upload) or
// `float16_t` (f16, with GL_EXT_shader_16bit_storage), `int` for integer
// operands (ids, indices); inputs declared `readonly`; one push-constant
// block laid out exactly as listed; `layout(local_size_x_id = 0) in;` plus a
// literal default `layout(local_size_x = N) in;` (y = z = 1); and, where the
// family has one, its per-workgroup output tile as specialization constants
// (ids 1 and 2) whose defaults the host reads back with SPIRV-Cross to size
// the grid. Other specialization constants (ids >= 3) are the kernel's own
// knobs and keep their defaults.
//
// Each op family declares its row of the contract in its traits (contract,
// launch_of: ops/*_traits.hpp); this file reads them generically. No Vulkan
// here: the gate, the prompts and the docs share these numbers.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kforge/validate/problem.hpp"

namespace kforge::gen {

using kforge::kernel_contract;
using kforge::launch;
using kforge::push_field;

inline bool is_f16_device(dtype t) { return t == dtype::f16; }

/// The contract of a problem's op (bias bindings depend on the epilogue).
inline kernel_contract contract_for(const problem& p) {
  kernel_contract c = family_of(p).contract(p);
  std::uint32_t bytes = 0;
  for (const auto& fld : c.push) bytes += fld.name.find("[6]") != std::string::npos ? 24 : 4;
  c.push_bytes = bytes;
  return c;
}

/// Splits G workgroups over a 2-D grid (see launch::flat_grid).
inline std::array<std::uint32_t, 3> flat_grid(std::uint64_t groups) { return launch::flat_grid(groups); }

inline std::uint32_t to_u32(index_t v, const char* what) { return launch::to_u32(v, what); }

/// The push-constant bytes and dispatch grid of a problem, given the tile
/// constants the kernel declares (tile_m/tile_n for 2-D tiles, tile for 1-D;
/// local_size is the kernel's local_size_x).
inline launch make_launch(const problem& p, std::uint32_t local_size, std::uint32_t tile_m, std::uint32_t tile_n,
                          std::uint32_t tile) {
  const kernel_contract c = contract_for(p);
  launch l = family_of(p).launch_of(p, {local_size, tile_m, tile_n, tile});
  if (l.push.size() != c.push_bytes)
    throw error("kforge::gen: internal: push constants of " + p.op + " packed " + std::to_string(l.push.size()) +
                " bytes, contract says " + std::to_string(c.push_bytes));
  return l;
}

/// GLSL storage type of a buffer of element type t (a problem's float type, or i32).
inline std::string glsl_storage_type(dtype t) { return t == dtype::i32 ? "int" : is_f16_device(t) ? "float16_t" : "float"; }

/// The op's meaning in words, for prompts and docs.
inline std::string semantics(const problem& p) { return family_of(p).semantics(p); }

/// The contract for one problem as text (quoted in prompts, printed by tools).
inline std::string contract_text(const problem& p) {
  const kernel_contract c = contract_for(p);
  const std::string T = glsl_storage_type(p.type);
  std::string s = "Kernel contract for " + p.op + " (" + std::string(to_string(p.type)) + "):\n";
  s += "- `#version 450`, one compute shader, entry point main.\n";
  if (is_f16_device(p.type)) s += "- `#extension GL_EXT_shader_16bit_storage : require`; buffers hold float16_t, compute in float.\n";
  s += "- Storage buffers, std430, set 0, element type " + T + " unless listed otherwise, dense row-major; inputs "
       "`readonly`:\n";
  const auto specs = operands(p);
  for (std::size_t b = 0; b < c.bindings.size(); ++b) {
    const bool out = b < specs.size() ? specs[b].is_output : b + 1 == c.bindings.size();
    const dtype t = b < specs.size() ? operand_type(p, specs[b]) : p.type;
    s += "    binding " + std::to_string(b) + ": " + c.bindings[b] + (out ? " (output, written" : " (input, readonly") +
         (t == dtype::i32 ? ", element type int)" : ")") + "\n";
  }
  s += "  No other descriptors (no uniform buffers, images or samplers).\n";
  s += "- One push-constant block of exactly " + std::to_string(c.push_bytes) + " bytes, members in this order:\n";
  s += "    layout(push_constant) uniform Push {";
  for (std::size_t i = 0; i < c.push.size(); ++i) s += (i ? " " : " ") + c.push[i].type + " " + c.push[i].name + ";";
  s += " } pc;\n";
  for (const auto& f : c.push) s += "    " + f.name + ": " + f.meaning + "\n";
  s += "- Workgroup size: `layout(local_size_x_id = 0) in;` and a literal default `layout(local_size_x = N) in;` "
       "(N <= the device's maxComputeWorkGroupInvocations); y = z = 1.\n";
  if (c.tile_2d) {
    s += "- Output tile per workgroup as specialization constants, read by the host to size the grid:\n"
         "    layout(constant_id = 1) const uint TILE_M = ...;  layout(constant_id = 2) const uint TILE_N = ...;\n"
         "  one workgroup computes " + c.tile_meaning + ".\n";
  } else {
    s += "- Optional: `layout(constant_id = 1) const uint TILE = ...;` = " + c.tile_meaning + ".\n";
  }
  s += "- Dispatch grid: " + c.grid_rule + ".";
  if (!c.tile_2d)
    s += " Groups are laid out on a 2-D grid (x <= 65535): use the flat id gl_WorkGroupID.y * gl_NumWorkGroups.x + "
         "gl_WorkGroupID.x and do nothing for ids >= G.";
  s += "\n- Specialization constant ids >= 3 are free for your own knobs (they keep their defaults).\n";
  s += "- Handle every size, including sizes that are not multiples of your tile: never read or write outside the "
       "buffers (the host checks guard regions around every buffer), write every output element, and give the same "
       "result on every run (no float atomics: no atomicAdd/atomicMin/atomicMax on floats and no compare-exchange "
       "loop on float bits; integer atomics are fine).\n";
  s += "- Full precision: no `mediump`/`lowp` and no `precision mediump float;` (RelaxedPrecision is refused).\n";
  s += "- Shared memory: every read of a shared element must follow a write to it and a `barrier()` between "
       "invocations (and a `barrier()` before an element another invocation still reads is overwritten); stay "
       "within the device's shared memory and workgroup limits.\n";
  return s;
}

}  // namespace kforge::gen
