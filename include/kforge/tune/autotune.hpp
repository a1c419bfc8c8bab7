// kforge/tune/autotune.hpp — policy::autotune for gemm and attention: at run
// time the tuning cache decides what runs, on the device that holds the data.
// (Attention: on Vulkan device tensors only, resolve_vulkan_attention below;
// its host views run the CPU default.)
//
//   kforge::run<kforge::policy::autotune>(op::gemm<float>{}, A, B, C);     // host views: the CPU
//   kforge::run<kforge::policy::autotune>(op::gemm<float>{}, dA, dB, dC);  // vulkan::device_tensor
//   kforge::vulkan::record<kforge::policy::autotune>(s, op, dA, dB, dC);   // into a stream
//
// Host views resolve to a concrete policy of tune::cpu_gemm_space on this
// CPU; Vulkan device tensors (where kforge::vulkan is linked) to a gemm
// config of the Vulkan space (tune/vulkan_space.hpp) for the tensors' device
// and driver, recorded like policy::vulkan<> records its own.
//
// Resolution of (device, driver, op, dtype, shape bucket), once per process
// and key (memoised; tune::forget_resolutions() drops the memo):
//   hit   the cached candidate, if this build's space has it and the device
//         accepts it;
//   miss  with KFORGE_AUTOTUNE=1 (or autotune_settings().tune_on_miss), tune
//         the shape now (strategy KFORGE_AUTOTUNE_STRATEGY, default descent;
//         budget KFORGE_AUTOTUNE_BUDGET seconds, default 20), store it, use it;
//         otherwise the default: tune::cpu_default_policy (policy::threaded<>
//         where the CPU backend exists, else policy::eigen) on the CPU, and
//         vulkan::gemm_default_config (what policy::vulkan<> runs) on Vulkan,
//         chosen for each call's M and N (it is not one per bucket).
// A cache that cannot be read resolves to the default and is reported once.
// Resolution holds a process-wide mutex, so two threads never tune the same
// bucket twice; dispatch itself takes no lock after the first call.
// bf16 device tensors (vulkan::device_tensor<bfloat16>) resolve on the GPU like
// f32 and f16 ones.
//
// A cached Vulkan winner that is a generated kernel (kforge tune times the
// kernels kforge gen accepted) runs where the program includes kforge/gen.hpp
// (which installs tune/generated_hook.hpp's recorder) and the kernel serves
// the call's shape: its own problem, or any shape of the bucket it was
// proven for once the sandbox has passed it on that shape
// (gen::record_generated, gen/bucket.hpp). Otherwise, and for bf16, the
// best of kforge's own configs stored with it as its fallback runs.
#pragma once

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "kforge/core/input.hpp"
#include "kforge/tune/record.hpp"
#if defined(KFORGE_HAS_VULKAN)
#include "kforge/tune/generated_hook.hpp"
#include "kforge/tune/vulkan_space.hpp"
#endif

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
    // Checked as every KFORGE_* number is (core/input.hpp): env_var_error when out of range.
    a.tune_on_miss = env_flag("KFORGE_AUTOTUNE");
    a.budget_s = env_number("KFORGE_AUTOTUNE_BUDGET", number_ranges::positive, a.budget_s);
    if (const char* v = std::getenv("KFORGE_AUTOTUNE_STRATEGY"); v && *v) a.strategy = v;
    if (a.strategy != "grid" && a.strategy != "halving" && a.strategy != "descent")
      throw env_var_error("kforge: KFORGE_AUTOTUNE_STRATEGY must be grid, halving or descent, got '" + a.strategy + "'");
    return a;
  }();
  return s;
}

/// How the last resolution on this thread was made.
struct resolution {
  std::string candidate;  ///< what runs: a cpu_gemm_space name, or a Vulkan config name (vulkan_config_name)
  std::string source;     ///< "cache", "tuned", "default", or "default: <why>"
  std::string bucket;
};

