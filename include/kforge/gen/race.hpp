// kforge/gen/race.hpp — a static check for shared-memory races in a compute
// kernel's SPIR-V, run by the gate (gate.hpp) before any case: a race that
// happens to change no output on one device (the missing-barrier mutants on
// an H100) is still a race, and a behavioural gate cannot prove one absent.
//
// What it looks at: every load and store whose pointer is rooted in a
// Workgroup-storage variable (OpAccessChain and friends followed back to the
// variable), OpCopyMemory as both, cooperative-matrix loads and stores, and
// execution barriers (OpControlBarrier). The control-flow graph of the entry
// point is expanded with every called function inlined (glslang leaves
// helpers such as a workgroup sum as calls), and a forward data flow finds
// pending accesses — ones not yet followed by a barrier — per node:
//
//  - read after write: a store to variable X reaches a load of X along some
//    path with no barrier: another invocation may read before the write (or
//    its old value);
//  - write after read across a loop's back edge: a load of X reaches a store
//    to X through the back edge of a loop that holds a barrier, with no
//    barrier on the way — the next iteration overwrites what another
//    invocation may still be reading (the tiled loop that loads its next
//    tile while a slower invocation still multiplies the last). A loop
//    without a barrier (an invocation's own strided loop, or a subgroup's
//    loop over its own rows) is no phase of the workgroup: nothing is carried
//    round its back edge, so pairs between two of its iterations are not
//    reported (what it leaves pending still reaches the code after it).
//
// Indices are looked at for one rule only: two accesses whose indices are
// the same variable, or variables that hold values derived from the
// invocation's id (gl_LocalInvocationID, gl_SubgroupInvocationID, ... and
// what is computed from them), are taken as the invocation's own element and
// not reported; a constant index never is. Otherwise a path without a barrier
// between accesses to one variable is reported. Not reported: a race through
// two different id-derived variables that meet on one element, a write after
// read within one iteration (a tree reduction reads s[i + k] and writes s[i]
// in the same step, safely, because only i < k write), writes after writes,
// and atomics (not loads or stores here). A subgroup-scope barrier does not
// count as a barrier; a memory barrier without an execution barrier does not
// either. Races through storage buffers (two workgroups) are not shared
// memory and not checked here.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/core/json.hpp"

namespace kforge::gen {

/// One race the check found: `first` (a store, or a load for write after
/// read) reaches `second` with no barrier in between.
struct race_finding {
  std::string kind;      ///< "read after write" or "write after read across a loop iteration"
  std::string variable;  ///< the shared variable's name (or %id)
  std::string first, second;  ///< "store at line 57", "load at line 63" (or the instruction's position)
  std::string text() const {
    return "shared memory race (" + kind + "): " + first + " reaches " + second + " of '" + variable +
           "' without a barrier";
  }
};

struct race_report {
  int shared_variables = 0, accesses = 0, barriers = 0;
  std::vector<race_finding> findings;
  bool race() const { return !findings.empty(); }
  std::string to_json() const {
    json_writer w;
    w.begin_object().field("shared_variables", shared_variables).field("accesses", accesses).field("barriers", barriers);
    w.field("race", race()).key("findings").begin_array();
    for (const auto& f : findings) w.value(f.text());
    w.end_array().end_object();
    return w.str();
  }
};

namespace detail {

struct spv_event {
  enum kind_t { load, store, barrier, call } kind;
  std::uint32_t var = 0;     // load/store: the shared variable; call: the callee
  int access = -1;           // index into the access list (load/store)
};

struct spv_block {
  std::uint32_t label = 0;
  std::vector<spv_event> events;
  std::vector<std::uint32_t> succ;
  bool loop_header = false, returns = false;
};

struct spv_function {
  std::vector<spv_block> blocks;
  std::map<std::uint32_t, int> index;  // label -> block
};

struct spv_access {
  bool is_store = false;
  std::uint32_t var = 0;
  std::string where;
  /// The element as indices: "/t" a load of a variable that holds values
  /// derived from the invocation's id (the loop `for (d = t; ...; d += WG)`),
  /// "/v12" a load of another variable %12, "/c" a constant, "/#40" any other
  /// value %40. Two accesses whose indices are the same (no constant among
  /// them) are taken as one invocation's own element: the pair is not
  /// reported.
  std::string index;
  bool same_element_as(const spv_access& o) const {
    return !index.empty() && index == o.index && index.find("/c") == std::string::npos;
  }
};

/// The expanded graph: one node per straight run of events, calls inlined.
struct race_graph {
  struct node {
    std::vector<spv_event> events;
    /// (node, edge): 0 a forward edge; 1 the back edge of a loop that holds
    /// a barrier (pending accesses are carried round, marked); 2 the back
    /// edge of a loop without one (carried round as "own": not paired with
    /// accesses until they leave the loop, see the header comment); 3 an edge
    /// that leaves every such loop around its source.
    std::vector<std::pair<int, int>> succ;
  };
  std::vector<node> nodes;
};

class race_analysis {
 public:
  explicit race_analysis(const std::vector<std::uint32_t>& w) {
    find_own(w);
    parse(w);
  }

