// kforge/gen/race.hpp — the shared-memory race rule on a compute kernel's
// SPIR-V, run by the gate (gate.hpp) before any case: a
// race that happens to change no output on one device (the missing-barrier
// mutants on an H100) is still a race, and a behavioural gate cannot prove
// one absent. docs/GENERATION.md ("The race check") states every rule below
// and what it proves; this comment is the summary.
//
// The check (check_shared_races) reads the accesses to Workgroup variables
// and the barriers from shared_access.hpp: every load and store whose
// pointer is rooted in a Workgroup-storage variable, OpCopyMemory as both,
// cooperative-matrix loads and stores, atomics (as writes, for rule 4 only)
// and execution barriers (OpControlBarrier of workgroup scope or wider), on
// the entry point's control-flow graph with every called function inlined
// (glslang leaves helpers such as a workgroup sum as calls). A forward data
// flow finds pending accesses — ones not yet followed by a barrier — per
// node. A step is the code between two barriers. Reported (rule 4 is
// unwritten.hpp's, reported with these):
//
//  1. read after write within a step: a store to X reaches a load of X with
//     no barrier between;
//  2. write after read within a step: a load of X reaches a store to X with
//     no barrier between (a tree reduction's unguarded s[i] += s[i + k]:
//     invocation i + k writes what i reads);
//  3. read after write / write after read across a loop iteration: the same
//     round the back edge of a loop the first access is in (the tiled loop
//     that loads its next tile while a slower invocation still multiplies
//     the last; a reduction loop without its barrier). Any loop: with the
//     index rules below an invocation's own strided loop needs no exemption.
//     An access before the loop, carried round it, stays in its step;
//  4. reads shared memory nothing wrote: a load of X that no store (or
//     atomic) to X reaches from the entry, each loop taken as running at
//     least once and the back edges of the loops around the load not taken
//     (a load at the top of a loop whose only store is further down reads
//     garbage in the first iteration).
//
// Index expressions are canonical trees over SSA values: constants, spec
// constants, push constants and built-ins are leaves; a load of a function
// variable is the value of its reaching store when that store is unique, or a
// phi of the reaching stores' values otherwise (a loop variable's recurrence
// becomes phi{init, self + step}). So s[t] = x; y = s[j] with j = (t + 1) %
// WG in a local is two expressions and reported. A pair is not a race when
// (docs/GENERATION.md gives each rule exactly):
//  - own element: the same expression, telling invocations apart, every part
//    of it keeping them apart (no division, shift, remainder or mask of an id
//    unless its range makes it the identity; no data; an id-dependent phi
//    only as a strided loop variable whose invocations' values never meet,
//    d = t; d += WG) — across iterations no uniform phi either;
//  - own chunk: A * I + R at one position for both, R in [0, A);
//  - different constants, or value ranges that do not meet, at one position;
// and within a step only:
//  - a guard that separates them: `if (x < B)` over index x, the other index
//    y + B (kforge's guarded tree reduction `if (i < k) s[i] += s[i + k];`);
//  - parity: a multiple of 2S against one plus S (the interleaved reductions),
//    or S * even + c against S * odd + c on linear forms (the work-efficient
//    scan);
//  - two halves of a ping-pong buffer (s[cur][i] and s[cur ^ 1][j], or
//    flattened cur * S + i and (1 - cur) * S + j with i, j < S, also on
//    linear forms: the double-buffered scan).
//
// Not proven (docs/GENERATION.md): that two loads of one variable with the
// same reaching stores see one value, that the subgroup ids are what they
// say, that index arithmetic does not wrap; writes after writes, races
// through storage buffers, and synchronisation by anything but a barrier (a
// subgroup barrier does not count; a memory barrier without an execution
// barrier does not either). Rule 4 looks at variables, not elements, and at
// paths, not conditions.
//
// The refusals about the contract's promise of the same bits on every run
// (float atomics, RelaxedPrecision) and the shared memory a kernel declares
// are static_rules.hpp's.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kforge/core/error.hpp"
#include "kforge/gen/shared_access.hpp"
#include "kforge/gen/unwritten.hpp"

namespace kforge::gen {

namespace detail {

class race_analysis {
 public:
  explicit race_analysis(const std::vector<std::uint32_t>& w)
      : s_(w), m_(s_.m), accesses_(s_.accesses), local_size_(s_.local_size) {
    for (auto& a : accesses_)
      for (std::uint32_t x : a.index_ids) a.chain.push_back(key(x));
  }
  race_analysis(const race_analysis&) = delete;  // m_ and accesses_ refer into s_
  race_analysis& operator=(const race_analysis&) = delete;

  race_report run() {
    race_report rep;
    rep.shared_variables = static_cast<int>(s_.shared.size());
    for (const auto& a : accesses_) rep.accesses += a.write_only ? 0 : 1;
    rep.barriers = s_.barriers;
    if (s_.shared.empty() || !s_.cfg.functions.count(m_.entry)) return rep;
    for (auto& a : accesses_) a.facts = facts_at(a);
    const race_graph g = s_.expanded();
    flow(g, rep);
    unwritten_reads(s_, g, rep);
    return rep;
  }

 private:
  // ---- canonical expressions ----
  struct knode {
    std::string sig;
    std::uint32_t type = 0;
    bool id_dep = false;    // depends on the invocation's id
    bool uniform = true;    // the same for every invocation of the workgroup
    std::uint64_t selfs = 0;  // the phis being built (by level) it refers to
    int lane_ids = 0;       // bits: 1 local/global id or index, 2 subgroup id, 4 subgroup invocation id
    std::vector<int> kids;
  };
  int intern(const std::string& sig, std::uint32_t type, bool id_dep, bool uniform, std::uint64_t self, int lanes,
             std::vector<int> kids = {}) {
    const auto it = kix_.find(sig);
    if (it != kix_.end()) return it->second;
    kn_.push_back({sig, type, id_dep, uniform, self, lanes, std::move(kids)});
    kix_[sig] = static_cast<int>(kn_.size()) - 1;
    return static_cast<int>(kn_.size()) - 1;
  }
  int leaf(const std::string& sig, std::uint32_t type, bool uniform) { return intern(sig, type, false, uniform, 0, 0); }
  /// keep_selfs: the self-references that stay open (a phi closes its own level and deeper).
  int op_node(const std::string& head, std::uint32_t type, std::vector<int> kids, bool commutative = false,
              std::uint64_t keep_selfs = ~std::uint64_t(0)) {
    if (commutative) std::sort(kids.begin(), kids.end());
    std::string sig = head + "(";
    bool id = false, uni = true;
    std::uint64_t self = 0;
    int lanes = 0;
    for (std::size_t i = 0; i < kids.size(); ++i) {
      const knode& k = kn_[static_cast<std::size_t>(kids[i])];
      if (i) sig += ',';
      sig += std::to_string(kids[i]);
      id = id || k.id_dep;
      uni = uni && k.uniform;
      self |= k.selfs;
      lanes |= k.lane_ids;
    }
    return intern(sig + ")", type, id, uni, self & keep_selfs, lanes, std::move(kids));
  }
  int const_node(std::uint64_t v) { return leaf("k" + std::to_string(v), 0, true); }
  bool is_const(int n) const { return kn_[static_cast<std::size_t>(n)].sig[0] == 'k' && kn_[static_cast<std::size_t>(n)].sig[1] != 'c'; }
  /// ext(base, i, j) flattened: a component or element of a value.
  int ext_node(int base, const std::vector<int>& idx, std::uint32_t type) {
    if (idx.empty()) return base;
    const knode& b = kn_[static_cast<std::size_t>(base)];
    // The y and z of the local id, and of the global id, are the same for the whole workgroup
    // (the contract's local size is (N, 1, 1)).
    if ((b.sig == "bi27" || b.sig == "bi28") && is_const(idx[0]) && kn_[static_cast<std::size_t>(idx[0])].sig != "k0") {
      const int l = leaf(b.sig + "." + kn_[static_cast<std::size_t>(idx[0])].sig, 0, true);
      return ext_node(l, std::vector<int>(idx.begin() + 1, idx.end()), type);
    }
    std::vector<int> kids;
    if (b.sig.rfind("ext(", 0) == 0) kids = b.kids;
    else kids.push_back(base);
    kids.insert(kids.end(), idx.begin(), idx.end());
    return op_node("ext", type, kids);
  }