namespace detail {
/// What a memoised resolution is keyed by, without building a string: the
/// device (0 for this CPU; a Vulkan device's vendor and device id, its
/// driver version and a hash of its driver's name and info: what its cache
/// identity is made of), the dtype and the shape bucket. The cache key proper (kforge version, op) is built
/// only on a miss; within a process those are fixed.
struct memo_key {
  std::uint64_t device = 0;
  std::uint64_t driver = 0;
  int type = 0;
  index_t m = 0, n = 0, k = 0;
  std::string bucket;  ///< ops other than gemm: their bucket text (empty for gemm, which m, n, k key)
  friend auto operator<=>(const memo_key&, const memo_key&) = default;
};
template <class Choice>
using memo_map = std::map<memo_key, std::pair<Choice, std::shared_ptr<const resolution>>>;
#if defined(KFORGE_HAS_VULKAN)
/// What runs a gemm on a Vulkan device: a config (nullopt: the default,
/// chosen per shape), and the record file of a cached generated winner that
/// runs instead where it serves the call's shape ("" for none).
struct vk_choice {
  std::optional<vulkan::gemm_config> cfg;
  std::string generated;
};
#endif

struct autotune_state {
  std::mutex m;
  memo_map<int> cpu;  // index into cpu_gemm_space
#if defined(KFORGE_HAS_VULKAN)
  memo_map<vk_choice> vk;
  memo_map<std::optional<vulkan::attention_config>> vk_attention;  // nullopt: the default for the call's shape
#endif
};
inline autotune_state& state() {
  static autotune_state s;
  return s;
}
// The last resolution on this thread, shared with the memo (a hit copies no
// string); where a Vulkan default or a generated winner's fallback ran, the
// config, named by last_resolution().
inline thread_local std::shared_ptr<const resolution> last;
#if defined(KFORGE_HAS_VULKAN)
inline thread_local std::optional<vulkan::gemm_config> last_vk_default;
inline thread_local std::string last_vk_generated;  // the record a generated winner ran from, "" when it did not run
#endif

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

inline int default_index() {
  static const int i = index_of(policy_traits<cpu_default_policy>::name());
  return i;
}

/// Calls impl<P_i, Op>::compute(op, g) for the i-th policy of the space.
template <class Op, class G, class... P, std::size_t... I>
void dispatch(int i, const Op& op, const G& g, policy_list<P...>, std::index_sequence<I...>) {
  bool done = false;
  ((!done && static_cast<int>(I) == i ? (kforge::detail::impl<P, Op>::compute(op, g), done = true) : false), ...);
  if (!done) kforge::detail::impl<cpu_default_policy, Op>::compute(op, g);
}

inline problem gemm_problem(dtype t, index_t m, index_t n, index_t k) {
  problem p;
  p.op = "gemm";
  p.type = t;
  p.dims = shape{m, n, k};
  return p;
}

/// The resolution shared by every device and op: memo (keyed by `mk`:
/// device, driver, dtype and bucket), then the cache entry for (identity(),
/// the problem make_problem() builds) if `choose` accepts it, then tuning
/// over `candidates(p)` when tune_on_miss, else `fallback`. `choose` maps a
/// cache entry to what runs (nullopt: not in this build's space or refused by
/// this device); `name` names a choice. A gemm's memo hit takes the lock and
/// one map lookup, and builds no string.
template <class Choice, class MakeProblem, class Identity, class Choose, class Candidates, class Name>
Choice resolve(memo_map<Choice>& memo, const memo_key& mk, MakeProblem make_problem, Identity identity,
               const Choice& fallback, Choose choose, Candidates candidates, Name name) {
  std::lock_guard lock(state().m);
  if (auto it = memo.find(mk); it != memo.end()) {
    last = it->second.second;
    return it->second.first;
  }
  const problem p = make_problem();
  const device_identity id = identity();
  const cache_key key = key_for(p, id);
  const std::string fallback_name = name(fallback);
  resolution r{fallback_name, "default", key.bucket};
  Choice chosen = fallback;
  try {
    tuning_cache cache;
    if (auto e = cache.find(key)) {
      if (auto c = choose(*e)) {
        chosen = *c;
        r.candidate = name(chosen);
        r.source = is_generated(e->cfg) ? "cache: generated winner " + e->candidate +
                                              ", run where it serves the call's shape (its problem, or its proven bucket "
                                              "after a sandboxed check of the shape); else the best of kforge's own "
                                              "kernels in that tuning run"
                                        : "cache";
      } else {
        r.source = "default: cached candidate '" + e->candidate + "' is not in this build's space or this device refuses it";
      }
    } else if (autotune_settings().tune_on_miss) {
      tune_options o;
      o.strategy = autotune_settings().strategy;
      o.budget_s = autotune_settings().budget_s;
      o.samples = 5;
      const std::vector<candidate> cands = candidates(p);
      auto [res, entry] = tune_and_record(cache, p, cands, o, id);
      std::optional<Choice> c;
      if (entry) c = choose(*entry);
      if (c) {
        chosen = *c;
        r.candidate = name(chosen);
        r.source = "tuned";
      } else {
        r.source = "default: tuning found no valid candidate";
      }
    }
  } catch (const std::exception& e) {
    static bool reported = false;
    if (!reported) std::cerr << "kforge: warning: policy::autotune: " << e.what() << "; using the default policy\n";
    reported = true;
    r = {fallback_name, std::string("default: ") + e.what(), key.bucket};
    chosen = fallback;
  }
  auto shared = std::make_shared<const resolution>(std::move(r));
  memo.emplace(mk, std::pair{chosen, shared});
  last = std::move(shared);
  return chosen;
}
}  // namespace detail

