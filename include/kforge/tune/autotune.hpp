// kforge/tune/autotune.hpp — policy::autotune for gemm: at run time the
// tuning cache decides which concrete policy of tune::cpu_gemm_space runs.
//
//   kforge::run<kforge::policy::autotune>(op::gemm<float>{}, A, B, C);
//
// Resolution of (op, dtype, shape bucket) on this CPU, once per process and
// bucket (memoised; tune::forget_resolutions() drops the memo):
//   hit   the cached candidate, if this build's space has it;
//   miss  with KFORGE_AUTOTUNE=1 (or autotune_settings().tune_on_miss), tune
//         the shape now (strategy KFORGE_AUTOTUNE_STRATEGY, default descent;
//         budget KFORGE_AUTOTUNE_BUDGET seconds, default 20), store it, use it;
//         otherwise tune::cpu_default_policy (policy::threaded<> where the CPU
//         backend exists, else policy::eigen).
// A cache that cannot be read resolves to the default and is reported once.
// Resolution holds a process-wide mutex, so two threads never tune the same
// bucket twice; dispatch itself takes no lock after the first call.
#pragma once

#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

#include "kforge/tune/record.hpp"

namespace kforge::tune {

struct autotune_settings_t {
  bool tune_on_miss = false;
  double budget_s = 20;
  std::string strategy = "descent";
};

/// Process-wide settings, initialised from KFORGE_AUTOTUNE,
/// KFORGE_AUTOTUNE_BUDGET and KFORGE_AUTOTUNE_STRATEGY on first use.
inline autotune_settings_t& autotune_settings() {
  static autotune_settings_t s = [] {
    autotune_settings_t a;
    if (const char* v = std::getenv("KFORGE_AUTOTUNE")) a.tune_on_miss = std::string(v) == "1";
    if (const char* v = std::getenv("KFORGE_AUTOTUNE_BUDGET")) {
      char* end = nullptr;
      const double b = std::strtod(v, &end);
      if (end != v && b > 0) a.budget_s = b;
    }
    if (const char* v = std::getenv("KFORGE_AUTOTUNE_STRATEGY"); v && *v) a.strategy = v;
    return a;
  }();
  return s;
}

/// How the last resolution on this thread was made.
struct resolution {
  std::string candidate;  ///< the policy that runs (a cpu_gemm_space name)
  std::string source;     ///< "cache", "tuned", "default", or "default: <why>"
  std::string bucket;
};

namespace detail {
struct autotune_state {
  std::mutex m;
  std::map<std::string, std::pair<int, resolution>> memo;  // op/dtype/bucket → space index, how
};
inline autotune_state& state() {
  static autotune_state s;
  return s;
}
inline thread_local resolution last;

template <class List>
struct space_names;
template <class... P>
struct space_names<policy_list<P...>> {
  static const std::vector<std::string>& get() {
    static const std::vector<std::string> v{policy_traits<P>::name()...};
    return v;
  }
};

inline int index_of(const std::string& name) {
  const auto& names = space_names<cpu_gemm_space>::get();
  for (std::size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

inline int default_index() { return index_of(policy_traits<cpu_default_policy>::name()); }

/// Calls impl<P_i, Op>::compute(op, g) for the i-th policy of the space.
template <class Op, class G, class... P, std::size_t... I>
void dispatch(int i, const Op& op, const G& g, policy_list<P...>, std::index_sequence<I...>) {
  bool done = false;
  ((!done && static_cast<int>(I) == i ? (kforge::detail::impl<P, Op>::compute(op, g), done = true) : false), ...);
  if (!done) kforge::detail::impl<cpu_default_policy, Op>::compute(op, g);
}
}  // namespace detail

inline resolution last_resolution() { return detail::last; }

/// Forgets every memoised resolution (after the cache changed under us).
inline void forget_resolutions() {
  std::lock_guard lock(detail::state().m);
  detail::state().memo.clear();
}

/// Index into cpu_gemm_space of the policy that runs gemm (dtype t, M×N×K).
inline int resolve_gemm(dtype t, index_t m, index_t n, index_t k) {
  problem p;
  p.op = "gemm";
  p.type = t;
  p.dims = shape{m, n, k};
  const cache_key key = key_for(p);
  const std::string memo_key = key.op + "/" + key.dtype + "/" + key.bucket;
  auto& st = detail::state();
  std::lock_guard lock(st.m);
  if (auto it = st.memo.find(memo_key); it != st.memo.end()) {
    detail::last = it->second.second;
    return it->second.first;
  }
  resolution r{"", "default", key.bucket};
  int index = detail::default_index();
  try {
    tuning_cache cache;
    if (auto e = cache.find(key)) {
      if (const int i = detail::index_of(e->candidate); i >= 0) {
        index = i;
        r.source = "cache";
      } else {
        r.source = "default: cached candidate '" + e->candidate + "' is not in this build's space";
      }
    } else if (autotune_settings().tune_on_miss) {
      tune_options o;
      o.strategy = autotune_settings().strategy;
      o.budget_s = autotune_settings().budget_s;
      o.samples = 5;
      const std::vector<candidate> cands = cpu_gemm_candidates();
      auto [res, entry] = tune_and_record(cache, p, cands, o);
      if (entry) {
        index = detail::index_of(entry->candidate);
        r.source = "tuned";
      } else {
        r.source = "default: tuning found no valid candidate";
      }
    }
  } catch (const std::exception& e) {
    static bool reported = false;
    if (!reported) std::cerr << "kforge: warning: policy::autotune: " << e.what() << "; using the default policy\n";
    reported = true;
    r.source = std::string("default: ") + e.what();
    index = detail::default_index();
  }
  r.candidate = index >= 0 ? detail::space_names<cpu_gemm_space>::get()[static_cast<std::size_t>(index)]
                           : policy_traits<cpu_default_policy>::name();
  st.memo[memo_key] = {index, r};
  detail::last = r;
  return index;
}

}  // namespace kforge::tune

namespace kforge::detail {
template <class T, class E, class A>
  requires((std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) &&
           std::is_same_v<A, float>)
struct impl<policy::autotune, op::gemm<T, E, A>>
    : gemm_entry<impl<policy::autotune, op::gemm<T, E, A>>, op::gemm<T, E, A>> {
  static void compute(const op::gemm<T, E, A>& op, const gemm_args<T>& g) {
    const int i = tune::resolve_gemm(dtype_of<T>(), g.m, g.n, g.k);
    tune::detail::dispatch(i, op, g, tune::cpu_gemm_space{},
                           std::make_index_sequence<tune::cpu_gemm_space::size>{});
  }
};
}  // namespace kforge::detail