  int key(std::uint32_t id, int depth = 0) {
    if (const auto it = memo_.find(id); it != memo_.end()) return it->second;
    const int k = key_of(id, depth);
    if (!kn_[static_cast<std::size_t>(k)].selfs) memo_[id] = k;
    return k;
  }
  int key_of(std::uint32_t id, int depth) {
    const auto* d = m_.def_of(id);
    if (!d) return const_node(id);  // a literal
    if (depth > 200 || ++work_ > 2000000) return leaf("deep@" + std::to_string(id), 0, false);
    const std::uint32_t* a = &m_.w[d->at];
    const std::uint32_t type = vulkan::spirv::result_layout(d->op) == 2 ? a[1] : 0;
    switch (d->op) {
      case 41: case 48: return leaf("kt", type, true);
      case 42: case 49: return leaf("kf", type, true);
      case 43: {
        if (!m_.is_float(type)) return const_node(d->n >= 5 ? (std::uint64_t(a[4]) << 32 | a[3]) : a[3]);
        std::string s = "kF";
        for (std::uint32_t j = 3; j < d->n; ++j) s += std::to_string(a[j]) + ".";
        return leaf(s, type, true);
      }
      case 46: return const_node(0);
      case 44: {  // OpConstantComposite
        std::vector<int> kids;
        for (std::uint32_t j = 3; j < d->n; ++j) kids.push_back(key(a[j], depth + 1));
        return op_node("kc", type, kids);
      }
      case 50: {  // OpSpecConstant
        const auto s = m_.spec_id.find(id);
        return leaf("sc" + (s != m_.spec_id.end() ? std::to_string(s->second) : "%" + std::to_string(id)), type, true);
      }
      case 51: {  // OpSpecConstantComposite (gl_WorkGroupSize)
        std::vector<int> kids;
        for (std::uint32_t j = 3; j < d->n; ++j) kids.push_back(key(a[j], depth + 1));
        return op_node("scc", type, kids);
      }
      case 52: {  // OpSpecConstantOp: as the instruction it names
        if (d->n < 4) return leaf("sco@" + std::to_string(id), type, true);
        return generic(a[3], type, std::vector<std::uint32_t>(a + 4, a + d->n), depth);
      }
      case 55: return leaf("param@" + std::to_string(id), type, false);
      case 57: return leaf("call@" + std::to_string(id), type, false);
      case 61: return load_key(m_.def.at(id), a[3], type, depth);
      case 245: {  // OpPhi: (value, parent) pairs
        std::vector<int> kids;
        for (std::uint32_t j = 3; j + 1 < d->n; j += 2) kids.push_back(key(a[j], depth + 1));
        return phi_node(kids, type);
      }
      case 81: {  // OpCompositeExtract: composite, literal indices
        std::vector<int> idx;
        for (std::uint32_t j = 4; j < d->n; ++j) idx.push_back(const_node(a[j]));
        return ext_node(key(a[3], depth + 1), idx, type);
      }
      case 79: {  // OpVectorShuffle: two vectors, literal components
        std::vector<int> kids{key(a[3], depth + 1), key(a[4], depth + 1)};
        for (std::uint32_t j = 5; j < d->n; ++j) kids.push_back(const_node(a[j]));
        return op_node("o79:" + std::to_string(type), type, kids);
      }
      case 82: {  // OpCompositeInsert: object, composite, literal indices
        std::vector<int> kids{key(a[3], depth + 1), key(a[4], depth + 1)};
        for (std::uint32_t j = 5; j < d->n; ++j) kids.push_back(const_node(a[j]));
        return op_node("o82:" + std::to_string(type), type, kids);
      }
      case 12: {  // OpExtInst: set, instruction, operands
        std::vector<int> kids{const_node(a[4])};
        for (std::uint32_t j = 5; j < d->n; ++j) kids.push_back(key(a[j], depth + 1));
        return op_node("x" + std::to_string(a[3]) + ":" + std::to_string(type), type, kids);
      }
      case 83:  // OpCopyObject
        return key(a[3], depth + 1);
      default:
        if (spv_atomic_writes(d->op) || d->op == 227) return leaf("atomic@" + std::to_string(id), type, false);
        // Group and subgroup operations: not a function of their operands alone.
        if ((d->op >= 261 && d->op <= 270) || (d->op >= 333 && d->op <= 366) || d->op == 4421 || d->op == 4428 ||
            d->op == 4429 || d->op == 4430 || d->op == 4431 || d->op == 4432 || d->op == 5294 || d->op == 5295 || d->op == 5296)
          return leaf("group@" + std::to_string(id), type, false);
        if (vulkan::spirv::result_layout(d->op) != 2) return leaf("id@" + std::to_string(id), type, false);
        return generic(d->op, type, std::vector<std::uint32_t>(a + 3, a + d->n), depth);
    }
  }
  int generic(std::uint32_t op, std::uint32_t type, const std::vector<std::uint32_t>& ops, int depth) {
    if (op == 81 && !ops.empty()) {  // CompositeExtract inside OpSpecConstantOp
      std::vector<int> idx;
      for (std::size_t j = 1; j < ops.size(); ++j) idx.push_back(const_node(ops[j]));
      return ext_node(key(ops[0], depth + 1), idx, type);
    }
    std::vector<int> kids;
    for (std::uint32_t x : ops) kids.push_back(key(x, depth + 1));
    if ((op == 128 || op == 197 || op == 198) && kids.size() == 2)  // (i / C) * C + i % C is i
      for (int side = 0; side < 2; ++side) {
        const knode& hi = kn_[static_cast<std::size_t>(kids[static_cast<std::size_t>(side)])];
        const int lo = kids[static_cast<std::size_t>(1 - side)];
        if (hi.kids.size() != 2) continue;
        if (hi.sig.rfind("o132:", 0) == 0) {
          for (int i = 0; i < 2; ++i) {
            const int q = hi.kids[static_cast<std::size_t>(i)], c = hi.kids[static_cast<std::size_t>(1 - i)];
            const knode& kq = kn_[static_cast<std::size_t>(q)];
            if (kq.sig.rfind("o134:", 0) == 0 && kq.kids.size() == 2 && kq.kids[1] == c && split_of(q, lo) >= 0)
              return split_of(q, lo);
          }
        } else if (hi.sig.rfind("o196:", 0) == 0) {
          const int q = hi.kids[0];
          const knode& kq = kn_[static_cast<std::size_t>(q)];
          if (kq.sig.rfind("o194:", 0) == 0 && kq.kids.size() == 2 && kq.kids[1] == hi.kids[1] && split_of(q, lo) >= 0)
            return split_of(q, lo);
        }
      }
    // IAdd, IMul, logical and/or/equal, integer (in)equality, bitwise and/or/xor.
    const bool comm = op == 128 || op == 132 || op == 164 || op == 165 || op == 166 || op == 167 || op == 170 ||
                      op == 171 || op == 197 || op == 198 || op == 199;
    return op_node("o" + std::to_string(op) + ":" + std::to_string(type), type, kids, comm);
  }
  /// A phi of values; `level`: the level of the function variable's phi being
  /// closed (a loop variable refers to itself as self<level>), -1 for none.
  int phi_node(std::vector<int> kids, std::uint32_t type, int level = -1) {
    std::sort(kids.begin(), kids.end());
    kids.erase(std::unique(kids.begin(), kids.end()), kids.end());
    if (kids.size() == 1) return kids[0];
    const std::uint64_t keep = level < 0 ? ~std::uint64_t(0) : (std::uint64_t(1) << level) - 1;
    return op_node("phi", type, kids, false, keep);
  }
  int self_node(int level) {
    return intern("self" + std::to_string(level), 0, false, true, std::uint64_t(1) << level, 0);
  }

  int load_key(std::size_t k, std::uint32_t ptr, std::uint32_t type, int depth) {
    std::vector<std::uint32_t> idx;
    const std::uint32_t root = s_.cfg.root_of(ptr, idx);
    std::vector<int> ik;
    for (std::uint32_t x : idx) ik.push_back(key(x, depth + 1));
    const auto* rd = m_.def_of(root);
    const std::uint32_t sc = rd && rd->op == 59 ? m_.w[rd->at + 3] : 0xffffffffu;
    const std::uint32_t load_id = m_.w[m_.insts[k].at + 2];
    if (rd && rd->op == 59 && sc == 1) {  // Input
      const auto b = m_.builtin.find(root);
      if (b == m_.builtin.end()) return ext_node(leaf("in%" + std::to_string(root), 0, false), ik, type);
      const std::uint32_t bi = b->second;
      // NumWorkgroups 24, WorkgroupSize 25, WorkgroupId 26, SubgroupSize 36, NumSubgroups 38: the same for the
      // whole workgroup. LocalInvocationId 27, GlobalInvocationId 28, LocalInvocationIndex 29: one per
      // invocation; SubgroupId 40, SubgroupLocalInvocationId 41: one per invocation together.
      const bool uni = bi == 24 || bi == 25 || bi == 26 || bi == 36 || bi == 38;
      const int lanes = bi == 27 || bi == 28 || bi == 29 ? 1 : bi == 40 ? 2 : bi == 41 ? 4 : 0;
      if (bi == 29) {  // LocalInvocationIndex is LocalInvocationId.x at the contract's local size (N, 1, 1)
        const int l = intern("bi27", 0, true, false, 0, 1);
        return ext_node(ext_node(l, {const_node(0)}, type), ik, type);
      }
      const int l = intern("bi" + std::to_string(bi), 0, lanes != 0, uni, 0, lanes);
      return ext_node(l, ik, type);
    }
    if (rd && rd->op == 59 && (sc == 9 || sc == 2 || sc == 0))  // push constants, uniforms
      return ext_node(leaf("pc%" + std::to_string(root), 0, true), ik, type);
    if (rd && rd->op == 59 && sc == 7) {  // a function variable: its reaching stores
      auto [f, b] = s_.cfg.place(k);
      if (!f || b < 0) return leaf("ld@" + std::to_string(load_id), type, false);
      const std::set<long> defs = s_.cfg.reaching_at(*f, b, k, root);
      return ext_node(var_value(*f, root, defs, depth), ik, type);
    }
    if (rd && rd->op == 55)  // a function parameter (a pointer): the same within the call
      return ext_node(leaf("arg%" + std::to_string(root), 0, false), ik, type);
    if (rd && rd->op == 59 && sc == 6)  // Private: one value per variable (not followed)
      return ext_node(leaf("pv%" + std::to_string(root), 0, false), ik, type);
    return leaf("ld@" + std::to_string(load_id), type, false);  // storage buffers, shared memory: data
  }
  /// The value a function variable holds given the stores that reach: the stored value where
  /// one store reaches, else a phi of them (itself `self` where a store refers back to it).
  int var_value(vulkan::spirv::function& f, std::uint32_t var, const std::set<long>& defs, int depth) {
    const auto pk = std::make_pair(var, defs);
    if (const auto it = var_memo_.find(pk); it != var_memo_.end()) return it->second;
    if (const auto it = open_.find(pk); it != open_.end()) return self_node(it->second);
    const int level = static_cast<int>(open_.size());
    if (level >= 63) return leaf("deep%" + std::to_string(var), 0, false);
    open_[pk] = level;
    std::vector<int> kids;
    for (long dk : defs) {
      if (dk < 0) {
        kids.push_back(leaf("undef%" + std::to_string(var), 0, false));
        continue;
      }
      const auto k = static_cast<std::size_t>(dk);
      const auto& in = m_.insts[k];
      const std::uint32_t* a = m_.at(k);
      bool direct = false;
      if (in.op == 62 && s_.cfg.function_var(a[1], &direct) == var && direct) kids.push_back(key(a[2], depth + 1));
      else if (in.op == 59 && in.n >= 5) kids.push_back(key(a[4], depth + 1));
      else kids.push_back(leaf("def@" + std::to_string(k), 0, false));  // part of it, or a call's
    }
    open_.erase(pk);
    const std::uint32_t vt = m_.type_of(var);
    const spv_type* pt = m_.type(vt);
    const int n = phi_node(kids, pt ? pt->elem : 0, level);
    if (!kn_[static_cast<std::size_t>(n)].selfs) var_memo_[pk] = n;
    (void)f;
    return n;
  }

