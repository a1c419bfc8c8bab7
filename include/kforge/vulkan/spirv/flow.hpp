// kforge/vulkan/spirv/flow.hpp — control flow and data-flow facts of a SPIR-V
// module (module.hpp), for the generation gate's static rules: the shared
// accesses and the inlined graph rules 1-4 read (gen/shared_access.hpp) and
// the race rule's index expressions (gen/race.hpp). A flow reads its module
// by reference: the module must outlive it.
//
// What it gives, per function: the blocks in the module's order (each
// block's instruction range, successors, whether it is a loop header (it
// holds OpLoopMerge) or returns, and its OpBranchConditional's condition and
// targets), each block's predecessors and immediate dominator (Cooper,
// Harvey and Kennedy's iteration over a reverse post-order), and the stores
// of a function variable that reach an instruction (a forward data flow over
// the blocks, computed for a function the first time it is asked). For any
// pointer: the variable it is rooted in, through access chains and
// OpCopyObject, with the indices on the way.
//
// A function call defines every function variable passed to it by pointer
// (the callee may store through it); an OpVariable with an initialiser
// defines its variable at the entry. -1 stands for "undefined" (no store on
// some path from the entry).
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <algorithm>
#include <cstddef>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "kforge/vulkan/spirv/module.hpp"

namespace kforge::vulkan::spirv {

struct block {
  word label = 0;
  std::size_t first = 0, last = 0;  // instructions [first, last)
  std::vector<word> succ;
  bool loop_header = false, returns = false;
  word cond = 0, on_true = 0, on_false = 0;  // OpBranchConditional
};

struct function {
  word id = 0;
  std::vector<block> blocks;
  std::map<word, int> index;  // label -> block
  std::vector<std::vector<int>> preds;
  std::vector<int> idom;
  std::vector<std::map<word, std::set<long>>> rd_in;  // reaching stores of function variables per block
  bool rd_done = false;

  /// Whether block a dominates block b.
  bool dominates(int a, int b) const {
    for (int guard = 0; b >= 0 && guard < 100000; ++guard) {
      if (a == b) return true;
      const int up = idom[static_cast<std::size_t>(b)];
      if (up == b || up < 0) return false;
      b = up;
    }
    return false;
  }
};

class flow {
 public:
  explicit flow(const module& m) : m_(m) {
    std::uint32_t cur_fn = 0;
    block* blk = nullptr;
    for (std::size_t k = 0; k < m_.insts.size(); ++k) {
      const auto& in = m_.insts[k];
      const word* a = m_.at(k);
      if (blk && in.op != 248) blk->last = k + 1;
      switch (in.op) {
        case 54:  // OpFunction
          cur_fn = a[2];
          functions[cur_fn].id = cur_fn;
          break;
        case 56:  // OpFunctionEnd
          cur_fn = 0;
          blk = nullptr;
          break;
        case 248: {  // OpLabel
          auto& f = functions[cur_fn];
          f.index[a[1]] = static_cast<int>(f.blocks.size());
          f.blocks.push_back({});
          f.blocks.back().label = a[1];
          f.blocks.back().first = k;
          f.blocks.back().last = k + 1;
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
          if (blk) {
            blk->succ.insert(blk->succ.end(), {a[2], a[3]});
            blk->cond = a[1], blk->on_true = a[2], blk->on_false = a[3];
          }
          break;
        case 251:  // OpSwitch: selector, default, then (32-bit literal, label) pairs
          if (blk) {
            blk->succ.push_back(a[2]);
            for (std::uint32_t j = 3; j + 1 < in.n; j += 2) blk->succ.push_back(a[j + 1]);
          }
          break;
        case 253: case 254:  // OpReturn, OpReturnValue
          if (blk) blk->returns = true;
          break;
        default: break;
      }
    }
    for (auto& [id, f] : functions) graph_of(f);
  }

  std::map<word, function> functions;

  /// The variable (or parameter) a pointer is rooted in; `idx` gets the indices on the way.
  word root_of(word ptr, std::vector<word>& idx) const {
    std::vector<std::vector<word>> parts;
    for (int guard = 0; guard < 64; ++guard) {
      const auto* d = m_.def_of(ptr);
      if (!d) break;
      const word* a = &m_.w[d->at];
      if (d->op == 65 || d->op == 66 || d->op == 67 || d->op == 70) {  // access chains (67/70: with an element first)
        parts.emplace_back(a + 4, a + d->n);
        ptr = a[3];
      } else if (d->op == 83) {  // OpCopyObject
        ptr = a[3];
      } else {
        break;
      }
    }
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) idx.insert(idx.end(), it->begin(), it->end());
    return ptr;
  }

  /// The function variable a store/load pointer is rooted in (0 where it is not one);
  /// `direct`: the pointer is the variable itself, no index on the way.
  word function_var(word ptr, bool* direct = nullptr) const {
    std::vector<word> idx;
    const word r = root_of(ptr, idx);
    const auto* d = m_.def_of(r);
    if (!d || d->op != 59 || m_.w[d->at + 3] != 7) return 0;
    if (direct) *direct = idx.empty();
    return r;
  }

