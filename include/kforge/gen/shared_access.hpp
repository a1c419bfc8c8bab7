// kforge/gen/shared_access.hpp — the facts the gate's shared-memory rules
// read from a kernel's SPIR-V: which Workgroup variables it declares, every
// access to them, the barriers between, and the entry point's control-flow
// graph with every call inlined and its loops found. The rules themselves
// are beside it, each on its own: races (race.hpp, rules 1-3) and reads of
// shared memory nothing wrote (unwritten.hpp, rule 4).
//
// An access is a load or store whose pointer is rooted in a Workgroup
// variable (access chains and OpCopyObject followed back to it,
// vulkan/spirv/flow.hpp), OpCopyMemory as both, a cooperative-matrix load or
// store (many elements), or an atomic (a write, for rule 4 only). A barrier
// is an OpControlBarrier of workgroup scope or wider; a subgroup barrier is
// not one.
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
#include "kforge/vulkan.hpp"

namespace kforge::gen {

/// One finding of the race check: `first` (a store, or a load for write
/// after read) reaches `second` with no barrier in between; or, for kind
/// "reads shared memory nothing wrote", `first` is the load (second empty).
struct race_finding {
  /// "read after write within a step", "write after read within a step",
  /// "read after write across a loop iteration", "write after read across a
  /// loop iteration", or "reads shared memory nothing wrote".
  std::string kind;
  std::string variable;  ///< the shared variable's name (or %id)
  std::string first, second;  ///< "store at line 57", "load at line 63" (or the instruction's position)
  bool unwritten() const { return kind == "reads shared memory nothing wrote"; }
  std::string text() const {
    if (unwritten())
      return "reads shared memory nothing wrote: " + first + " of '" + variable +
             "' (no store to it comes before on any path from the entry; loops taken as running at least once)";
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

using spv_module = vulkan::spirv::module;
using spv_type = vulkan::spirv::type_info;

inline bool spv_atomic_writes(std::uint32_t op) {
  return op == 228 || (op >= 229 && op <= 242) || op == 6035 || op == 5614 || op == 5615;
}

struct spv_event {
  enum kind_t { load, store, barrier, call, write } kind;  // write: an atomic (for rule 4 only)
  std::uint32_t var = 0;     // load/store/write: the shared variable; call: the callee
  int access = -1;           // index into the access list (load/store/write)
};

/// A guard that holds where an access runs: lhs < rhs (lt), lhs <= rhs (le),
/// lhs == rhs (eq) or lhs != rhs (ne), on canonical expressions (race.hpp).
struct spv_fact {
  enum kind_t { lt, le, eq, ne } kind;
  int lhs, rhs;
};

struct spv_access {
  bool is_store = false, write_only = false;  // write_only: an atomic
  bool whole = false;  // a cooperative-matrix or OpCopyMemory access: many elements
  std::uint32_t var = 0, fn = 0;
  int block = -1;
  std::size_t inst = 0;
  std::string where;
  std::vector<std::uint32_t> index_ids;  // the ids of the indices, from the variable down
  // Filled by the race rule (race.hpp): the indices as canonical expressions and the guards.
  std::vector<int> chain;
  std::vector<spv_fact> facts;
};

/// The expanded graph: one node per straight run of events, calls inlined.
struct race_graph {
  struct node {
    std::vector<spv_event> events;
    /// (node, edge): 0 a forward edge; 1 + i the back edge back[i] of a loop
    /// (pending accesses are carried round it, marked as from the last iteration).
    std::vector<std::pair<int, int>> succ;
  };
  std::vector<node> nodes;
  std::vector<std::pair<int, int>> back;   // the back edges (latch, header)
  std::vector<std::vector<bool>> body;     // per back edge: the nodes of its loop
  std::vector<std::vector<bool>> inside;   // per back edge: the accesses in its loop
};

class shared_accesses {
 public:
  explicit shared_accesses(const std::vector<std::uint32_t>& spirv) : m(spirv), cfg(m) {
    // The local size x: the WorkgroupSize built-in (its spec constant's default, as the host runs
    // the kernel), else the LocalSize execution mode.
    for (const auto& in : m.insts)
      if (in.op == 16 && in.n >= 4 && m.w[in.at + 2] == 17) local_size = m.w[in.at + 3];
    for (const auto& [id, b] : m.builtin)
      if (b == 25)
        if (const auto* d = m.def_of(id); d && (d->op == 44 || d->op == 51) && d->n >= 4)
          if (const auto v = m.eval(m.w[d->at + 3])) local_size = static_cast<std::uint32_t>(*v);
    collect();
  }
  // cfg reads m by reference: a copy would read the original's module.
  shared_accesses(const shared_accesses&) = delete;
  shared_accesses& operator=(const shared_accesses&) = delete;

  spv_module m;
  vulkan::spirv::flow cfg;
  std::set<std::uint32_t> shared, initialised;  // Workgroup variables; those with an initialiser
  std::vector<spv_access> accesses;
  std::map<std::uint32_t, std::vector<std::vector<spv_event>>> events;  // per function, per block
  int barriers = 0;
  std::uint32_t local_size = 0;

  /// The entry point's graph, each call a fresh copy of its callee, with its loops.
  race_graph expanded() const {
    race_graph g;
    std::vector<int> exits;
    expand(g, m.entry, 0, exits);
    loops(g);
    return g;
  }

 private:
  void collect() {
    for (const auto& [id, k] : m.def) {
      const auto& in = m.insts[k];
      if (in.op == 59 && m.w[in.at + 3] == 4) shared.insert(id);  // OpVariable Workgroup
      if (in.op == 59 && m.w[in.at + 3] == 4 && in.n >= 5) initialised.insert(id);
    }
    for (const auto& [id, f] : cfg.functions) events[id].resize(f.blocks.size());
    std::uint32_t cur_fn = 0;
    int blk = -1;
    std::map<std::uint32_t, int> nth;  // per variable: accesses so far (for positions without lines)
    auto push = [&](spv_event e) { events[cur_fn][static_cast<std::size_t>(blk)].push_back(e); };
    auto access = [&](std::size_t k, std::uint32_t ptr, bool store, bool whole, bool write_only = false) {
      std::vector<std::uint32_t> idx;
      const std::uint32_t root = cfg.root_of(ptr, idx);
      if (!shared.count(root) || blk < 0) return;
      spv_access a;
      a.is_store = store;
      a.write_only = write_only;
      a.whole = whole;
      a.var = root;
      a.fn = cur_fn;
      a.block = blk;
      a.inst = k;
      a.index_ids = std::move(idx);
      const std::uint32_t line = m.insts[k].line;
      const int nk = ++nth[a.var];
      a.where = std::string(write_only ? "atomic" : store ? "store" : "load") +
                (line ? " at line " + std::to_string(line) : " #" + std::to_string(nk) + " of the variable");
      accesses.push_back(std::move(a));
      push({write_only ? spv_event::write : store ? spv_event::store : spv_event::load, root,
            static_cast<int>(accesses.size()) - 1});
    };
    for (std::size_t k = 0; k < m.insts.size(); ++k) {
      const auto& in = m.insts[k];
      const std::uint32_t* a = m.at(k);
      switch (in.op) {
        case 54:  // OpFunction
          cur_fn = a[2];
          blk = -1;
          break;
        case 56:  // OpFunctionEnd
          cur_fn = 0;
          blk = -1;
          break;
        case 248:  // OpLabel
          ++blk;
          break;
        case 61:  // OpLoad: type, result, pointer
          access(k, a[3], false, false);
          break;
        case 62:  // OpStore: pointer, object
          access(k, a[1], true, false);
          break;
        case 63:  // OpCopyMemory: target, source
          access(k, a[2], false, true);
          access(k, a[1], true, true);
          break;
        case 4457: case 5359:  // OpCooperativeMatrixLoadKHR / NV: type, result, pointer
          access(k, a[3], false, true);
          break;
        case 4458: case 5360:  // OpCooperativeMatrixStoreKHR / NV: pointer, object
          access(k, a[1], true, true);
          break;
        case 224: {  // OpControlBarrier: execution scope, memory scope, semantics
          const auto scope = m.eval(a[1]);
          // Scope: 0 CrossDevice, 1 Device, 2 Workgroup, 3 Subgroup, 4 Invocation.
          if (blk >= 0 && scope && *scope <= 2) {
            push({spv_event::barrier});
            ++barriers;
          }
          break;
        }
        case 57:  // OpFunctionCall: type, result, function, args
          if (blk >= 0) push({spv_event::call, a[3]});
          break;
        default:
          if (spv_atomic_writes(in.op)) access(k, in.op == 228 ? a[1] : a[3], true, true, true);
          break;
      }
    }
  }

  /// Adds function fn to g (each call a fresh copy); returns its entry node
  /// and appends its returning nodes to `exits`.
  int expand(race_graph& g, std::uint32_t fn, int depth, std::vector<int>& exits) const {
    if (depth > 32) throw error("kforge::gen: race check: calls nested deeper than 32");
    const vulkan::spirv::function& f = cfg.functions.at(fn);
    const auto& evs = events.at(fn);
    std::vector<int> first(f.blocks.size()), last(f.blocks.size());
    for (std::size_t b = 0; b < f.blocks.size(); ++b) {
      int cur = static_cast<int>(g.nodes.size());
      g.nodes.emplace_back();
      first[b] = cur;
      for (const spv_event& e : evs[b]) {
        if (e.kind != spv_event::call || !cfg.functions.count(e.var)) {
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
        // before this block is the loop's back edge.
        const int kind = f.blocks[t].loop_header && t <= b ? 1 : 0;
        g.nodes[static_cast<std::size_t>(last[b])].succ.push_back({first[t], kind});
      }
    return first.empty() ? -1 : first[0];
  }

  /// The back edges of the expanded graph, the nodes of their loops, and the
  /// accesses that happen in each loop. A back edge's kind in `g` becomes 1 +
  /// its index in g.back.
  void loops(race_graph& g) const {
    const std::size_t nn = g.nodes.size();
    std::vector<std::vector<int>> preds(nn);
    for (std::size_t n = 0; n < nn; ++n)
      for (auto& [s, kind] : g.nodes[n].succ) {
        preds[static_cast<std::size_t>(s)].push_back(static_cast<int>(n));
        if (kind == 1) {
          g.back.push_back({static_cast<int>(n), s});
          kind = static_cast<int>(g.back.size());
        }
      }
    for (const auto& [latch, header] : g.back) {
      std::vector<bool> in(nn, false);
      std::vector<int> stack{latch};
      in[static_cast<std::size_t>(header)] = true;
      while (!stack.empty()) {
        const int b = stack.back();
        stack.pop_back();
        if (in[static_cast<std::size_t>(b)]) continue;
        in[static_cast<std::size_t>(b)] = true;
        for (int p : preds[static_cast<std::size_t>(b)]) stack.push_back(p);
      }
      std::vector<bool> acc(accesses.size(), false);
      for (std::size_t n = 0; n < nn; ++n)
        if (in[n])
          for (const spv_event& e : g.nodes[n].events)
            if (e.access >= 0) acc[static_cast<std::size_t>(e.access)] = true;
      g.body.push_back(std::move(in));
      g.inside.push_back(std::move(acc));
    }
  }
};

}  // namespace detail
}  // namespace kforge::gen