inline resolution last_resolution() {
  resolution r = detail::last ? *detail::last : resolution{};
#if defined(KFORGE_HAS_VULKAN)
  if (detail::last_vk_default) r.candidate = vulkan_config_name(*detail::last_vk_default);
  if (!detail::last_vk_generated.empty()) r.candidate = "generated:" + detail::last_vk_generated;
#endif
  return r;
}

/// Forgets every memoised resolution (after the cache changed under us).
inline void forget_resolutions() {
  std::lock_guard lock(detail::state().m);
  detail::state().cpu.clear();
#if defined(KFORGE_HAS_VULKAN)
  detail::state().vk.clear();
  detail::state().vk_attention.clear();
#endif
}

/// Index into cpu_gemm_space of the policy that runs gemm (dtype t, M×N×K) on this CPU.
inline int resolve_gemm(dtype t, index_t m, index_t n, index_t k) {
#if defined(KFORGE_HAS_VULKAN)
  detail::last_vk_default.reset();
#endif
  return detail::resolve(
      detail::state().cpu, detail::memo_key{0, 0, static_cast<int>(t), bucket_dim(m), bucket_dim(n), bucket_dim(k), {}},
      [&] { return detail::gemm_problem(t, m, n, k); }, [] { return cpu_identity(); }, detail::default_index(),
      [](const cache_entry& e) -> std::optional<int> {
        const int i = detail::index_of(e.candidate);
        return i >= 0 ? std::optional<int>(i) : std::nullopt;
      },
      [](const problem&) { return cpu_gemm_candidates(); },
      [](int i) {
        return i >= 0 ? detail::space_names<cpu_gemm_space>::get()[static_cast<std::size_t>(i)]
                      : policy_traits<cpu_default_policy>::name();
      });
}

#if defined(KFORGE_HAS_VULKAN)
namespace detail {
/// A Vulkan device's part of a memo key: vendor and device id; its driver's:
/// a hash of the driver's name and info, and its version.
inline std::uint64_t vk_device_key(const vulkan::device_info& d) { return (std::uint64_t{d.vendor_id} << 32) | d.device_id; }
inline std::uint64_t vk_driver_key(const vulkan::device_info& d) {
  return ((std::hash<std::string>{}(d.driver_name) * 31 + std::hash<std::string>{}(d.driver_info)) << 32) ^ d.driver_version;
}
}  // namespace detail