  /// The function variables instruction k defines (stores, initialisers, calls given their pointer).
  void defs_of(std::size_t k, std::vector<word>& out) const {
    const auto& in = m_.insts[k];
    const word* a = m_.at(k);
    out.clear();
    if (in.op == 62 || in.op == 63) {
      if (word v = function_var(a[1])) out.push_back(v);
    } else if (in.op == 59 && in.n >= 5 && a[3] == 7) {
      out.push_back(a[2]);
    } else if (in.op == 57) {
      for (std::uint32_t j = 4; j < in.n; ++j)
        if (word v = function_var(a[j])) out.push_back(v);
    }
  }

  /// The stores of function variable v that reach instruction k (in block b of f): -1 undefined.
  std::set<long> reaching_at(function& f, int b, std::size_t k, word v) {
    reaching(f);
    const block& blk = f.blocks[static_cast<std::size_t>(b)];
    std::vector<word> vs;
    for (std::size_t j = k; j-- > blk.first;) {
      defs_of(j, vs);
      if (std::find(vs.begin(), vs.end(), v) != vs.end()) return {static_cast<long>(j)};
    }
    const auto& in = f.rd_in[static_cast<std::size_t>(b)];
    const auto it = in.find(v);
    return it == in.end() ? std::set<long>{-1} : it->second;
  }

  /// Function and block of instruction k (block -1 before the first label; no function outside one).
  std::pair<function*, int> place(std::size_t k) {
    const word fn = m_.insts[k].fn;
    const auto it = functions.find(fn);
    if (it == functions.end()) return {nullptr, -1};
    auto& bl = it->second.blocks;
    const auto b = std::upper_bound(bl.begin(), bl.end(), k, [](std::size_t x, const block& y) { return x < y.first; });
    if (b == bl.begin()) return {&it->second, -1};
    return {&it->second, static_cast<int>(b - bl.begin()) - 1};
  }

 private:
  void graph_of(function& f) {
    const std::size_t n = f.blocks.size();
    f.preds.assign(n, {});
    for (std::size_t b = 0; b < n; ++b)
      for (word s : f.blocks[b].succ)
        if (auto it = f.index.find(s); it != f.index.end()) f.preds[static_cast<std::size_t>(it->second)].push_back(static_cast<int>(b));
    // Dominators (Cooper, Harvey, Kennedy) over a reverse post-order.
    std::vector<int> order, pos(n, -1);
    std::vector<char> seen(n, 0);
    std::vector<std::pair<int, std::size_t>> stack;
    if (n) stack.push_back({0, 0}), seen[0] = 1;
    while (!stack.empty()) {
      auto& [b, i] = stack.back();
      const auto& succ = f.blocks[static_cast<std::size_t>(b)].succ;
      if (i < succ.size()) {
        const auto it = f.index.find(succ[i++]);
        if (it != f.index.end() && !seen[static_cast<std::size_t>(it->second)]) {
          seen[static_cast<std::size_t>(it->second)] = 1;
          stack.push_back({it->second, 0});
        }
      } else {
        order.push_back(b);
        stack.pop_back();
      }
    }
    std::reverse(order.begin(), order.end());
    for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    f.idom.assign(n, -1);
    if (!n) return;
    f.idom[0] = 0;
    for (bool changed = true; changed;) {
      changed = false;
      for (int b : order) {
        if (b == 0) continue;
        int nd = -1;
        for (int p : f.preds[static_cast<std::size_t>(b)]) {
          if (f.idom[static_cast<std::size_t>(p)] < 0) continue;
          if (nd < 0) {
            nd = p;
            continue;
          }
          int x = p, y = nd;
          while (x != y) {
            while (pos[static_cast<std::size_t>(x)] > pos[static_cast<std::size_t>(y)]) x = f.idom[static_cast<std::size_t>(x)];
            while (pos[static_cast<std::size_t>(y)] > pos[static_cast<std::size_t>(x)]) y = f.idom[static_cast<std::size_t>(y)];
          }
          nd = x;
        }
        if (nd >= 0 && f.idom[static_cast<std::size_t>(b)] != nd) f.idom[static_cast<std::size_t>(b)] = nd, changed = true;
      }
    }
  }

  void reaching(function& f) {
    if (f.rd_done) return;
    f.rd_done = true;
    const std::size_t n = f.blocks.size();
    std::vector<std::map<word, long>> gen(n);  // last def per variable in the block
    std::vector<word> vs;
    for (std::size_t b = 0; b < n; ++b)
      for (std::size_t k = f.blocks[b].first; k < f.blocks[b].last; ++k) {
        defs_of(k, vs);
        for (word v : vs) gen[b][v] = static_cast<long>(k);
      }
    f.rd_in.assign(n, {});
    std::vector<std::map<word, std::set<long>>> out(n);
    // The entry: every variable undefined (-1) unless its OpVariable initialises it (then it is in gen).
    std::set<word> vars;
    for (std::size_t b = 0; b < n; ++b)
      for (const auto& [v, d] : gen[b]) vars.insert(v);
    for (word v : vars) f.rd_in[0][v] = {-1};
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t b = 0; b < n; ++b) {
        auto in = b == 0 ? f.rd_in[0] : std::map<word, std::set<long>>{};
        for (int p : f.preds[b])
          for (const auto& [v, s] : out[static_cast<std::size_t>(p)]) in[v].insert(s.begin(), s.end());
        auto o = in;
        for (const auto& [v, d] : gen[b]) o[v] = {d};
        f.rd_in[b] = std::move(in);
        if (o != out[b]) out[b] = std::move(o), changed = true;
      }
    }
  }

  const module& m_;
};

}  // namespace kforge::vulkan::spirv
