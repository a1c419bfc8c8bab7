// kforge/vulkan/reduce.hpp — reductions over one axis on policy::vulkan.
#pragma once

#ifndef KFORGE_VULKAN_INTERNAL
#error "kforge/vulkan/*.hpp are private headers: include <kforge/vulkan.hpp>"
#endif

#include <cstring>

#include "kforge/vulkan/call.hpp"
#include "kforge/vulkan/shaders/reduce.hpp"

namespace kforge::vulkan {

/// Reduces dense [outer, n, inner] over n into [outer, inner].
inline void record_reduce(stream& s, dtype dt, std::uint32_t wg, reduce_fn f, index_t outer, index_t n, index_t inner,
                          buffer_ref x, buffer_ref y) {
  using namespace detail;
  check_wg(s.ctx(), wg, "reduce");
  const auto& v = make_variant("reduce", shaders::reduce, dt, {{"KF_RED", str(static_cast<int>(f))}});
  const auto& p = s.ctx().get_pipeline(v, {2, 12, {0}}, {wg});
  struct {
    std::uint32_t outer, n, inner;
  } pc{u32(outer, "outer"), u32(n, "n"), u32(inner, "inner")};
  u32(outer * n * inner, "elements");
  s.dispatch(p, {{x}, {y, true}}, &pc, sizeof pc, grid(static_cast<std::uint64_t>(outer * inner)),
             "reduce_" + std::string(to_string(f)));
}

}  // namespace kforge::vulkan

namespace kforge::detail {

template <class... Knobs, class T, reduce_fn F>
  requires vulkan::detail::vk_type<T>
struct impl<policy::vulkan<Knobs...>, op::reduce<T, F>>
    : vulkan::detail::impl_base<impl<policy::vulkan<Knobs...>, op::reduce<T, F>>, op::reduce<T, F>, reduce_entry> {
  static void compute(const op::reduce<T, F>&, const reduce_args<T>& g) {
    vulkan::detail::call<T> c({&g.x}, g.y);
    if (g.outer * g.inner != 0 && g.n != 0) {
      vulkan::record_reduce(c.s(), c.dt, vulkan::knobs<Knobs...>::row_wg, F, g.outer, g.n, g.inner, c.in(0), c.out());
    } else if (g.outer * g.inner != 0) {
      // A device tensor's sum or mean over nothing (the entry writes host
      // outputs; a device tensor stores T as it is): empty_reduction(F) in
      // every element, one 32-bit word at a time (device allocations are
      // padded to 16 bytes, so rounding a 16-bit tensor's size up to 4 stays
      // inside its own).
      const T e = static_cast<T>(empty_reduction(F));
      std::uint32_t word = 0;
      for (std::size_t b = 0; b < sizeof word; b += sizeof e) std::memcpy(reinterpret_cast<char*>(&word) + b, &e, sizeof e);
      const vulkan::buffer_ref y = c.out();
      c.s().fill(y, (y.size + 3) / 4 * 4, word);
    }
    c.finish();
  }
};

}  // namespace kforge::detail