  // ---- guards ----
  void facts_of(std::uint32_t cond, bool truth, std::vector<spv_fact>& out, int depth = 0) {
    const auto* d = m_.def_of(cond);
    if (!d || depth > 8) return;
    const std::uint32_t* a = &m_.w[d->at];
    const std::uint32_t op = d->op;
    if (op == 168 && d->n >= 4) return facts_of(a[3], !truth, out, depth + 1);  // LogicalNot
    if (op == 167 && d->n >= 5 && truth) {  // LogicalAnd
      facts_of(a[3], true, out, depth + 1);
      facts_of(a[4], true, out, depth + 1);
      return;
    }
    if (op == 166 && d->n >= 5 && !truth) {  // LogicalOr false: both false
      facts_of(a[3], false, out, depth + 1);
      facts_of(a[4], false, out, depth + 1);
      return;
    }
    if (op == 245) {  // the phi glslang makes of a short-circuit `a && b` (or `a || b`)
      auto [f, b] = s_.cfg.place(m_.def.at(cond));
      if (!f || b < 0) return;
      const std::uint32_t here = f->blocks[static_cast<std::size_t>(b)].label;
      std::vector<std::pair<std::uint32_t, int>> live;  // (value, parent block) that can give `truth`
      for (std::uint32_t j = 3; j + 1 < d->n; j += 2) {
        const auto it = f->index.find(a[j + 1]);
        if (it == f->index.end()) return;
        const vulkan::spirv::block& pb = f->blocks[static_cast<std::size_t>(it->second)];
        // The parent branches on this very value and comes here on its other side: it gives !truth.
        if (pb.cond == a[j] && (truth ? pb.on_false : pb.on_true) == here && pb.on_true != pb.on_false) continue;
        live.push_back({a[j], it->second});
      }
      if (live.size() != 1) return;
      facts_of(live[0].first, truth, out, depth + 1);
      // ... and the branch that led to its block: `a` for `a && b`.
      const auto& preds = f->preds[static_cast<std::size_t>(live[0].second)];
      if (preds.size() == 1) {
        const vulkan::spirv::block& pb = f->blocks[static_cast<std::size_t>(preds[0])];
        const std::uint32_t lbl = f->blocks[static_cast<std::size_t>(live[0].second)].label;
        if (pb.cond && pb.on_true != pb.on_false && (pb.on_true == lbl || pb.on_false == lbl))
          facts_of(pb.cond, pb.on_true == lbl, out, depth + 1);
      }
      return;
    }
    if (d->n < 5) return;
    const int x = key(a[3]), y = key(a[4]);
    switch (op) {
      case 170: out.push_back({truth ? spv_fact::eq : spv_fact::ne, x, y}); break;              // IEqual
      case 171: out.push_back({truth ? spv_fact::ne : spv_fact::eq, x, y}); break;              // INotEqual
      case 176: case 177: out.push_back(truth ? spv_fact{spv_fact::lt, x, y} : spv_fact{spv_fact::le, y, x}); break;  // <
      case 172: case 173: out.push_back(truth ? spv_fact{spv_fact::lt, y, x} : spv_fact{spv_fact::le, x, y}); break;  // >
      case 178: case 179: out.push_back(truth ? spv_fact{spv_fact::le, x, y} : spv_fact{spv_fact::lt, y, x}); break;  // <=
      case 174: case 175: out.push_back(truth ? spv_fact{spv_fact::le, y, x} : spv_fact{spv_fact::lt, x, y}); break;  // >=
      default: break;
    }
  }
  /// The guards that hold where access a runs: the conditions of the branches
  /// whose taken side (entered from the branch alone) dominates its block.
  std::vector<spv_fact> facts_at(const spv_access& a) {
    std::vector<spv_fact> out;
    auto& f = s_.cfg.functions[a.fn];
    for (std::size_t b = 0; b < f.blocks.size(); ++b) {
      const vulkan::spirv::block& blk = f.blocks[b];
      if (!blk.cond || blk.on_true == blk.on_false) continue;
      for (const bool truth : {true, false}) {
        const auto it = f.index.find(truth ? blk.on_true : blk.on_false);
        if (it == f.index.end()) continue;
        const auto& preds = f.preds[static_cast<std::size_t>(it->second)];
        if (preds.size() != 1 || preds[0] != static_cast<int>(b)) continue;
        if (f.dominates(it->second, a.block)) facts_of(blk.cond, truth, out);
      }
    }
    return out;
  }

