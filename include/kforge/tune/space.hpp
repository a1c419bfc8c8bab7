// kforge/tune/space.hpp — candidates and the compile-time search spaces.
//
// A candidate is {name, config, executor}: the name is what the cache stores
// and what policy::autotune looks up, the config is the same choice as JSON
// key/values, the executor runs a run-time problem (validate/execute.hpp).
//
// A backend declares its space as a type list of concrete policies. Only the
// op family being tuned is instantiated for each policy (gemm_executor below
// switches over dtypes, not over every op as execute<P> does), which keeps
// the 54-policy CPU gemm space cheap to compile.
//
// CPU gemm space (tune::cpu_gemm_space): {blocked, threaded} × 3 micro-tiles
// of the compiled ISA × MC {96, 192, 384} × KC {128, 256, 512}, NC at the
// backend's default 4096. The blocking knobs and the thread count are run-time
// values inside the CPU kernels, so the space's candidates (and
// policy::autotune's dispatch to them) run from a table of the 54 blockings
// (cpu_space_blockings) through the 3 micro-kernels: a program that tunes or
// autotunes compiles 3 gemms per dtype and epilogue, not 54.
// Tuning runs the plain product (epilogue none): epilogues are applied in the
// micro-kernel's write-back and do not change which blocking is fastest.
//
// The Vulkan gemm space is a run-time list of tilings (policy::vulkan's knobs
// are compile-time types): tune/vulkan_space.hpp, built where kforge::vulkan
// is linked.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "kforge/eigen/eigen.hpp"
#include "kforge/ops/ops.hpp"
#include "kforge/policy/policy.hpp"
#include "kforge/tune/common.hpp"
#include "kforge/validate/execute.hpp"
#include "kforge/validate/suite.hpp"

#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
#include "kforge/cpu/cpu.hpp"
#endif