  race_report run() {
    race_report rep;
    rep.shared_variables = static_cast<int>(shared_.size());
    rep.accesses = static_cast<int>(accesses_.size());
    rep.barriers = barriers_;
    if (shared_.empty() || !functions_.count(entry_)) return rep;
    race_graph g;
    std::vector<int> exits;
    expand(g, entry_, 0, exits);
    flow(g, rep);
    return rep;
  }

 private:
  /// Values derived from the invocation's id (gl_LocalInvocationID and the
  /// like): SSA ids computed from one, and function variables that are ever
  /// given one. Iterated to a fixed point (loops carry them round).
  void find_own(const std::vector<std::uint32_t>& w) {
    if (w.size() < 5 || w[0] != 0x07230203u) throw error("kforge::gen: race check: not a SPIR-V module");
    for (std::size_t i = 5; i < w.size();) {
      const std::uint32_t op = w[i] & 0xffffu, n = w[i] >> 16;
      if (n == 0 || i + n > w.size()) throw error("kforge::gen: race check: malformed SPIR-V instruction");
      // OpDecorate %var BuiltIn: LocalInvocationId 27, GlobalInvocationId 28, LocalInvocationIndex 29,
      // SubgroupId 40, SubgroupLocalInvocationId 41.
      if (op == 71 && n >= 4 && w[i + 2] == 11 && (w[i + 3] == 27 || w[i + 3] == 28 || w[i + 3] == 29 ||
                                                    w[i + 3] == 40 || w[i + 3] == 41))
        own_.insert(w[i + 1]);
      i += n;
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 5; i < w.size();) {
        const std::uint32_t op = w[i] & 0xffffu, n = w[i] >> 16;
        const std::uint32_t* a = &w[i];
        auto mark = [&](std::uint32_t id) {
          if (own_.insert(id).second) changed = true;
        };
        if (op == 62 && n >= 3) {  // OpStore: a variable given an own value is own
          if (own_.count(a[2])) mark(a[1]);
        } else if (op == 61 || op == 65 || op == 66 || op == 83 || op == 124 || op == 245 || op == 169 ||
                   (op >= 109 && op <= 202) || op == 12 || op == 80 || op == 81) {
          // OpLoad, access chains, copies, bitcasts, phis, selects, conversions
          // and arithmetic, extended instructions, composites: own when any
          // operand is.
          for (std::uint32_t k = 3; k < n; ++k)
            if (own_.count(a[k])) {
              mark(a[2]);
              break;
            }
        }
        i += n;
      }
    }
  }

