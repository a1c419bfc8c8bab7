// kforge/policy/policy.hpp — every dispatch-policy tag, in one file.
//
// A policy says how and where an op runs. Policies are empty tags; their
// compile-time knobs are template arguments given in any order as knob types
// (Kokkos-style properties): policy::blocked<kc<256>, micro<8, 32>>. A knob
// that is not given takes the backend's default. Refined tags inherit from
// general ones so that an implementation for the general one still applies.
#pragma once

#include <string>
#include <type_traits>

namespace kforge::policy {

// ---- knob machinery -------------------------------------------------------

/// Base of every knob type; `key` groups knobs that set the same thing.
template <class Key, auto... Values>
struct knob {
  using key = Key;
};

namespace detail {
template <class Key, class Default, class... Knobs>
struct find_knob {
  using type = Default;
};
template <class Key, class Default, class K, class... Rest>
struct find_knob<Key, Default, K, Rest...> {
  using type = std::conditional_t<std::is_same_v<typename K::key, Key>, K,
                                  typename find_knob<Key, Default, Rest...>::type>;
};
template <class Key, class... Knobs>
inline constexpr int count_knob = (0 + ... + (std::is_same_v<typename Knobs::key, Key> ? 1 : 0));
}  // namespace detail

/// The knob of kind Key among Knobs..., or Default if none was given.
template <class Key, class Default, class... Knobs>
using knob_t = typename detail::find_knob<Key, Default, Knobs...>::type;

// ---- CPU knobs ------------------------------------------------------------

struct mc_key {};
struct nc_key {};
struct kc_key {};
struct micro_key {};
struct threads_key {};

/// Rows of A packed per L2 block.
template <int V>
struct mc : knob<mc_key, V> { static constexpr int value = V; };
/// Columns of B packed per L3 block.
template <int V>
struct nc : knob<nc_key, V> { static constexpr int value = V; };
/// Depth of a packed panel (L1 block).
template <int V>
struct kc : knob<kc_key, V> { static constexpr int value = V; };
/// Register micro-tile MR×NR of the SIMD micro-kernel.
template <int MR, int NR>
struct micro : knob<micro_key, MR, NR> {
  static constexpr int mr = MR;
  static constexpr int nr = NR;
};
/// Thread count of a threaded policy; 0 = KFORGE_NUM_THREADS or the hardware.
template <int V>
struct threads : knob<threads_key, V> { static constexpr int value = V; };

// ---- GPU knobs ------------------------------------------------------------

struct tile_key {};
struct thread_tile_key {};
struct wg_key {};
struct coopmat_key {};

/// Output tile per workgroup (M×N) and depth step K.
template <int M, int N, int K>
struct tile : knob<tile_key, M, N, K> {
  static constexpr int m = M, n = N, k = K;
};
/// Output elements computed by one invocation (rows × cols).
template <int M, int N>
struct thread_tile : knob<thread_tile_key, M, N> {
  static constexpr int m = M, n = N;
};
/// Workgroup size (local_size_x × local_size_y).
template <int X, int Y = 1>
struct wg : knob<wg_key, X, Y> {
  static constexpr int x = X, y = Y;
};
/// Use cooperative-matrix instructions where the device has them.
template <bool On>
struct coopmat : knob<coopmat_key, On> { static constexpr bool value = On; };

// ---- the policies ---------------------------------------------------------

/// Everything that runs on the host CPU.
struct cpu {};

/// The reference: straightforward Eigen code, the oracle every other policy is
/// validated against.
struct eigen : cpu {
  static std::string name() { return "eigen"; }
};

/// Cache-blocked CPU kernels with packing and SIMD micro-kernels (single thread).
template <class... Knobs>
struct blocked : cpu {
  static std::string name() { return "blocked"; }
};

/// Runs an inner CPU policy on a persistent thread pool.
template <class Inner = blocked<>, class... Knobs>
struct threaded : cpu {
  using inner = Inner;
  static std::string name() { return "threaded"; }
};

/// Vulkan compute shaders on the default (or KFORGE_VK_DEVICE) device.
template <class... Knobs>
struct vulkan {
  static std::string name() { return "vulkan"; }
};

/// A kernel written by kforge::gen and admitted by its gate, looked up at run
/// time in the generation cache for the exact problem (kforge/gen.hpp).
struct generated {
  static std::string name() { return "generated"; }
};

/// Resolved at run time from the tuning cache to a concrete policy.
struct autotune {
  static std::string name() { return "autotune"; }
};

}  // namespace kforge::policy