/// What runs gemm (storage dtype t: f32, f16 or bf16, M×N×K) on ctx's
/// device: the cached Vulkan winner for this device, driver and bucket if
/// the device accepts it, else (or after tuning on a miss) what
/// policy::vulkan<> runs untuned, vulkan::gemm_default_config. A generated
/// winner's choice names its record beside its fallback config.
inline detail::vk_choice resolve_vulkan_gemm_choice(vulkan::context& ctx, dtype t, index_t m, index_t n, index_t k) {
  using choice = detail::vk_choice;
  const auto& d = ctx.info();
  choice c = detail::resolve(
      detail::state().vk,
      detail::memo_key{detail::vk_device_key(d), detail::vk_driver_key(d), static_cast<int>(t), bucket_dim(m),
                       bucket_dim(n), bucket_dim(k), {}},
      [&] { return detail::gemm_problem(t, m, n, k); }, [&] { return vulkan_identity(ctx); }, choice{},
      [&](const cache_entry& e) -> std::optional<choice> {
        // A generated winner carries the best of kforge's own configs as
        // its fallback: that runs where the generated kernel does not.
        choice out;
        if (!is_generated(e.cfg)) {
          out.cfg = vulkan_config_of(e.cfg);
          if (!out.cfg) return std::nullopt;
        } else {
          out.generated = generated_record(e.cfg);
          if (const auto fb = generated_fallback(e.cfg)) out.cfg = vulkan_config_of(*fb);
          if (!out.cfg && out.generated.empty()) return std::nullopt;
        }
        if (out.cfg && !vulkan::gemm_config_check(ctx.info(), t, *out.cfg).empty()) return std::nullopt;
        return out;
      },
      [&](const problem& p) { return vulkan_gemm_candidates(ctx, p); },
      [](const choice& g) {
        const std::string own = g.cfg ? vulkan_config_name(*g.cfg) : std::string("policy::vulkan<> default");
        return g.generated.empty() ? own : "generated:" + g.generated + " (fallback " + own + ")";
      });
  detail::last_vk_default.reset();
  detail::last_vk_generated.clear();
  if (!c.cfg)  // The default depends on M, N and K, not only on the bucket the memo is keyed by.
    detail::last_vk_default = c.cfg = vulkan::gemm_default_config(d, t, static_cast<std::uint64_t>(m),
                                                                  static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(k));
  return c;
}

/// The gemm config of resolve_vulkan_gemm_choice (a generated winner's fallback).
inline vulkan::gemm_config resolve_vulkan_gemm(vulkan::context& ctx, dtype t, index_t m, index_t n, index_t k) {
  return *resolve_vulkan_gemm_choice(ctx, t, m, n, k).cfg;
}