  void parse(const std::vector<std::uint32_t>& w) {
    if (w.size() < 5 || w[0] != 0x07230203u) throw error("kforge::gen: race check: not a SPIR-V module");
    std::map<std::uint32_t, std::uint32_t> root;  // pointer id -> shared variable
    std::map<std::uint32_t, std::uint32_t> constants;
    std::uint32_t cur_fn = 0, line = 0;
    spv_block* blk = nullptr;
    std::map<std::uint32_t, int> nth;  // per variable: accesses so far (for positions without lines)
    std::map<std::uint32_t, std::string> value_key;  // SSA id -> what it holds, where known
    auto access = [&](std::uint32_t ptr, bool store) {
      auto it = root.find(ptr);
      if (it == root.end() || !blk) return;
      spv_access a;
      a.is_store = store;
      a.var = it->second;
      a.index = index_key_[ptr];
      const int k = ++nth[a.var];
      a.where = std::string(store ? "store" : "load") +
                (line ? " at line " + std::to_string(line) : " #" + std::to_string(k) + " of the variable");
      accesses_.push_back(a);
      blk->events.push_back({store ? spv_event::store : spv_event::load, a.var, static_cast<int>(accesses_.size()) - 1});
    };
    for (std::size_t i = 5; i < w.size();) {
      const std::uint32_t op = w[i] & 0xffffu, n = w[i] >> 16;
      if (n == 0 || i + n > w.size()) throw error("kforge::gen: race check: malformed SPIR-V instruction");
      const std::uint32_t* a = &w[i];
      switch (op) {
        case 5:  // OpName
          names_[a[1]] = std::string(reinterpret_cast<const char*>(&a[2]));
          break;
        case 15:  // OpEntryPoint
          if (a[1] == 5) entry_ = a[2];  // GLCompute
          break;
        case 43:  // OpConstant
          if (n >= 4) constants[a[2]] = a[3];
          break;
        case 59:  // OpVariable
          if (a[3] == 4) {  // Workgroup
            shared_.insert(a[2]);
            root[a[2]] = a[2];
          }
          break;
        case 65: case 66: case 67: case 70: case 83:  // access chains, OpCopyObject
          if (auto it = root.find(a[3]); it != root.end()) {
            root[a[2]] = it->second;
            std::string k = index_key_[a[3]];
            for (std::uint32_t j = 4; op != 83 && j < n; ++j) {
              const auto v = value_key.find(a[j]);
              const bool constant = constants.count(a[j]) != 0;
              k += "/" + (constant ? "c" : v != value_key.end() ? v->second : "#" + std::to_string(a[j]));
            }
            index_key_[a[2]] = k;
          }
          break;
        case 54:  // OpFunction
          cur_fn = a[2];
          functions_[cur_fn] = {};
          break;
        case 56:  // OpFunctionEnd
          cur_fn = 0;
          blk = nullptr;
          break;
        case 8:  // OpLine
          line = a[2];
          break;
        case 317:  // OpNoLine
          line = 0;
          break;
        case 248: {  // OpLabel
          auto& f = functions_[cur_fn];
          f.index[a[1]] = static_cast<int>(f.blocks.size());
          f.blocks.push_back({});
          f.blocks.back().label = a[1];
          blk = &f.blocks.back();
          break;
        }
        case 246:  // OpLoopMerge
          if (blk) blk->loop_header = true;
          break;
        case 249:  // OpBranch
          if (blk) blk->succ.push_back(a[1]);
          break;
        case 250:  // OpBranchConditional
          if (blk) blk->succ.insert(blk->succ.end(), {a[2], a[3]});
          break;
        case 251:  // OpSwitch: selector, default, then (32-bit literal, label) pairs
          if (blk) {
            blk->succ.push_back(a[2]);
            for (std::uint32_t k = 3; k + 1 < n; k += 2) blk->succ.push_back(a[k + 1]);
          }
          break;
        case 253: case 254:  // OpReturn, OpReturnValue
          if (blk) blk->returns = true;
          break;
        case 61:  // OpLoad: type, result, pointer
          access(a[3], false);
          // Loads of the same (function-local) variable give the same index;
          // any variable holding an own value gives "the invocation's own".
          if (!root.count(a[3])) value_key[a[2]] = own_.count(a[3]) ? std::string("t") : "v" + std::to_string(a[3]);
          break;
        case 62:  // OpStore: pointer, object
          access(a[1], true);
          break;
        case 63:  // OpCopyMemory: target, source
          access(a[2], false);
          access(a[1], true);
          break;
        case 4457: case 5359:  // OpCooperativeMatrixLoadKHR / NV: type, result, pointer
          access(a[3], false);
          break;
        case 4458: case 5360:  // OpCooperativeMatrixStoreKHR / NV: pointer, object
          access(a[1], true);
          break;
        case 224: {  // OpControlBarrier: execution scope, memory scope, semantics
          const auto it = constants.find(a[1]);
          // Scope: 0 CrossDevice, 1 Device, 2 Workgroup, 3 Subgroup, 4 Invocation.
          if (blk && it != constants.end() && it->second <= 2) {
            blk->events.push_back({spv_event::barrier});
            ++barriers_;
          }
          break;
        }
        case 57:  // OpFunctionCall: type, result, function, args
          if (blk) blk->events.push_back({spv_event::call, a[3]});
          break;
        default:
          break;
      }
      i += n;
    }
  }

