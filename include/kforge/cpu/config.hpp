// kforge/cpu/config.hpp — what the CPU backend reads from a policy: the
// blocking (MC, NC, KC), the micro-tile (MR × NR) and the thread count.
//
// policy::blocked<Knobs...> runs on the calling thread; policy::threaded<
// blocked<Knobs...>, threads<N>> runs the same kernels on the persistent pool.
// Blocking knobs are run-time values inside the kernels (one instantiation
// serves every MC/NC/KC); the micro-tile is compile-time (it sizes registers).
#pragma once

#include <string>
#include <type_traits>

#include "kforge/cpu/isa.hpp"
#include "kforge/cpu/thread_pool.hpp"
#include "kforge/policy/policy.hpp"

namespace kforge::cpu {

/// Default cache blocking, measured on the 2-core Zen 5 development machine
/// (48 KiB L1d, 1 MiB L2 per core, 32 MiB L3) with bench_gemm (2026-11-22):
/// KC·NR·4 B = 32 KiB keeps the B micro-panel in L1, MC·KC·4 B = 384 KiB
/// keeps the packed A block in L2 with room for C lines, and KC·NC·4 B = 4 MiB
/// of packed B shares L3.
inline constexpr int default_mc = 384;
inline constexpr int default_kc = 256;
inline constexpr int default_nc = 4096;

namespace detail {

template <class Policy>
struct cpu_config {
  static constexpr bool available = false;
};

template <class... K>
struct cpu_config<policy::blocked<K...>> {
  static constexpr bool available = true;
  static constexpr bool threaded = false;
  static constexpr int mc = policy::knob_t<policy::mc_key, policy::mc<default_mc>, K...>::value;
  static constexpr int nc = policy::knob_t<policy::nc_key, policy::nc<default_nc>, K...>::value;
  static constexpr int kc = policy::knob_t<policy::kc_key, policy::kc<default_kc>, K...>::value;
  using micro_knob = policy::knob_t<policy::micro_key, policy::micro<default_mr, default_nr>, K...>;
  static constexpr int mr = micro_knob::mr;
  static constexpr int nr = micro_knob::nr;
  using simd = simd_native;
  static_assert(mc > 0 && nc > 0 && kc > 0, "kforge::cpu: mc, nc and kc must be positive");
  static_assert(nr % simd::width == 0, "kforge::cpu: micro<MR, NR> needs NR to be a multiple of the SIMD width");
  // Register budget of a SIMD tile: MR·NR/W accumulators + NR/W for the B row +
  // 1 broadcast. The scalar fallback has no such budget (the compiler keeps
  // what fits in registers and spills the rest), so only SIMD tiles are checked.
  static_assert(mr >= 1 && (simd::width == 1 || mr * (nr / simd::width) + nr / simd::width + 1 <= simd::registers),
                "kforge::cpu: micro<MR, NR> needs more vector registers than the ISA has");
  static int threads() { return 1; }
};

template <class... KI, class... K>
struct cpu_config<policy::threaded<policy::blocked<KI...>, K...>> : cpu_config<policy::blocked<KI...>> {
  static constexpr bool threaded = true;
  static constexpr int requested = policy::knob_t<policy::threads_key, policy::threads<0>, K...>::value;
  static_assert(requested >= 0, "kforge::cpu: threads<N> needs N >= 0 (0 = KFORGE_NUM_THREADS or the hardware)");
  static int threads() { return requested > 0 ? requested : default_num_threads(); }
};

/// The blocked and threaded policies this backend implements.
template <class Policy>
concept cpu_policy = cpu_config<Policy>::available;

/// Run-time blocking handed to the kernels.
struct blocking {
  int mc, nc, kc;
};
/// The blocking an MR×NR micro-kernel runs with for the knobs MC, NC, KC: MC
/// and NC are rounded up to whole micro-tiles so that only the last block of
/// a dimension is partial.
constexpr blocking round_blocking(int mr, int nr, int mc, int nc, int kc) {
  return {(mc + mr - 1) / mr * mr, (nc + nr - 1) / nr * nr, kc};
}
template <class Policy>
constexpr blocking blocking_of() {
  using C = cpu_config<Policy>;
  return round_blocking(C::mr, C::nr, C::mc, C::nc, C::kc);
}

}  // namespace detail

/// Which micro-kernel Policy runs, e.g. "avx512 12x32 (mc=384 nc=4096 kc=256)"
/// or "avx512 12x32 (mc=384 nc=4096 kc=256) x2 threads".
template <class Policy>
  requires detail::cpu_policy<Policy>
std::string microkernel_name() {
  using C = detail::cpu_config<Policy>;
  std::string s = std::string(C::simd::name) + " " + std::to_string(C::mr) + "x" + std::to_string(C::nr) +
                  " (mc=" + std::to_string(C::mc) + " nc=" + std::to_string(C::nc) + " kc=" + std::to_string(C::kc) + ")";
  if constexpr (C::threaded) s += " x" + std::to_string(C::threads()) + " threads";
  return s;
}

}  // namespace kforge::cpu
