// kforge/gen/unwritten.hpp — rule 4 of the gate's shared-memory checks:
// a load of a shared variable that no write to it reaches from the entry
// point (docs/GENERATION.md, "The race check"). Where it fires, the kernel
// reads whatever the device left in shared memory — zeros on every device
// tried, which is why no data can show it and only the path can.
//
// The paths: the entry point's graph with calls inlined (shared_access.hpp),
// each loop taken as running at least once, and the back edges of the loops
// around the load not taken (a load at the top of a loop whose only store is
// further down reads garbage in the first iteration). A store or an atomic
// to the variable, or its initialiser, counts as a write. It looks at
// variables, not elements, and at paths, not conditions: the dynamic side
// (the suite's run with shared memory filled with Inf and NaN,
// shared_fill.hpp) catches a lane that reads an element nobody wrote.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "kforge/gen/shared_access.hpp"

namespace kforge::gen::detail {

/// Rule 4: loads of a shared variable that no write to it reaches from the
/// entry, each loop taken as running at least once and the back edges of
/// the loops around the load not taken.
inline void unwritten_reads(const shared_accesses& s, const race_graph& g, race_report& rep) {
  const std::size_t nn = g.nodes.size();
  std::vector<std::uint32_t> vars(s.shared.begin(), s.shared.end());
  std::map<std::uint32_t, std::size_t> vix;
  for (std::size_t i = 0; i < vars.size(); ++i) vix[vars[i]] = i;
  const auto& back = g.back;
  const auto& body = g.body;
  // Loads by the loops around them (the back edges not to take).
  std::map<std::vector<bool>, std::vector<std::pair<int, int>>> groups;  // excluded back edges -> (node, event)
  for (std::size_t n = 0; n < nn; ++n)
    for (std::size_t i = 0; i < g.nodes[n].events.size(); ++i) {
      if (g.nodes[n].events[i].kind != spv_event::load) continue;
      std::vector<bool> ex(back.size(), false);
      for (std::size_t b = 0; b < back.size(); ++b) ex[b] = body[b][n];
      groups[ex].push_back({static_cast<int>(n), static_cast<int>(i)});
    }
  std::set<int> reported;
  for (const auto& [ex, loads] : groups) {
    // May-written sets per node start, along forward edges and the back edges not excluded.
    std::vector<std::vector<bool>> w(nn, std::vector<bool>(vars.size(), false));
    std::vector<bool> reached(nn, false);
    std::vector<bool> init(vars.size(), false);
    for (std::size_t i = 0; i < vars.size(); ++i) init[i] = s.initialised.count(vars[i]) != 0;
    w[0] = init;
    reached[0] = true;
    std::vector<int> work{0};
    std::vector<bool> queued(nn, false);
    queued[0] = true;
    while (!work.empty()) {
      const auto n = static_cast<std::size_t>(work.back());
      work.pop_back();
      queued[n] = false;
      std::vector<bool> st = w[n];
      for (const spv_event& e : g.nodes[n].events)
        if (e.kind == spv_event::store || e.kind == spv_event::write) st[vix[e.var]] = true;
      for (const auto& [s, kind] : g.nodes[n].succ) {
        if (kind >= 1 && ex[static_cast<std::size_t>(kind - 1)]) continue;
        auto& t = w[static_cast<std::size_t>(s)];
        bool changed = !reached[static_cast<std::size_t>(s)];
        reached[static_cast<std::size_t>(s)] = true;
        for (std::size_t i = 0; i < vars.size(); ++i)
          if (st[i] && !t[i]) t[i] = true, changed = true;
        if (changed && !queued[static_cast<std::size_t>(s)]) work.push_back(s), queued[static_cast<std::size_t>(s)] = true;
      }
    }
    for (const auto& [n, i] : loads) {
      if (!reached[static_cast<std::size_t>(n)]) continue;
      std::vector<bool> st = w[static_cast<std::size_t>(n)];
      const auto& evs = g.nodes[static_cast<std::size_t>(n)].events;
      for (int j = 0; j < i; ++j)
        if (evs[static_cast<std::size_t>(j)].kind == spv_event::store || evs[static_cast<std::size_t>(j)].kind == spv_event::write)
          st[vix[evs[static_cast<std::size_t>(j)].var]] = true;
      const spv_event& e = evs[static_cast<std::size_t>(i)];
      if (!st[vix[e.var]] && reported.insert(e.access).second) {
        const spv_access& a = s.accesses[static_cast<std::size_t>(e.access)];
        rep.findings.push_back({"reads shared memory nothing wrote", s.m.name(a.var), a.where, ""});
      }
    }
  }
}

}  // namespace kforge::gen::detail