namespace kforge::tune {

struct candidate {
  std::string name;    ///< unique within its space; stored in the cache
  std::string family;  ///< "cpu", "eigen", "vulkan"
  config cfg;
  executor run;
  /// Device time of the last run() in seconds (GPU timestamps); none when
  /// the executor has none and the host clock is used.
  std::function<std::optional<double>()> device_seconds = [] { return std::optional<double>(); };
  bool is_default = false;  ///< the backend's default: where descent starts
};

/// A compile-time list of concrete policies.
template <class... P>
struct policy_list {
  static constexpr std::size_t size = sizeof...(P);
};

namespace detail {
template <class A, class B>
struct concat;
template <class... A, class... B>
struct concat<policy_list<A...>, policy_list<B...>> {
  using type = policy_list<A..., B...>;
};
}  // namespace detail

// ---- names and configs of concrete policies ----------------------------------

template <class P>
struct policy_traits;

template <>
struct policy_traits<policy::eigen> {
  static std::string name() { return "eigen"; }
  static config cfg() { return {{"policy", "eigen"}}; }
  static constexpr bool is_default = false;
};

#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
namespace detail {
/// A CPU policy's blocking, as its policy_traits name and config show it
/// (plain functions: the space's 54 policies share one copy of the code).
struct cpu_blocking {
  bool threaded;
  int mr, nr, mc, nc, kc;
  std::string family_name() const { return threaded ? "threaded" : "blocked"; }
  std::string name() const {
    return family_name() + "/" + std::to_string(mr) + "x" + std::to_string(nr) + "/mc" + std::to_string(mc) + "/nc" +
           std::to_string(nc) + "/kc" + std::to_string(kc);
  }
  config cfg() const {
    return {{"policy", family_name()}, {"micro", std::to_string(mr) + "x" + std::to_string(nr)},
            {"mc", std::to_string(mc)}, {"nc", std::to_string(nc)}, {"kc", std::to_string(kc)}};
  }
};
}  // namespace detail

template <class P>
  requires cpu::detail::cpu_policy<P>
struct policy_traits<P> {
  using C = cpu::detail::cpu_config<P>;
  static constexpr detail::cpu_blocking blocking{C::threaded, C::mr, C::nr, C::mc, C::nc, C::kc};
  static std::string family_name() { return blocking.family_name(); }
  static std::string name() { return blocking.name(); }
  static config cfg() { return blocking.cfg(); }
  static constexpr bool is_default = C::mr == cpu::detail::default_mr && C::nr == cpu::detail::default_nr &&
                                     C::mc == cpu::default_mc && C::nc == cpu::default_nc &&
                                     C::kc == cpu::default_kc && C::threaded;
};
#endif

// ---- executors that instantiate one op family ----------------------------------

namespace detail {
/// The plain product of gemm problem p in its dtype, op::gemm<T> with p's
/// alpha and beta, given to run.template operator()<T>(op); any other op or
/// an epilogue throws unsupported_error.
template <class Run>
void with_plain_gemm(const problem& p, Run run) {
  if (!is_family<gemm_traits>(p)) throw unsupported_error("kforge::tune: the gemm space cannot run " + p.op);
  if (p.epilogue != "none")
    throw unsupported_error("kforge::tune: the gemm search space is compiled for epilogue none (got " + p.epilogue +
                            "); the blocking chosen for the plain product is used for every epilogue");
  auto typed = [&]<class T>() {
    op::gemm<T> o;
    o.alpha = p.alpha;
    o.beta = p.beta;
    run.template operator()<T>(o);
  };
  switch (p.type) {
    case dtype::f32: typed.template operator()<float>(); break;
    case dtype::f16: typed.template operator()<half>(); break;
    case dtype::bf16: typed.template operator()<bfloat16>(); break;
    case dtype::f64:
    case dtype::i32: throw unsupported_error("kforge::gemm: " + std::string(to_string(p.type)) + " is not a kernel dtype");
  }
}
}  // namespace detail

/// Runs a gemm problem under P; any other op throws unsupported_error.
template <class P>
void gemm_executor(const problem& p, std::vector<host_tensor>& ts) {
  detail::with_plain_gemm(p, [&]<class T>(const op::gemm<T>& o) { kforge::detail::run_tensors<P, T>(o, ts); });
}

template <class P>
candidate gemm_candidate() {
  candidate c;
  c.name = policy_traits<P>::name();
  c.cfg = policy_traits<P>::cfg();
  c.family = std::is_same_v<P, policy::eigen> ? "eigen" : "cpu";
  c.run = &gemm_executor<P>;
  c.is_default = policy_traits<P>::is_default;
  return c;
}

/// The candidates of a gemm space, in list order.
template <class... P>
std::vector<candidate> gemm_candidates(policy_list<P...>) {
  return {gemm_candidate<P>()...};
}

// ---- the CPU gemm space ----------------------------------------------------------

#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
namespace detail {
// Micro-tiles per ISA: the default first, then two shapes that trade rows of
// A for columns of B within the register file (cpu/config.hpp's rule
// MR·NV + NV + 1 ≤ registers holds for each).
#if defined(__AVX512F__)
using cpu_micros = std::tuple<policy::micro<12, 32>, policy::micro<8, 32>, policy::micro<6, 64>>;
#elif defined(__AVX2__) && defined(__FMA__)
using cpu_micros = std::tuple<policy::micro<6, 16>, policy::micro<4, 24>, policy::micro<8, 8>>;
#else
using cpu_micros = std::tuple<policy::micro<cpu::detail::default_mr, cpu::detail::default_nr>>;
#endif
using cpu_mcs = std::tuple<policy::mc<96>, policy::mc<192>, policy::mc<384>>;
using cpu_kcs = std::tuple<policy::kc<128>, policy::kc<256>, policy::kc<512>>;

template <class Micro, class Mc, class... Kc>
using blocked_row = policy_list<policy::blocked<Micro, Mc, Kc, policy::nc<cpu::default_nc>>...>;
template <class Micro, class Mc, class... Kc>
using threaded_row = policy_list<policy::threaded<policy::blocked<Micro, Mc, Kc, policy::nc<cpu::default_nc>>>...>;

template <bool Threaded, class Micro, class Mc, class Kcs>
struct row;
template <bool Threaded, class Micro, class Mc, class... Kc>
struct row<Threaded, Micro, Mc, std::tuple<Kc...>> {
  using type = std::conditional_t<Threaded, threaded_row<Micro, Mc, Kc...>, blocked_row<Micro, Mc, Kc...>>;
};

template <bool Threaded, class Micros, class Mcs>
struct product;
template <bool Threaded, class Mcs>
struct product<Threaded, std::tuple<>, Mcs> {
  using type = policy_list<>;
};
template <bool Threaded, class M0, class... Ms, class... Mc>
struct product<Threaded, std::tuple<M0, Ms...>, std::tuple<Mc...>> {
  template <class L, class R>
  using cat = typename concat<L, R>::type;
  template <class... Ls>
  struct fold {
    using type = policy_list<>;
  };
  template <class L0, class... Ls>
  struct fold<L0, Ls...> {
    using type = cat<L0, typename fold<Ls...>::type>;
  };
  using here = typename fold<typename row<Threaded, M0, Mc, cpu_kcs>::type...>::type;
  using type = cat<here, typename product<Threaded, std::tuple<Ms...>, std::tuple<Mc...>>::type>;
};
}  // namespace detail

/// Every threaded then every blocked CPU gemm policy of the space (54 on AVX-512 and AVX2).
using cpu_gemm_space =
    typename detail::concat<typename detail::product<true, detail::cpu_micros, detail::cpu_mcs>::type,
                            typename detail::product<false, detail::cpu_micros, detail::cpu_mcs>::type>::type;

/// The policy policy::autotune falls back to on a cache miss.
using cpu_default_policy = policy::threaded<>;
#else
using cpu_gemm_space = policy_list<policy::eigen>;
using cpu_default_policy = policy::eigen;
#endif

#if defined(KFORGE_TUNE_HAS_CPU_BACKEND)
namespace detail {
template <class List>
struct cpu_blocking_table;
template <class... P>
struct cpu_blocking_table<policy_list<P...>> {
  static constexpr std::array<cpu_blocking, sizeof...(P)> value{policy_traits<P>::blocking...};
};

/// Runs a gemm with blocking b: its micro-tile picks the micro-kernel (one
/// of cpu_micros), the rest are run-time values.
template <class T, class E, class A, class... Micro>
void run_cpu_gemm(const cpu_blocking& b, const op::gemm<T, E, A>& op, const gemm_args<T>& g, std::tuple<Micro...>*) {
  using S = cpu::detail::simd_native;
  const cpu::detail::blocking blk = cpu::detail::round_blocking(b.mr, b.nr, b.mc, b.nc, b.kc);
  const int threads = b.threaded ? cpu::default_num_threads() : 1;
  const bool ran = ((b.mr == Micro::mr && b.nr == Micro::nr
                         ? (cpu::detail::gemm_run<S, Micro::mr, Micro::nr>(op, g, blk, threads), true)
                         : false) ||
                    ...);
  if (!ran)
    throw unsupported_error("kforge::tune: micro-tile " + std::to_string(b.mr) + "x" + std::to_string(b.nr) +
                            " is not compiled into this build's CPU space");
}
}  // namespace detail

/// The blocking of every policy of cpu_gemm_space, in list order.
inline constexpr const auto& cpu_space_blockings = detail::cpu_blocking_table<cpu_gemm_space>::value;

/// Runs op on g with the i-th blocking of cpu_gemm_space (policy::autotune's
/// dispatch; i outside the space: cpu_default_policy).
template <class T, class E, class A>
void run_cpu_space_gemm(int i, const op::gemm<T, E, A>& op, const gemm_args<T>& g) {
  if (i < 0 || static_cast<std::size_t>(i) >= cpu_space_blockings.size())
    return cpu::detail::gemm_compute<cpu_default_policy>(op, g);
  detail::run_cpu_gemm(cpu_space_blockings[static_cast<std::size_t>(i)], op, g, static_cast<detail::cpu_micros*>(nullptr));
}

namespace detail {
/// The executor of one candidate of the CPU space.
inline void cpu_space_gemm(const cpu_blocking& b, const problem& p, std::vector<host_tensor>& ts) {
  with_plain_gemm(p, [&]<class T>(const op::gemm<T>& o) {
    if (ts.size() != 3) throw argument_error("kforge::gemm: expected 3 tensors, got " + std::to_string(ts.size()));
    using Op = op::gemm<T>;
    const gemm_args<T> g = check_gemm<T>(kforge::detail::operand_view<Op, 0>(ts[0]),
                                         kforge::detail::operand_view<Op, 1>(ts[1]), {}, false,
                                         kforge::detail::operand_view<Op, 2>(ts[2]));
    run_cpu_gemm(b, o, g, static_cast<cpu_micros*>(nullptr));
  });
}
}  // namespace detail

/// The candidates of the CPU gemm space, in cpu_gemm_space's order.
inline std::vector<candidate> cpu_gemm_candidates() {
  const std::string dflt = policy_traits<cpu_default_policy>::name();
  std::vector<candidate> out;
  for (const detail::cpu_blocking& b : cpu_space_blockings) {
    candidate c;
    c.name = b.name();
    c.cfg = b.cfg();
    c.family = "cpu";
    c.run = [b](const problem& p, std::vector<host_tensor>& ts) { detail::cpu_space_gemm(b, p, ts); };
    c.is_default = c.name == dflt;
    out.push_back(std::move(c));
  }
  return out;
}
#else
/// The candidates of the CPU gemm space (the Eigen reference alone in a build without the CPU backend).
inline std::vector<candidate> cpu_gemm_candidates() { return gemm_candidates(cpu_gemm_space{}); }
#endif

}  // namespace kforge::tune