/// What runs attention problem p (storage dtype p.type; extents a, whose Dv
/// the problem form leaves out) on ctx's device: the cached Vulkan winner for
/// this device, driver and bucket (cache.hpp's bucket_text: {B,H,S,D}, keys
/// attended, KV heads, mask, layout) if the device takes it for a, else (or
/// after tuning on a miss) what policy::vulkan<> runs for a,
/// vulkan::attention_default_config. Calls with Dv != D run the default.
inline vulkan::attention_config resolve_vulkan_attention(vulkan::context& ctx, const problem& p,
                                                         const vulkan::attention_dims& a) {
  using choice = std::optional<vulkan::attention_config>;
  const auto& d = ctx.info();
  const dtype dev = vulkan::device_dtype(d, p.type);
  detail::last_vk_default.reset();
  detail::last_vk_generated.clear();
  const vulkan::attention_config dflt = vulkan::attention_default_config(d, dev, a);
  choice c;
  if (a.dv == a.d)
    c = detail::resolve(
        detail::state().vk_attention,
        detail::memo_key{detail::vk_device_key(d), detail::vk_driver_key(d), static_cast<int>(p.type), 0, 0, 0,
                         bucket_text(p)},
        [&] { return p; }, [&] { return vulkan_identity(ctx); }, choice{},
        [&](const cache_entry& e) -> std::optional<choice> {
          // A generated winner: the best of kforge's own configs stored with it runs.
          const std::optional<config> own = is_generated(e.cfg) ? generated_fallback(e.cfg) : std::optional<config>(e.cfg);
          // Not checked against this call's shape here: the memo serves the whole bucket, and
          // each call checks its own shape below.
          const auto cfg = own ? vulkan_attention_config_of(*own) : std::nullopt;
          if (!cfg) return std::nullopt;
          return choice{*cfg};
        },
        [&](const problem& q) { return vulkan_attention_candidates(ctx, q); },
        [](const choice& g) { return g ? vulkan_attention_config_name(*g) : std::string("policy::vulkan<> default"); });
  else
    detail::last = std::make_shared<const resolution>(
        resolution{vulkan_attention_config_name(dflt), "default: head dims D != Dv are not tuned", bucket_text(p)});
  // The memo holds one choice per bucket; a shape of the bucket it does not take (a head dim
  // of the bucket the coopmat kernel refuses, more rows than the split kernel holds) runs the default.
  if (c && !vulkan::attention_config_check(d, dev, a, *c).empty()) {
    detail::last = std::make_shared<const resolution>(
        resolution{vulkan_attention_config_name(dflt),
                   "default: the bucket's " + vulkan_attention_config_name(*c) + " does not take this shape", bucket_text(p)});
    c.reset();
  } else if (!c) {
    detail::last = std::make_shared<const resolution>(resolution{
        vulkan_attention_config_name(dflt), detail::last ? detail::last->source : std::string("default"), bucket_text(p)});
  }
  return c ? *c : dflt;
}
#endif

}  // namespace kforge::tune