  /// Adds function fn to g (each call a fresh copy); returns its entry node
  /// and appends its returning nodes to `exits`.
  int expand(race_graph& g, std::uint32_t fn, int depth, std::vector<int>& exits) {
    if (depth > 32) throw error("kforge::gen: race check: calls nested deeper than 32");
    const spv_function& f = functions_.at(fn);
    std::vector<int> first(f.blocks.size()), last(f.blocks.size());
    for (std::size_t b = 0; b < f.blocks.size(); ++b) {
      int cur = static_cast<int>(g.nodes.size());
      g.nodes.emplace_back();
      first[b] = cur;
      for (const spv_event& e : f.blocks[b].events) {
        if (e.kind != spv_event::call || !functions_.count(e.var)) {
          if (e.kind != spv_event::call) g.nodes[static_cast<std::size_t>(cur)].events.push_back(e);
          continue;
        }
        std::vector<int> callee_exits;
        const int entry = expand(g, e.var, depth + 1, callee_exits);
        g.nodes[static_cast<std::size_t>(cur)].succ.push_back({entry, 0});
        const int next = static_cast<int>(g.nodes.size());
        g.nodes.emplace_back();
        for (int x : callee_exits) g.nodes[static_cast<std::size_t>(x)].succ.push_back({next, 0});
        cur = next;
      }
      last[b] = cur;
      if (f.blocks[b].returns) exits.push_back(cur);
    }
    for (std::size_t b = 0; b < f.blocks.size(); ++b)
      for (std::uint32_t s : f.blocks[b].succ) {
        const auto it = f.index.find(s);
        if (it == f.index.end()) continue;
        const auto t = static_cast<std::size_t>(it->second);
        // Blocks come in dominance order: a branch to a loop header at or
        // before this block is the loop's back edge. Only a loop that holds
        // a barrier carries accesses round: one without (an invocation's own
        // strided loop over its elements) is no phase of the workgroup.
        int kind = f.blocks[t].loop_header && t <= b ? (loop_has_barrier(f, t, b) ? 1 : 2) : 0;
        if (kind == 0 && leaves_plain_loop(f, b, t)) kind = 3;
        g.nodes[static_cast<std::size_t>(last[b])].succ.push_back({first[t], kind});
      }
    return first.empty() ? -1 : first[0];
  }

