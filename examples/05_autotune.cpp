// 05_autotune.cpp — policy::autotune in user code, and pre-tuning the shapes
// an application will use so that its first real call is already tuned.
//
//   build/examples/05_autotune            # tunes 3 shapes (~a minute), then runs
//   KFORGE_CACHE_DIR=/tmp/kf build/examples/05_autotune
//
// policy::autotune looks up the tuning cache (KFORGE_CACHE_DIR, else
// $XDG_CACHE_HOME/kforge, else ~/.cache/kforge) for this CPU, op, dtype and
// shape bucket (each dim rounded up to a power of two) and runs the winning
// concrete policy; on a miss it runs policy::threaded<>, or tunes first when
// KFORGE_AUTOTUNE=1. Link kforge::tune. The same pre-tuning from a shell:
//   kforge tune --op gemm --shape 512x512x512
//
// Linked with kforge::vulkan too, the same policy on vulkan::device_tensor
// operands resolves on the GPU: the cache entry for that device and driver
// (step 3; from a shell: kforge tune --op gemm --shape 256x256x256 --policy vulkan).
#include <kforge/tune.hpp>

#include <iostream>
#include <vector>

namespace tune = kforge::tune;

int main() {
  // 1. Pre-tune: one entry per shape bucket, stored for every later process.
  tune::tuning_cache cache;
  const std::vector<const char*> shapes = {"64x256x256", "256x256x256", "512x512x512"};
  for (const char* s : shapes) {
    kforge::problem p;  // op "gemm", dtype f32
    kforge::set_shape(p, s);
    if (cache.find(tune::key_for(p))) {
      std::cout << "gemm " << s << ": already tuned\n";
      continue;
    }
    tune::tune_options o;
    o.strategy = "descent";  // a fraction of the 54-candidate grid's trials
    o.budget_s = 20;
    auto [result, entry] = tune::tune_and_record(cache, p, tune::cpu_gemm_candidates(), o);
    if (entry)
      std::cout << "gemm " << s << ": " << entry->candidate << ", " << entry->median_s * 1e3 << " ms after "
                << result.trials.size() << " trials\n";
    else
      std::cout << "gemm " << s << ": no valid candidate\n";
  }

  // 2. Use it: the call site names policy::autotune and nothing else.
  const kforge::index_t m = 200, n = 250, k = 256;  // bucket 256x256x256
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  kforge::run<kforge::policy::autotune>(kforge::op::gemm<float>{}, kforge::make_view(a.data(), {m, k}),
                                        kforge::make_view(b.data(), {k, n}), kforge::make_view(c.data(), {m, n}));
  const tune::resolution r = tune::last_resolution();
  std::cout << "gemm 200x250x256 ran " << r.candidate << " (" << r.source << ", bucket " << r.bucket << "); c[0] = "
            << c[0] << " (expected " << 0.5f * 0.25f * k << ")\n";
  if (c[0] != 0.5f * 0.25f * k) return 1;

#if defined(KFORGE_HAS_VULKAN)
  // 3. The GPU: pre-tune on the Vulkan device (its own cache key), then run on device tensors.
  try {
    kforge::vulkan::context& ctx = kforge::vulkan::default_context();
    kforge::problem p;
    kforge::set_shape(p, "256x256x256");
    if (!cache.find(tune::key_for(p, tune::vulkan_identity(ctx)))) {
      tune::tune_options o;
      o.budget_s = 20;
      auto [result, entry] =
          tune::tune_and_record(cache, p, tune::vulkan_gemm_candidates(ctx, p), o, tune::vulkan_identity(ctx));
      std::cout << "vulkan gemm 256x256x256 on " << ctx.info().name << ": "
                << (entry ? entry->candidate : std::string("no valid candidate")) << " after " << result.trials.size()
                << " trials\n";
    }
    using dt = kforge::vulkan::device_tensor<float>;
    auto da = dt::from_host(ctx, kforge::make_view(a.data(), {m, k}));
    auto db = dt::from_host(ctx, kforge::make_view(b.data(), {k, n}));
    dt dc(ctx, {m, n});
    kforge::run<kforge::policy::autotune>(kforge::op::gemm<float>{}, da, db, dc);
    const tune::resolution rv = tune::last_resolution();
    const float c0 = dc.to_vector()[0];
    std::cout << "vulkan gemm 200x250x256 ran " << rv.candidate << " (" << rv.source << "); c[0] = " << c0 << "\n";
    if (c0 != 0.5f * 0.25f * k) return 1;
  } catch (const kforge::vulkan::no_device& e) {
    std::cout << "no Vulkan device (" << e.what() << "): the GPU part is skipped\n";
  }
#endif
  return 0;
}