  // ---- judging a pair ----
  /// The index chain with trailing constants (a component of the element) dropped.
  std::vector<int> element(const spv_access& a) const {
    std::vector<int> c = a.chain;
    while (!c.empty() && is_const(c.back())) c.pop_back();
    return c;
  }
  /// n with the values a `n != c` guard rules out dropped from its phi.
  int narrowed(int n, const std::vector<spv_fact>& facts) {
    const knode k = kn_[static_cast<std::size_t>(n)];
    if (k.sig.rfind("phi(", 0) != 0) return n;
    std::vector<int> kids;
    for (int c : k.kids) {
      bool out = false;
      for (const auto& f : facts)
        if (f.kind == spv_fact::ne && ((f.lhs == n && f.rhs == c) || (f.rhs == n && f.lhs == c)) && is_const(c)) out = true;
      if (!out) kids.push_back(c);
    }
    if (kids.size() == k.kids.size()) return n;
    return kids.size() == 1 ? kids[0] : op_node("phi", k.type, kids);
  }
  /// Whether an expression tells invocations apart: a local or global id, the subgroup id with
  /// the subgroup invocation id, or the subgroup invocation id where a guard pins the subgroup id.
  bool tells_apart(int n, const std::vector<spv_fact>& fa, const std::vector<spv_fact>& fb) const {
    const int lanes = kn_[static_cast<std::size_t>(n)].lane_ids;
    if (lanes & 1) return true;
    if ((lanes & 6) == 6) return true;
    if (lanes & 4) {
      auto pinned = [&](const std::vector<spv_fact>& fs) {
        for (const auto& f : fs)
          if (f.kind == spv_fact::eq) {
            const knode &l = kn_[static_cast<std::size_t>(f.lhs)], &r = kn_[static_cast<std::size_t>(f.rhs)];
            if ((l.sig == "bi40" && r.uniform) || (r.sig == "bi40" && l.uniform)) return true;
          }
        return false;
      };
      return pinned(fa) && pinned(fb);
    }
    return false;
  }
  /// The invocation's own element: the same index expression, telling invocations apart.
  bool own(const spv_access& x, const spv_access& y, bool across) {
    if (x.whole || y.whole) return false;
    std::vector<int> a = element(x), b = element(y);
    for (int& n : a) n = narrowed(n, x.facts);
    for (int& n : b) n = narrowed(n, y.facts);
    if (a.size() != b.size() || a.empty()) return false;
    // The first value of a strided loop variable is in its orbit: s[t] against s[d], d = t; d += WG
    // (whether the phi keeps invocations apart is checked below).
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (in_orbit(a[i], b[i])) b[i] = a[i];
      if (in_orbit(b[i], a[i])) a[i] = b[i];
    }
    if (a != b) return false;
    // A row and a column of one id, s[i / C][i % C] (or i >> k, i & (2^k - 1)): together the id.
    for (std::size_t i = 0; i < a.size(); ++i)
      for (std::size_t j = 0; j < a.size(); ++j) {
        if (i == j) continue;
        const int whole = split_of(a[i], a[j]);
        if (whole >= 0) a[i] = a[j] = whole;
      }
    for (int n : a)
      if (!partitions(n, across)) return false;
    for (int n : a)
      if (tells_apart(n, x.facts, y.facts)) return true;
    return false;
  }
  /// The first value of a loop variable phi{init, ... self ...}, or -1.
  int orbit_init(int n) const {
    const knode& k = kn_[static_cast<std::size_t>(n)];
    if (!is_phi(n) || k.kids.size() != 2) return -1;
    const bool s0 = kn_[static_cast<std::size_t>(k.kids[0])].selfs != 0, s1 = kn_[static_cast<std::size_t>(k.kids[1])].selfs != 0;
    if (s0 == s1) return -1;
    return s0 ? k.kids[1] : k.kids[0];
  }
  /// x is one of the first values of the loop variable p = phi{init, self + S}:
  /// init, or init + S, or init + c * S (c a constant).
  bool in_orbit(int p, int x) {
    const int init = orbit_init(p);
    if (init < 0) return false;
    if (init == x) return true;
    const knode& k = kn_[static_cast<std::size_t>(p)];
    const int rec = k.kids[0] == init ? k.kids[1] : k.kids[0];
    const knode& r = kn_[static_cast<std::size_t>(rec)];
    if (r.sig.rfind("o128:", 0) != 0 || r.kids.size() != 2) return false;
    const bool s0 = kn_[static_cast<std::size_t>(r.kids[0])].sig.rfind("self", 0) == 0;
    const int stride = s0 ? r.kids[1] : r.kids[0];
    std::vector<int> ti, tx;
    terms(init, ti);
    terms(x, tx);
    std::sort(ti.begin(), ti.end());
    for (std::size_t j = 0; j < tx.size(); ++j) {
      const knode& m = kn_[static_cast<std::size_t>(tx[j])];
      const bool multiple = tx[j] == stride || (m.sig.rfind("o132:", 0) == 0 && m.kids.size() == 2 &&
                                                ((m.kids[0] == stride && is_const(m.kids[1])) || (m.kids[1] == stride && is_const(m.kids[0]))));
      if (!multiple) continue;
      std::vector<int> rest = tx;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(j));
      std::sort(rest.begin(), rest.end());
      if (rest == ti) return true;
    }
    // A constant stride folded into a constant term: t + 64 against phi{t, self + 64}.
    if (is_const(stride) && tx.size() == ti.size() + 1) {
      std::vector<int> rest = tx;
      const auto it = std::find(rest.begin(), rest.end(), stride);
      if (it != rest.end()) {
        rest.erase(it);
        std::sort(rest.begin(), rest.end());
        return rest == ti;
      }
    }
    return false;
  }
  /// For q = i / C (or i >> k) and r = i % C (or i & (2^k - 1)): i; else -1.
  int split_of(int q, int r) const {
    const knode &kq = kn_[static_cast<std::size_t>(q)], &kr = kn_[static_cast<std::size_t>(r)];
    if (kq.kids.size() != 2 || kr.kids.size() != 2) return -1;
    const bool div = kq.sig.rfind("o134:", 0) == 0, shr = kq.sig.rfind("o194:", 0) == 0;
    if (div && kr.sig.rfind("o137:", 0) == 0 && kq.kids == kr.kids && is_const(kq.kids[1])) return kq.kids[0];
    if (shr && kr.sig.rfind("o199:", 0) == 0 && is_const(kq.kids[1])) {
      const std::string& ks = kn_[static_cast<std::size_t>(kq.kids[1])].sig;
      if (ks[1] < '0' || ks[1] > '9') return -1;
      const std::uint64_t k = std::stoull(ks.substr(1));
      if (k >= 32) return -1;
      for (int i = 0; i < 2; ++i)
        if (kr.kids[static_cast<std::size_t>(i)] == kq.kids[0] && kn_[static_cast<std::size_t>(kr.kids[static_cast<std::size_t>(1 - i)])].sig == "k" + std::to_string((1ull << k) - 1))
          return kq.kids[0];
    }
    return -1;
  }
  bool is_phi(int n) const { return kn_[static_cast<std::size_t>(n)].sig.rfind("phi(", 0) == 0; }
  bool contains_phi(int n, int depth = 0) {
    if (const auto it = phi_memo_.find(n); it != phi_memo_.end()) return it->second;
    const knode k = kn_[static_cast<std::size_t>(n)];
    bool r = is_phi(n) || depth > 64;
    for (std::size_t i = 0; !r && i < k.kids.size(); ++i) r = contains_phi(k.kids[i], depth + 1);
    if (depth <= 64) phi_memo_[n] = r;
    return r;
  }
  /// Whether an index expression gives different invocations different
  /// elements as far as its parts go: every part is uniform, an invocation id,
  /// or built from them by operations that keep ids apart (a division, shift
  /// right, remainder or mask of an id part only where its range shows it is
  /// the identity), and every id-dependent phi is a strided loop variable whose
  /// invocations' values never meet: phi{u + x, self + S} with u uniform, x
  /// the id part below S (d = t; d += WG), or x the subgroup invocation id and
  /// S gl_SubgroupSize. Data (a value loaded from memory, a call's result) is
  /// not. `across`: between iterations of a loop, where a uniform loop
  /// variable (a phi) may have changed, so uniform phis are not taken either.
  bool partitions(int n, bool across, int depth = 0) {
    const auto mk = std::make_pair(n, across);
    if (const auto it = part_memo_.find(mk); it != part_memo_.end()) return it->second;
    const bool r = partitions_of(n, across, depth);
    if (depth <= 64) part_memo_[mk] = r;
    return r;
  }
  bool partitions_of(int n, bool across, int depth) {
    const knode k = kn_[static_cast<std::size_t>(n)];
    if (depth > 64) return false;
    if (k.uniform && !k.selfs) return !across || !contains_phi(n);
    if (k.kids.empty()) return k.id_dep && !k.selfs;  // an id, not data
    if (is_phi(n)) return strided_orbits(n, across, depth);
    const auto colon = k.sig.find(':');
    if (k.sig[0] == 'o' && colon != std::string::npos && k.kids.size() == 2) {
      const int op = std::stoi(k.sig.substr(1, colon - 1));
      const bool narrowing = op == 134 || op == 135 || op == 194 || op == 195 || op == 137 || op == 138 || op == 139 || op == 199;
      if (narrowing && (kn_[static_cast<std::size_t>(k.kids[0])].id_dep || kn_[static_cast<std::size_t>(k.kids[1])].id_dep)) {
        // Only the identity keeps ids apart: x % c with x < c, x & m with x <= m = 2^j - 1.
        bool identity = false;
        if (op == 137) {
          const range_t a = range(k.kids[0]), b = range(k.kids[1]);
          identity = a && b && a->second < b->first && !kn_[static_cast<std::size_t>(k.kids[1])].id_dep;
        } else if (op == 199) {
          for (int i = 0; i < 2; ++i) {
            const int m = k.kids[static_cast<std::size_t>(i)], v = k.kids[static_cast<std::size_t>(1 - i)];
            const range_t mr = range(m), vr = range(v);
            if (is_const(m) && mr && ((mr->first + 1) & mr->first) == 0 && vr && vr->second <= mr->first) identity = true;
          }
        }
        if (!identity) return false;
        return partitions(k.kids[0], across, depth + 1) && (op == 199 || partitions(k.kids[1], across, depth + 1));
      }
    }
    if (k.sig[0] == 'x') return false;  // min, max, clamp and the like of an id: not one-to-one
    for (int c : k.kids)
      if (!partitions(c, across, depth + 1)) return false;
    return true;
  }
  bool strided_orbits(int n, bool across, int depth) {
    const knode k = kn_[static_cast<std::size_t>(n)];
    if (k.kids.size() != 2) return false;
    for (int i = 0; i < 2; ++i) {
      const int init = k.kids[static_cast<std::size_t>(i)], step = k.kids[static_cast<std::size_t>(1 - i)];
      const knode& st = kn_[static_cast<std::size_t>(step)];
      if (kn_[static_cast<std::size_t>(init)].selfs || st.sig.rfind("o128:", 0) != 0 || st.kids.size() != 2) continue;
      for (int j = 0; j < 2; ++j) {
        const knode& self = kn_[static_cast<std::size_t>(st.kids[static_cast<std::size_t>(j)])];
        const int stride = st.kids[static_cast<std::size_t>(1 - j)];
        const knode& sk = kn_[static_cast<std::size_t>(stride)];
        if (self.sig.rfind("self", 0) != 0 || !sk.uniform || sk.selfs) continue;
        // The init's terms: uniform ones, and the id part.
        std::vector<int> ts;
        terms(init, ts);
        std::uint64_t hi = 0;
        bool ok = true, lane_only = false;
        for (int t : ts) {
          const knode& tk = kn_[static_cast<std::size_t>(t)];
          if (tk.uniform && !contains_phi(t)) continue;
          if (!tk.id_dep || !partitions(t, across, depth + 1)) {
            ok = false;
            break;
          }
          if (tk.sig == "bi41") lane_only = true;
          const range_t r = range(t);
          if (!r) {
            ok = false;
            break;
          }
          hi += r->second;
        }
        if (!ok) continue;
        if (lane_only && ts.size() >= 1 && sk.sig == "bi36") return true;  // q = lane; q += gl_SubgroupSize
        const range_t sr = range(stride);
        if (sr && hi < sr->first) return true;
      }
    }
    return false;
  }
  /// Different constants at one index position: different elements.
  bool constants_apart(const spv_access& x, const spv_access& y) const {
    if (x.whole || y.whole) return false;
    for (std::size_t i = 0; i < std::min(x.chain.size(), y.chain.size()); ++i) {
      if (x.chain[i] == y.chain[i]) continue;
      return is_const(x.chain[i]) && is_const(y.chain[i]);
    }
    return false;
  }
  /// x's index at the one position where the chains differ is below a
  /// uniform bound B by a guard and y's is at or above it (y = u + B, u
  /// unsigned, or a guard y >= B).
  bool below_above(int xi, const std::vector<spv_fact>& fx, int yi, const std::vector<spv_fact>& fy) const {
    for (const auto& f : fx) {
      if (f.kind != spv_fact::lt || f.lhs != xi || !kn_[static_cast<std::size_t>(f.rhs)].uniform) continue;
      const int bound = f.rhs;
      if (yi == bound) return true;
      const knode& y = kn_[static_cast<std::size_t>(yi)];
      if (y.sig.rfind("o128:", 0) == 0 && y.kids.size() == 2 && m_.is_unsigned_int(y.type)) {
        const int other = y.kids[0] == bound ? y.kids[1] : y.kids[1] == bound ? y.kids[0] : -1;
        if (other >= 0) return true;
      }
      for (const auto& g : fy)
        if (g.kind == spv_fact::le && g.lhs == bound && g.rhs == yi) return true;
    }
    return false;
  }
  bool guard_apart(const spv_access& x, const spv_access& y) const {
    if (x.whole || y.whole || x.chain.size() != y.chain.size()) return false;
    int at = -1;
    for (std::size_t i = 0; i < x.chain.size(); ++i)
      if (x.chain[i] != y.chain[i]) {
        if (at >= 0) return false;
        at = static_cast<int>(i);
      }
    if (at < 0) return false;
    const int xi = x.chain[static_cast<std::size_t>(at)], yi = y.chain[static_cast<std::size_t>(at)];
    return below_above(xi, x.facts, yi, y.facts) || below_above(yi, y.facts, xi, x.facts);
  }
  // ---- value ranges (unsigned) ----
  using range_t = std::optional<std::pair<std::uint64_t, std::uint64_t>>;
  using linear_t = std::map<std::vector<int>, std::int64_t>;  // monomial (sorted factors) -> coefficient
  static constexpr std::uint64_t u32max = 0xffffffffull;
  range_t mk_range(std::uint64_t lo, std::uint64_t hi) const {
    if (saturate_ && hi > u32max && lo <= u32max) hi = u32max;
    if (lo > hi || hi > u32max) return std::nullopt;
    return std::make_pair(lo, hi);
  }
  /// The values an expression can take over every invocation and every
  /// iteration (spec constants at their defaults, the local id below the local
  /// size); nothing where that is not known. `facts`: guards x < c at the access.
  range_t range(int n, const std::vector<spv_fact>* facts = nullptr, int depth = 0) {
    if (depth > 40) return std::nullopt;
    range_t r;
    if (assumed_.empty() && !saturate_) {  // the plain range of a node is memoised
      const auto it = range_memo_.find(n);
      if (it != range_memo_.end()) {
        r = it->second;
      } else {
        r = range_of(n, depth);
        range_memo_[n] = r;
      }
    } else {
      r = range_of(n, depth);
    }
    if (facts) {
      // a - b under a guard b <= a: in [0, a].
      const knode& k = kn_[static_cast<std::size_t>(n)];
      if (!r && k.sig.rfind("o130:", 0) == 0 && k.kids.size() == 2)
        for (const auto& f : *facts)
          if (f.kind == spv_fact::le && f.lhs == k.kids[1] && f.rhs == k.kids[0])
            if (const range_t a = range(k.kids[0], facts, depth + 1)) r = mk_range(0, a->second);
    }
    if (facts)
      for (const auto& f : *facts) {
        if (f.lhs != n) continue;
        const range_t b = range(f.rhs, nullptr, depth + 1);
        if (!b) continue;
        const std::uint64_t hi = f.kind == spv_fact::lt ? (b->second ? b->second - 1 : 0) : f.kind == spv_fact::le ? b->second : u32max;
        if (f.kind != spv_fact::lt && f.kind != spv_fact::le) continue;
        if (f.kind == spv_fact::lt && b->second == 0) continue;  // x < 0 never holds: no information
        r = r ? mk_range(r->first, std::min(r->second, hi)) : mk_range(0, hi);
      }
    return r;
  }
  range_t range_of(int n, int depth) {
    const knode k = kn_[static_cast<std::size_t>(n)];
    const std::string& s = k.sig;
    if (is_const(n) && s[1] >= '0' && s[1] <= '9') {
      const std::uint64_t v = std::stoull(s.substr(1));
      return mk_range(v, v);
    }
    if (s.rfind("self", 0) == 0) {
      const int level = std::stoi(s.substr(4));
      for (auto it = assumed_.rbegin(); it != assumed_.rend(); ++it)
        if (it->first == level) return it->second;
      return std::nullopt;
    }
    if (s.rfind("sc", 0) == 0 && s.size() > 2 && s[2] != 'c') {  // a spec constant: its default
      for (const auto& [id, sid] : m_.spec_id)
        if ("sc" + std::to_string(sid) == s)
          if (const auto v = m_.eval(id)) return mk_range(*v, *v);
      return std::nullopt;
    }
    const std::uint32_t ls = local_size_ ? local_size_ : 1024;
    if (s == "bi41") return mk_range(0, 127);  // a subgroup has at most 128 invocations
    if (s == "bi40") return mk_range(0, ls - 1);
    auto kid = [&](std::size_t i) { return range(k.kids[i], nullptr, depth + 1); };
    if (s.rfind("ext(", 0) == 0 && k.kids.size() >= 2) {
      const std::string& b = kn_[static_cast<std::size_t>(k.kids[0])].sig;
      if (b == "bi27" && kn_[static_cast<std::size_t>(k.kids[1])].sig == "k0") return mk_range(0, ls - 1);
      if (b.rfind("scc(", 0) == 0 && is_const(k.kids[1])) {  // gl_WorkGroupSize.x and the like
        const knode& c = kn_[static_cast<std::size_t>(k.kids[0])];
        const std::uint64_t i = std::stoull(kn_[static_cast<std::size_t>(k.kids[1])].sig.substr(1));
        if (i < c.kids.size()) return range(c.kids[i], nullptr, depth + 1);
      }
      return std::nullopt;
    }
    if (s.rfind("phi(", 0) == 0) {
      // The values of the kids that do not refer to a phi being built, then
      // the others with the phi taken as that; kept where they stay inside.
      range_t u;
      std::vector<int> rec;
      for (int c : k.kids) {
        if (kn_[static_cast<std::size_t>(c)].selfs) {
          rec.push_back(c);
          continue;
        }
        const range_t r = range(c, nullptr, depth + 1);
        if (!r) return std::nullopt;
        u = u ? mk_range(std::min(u->first, r->first), std::max(u->second, r->second)) : r;
      }
      if (!u || rec.empty()) return u;
      // The level of this phi's own self-references: the highest level among its kids' selfs.
      std::uint64_t all = 0;
      for (int c : rec) all |= kn_[static_cast<std::size_t>(c)].selfs;
      int level = 63;
      while (level >= 0 && !(all >> level & 1)) --level;
      // A few rounds of widening: buf = 1 - buf stays in [0, 1].
      for (int round = 0; round < 4; ++round) {
        assumed_.push_back({level, u});
        bool inside = true, known = true;
        range_t grown = u;
        for (int c : rec) {
          const range_t r = range(c, nullptr, depth + 1);
          if (!r) {
            known = false;
            break;
          }
          if (r->first < u->first || r->second > u->second) inside = false;
          grown = mk_range(std::min(grown->first, r->first), std::max(grown->second, r->second));
        }
        assumed_.pop_back();
        if (inside && known) return u;
        if (!known || !grown) break;
        u = grown;
      }
      u = mk_range(u->first, u->first);  // the lower bound below starts from the first value again
      for (int c : k.kids)
        if (!kn_[static_cast<std::size_t>(c)].selfs)
          if (const range_t r = range(c, nullptr, depth + 1)) u = mk_range(std::min(u->first, r->first), std::max(u->second, r->second));
      // A lower bound alone: the recurrence never goes below where it starts
      // (taken not to wrap round: sums and products saturate here).
      assumed_.push_back({level, mk_range(u->first, u32max)});
      const bool was = saturate_;
      saturate_ = true;
      bool above = true;
      for (int c : rec) {
        const range_t r = range(c, nullptr, depth + 1);
        if (!r || r->first < u->first) above = false;
      }
      saturate_ = was;
      assumed_.pop_back();
      return above ? mk_range(u->first, u32max) : std::nullopt;
    }
    const auto colon = s.find(':');
    if (s[0] != 'o' || colon == std::string::npos || k.kids.empty()) {
      if (s[0] == 'x' && colon != std::string::npos && k.kids.size() >= 3) {  // GLSL.std.450 UMin 38, UMax 41, UClamp 44
        const std::string inst = kn_[static_cast<std::size_t>(k.kids[0])].sig;
        const range_t a = kid(1), b = kid(2);
        if (!a || !b) return std::nullopt;
        if (inst == "k38") return mk_range(std::min(a->first, b->first), std::min(a->second, b->second));
        if (inst == "k41") return mk_range(std::max(a->first, b->first), std::max(a->second, b->second));
        if (inst == "k44" && k.kids.size() >= 4) {
          const range_t c = kid(3);
          if (!c) return std::nullopt;
          return mk_range(std::max(a->first, b->first), std::min(std::max(a->second, b->second), c->second));
        }
      }
      return std::nullopt;
    }
    const int op = std::stoi(s.substr(1, colon - 1));
    if (k.kids.size() == 1) {
      if (op == 124 || op == 113) return kid(0);  // a bitcast or a widening: the same bits
      return std::nullopt;
    }
    if (op == 169 && k.kids.size() == 3) {  // Select
      const range_t a = kid(1), b = kid(2);
      if (!a || !b) return std::nullopt;
      return mk_range(std::min(a->first, b->first), std::max(a->second, b->second));
    }
    if (k.kids.size() != 2) return std::nullopt;
    const range_t a = kid(0), b = kid(1);
    switch (op) {
      case 137:  // UMod
        if (!b || b->first == 0) return std::nullopt;
        if (a && a->second < b->first) return a;
        return mk_range(0, b->second - 1);
      case 199:  // BitwiseAnd
        if (a && b) return mk_range(0, std::min(a->second, b->second));
        if (a) return mk_range(0, a->second);
        if (b) return mk_range(0, b->second);
        return std::nullopt;
      default: break;
    }
    if (!a || !b) return std::nullopt;
    switch (op) {
      case 128: return mk_range(a->first + b->first, a->second + b->second);
      case 130: return a->first >= b->second ? mk_range(a->first - b->second, a->second - b->first) : std::nullopt;
      case 132: return mk_range(a->first * b->first, a->second * b->second);
      case 134: return b->first ? mk_range(a->first / b->second, a->second / b->first) : std::nullopt;
      case 194: return b->second < 32 ? mk_range(a->first >> b->second, a->second >> b->first) : std::nullopt;
      case 196: return b->second < 32 ? mk_range(a->first << b->first, a->second << b->second) : std::nullopt;
      case 197: case 198: {
        std::uint64_t m = 1;
        while (m <= std::max(a->second, b->second)) m <<= 1;
        return mk_range(0, m - 1);
      }
      default: return std::nullopt;
    }
  }
  /// The terms of a sum (nested IAdds flattened).
  void terms(int n, std::vector<int>& out, int depth = 0) const {
    const knode& k = kn_[static_cast<std::size_t>(n)];
    if (depth < 16 && k.sig.rfind("o128:", 0) == 0 && k.kids.size() == 2) {
      terms(k.kids[0], out, depth + 1);
      terms(k.kids[1], out, depth + 1);
      return;
    }
    out.push_back(n);
  }
  /// Two values that differ whenever they are read in the same step: different
  /// constants, or p and p ^ c, p + c (c != 0), c - p (c odd), and p & 1 and
  /// (p + c) & 1, p % 2 and (p + c) % 2 (c odd).
  bool differ(int p, int q) const {
    if (p == q) return false;
    if (is_const(p) && is_const(q)) return true;
    auto one_way = [&](int x, int y) {
      const knode& k = kn_[static_cast<std::size_t>(y)];
      if (k.kids.size() != 2 || k.sig[0] != 'o') return false;
      const int op = std::stoi(k.sig.substr(1, k.sig.find(':') - 1));
      const int c = k.kids[0] == x ? k.kids[1] : k.kids[1] == x ? k.kids[0] : -1;
      if (op == 198 || op == 128) return c >= 0 && is_const(c) && kn_[static_cast<std::size_t>(c)].sig != "k0";
      if (op == 130 && k.kids[1] == x && is_const(k.kids[0])) {
        const std::string& cs = kn_[static_cast<std::size_t>(k.kids[0])].sig;
        return cs[1] >= '0' && cs[1] <= '9' && (std::stoull(cs.substr(1)) & 1);
      }
      return false;
    };
    // a & 1 and (a + c) & 1, a % 2 and (a + c) % 2, with c odd.
    auto parity = [&](int x, int y) {
      const knode &kx = kn_[static_cast<std::size_t>(x)], &ky = kn_[static_cast<std::size_t>(y)];
      if (kx.kids.size() != 2 || ky.kids.size() != 2 || kx.sig.substr(0, 5) != ky.sig.substr(0, 5)) return false;
      const bool and1 = kx.sig.rfind("o199:", 0) == 0, mod2 = kx.sig.rfind("o137:", 0) == 0;
      if (!and1 && !mod2) return false;
      const std::string m = and1 ? "k1" : "k2";
      auto split = [&](const knode& k, int& v) {  // the value and the mask or modulus
        for (int i = 0; i < 2; ++i)
          if (kn_[static_cast<std::size_t>(k.kids[static_cast<std::size_t>(i)])].sig == m && (and1 || i == 1)) {
            v = k.kids[static_cast<std::size_t>(1 - i)];
            return true;
          }
        return false;
      };
      int a = -1, b = -1;
      if (!split(kx, a) || !split(ky, b)) return false;
      const knode& kb = kn_[static_cast<std::size_t>(b)];
      if (kb.sig.rfind("o128:", 0) != 0 || kb.kids.size() != 2) return false;
      const int c = kb.kids[0] == a ? kb.kids[1] : kb.kids[1] == a ? kb.kids[0] : -1;
      if (c < 0 || !is_const(c)) return false;
      const std::string& cs = kn_[static_cast<std::size_t>(c)].sig;
      return cs[1] >= '0' && cs[1] <= '9' && (std::stoull(cs.substr(1)) & 1);
    };
    return one_way(p, q) || one_way(q, p) || parity(p, q) || parity(q, p);
  }
  /// Indices x and y, flattened as p * S + rest and q * S + rest', with p and q
  /// different in the step and both rests in [0, S): different halves of a
  /// ping-pong buffer.
  bool halves_apart(const spv_access& ax, int x, const spv_access& ay, int y) {
    std::vector<int> tx, ty;
    terms(x, tx);
    terms(y, ty);
    for (std::size_t i = 0; i < tx.size(); ++i) {
      const knode& mx = kn_[static_cast<std::size_t>(tx[i])];
      if (mx.sig.rfind("o132:", 0) != 0 || mx.kids.size() != 2) continue;
      for (std::size_t j = 0; j < ty.size(); ++j) {
        const knode& my = kn_[static_cast<std::size_t>(ty[j])];
        if (my.sig.rfind("o132:", 0) != 0 || my.kids.size() != 2) continue;
        for (int sx = 0; sx < 2; ++sx)
          for (int sy = 0; sy < 2; ++sy) {
            if (mx.kids[static_cast<std::size_t>(sx)] != my.kids[static_cast<std::size_t>(sy)]) continue;
            const int stride = mx.kids[static_cast<std::size_t>(sx)];
            const int p = mx.kids[static_cast<std::size_t>(1 - sx)], q = my.kids[static_cast<std::size_t>(1 - sy)];
            if (!kn_[static_cast<std::size_t>(p)].uniform || !kn_[static_cast<std::size_t>(q)].uniform || !differ(p, q)) continue;
            const range_t sr = range(stride);
            if (!sr || sr->first != sr->second || sr->first == 0) continue;
            auto rest_below = [&](const std::vector<int>& ts, std::size_t skip, const spv_access& a) {
              std::uint64_t hi = 0;
              for (std::size_t t = 0; t < ts.size(); ++t) {
                if (t == skip) continue;
                const range_t r = range(ts[t], &a.facts);
                if (!r) return false;
                hi += r->second;
              }
              return hi < sr->first;
            };
            if (rest_below(tx, i, ax) && rest_below(ty, j, ay)) return true;
          }
      }
    }
    return false;
  }
  /// The values of a linear form (signed), from its monomials' ranges; a + (-b)
  /// under a guard b <= a counts as [0, a]. `skip`: a monomial left out.
  std::optional<std::pair<std::int64_t, std::int64_t>> linear_range(const linear_t& l, const std::vector<spv_fact>& facts,
                                                                     const std::vector<int>& skip) {
    std::int64_t lo = 0, hi = 0;
    std::set<std::vector<int>> used;
    for (const auto& [m, v] : l) {  // pairs a - b with b <= a
      if (m == skip || m.size() != 1 || v != -1) continue;
      for (const auto& [m2, v2] : l) {
        if (m2 == skip || m2.size() != 1 || v2 != 1 || used.count(m2)) continue;
        bool le = false;
        for (const auto& f : facts) le = le || ((f.kind == spv_fact::le || f.kind == spv_fact::lt) && f.lhs == m[0] && f.rhs == m2[0]);
        if (!le) continue;
        const range_t a = range(m2[0], &facts);
        if (!a) continue;
        hi += static_cast<std::int64_t>(a->second);
        used.insert(m);
        used.insert(m2);
        break;
      }
    }
    for (const auto& [m, v] : l) {
      if (m == skip || used.count(m)) continue;
      std::int64_t mlo = 1, mhi = 1;
      for (int f : m) {
        const range_t r = range(f, &facts);
        if (!r || r->second > 0xffffffffull) return std::nullopt;
        mlo *= static_cast<std::int64_t>(r->first);
        mhi *= static_cast<std::int64_t>(r->second);
        if (mhi > (std::int64_t(1) << 40)) return std::nullopt;
      }
      if (v >= 0) lo += v * mlo, hi += v * mhi;
      else lo += v * mhi, hi += v * mlo;
    }
    return std::make_pair(lo, hi);
  }
  /// halves_apart on linear forms: x = S * P + R and y = S * Q + R' with S a
  /// constant, P and Q sums of uniform monomials whose difference is never 0
  /// (a non-zero constant, or even coefficients and an odd constant: pin and
  /// 1 - pin), and R, R' in [0, S) (the scan's s[pin * n + t - off] under
  /// t >= off against s[(1 - pin) * n + t]).
  bool halves_apart_linear(const spv_access& ax, int x, const spv_access& ay, int y) {
    const auto lx = linear(x), ly = linear(y);
    if (!lx || !ly) return false;
    auto uniform_monomial = [&](const std::vector<int>& m) {
      if (m.empty()) return false;
      for (int f : m)
        if (!kn_[static_cast<std::size_t>(f)].uniform || kn_[static_cast<std::size_t>(f)].id_dep) return false;
      return true;
    };
    std::set<std::int64_t> strides;
    for (const auto& [m, v] : *lx)
      if (uniform_monomial(m) && v != 0) strides.insert(v < 0 ? -v : v);
    for (std::int64_t S : strides) {
      if (S < 2) continue;
      // Split into S * P (uniform monomials with coefficients divisible by S, and the constant's
      // multiple of S) and R (the rest, with the constant's remainder).
      auto split = [&](const linear_t& l, linear_t& P, linear_t& R) {
        for (const auto& [m, v] : l) {
          if (m.empty()) {
            const std::int64_t q = v >= 0 ? v / S : -((-v + S - 1) / S);
            if (q) P[m] = q;
            if (v - q * S) R[m] = v - q * S;
          } else if (uniform_monomial(m) && v % S == 0) {
            P[m] = v / S;
          } else {
            R[m] = v;
          }
        }
      };
      linear_t px, rx, py, ry;
      split(*lx, px, rx);
      split(*ly, py, ry);
      linear_t d = px;
      for (const auto& [m, v] : py) d[m] -= v;
      for (auto it = d.begin(); it != d.end();) it = it->second ? std::next(it) : d.erase(it);
      if (d.empty()) continue;
      bool nonzero = d.size() == 1 && d.count({});
      if (!nonzero && d.count({}) && (d.at({}) & 1)) {
        nonzero = true;
        for (const auto& [m, v] : d)
          if (!m.empty() && (v & 1)) nonzero = false;
      }
      if (!nonzero) continue;
      const auto r1 = linear_range(rx, ax.facts, {-1}), r2 = linear_range(ry, ay.facts, {-1});
      if (r1 && r2 && r1->first >= 0 && r2->first >= 0 && r1->second < S && r2->second < S) return true;
    }
    return false;
  }
  /// Index ranges that do not meet at one position (the others equal).
  bool ranges_apart(const spv_access& x, const spv_access& y) {
    if (x.whole || y.whole || x.chain.size() != y.chain.size()) return false;
    for (std::size_t i = 0; i < x.chain.size(); ++i) {
      if (x.chain[i] == y.chain[i]) continue;
      const range_t a = range(x.chain[i], &x.facts), b = range(y.chain[i], &y.facts);
      if (a && b && (a->second < b->first || b->second < a->first)) return true;
    }
    return false;
  }
  /// Within a step: at some position the indices are different values at
  /// any one time (a ping-pong buffer's two halves, as s[buf][i] and
  /// s[buf ^ 1][j], or flattened as buf * S + i and (buf ^ 1) * S + j).
  bool apart_in_step(const spv_access& x, const spv_access& y) {
    if (x.whole || y.whole || x.chain.size() != y.chain.size()) return false;
    for (std::size_t i = 0; i < x.chain.size(); ++i) {
      if (x.chain[i] == y.chain[i]) continue;
      const bool uni = kn_[static_cast<std::size_t>(x.chain[i])].uniform && kn_[static_cast<std::size_t>(y.chain[i])].uniform;
      if (uni && differ(x.chain[i], y.chain[i])) return true;
      if (halves_apart(x, x.chain[i], y, y.chain[i]) || halves_apart_linear(x, x.chain[i], y, y.chain[i])) return true;
    }
    return false;
  }
  /// An expression as a product: a constant times non-constant factors (sorted).
  struct product_t {
    std::uint64_t c = 1;
    std::vector<int> f;
    bool operator==(const product_t& o) const { return c == o.c && f == o.f; }
  };
  product_t product(int n, int depth = 0) const {
    const knode& k = kn_[static_cast<std::size_t>(n)];
    product_t p;
    if (is_const(n) && k.sig[1] >= '0' && k.sig[1] <= '9') {
      p.c = std::stoull(k.sig.substr(1));
      return p;
    }
    if (depth < 16 && k.kids.size() == 2 && (k.sig.rfind("o132:", 0) == 0 || k.sig.rfind("o196:", 0) == 0)) {
      const bool shl = k.sig[2] == '9';
      const product_t a = product(k.kids[0], depth + 1);
      if (shl) {
        const knode& b = kn_[static_cast<std::size_t>(k.kids[1])];
        if (is_const(k.kids[1]) && b.sig[1] >= '0' && b.sig[1] <= '9' && std::stoull(b.sig.substr(1)) < 32) {
          p = a;
          p.c <<= std::stoull(b.sig.substr(1));
          return p;
        }
      } else {
        const product_t b = product(k.kids[1], depth + 1);
        p.c = a.c * b.c;
        p.f = a.f;
        p.f.insert(p.f.end(), b.f.begin(), b.f.end());
        std::sort(p.f.begin(), p.f.end());
        return p;
      }
    }
    p.f.push_back(n);
    return p;
  }
  static bool multiple_of(const product_t& p, const product_t& q) {
    if (q.c == 0 || p.c % q.c) return false;
    return std::includes(p.f.begin(), p.f.end(), q.f.begin(), q.f.end());
  }
  /// e is a multiple of 2 * S: as a product, or by a guard e % (2 * S) == 0.
  bool even_multiple(int e, const product_t& twice, const std::vector<spv_fact>& facts) const {
    if (multiple_of(product(e), twice)) return true;
    for (const auto& f : facts) {
      if (f.kind != spv_fact::eq) continue;
      for (const auto& [m, z] : {std::make_pair(f.lhs, f.rhs), std::make_pair(f.rhs, f.lhs)}) {
        const knode& k = kn_[static_cast<std::size_t>(m)];
        if (kn_[static_cast<std::size_t>(z)].sig != "k0" || k.sig.rfind("o137:", 0) != 0 || k.kids.size() != 2) continue;
        if (k.kids[0] == e && product(k.kids[1]) == twice) return true;
      }
    }
    return false;
  }
  /// One index a multiple of 2 * S, the other one of them plus S (S not 0):
  /// the interleaved tree reduction, `if (i % (2 * s) == 0) a[i] += a[i + s];`
  /// or `j = 2 * s * i; if (j < n) a[j] += a[j + s];`.
  bool parity_apart_one(int x, const std::vector<spv_fact>& fx, int y, const std::vector<spv_fact>& fy) {
    const knode& k = kn_[static_cast<std::size_t>(y)];
    if (k.sig.rfind("o128:", 0) != 0 || k.kids.size() != 2) return false;
    for (int side = 0; side < 2; ++side) {
      const int S = k.kids[static_cast<std::size_t>(side)], rest = k.kids[static_cast<std::size_t>(1 - side)];
      product_t twice = product(S);
      twice.c *= 2;
      const range_t sr = range(S, &fy);
      bool nonzero = sr && sr->first > 0;
      for (const auto& f : fy)  // a remainder by 2 * S: S is not 0
        if (f.kind == spv_fact::eq)
          for (int m : {f.lhs, f.rhs}) {
            const knode& mk = kn_[static_cast<std::size_t>(m)];
            if (mk.sig.rfind("o137:", 0) == 0 && mk.kids.size() == 2 && product(mk.kids[1]) == twice) nonzero = true;
          }
      if (nonzero && even_multiple(rest, twice, fy) && even_multiple(x, twice, fx)) return true;
    }
    return false;
  }
  /// An index as a linear form: monomials (sorted non-constant factors) with
  /// integer coefficients, sums, differences and products distributed (taken
  /// not to wrap round). Empty where it grows past a few dozen terms.
  std::optional<linear_t> linear(int n, int depth = 0) const {
    if (depth > 24) return std::nullopt;
    const knode& k = kn_[static_cast<std::size_t>(n)];
    linear_t out;
    if (is_const(n) && k.sig[1] >= '0' && k.sig[1] <= '9') {
      const std::uint64_t v = std::stoull(k.sig.substr(1));
      if (v > 0xffffffffull) return std::nullopt;
      if (v) out[{}] = static_cast<std::int64_t>(v);
      return out;
    }
    const bool add = k.sig.rfind("o128:", 0) == 0, sub = k.sig.rfind("o130:", 0) == 0, mul = k.sig.rfind("o132:", 0) == 0,
               shl = k.sig.rfind("o196:", 0) == 0;
    if ((add || sub || mul || shl) && k.kids.size() == 2) {
      const auto a = linear(k.kids[0], depth + 1);
      if (!a) return std::nullopt;
      if (shl) {
        const knode& c = kn_[static_cast<std::size_t>(k.kids[1])];
        if (!is_const(k.kids[1]) || c.sig[1] < '0' || c.sig[1] > '9' || std::stoull(c.sig.substr(1)) > 16) return std::nullopt;
        for (auto& [m, v] : out = *a) v <<= std::stoull(c.sig.substr(1));
        return out;
      }
      const auto b = linear(k.kids[1], depth + 1);
      if (!b) return std::nullopt;
      if (add || sub) {
        out = *a;
        for (const auto& [m, v] : *b) out[m] += sub ? -v : v;
      } else {
        for (const auto& [ma, va] : *a)
          for (const auto& [mb, vb] : *b) {
            std::vector<int> m = ma;
            m.insert(m.end(), mb.begin(), mb.end());
            std::sort(m.begin(), m.end());
            out[m] += va * vb;
          }
      }
      for (auto it = out.begin(); it != out.end();) it = it->second ? std::next(it) : out.erase(it);
      if (out.size() > 32) return std::nullopt;
      return out;
    }
    out[{n}] = 1;
    return out;
  }
  /// Both indices S * X + c and S * Y + c (S a factor of every non-constant
  /// monomial, not 0, the same for all invocations; c the same constant) with
  /// X even and Y odd for every invocation: never one element. The work-
  /// efficient scan's `s[off * (2 i + 2) - 1] += s[off * (2 i + 1) - 1]`, and
  /// `j = 2 k i; s[j] += s[j + k]`.
  bool odd_even_apart(int x, int y, const std::vector<spv_fact>& fy) {
    const auto lx = linear(x), ly = linear(y);
    if (!lx || !ly) return false;
    const std::int64_t cx = lx->count({}) ? lx->at({}) : 0, cy = ly->count({}) ? ly->at({}) : 0;
    if (cx != cy) return false;
    // Candidate factors S: the leaves of the first non-constant monomial.
    std::vector<int> cands;
    for (const auto& [m, v] : *lx)
      if (!m.empty()) {
        cands = m;
        break;
      }
    cands.erase(std::unique(cands.begin(), cands.end()), cands.end());
    for (int S : cands) {
      const knode& ks = kn_[static_cast<std::size_t>(S)];
      if (!ks.uniform || ks.id_dep) continue;
      const range_t sr = range(S, &fy);
      if (!sr || sr->first == 0) continue;
      // Divide S out of every non-constant monomial; the parity of what is left.
      auto parity = [&](const linear_t& l) -> int {  // 0 even, 1 odd, -1 unknown
        int p = 0;
        for (const auto& [m, v] : l) {
          if (m.empty()) continue;  // c, the same on both sides
          auto it = std::find(m.begin(), m.end(), S);
          if (it == m.end()) return -1;
          std::vector<int> rest = m;
          rest.erase(rest.begin() + (it - m.begin()));
          if (rest.empty()) p ^= static_cast<int>(v & 1);      // S * v: v's parity
          else if (v & 1) return -1;                           // S * v * (something): even only for v even
        }
        return p;
      };
      const int px = parity(*lx), py = parity(*ly);
      if (px >= 0 && py >= 0 && px != py) return true;
    }
    return false;
  }
  bool parity_apart(const spv_access& x, const spv_access& y) {
    if (x.whole || y.whole || x.chain.size() != y.chain.size()) return false;
    int at = -1;
    for (std::size_t i = 0; i < x.chain.size(); ++i)
      if (x.chain[i] != y.chain[i]) {
        if (at >= 0) return false;
        at = static_cast<int>(i);
      }
    if (at < 0) return false;
    const int xi = x.chain[static_cast<std::size_t>(at)], yi = y.chain[static_cast<std::size_t>(at)];
    return parity_apart_one(xi, x.facts, yi, y.facts) || parity_apart_one(yi, y.facts, xi, x.facts) ||
           odd_even_apart(xi, yi, y.facts) || odd_even_apart(xi, yi, x.facts);
  }
  /// An index A * I + R with A a constant, I an id expression that keeps
  /// invocations apart and R free of the id, in [0, A): the invocation's
  /// chunk. Gives (A, I), or (0, -1).
  std::pair<std::uint64_t, int> chunk_of(int n, const std::vector<spv_fact>& facts, bool across) {
    std::vector<int> ts;
    terms(n, ts);
    for (std::size_t i = 0; i < ts.size(); ++i) {
      const knode& m = kn_[static_cast<std::size_t>(ts[i])];
      if (m.sig.rfind("o132:", 0) != 0 || m.kids.size() != 2) continue;
      for (int side = 0; side < 2; ++side) {
        const int a = m.kids[static_cast<std::size_t>(side)], id = m.kids[static_cast<std::size_t>(1 - side)];
        const range_t ar = range(a);
        if (!is_const(a) || !ar || ar->first == 0 || !kn_[static_cast<std::size_t>(id)].id_dep || !partitions(id, across)) continue;
        std::uint64_t hi = 0;
        bool ok = true;
        for (std::size_t j = 0; j < ts.size() && ok; ++j) {
          if (j == i) continue;
          if (kn_[static_cast<std::size_t>(ts[j])].id_dep) ok = false;
          const range_t r = ok ? range(ts[j], &facts) : std::nullopt;
          if (!r) ok = false;
          else hi += r->second;
        }
        if (ok && hi < ar->first) return {ar->first, id};
      }
    }
    return {0, -1};
  }
  /// At some position both indices are chunks A * I + R of the same I and A:
  /// the same element only for the same invocation.
  bool chunks_apart(const spv_access& x, const spv_access& y, bool across) {
    if (x.whole || y.whole || x.chain.size() != y.chain.size()) return false;
    for (std::size_t i = 0; i < x.chain.size(); ++i) {
      const auto cx = chunk_of(x.chain[i], x.facts, across), cy = chunk_of(y.chain[i], y.facts, across);
      if (cx.second >= 0 && cx == cy && tells_apart(cx.second, x.facts, y.facts)) return true;
    }
    return false;
  }
  bool race_within_step(int p, int e) {
    const auto &x = accesses_[static_cast<std::size_t>(p)], &y = accesses_[static_cast<std::size_t>(e)];
    return !own(x, y, false) && !chunks_apart(x, y, false) && !constants_apart(x, y) && !guard_apart(x, y) &&
           !ranges_apart(x, y) && !apart_in_step(x, y) && !parity_apart(x, y);
  }
  bool race_across(int p, int e) {
    const auto &x = accesses_[static_cast<std::size_t>(p)], &y = accesses_[static_cast<std::size_t>(e)];
    return !own(x, y, true) && !chunks_apart(x, y, true) && !constants_apart(x, y) && !ranges_apart(x, y);
  }