namespace kforge::detail {
#if defined(KFORGE_HAS_VULKAN)
template <class Impl, class Op>
using autotune_device_run = vulkan::detail::device_run<Impl, Op>;
#else
template <class Impl, class Op>
struct autotune_device_run {
  static void run() = delete;  // no device tensors without kforge::vulkan
};
#endif

template <class T, class E, class A>
  requires((std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) &&
           std::is_same_v<A, float>)
struct impl<policy::autotune, op::gemm<T, E, A>>
    : gemm_entry<impl<policy::autotune, op::gemm<T, E, A>>, op::gemm<T, E, A>>,
      autotune_device_run<impl<policy::autotune, op::gemm<T, E, A>>, op::gemm<T, E, A>> {
  using op_t = op::gemm<T, E, A>;
  using gemm_entry<impl, op_t>::run;
  using autotune_device_run<impl, op_t>::run;

  /// A quantized B: the threaded CPU kernels (cpu/gemm.hpp); the tuner has no knobs of theirs yet.
  static void compute_quantized(const op_t& op, const gemm_qargs<T>& g) {
    cpu::detail::gemm_quantized_compute<policy::threaded<>>(op, g);
  }

  static void compute(const op_t& op, const gemm_args<T>& g) {
#if defined(KFORGE_HAS_VULKAN)
    // Device tensors (run() with vulkan::device_tensor, vulkan::record()):
    // the tuned config for the tensors' device, recorded on their stream.
    if (vulkan::detail::device_call* dc = vulkan::detail::current_call) {
      if (!g.m || !g.n) return;
      vulkan::stream& s = *dc->s;
      tune::detail::vk_choice c;
      {
        vulkan::detail::call_guard outside(nullptr);  // tuning on a miss runs its own host calls
        c = tune::resolve_vulkan_gemm_choice(s.ctx(), dtype_of<T>(), g.m, g.n, g.k);
        if (const auto rec = tune::generated_gemm_recorder().load(); rec && !c.generated.empty()) {
          // Dense row-major operands (device tensors are) in call order: A, B, [bias,] C.
          problem p = tune::detail::gemm_problem(dtype_of<T>(), g.m, g.n, g.k);
          p.epilogue = epilogue::epilogue_name<E>();
          p.alpha = op.alpha, p.beta = op.beta, p.slope = op.epilogue.slope;
          const std::vector<vulkan::buffer_ref> refs(dc->refs.begin(), dc->refs.begin() + dc->n);
          if (rec(s, c.generated, p, refs)) {
            tune::detail::last_vk_default.reset();
            tune::detail::last_vk_generated = c.generated;
            return;
          }
        }
      }
      const vulkan::gemm_config cfg = *c.cfg;
      if (!c.generated.empty()) tune::detail::last_vk_default = cfg;  // last_resolution() names the fallback that ran
      const vulkan::buffer_ref bias = E::has_bias ? dc->refs[2] : vulkan::buffer_ref{};
      vulkan::record_gemm(s, dtype_of<T>(), cfg, g.m, g.n, g.k, op.alpha, op.beta, E::activation,
                          op.epilogue.slope, dc->refs[0], dc->refs[1], E::has_bias ? &bias : nullptr,
                          dc->refs[static_cast<std::size_t>(dc->n - 1)]);
      return;
    }
#endif
    const int i = tune::resolve_gemm(dtype_of<T>(), g.m, g.n, g.k);
#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
    tune::run_cpu_space_gemm(i, op, g);
#else
    tune::detail::dispatch(i, op, g, tune::cpu_gemm_space{},
                           std::make_index_sequence<tune::cpu_gemm_space::size>{});
#endif
  }
};

/// Attention: on Vulkan device tensors the tuned config of the tensors'
/// device (tune::resolve_vulkan_attention); host views run
/// tune::cpu_default_policy (the CPU attention kernels have no knobs to tune).
template <class T>
  requires(std::is_same_v<T, float> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)
struct impl<policy::autotune, op::attention<T>>
    : attention_entry<impl<policy::autotune, op::attention<T>>, op::attention<T>>,
      autotune_device_run<impl<policy::autotune, op::attention<T>>, op::attention<T>> {
  using op_t = op::attention<T>;
  using attention_entry<impl, op_t>::run;
  using autotune_device_run<impl, op_t>::run;

  static void compute(const op_t& op, const attention_args<T>& g) {
#if defined(KFORGE_HAS_VULKAN)
    if (vulkan::detail::device_call* dc = vulkan::detail::current_call) {
      if (g.b * g.h * g.s * g.dv == 0) return;  // nothing to write: nothing to resolve (or tune)
      vulkan::attention_config cfg;
      {
        vulkan::detail::call_guard outside(nullptr);  // tuning on a miss runs its own host calls
        problem p;
        p.op = "attention";
        p.type = dtype_of<T>();
        p.dims = shape{g.b, g.h, g.s, g.d};
        p.dims2 = shape{g.l, g.hkv};
        p.causal = g.causal;
        if (g.layout == attention_layout::bshd) p.attrs["bshd"] = 1;
        const vulkan::attention_dims a{g.b, g.h, g.hkv, g.s, g.l, g.d, g.dv, g.causal, g.layout == attention_layout::bshd};
        cfg = tune::resolve_vulkan_attention(dc->s->ctx(), p, a);
      }
      vulkan::detail::call<T> c({&g.q, &g.k, &g.v}, g.o);
      vulkan::detail::record_attention_call(c, g, &cfg, -1, 128);
      c.finish();
      return;
    }
    tune::detail::last_vk_default.reset();
    tune::detail::last_vk_generated.clear();
#endif
    tune::detail::last = std::make_shared<const tune::resolution>(
        tune::resolution{tune::policy_traits<tune::cpu_default_policy>::name(), "default: host views run the CPU default", ""});
    impl<tune::cpu_default_policy, op_t>::compute(op, g);
  }
};
}  // namespace kforge::detail