  bool block_has_barrier(const spv_block& b, int depth = 0) {
    for (const spv_event& e : b.events) {
      if (e.kind == spv_event::barrier) return true;
      if (e.kind == spv_event::call && functions_.count(e.var) && depth < 32)
        for (const spv_block& cb : functions_.at(e.var).blocks)
          if (block_has_barrier(cb, depth + 1)) return true;
    }
    return false;
  }
  /// Whether b -> t leaves every loop without a barrier that holds b (and b
  /// is in one): only then are accesses carried round such a loop paired
  /// again (an inner loop's exit inside an outer one keeps them its own).
  bool leaves_plain_loop(const spv_function& f, std::size_t b, std::size_t t) {
    bool in_one = false;
    for (std::size_t latch = 0; latch < f.blocks.size(); ++latch)
      for (std::uint32_t s : f.blocks[latch].succ) {
        const auto it = f.index.find(s);
        if (it == f.index.end()) continue;
        const auto h = static_cast<std::size_t>(it->second);
        if (!f.blocks[h].loop_header || h > latch || loop_has_barrier(f, h, latch)) continue;
        const std::vector<bool> body = loop_body(f, h, latch);
        if (body[b] && body[t]) return false;
        in_one = in_one || body[b];
      }
    return in_one;
  }
  /// The natural loop of the back edge latch -> header.
  std::vector<bool> loop_body(const spv_function& f, std::size_t header, std::size_t latch) {
    std::vector<bool> in(f.blocks.size(), false);
    std::vector<std::size_t> stack{latch};
    in[header] = true;
    std::vector<std::vector<std::size_t>> preds(f.blocks.size());
    for (std::size_t b = 0; b < f.blocks.size(); ++b)
      for (std::uint32_t s : f.blocks[b].succ)
        if (auto it = f.index.find(s); it != f.index.end()) preds[static_cast<std::size_t>(it->second)].push_back(b);
    while (!stack.empty()) {
      const std::size_t b = stack.back();
      stack.pop_back();
      if (in[b]) continue;
      in[b] = true;
      for (std::size_t p : preds[b]) stack.push_back(p);
    }
    return in;
  }
  /// Whether the natural loop of the back edge latch -> header holds a barrier.
  bool loop_has_barrier(const spv_function& f, std::size_t header, std::size_t latch) {
    const std::vector<bool> in = loop_body(f, header, latch);
    for (std::size_t b = 0; b < f.blocks.size(); ++b)
      if (in[b] && block_has_barrier(f.blocks[b])) return true;
    return false;
  }
  /// Per access: bit 0 pending; bit 1 pending and carried round a barrier
  /// loop's back edge; bit 2 carried round a barrier-free loop's back edge and
  /// still in it (paired with nothing until an edge leaves the loop).
  void flow(const race_graph& g, race_report& rep) {
    const std::size_t na = accesses_.size(), nn = g.nodes.size();
    std::vector<std::vector<std::uint8_t>> in(nn, std::vector<std::uint8_t>(na, 0));
    std::set<std::pair<int, int>> found;
    std::vector<int> work;
    std::vector<bool> queued(nn, false);
    for (std::size_t i = 0; i < nn; ++i) work.push_back(static_cast<int>(nn - 1 - i)), queued[i] = true;
    while (!work.empty()) {
      const auto n = static_cast<std::size_t>(work.back());
      work.pop_back();
      queued[n] = false;
      std::vector<std::uint8_t> st = in[n];
      for (const spv_event& e : g.nodes[n].events) {
        if (e.kind == spv_event::barrier) {
          std::fill(st.begin(), st.end(), 0);
          continue;
        }
        if (e.kind != spv_event::load && e.kind != spv_event::store) continue;
        for (std::size_t p = 0; p < na; ++p) {
          if (!(st[p] & 3) || accesses_[p].var != e.var) continue;
          if (accesses_[p].same_element_as(accesses_[static_cast<std::size_t>(e.access)])) continue;
          if (e.kind == spv_event::load && accesses_[p].is_store) found.insert({static_cast<int>(p), e.access});
          if (e.kind == spv_event::store && !accesses_[p].is_store && (st[p] & 2)) found.insert({static_cast<int>(p), e.access});
        }
        st[static_cast<std::size_t>(e.access)] |= 1;
      }
      for (const auto& [s, kind] : g.nodes[n].succ) {
        auto& t = in[static_cast<std::size_t>(s)];
        bool changed = false;
        for (std::size_t p = 0; p < na; ++p) {
          std::uint8_t v = st[p];
          if (kind == 1 && v) v = 2;                                              // round a barrier loop
          if (kind == 2) v = static_cast<std::uint8_t>((v & 2) | ((v & 5) ? 4 : 0));  // round a barrier-free loop
          if (kind == 3 && (v & 4)) v = static_cast<std::uint8_t>((v & ~4) | 1);   // out of it
          if ((t[p] | v) != t[p]) t[p] |= v, changed = true;
        }
        if (changed && !queued[static_cast<std::size_t>(s)]) work.push_back(s), queued[static_cast<std::size_t>(s)] = true;
      }
    }
    for (const auto& [a, b] : found) {
      const spv_access &x = accesses_[static_cast<std::size_t>(a)], &y = accesses_[static_cast<std::size_t>(b)];
      const auto nm = names_.find(x.var);
      rep.findings.push_back({x.is_store ? "read after write" : "write after read across a loop iteration",
                              nm != names_.end() && !nm->second.empty() ? nm->second : "%" + std::to_string(x.var),
                              x.where, y.where});
    }
  }

  std::set<std::uint32_t> own_;  // ids derived from the invocation's id
  std::uint32_t entry_ = 0;
  std::set<std::uint32_t> shared_;
  std::map<std::uint32_t, std::string> names_;
  std::map<std::uint32_t, spv_function> functions_;
  std::map<std::uint32_t, std::string> index_key_;  // pointer -> its indices (spv_access::index)
  std::vector<spv_access> accesses_;
  int barriers_ = 0;
};

}  // namespace detail

/// The shared-memory race check on a compute kernel's SPIR-V (header comment).
inline race_report check_shared_races(const std::vector<std::uint32_t>& spirv) {
  return detail::race_analysis(spirv).run();
}

}  // namespace kforge::gen