  /// Rules 1-3. Per access: bit 0 pending in this step; bit 1 pending and
  /// carried round the back edge of a loop it happens in (from an earlier
  /// iteration). An access before the loop, carried round it, stays in the step.
  void flow(const race_graph& g, race_report& rep) {
    const std::size_t na = accesses_.size(), nn = g.nodes.size();
    std::vector<std::vector<std::uint8_t>> in(nn, std::vector<std::uint8_t>(na, 0));
    std::map<std::pair<int, int>, int> found;  // (first, second) -> bits: 1 within a step, 2 across an iteration
    std::map<std::pair<int, int>, int> judged;  // the same pair, judged once per kind
    std::vector<int> work;
    std::vector<bool> queued(nn, false);
    for (std::size_t i = 0; i < nn; ++i) work.push_back(static_cast<int>(nn - 1 - i)), queued[i] = true;
    auto judge = [&](int p, int e, bool within) {
      const auto key = std::make_pair(p, e);
      int& j = judged[key];  // bits: 1 within judged, 2 within race, 4 across judged, 8 across race
      if (within) {
        if (!(j & 1)) j |= 1 | (race_within_step(p, e) ? 2 : 0);
        if (j & 2) found[key] |= 1;
      } else {
        if (!(j & 4)) j |= 4 | (race_across(p, e) ? 8 : 0);
        if (j & 8) found[key] |= 2;
      }
    };
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
          if (!(st[p] & 3) || accesses_[p].var != e.var || accesses_[p].write_only) continue;
          const bool raw = e.kind == spv_event::load && accesses_[p].is_store;
          const bool war = e.kind == spv_event::store && !accesses_[p].is_store;
          if (!raw && !war) continue;
          if (st[p] & 1) judge(static_cast<int>(p), e.access, true);
          if (st[p] & 2) judge(static_cast<int>(p), e.access, false);
        }
        st[static_cast<std::size_t>(e.access)] |= 1;
      }
      for (const auto& [s, kind] : g.nodes[n].succ) {
        auto& t = in[static_cast<std::size_t>(s)];
        bool changed = false;
        for (std::size_t p = 0; p < na; ++p) {
          std::uint8_t v = st[p];
          if (kind >= 1 && v && g.inside[static_cast<std::size_t>(kind - 1)][p]) v = 2;  // round its loop's back edge
          if ((t[p] | v) != t[p]) t[p] |= v, changed = true;
        }
        if (changed && !queued[static_cast<std::size_t>(s)]) work.push_back(s), queued[static_cast<std::size_t>(s)] = true;
      }
    }
    for (const auto& [pair, bits] : found) {
      const spv_access &x = accesses_[static_cast<std::size_t>(pair.first)], &y = accesses_[static_cast<std::size_t>(pair.second)];
      const std::string what = x.is_store ? "read after write" : "write after read";
      // Carried round a back edge: from one iteration to the next where a loop holds both,
      // else from a loop to the code after it (judged the same way), in one step.
      bool iteration = false;
      for (std::size_t b = 0; !(bits & 1) && b < g.inside.size(); ++b)
        iteration = iteration || (g.inside[b][static_cast<std::size_t>(pair.first)] && g.inside[b][static_cast<std::size_t>(pair.second)]);
      rep.findings.push_back({what + (iteration ? " across a loop iteration" : " within a step"), m_.name(x.var), x.where,
                              y.where});
    }
  }

  shared_accesses s_;
  const spv_module& m_;
  std::vector<spv_access>& accesses_;
  std::vector<knode> kn_;
  std::unordered_map<std::string, int> kix_;
  std::unordered_map<std::uint32_t, int> memo_;
  std::map<std::pair<std::uint32_t, std::set<long>>, int> var_memo_;
  std::map<std::pair<std::uint32_t, std::set<long>>, int> open_;  // phis being built -> level
  std::vector<std::pair<int, range_t>> assumed_;  // ranges taken for phis being ranged (self levels)
  std::uint32_t local_size_ = 0;
  bool saturate_ = false;
  std::map<int, range_t> range_memo_;
  std::map<int, bool> phi_memo_;
  std::map<std::pair<int, bool>, bool> part_memo_;
  long work_ = 0;
};

}  // namespace detail

/// The shared-memory race check on a compute kernel's SPIR-V (header comment).
inline race_report check_shared_races(const std::vector<std::uint32_t>& spirv) {
  return detail::race_analysis(spirv).run();
}

}  // namespace kforge::gen
