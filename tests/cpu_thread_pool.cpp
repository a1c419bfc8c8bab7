// tests/cpu_thread_pool.cpp — the persistent pool behind policy::threaded:
// every task runs exactly once for 1, 2 and more threads than cores; a call
// completes while a worker is held away from it (a descheduled worker); a
// call after idle wakes the sleeping workers; exceptions, nested and
// concurrent calls; threaded gemm with 1, 2 and 9 threads, after idle and
// on both sides of the size threshold below which the caller works alone,
// checked against the Eigen reference. No timing is asserted: a wait that
// could hang is bounded and fails the test instead.
#include "cpu_check.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sched.h>
#endif

namespace {

using namespace cpu_test;
namespace policy = kforge::policy;
namespace op = kforge::op;
using kforge::cpu::thread_pool;
using hooks = kforge::cpu::detail::pool_test_hooks;

/// Threads beyond the machine's cores (at least 3 more).
int oversubscribed() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) + 3; }

/// Waits (sleeping) until pred() holds; false after 20 s.
template <class P>
bool eventually(P&& pred) {
  for (int i = 0; i < 20000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return pred();
}

void check_once(int nthreads, std::int64_t ntasks) {
  std::vector<std::atomic<int>> runs(static_cast<std::size_t>(ntasks));
  thread_pool::instance().run_tasks(nthreads, ntasks, [&](std::int64_t t) {
    runs[static_cast<std::size_t>(t)].fetch_add(1, std::memory_order_relaxed);
  });
  int wrong = 0;
  for (auto& r : runs) wrong += r.load() != 1;
  INFO(nthreads << " threads, " << ntasks << " tasks");
  CHECK(wrong == 0);
}

template <class P>
void check_gemm(index_t m, index_t n, index_t k, std::uint32_t seed) {
  auto a = make<float>(shape{m, k}, layout::row);
  auto b = make<float>(shape{k, n}, layout::row);
  auto bias = make<float>(shape{n}, layout::row);
  auto c = make<float>(shape{m, n}, layout::row);
  auto ref = make<float>(shape{m, n}, layout::row);
  fill(a.v, seed);
  fill(b.v, seed + 1);
  fill(bias.v, seed + 2);
  op::gemm<float, kforge::epilogue::bias_gelu> g;
  kforge::run<P>(g, a.cv(), b.cv(), bias.cv(), c.v);
  kforge::run<policy::eigen>(g, a.cv(), b.cv(), bias.cv(), ref.v);
  // Error scale of every element: |A|·|B| + |bias| is at most k + 1 here.
  std::vector<float> scale(static_cast<std::size_t>(m * n), static_cast<float>(k + 1));
  compare(values(c.v), values(ref.v), scale, kforge::gemm_tolerance(kforge::dtype::f32, k), kforge::dtype::f32,
          std::string(P::name()) + " gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k));
}

}  // namespace

TEST_CASE("thread pool: every task runs exactly once with 1, 2 and more threads than cores") {
  for (int nt : {1, 2, oversubscribed()})
    for (std::int64_t ntasks : {1, 2, 7, 1000}) check_once(nt, ntasks);
  CHECK(thread_pool::instance().workers() >= oversubscribed() - 1);
  // Zero tasks: nothing runs, nothing hangs.
  bool ran = false;
  thread_pool::instance().run_tasks(2, 0, [&](std::int64_t) { ran = true; });
  CHECK_FALSE(ran);
}

TEST_CASE("thread pool: a call completes while its worker is held away (a descheduled worker)") {
  thread_pool::instance().run_tasks(2, 2, [](std::int64_t) {});  // the worker exists
  hooks::hold().store(true);
  const std::int64_t before = hooks::worker_tasks().load();
  // With a static split this would wait for the held worker's share forever.
  check_once(2, 64);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<2>>>(300, 300, 300, 1);
  CHECK(hooks::worker_tasks().load() == before);  // the caller ran every task
  hooks::hold().store(false);
  check_once(2, 64);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<2>>>(300, 300, 300, 2);
}

TEST_CASE("thread pool: the first call after idle wakes the sleeping workers") {
  thread_pool& pool = thread_pool::instance();
  pool.run_tasks(2, 2, [](std::int64_t) {});
  // Idle longer than the spin: every worker goes to sleep on the futex.
  auto all_asleep = [&] { return pool.workers() > 0 && pool.sleeping() == pool.workers(); };
  REQUIRE(eventually(all_asleep));
  const auto went_to_sleep_again = [&](std::int64_t before) {
    return eventually([&] { return hooks::worker_sleeps().load() > before && all_asleep(); });
  };
  std::int64_t sleeps = hooks::worker_sleeps().load();
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<2>>>(257, 190, 300, 3);
  // The call woke the sleeping workers (a woken worker that finds nothing to
  // claim spins and sleeps again): the count of sleeps grows. Checked with a
  // wait, since a worker may still be on its way back to the futex.
  REQUIRE(went_to_sleep_again(sleeps));
  // A job whose task 0 waits until a worker has run a task can only finish
  // if a sleeping worker is woken by it.
  sleeps = hooks::worker_sleeps().load();
  const auto caller = std::this_thread::get_id();
  std::atomic<bool> worker_ran{false}, gave_up{false};
  pool.run_tasks(2, 2, [&](std::int64_t) {
    if (std::this_thread::get_id() != caller) {
      worker_ran.store(true);
      return;
    }
    if (!eventually([&] { return worker_ran.load(); })) gave_up.store(true);
  });
  CHECK(worker_ran.load());
  CHECK_FALSE(gave_up.load());
  // The worker that ran went back to sleep after the call.
  CHECK(went_to_sleep_again(sleeps));
}

TEST_CASE("thread pool: exceptions, nested calls and concurrent callers") {
  // An exception on any thread reaches the caller after every task has finished.
  std::atomic<int> done{0};
  CHECK_THROWS_AS(thread_pool::instance().run_tasks(2, 100,
                                                    [&](std::int64_t t) {
                                                      done.fetch_add(1);
                                                      if (t == 57) throw std::runtime_error("task 57");
                                                    }),
                  std::runtime_error);
  CHECK(done.load() == 100);
  check_once(2, 100);  // the pool is usable afterwards

  // A call from inside a task runs serially on that thread.
  std::vector<std::atomic<int>> inner(16 * 16);
  thread_pool::instance().run_tasks(2, 16, [&](std::int64_t i) {
    thread_pool::instance().run_tasks(2, 16, [&](std::int64_t j) { inner[static_cast<std::size_t>(i * 16 + j)].fetch_add(1); });
  });
  int wrong = 0;
  for (auto& r : inner) wrong += r.load() != 1;
  CHECK(wrong == 0);

  // Two threads calling at once: one owns the pool, the other runs its
  // tasks itself; both get every task exactly once.
  std::vector<std::atomic<int>> x(5000), y(5000);
  auto job = [](std::vector<std::atomic<int>>& v) {
    for (int rep = 0; rep < 20; ++rep)
      thread_pool::instance().run_tasks(2, static_cast<std::int64_t>(v.size()),
                                        [&](std::int64_t t) { v[static_cast<std::size_t>(t)].fetch_add(1); });
  };
  std::thread other(job, std::ref(y));
  job(x);
  other.join();
  wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) wrong += (x[i].load() != 20) + (y[i].load() != 20);
  CHECK(wrong == 0);
}

TEST_CASE("threaded gemm with 1, 2 and 9 threads matches the Eigen reference") {
  for (index_t s : {64, 200, 333}) {
    check_gemm<policy::threaded<policy::blocked<>, policy::threads<1>>>(s, s + 7, s - 5, 10);
    check_gemm<policy::threaded<policy::blocked<>, policy::threads<2>>>(s, s + 7, s - 5, 11);
    check_gemm<policy::threaded<policy::blocked<>, policy::threads<9>>>(s, s + 7, s - 5, 12);
  }
  // Tall-skinny and short-wide grids (tasks split N as well as M), and few rows over a wide B
  // (13 × 2000 × 4096: unpacked, K split into tasks) and decode rows.
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<9>>>(13, 2000, 150, 13);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<9>>>(13, 2000, 4096, 16);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<9>>>(2000, 13, 150, 14);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<9>>>(4, 3000, 500, 15);
}

TEST_CASE("threaded gemm: the caller runs alone below the size threshold, and below a larger one while the workers sleep") {
  namespace cd = kforge::cpu::detail;
  const double min_flops = cd::gemm_parallel_min_flops();
  if (!std::getenv("KFORGE_GEMM_PARALLEL_MIN_FLOPS")) CHECK(min_flops == 2.0 * 112 * 112 * 112 + 1);
  // The decision, on each side of both boundaries (any dimension tips it).
  auto expect = [&](index_t m, index_t n, index_t k, int nt, bool asleep) {
    const double flops = 2.0 * static_cast<double>(m * n * k);
    if (nt <= 1 || flops < min_flops) return 1;
    return asleep && flops < cd::gemm_wake_factor * min_flops ? 1 : nt;
  };
  for (const auto& s : {shape{111, 112, 112}, shape{112, 112, 112}, shape{113, 112, 112}, shape{112, 112, 113},
                        shape{64, 4096, 4}, shape{64, 4096, 6}, shape{224, 224, 224}, shape{225, 224, 224},
                        shape{300, 300, 300}})
    for (int nt : {1, 2, 9})
      for (bool asleep : {false, true}) {
        INFO(s[0] << "x" << s[1] << "x" << s[2] << ", " << nt << " threads, workers asleep " << asleep);
        CHECK(cd::gemm_threads(s[0], s[1], s[2], nt, asleep) == expect(s[0], s[1], s[2], nt, asleep));
      }
  if (!std::getenv("KFORGE_GEMM_PARALLEL_MIN_FLOPS")) {
    CHECK(cd::gemm_threads(112, 112, 112, 2, false) == 1);
    CHECK(cd::gemm_threads(113, 112, 112, 2, false) == 2);
    CHECK(cd::gemm_threads(224, 224, 224, 2, true) == 1);
    CHECK(cd::gemm_threads(225, 224, 224, 2, true) == 2);
  }

  using two = policy::threaded<policy::blocked<>, policy::threads<2>>;
  thread_pool& pool = thread_pool::instance();
  pool.run_tasks(2, 2, [](std::int64_t) {});  // the worker exists
  // Below the threshold no pool job is published: the worker runs no task.
  // (cpu_thread_pool_nospin sets the threshold to 0: every call below goes
  // through the pool there, and only the results are checked.)
  const bool default_threshold = !std::getenv("KFORGE_GEMM_PARALLEL_MIN_FLOPS");
  const std::int64_t before = hooks::worker_tasks().load();
  check_gemm<two>(112, 112, 112, 20);
  check_gemm<two>(111, 112, 112, 21);
  // While the workers sleep, a gemm under the wake threshold does not wake them.
  REQUIRE(eventually([&] { return pool.workers() > 0 && pool.sleeping() == pool.workers(); }));
  const std::int64_t sleeps = hooks::worker_sleeps().load();
  check_gemm<two>(150, 140, 130, 25);
  check_gemm<two>(224, 224, 224, 26);
  if (default_threshold) {
    CHECK(hooks::worker_tasks().load() == before);
    CHECK(hooks::worker_sleeps().load() == sleeps);  // nobody was woken
  }
  // Just above the thresholds the same calls go through the pool; the results match.
  check_gemm<two>(113, 112, 112, 22);
  check_gemm<two>(112, 112, 113, 23);
  check_gemm<two>(225, 224, 224, 27);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<9>>>(129, 131, 128, 24);
}

#if defined(__linux__)
TEST_CASE("thread pool: the workers are kept off the calling thread's CPU") {
  thread_pool& pool = thread_pool::instance();
  cpu_set_t caller;
  CPU_ZERO(&caller);
  REQUIRE(sched_getaffinity(0, sizeof(caller), &caller) == 0);
  // Three workers (one created by this call if fewer exist), each reporting its own mask.
  std::mutex m;
  std::vector<cpu_set_t> masks;
  const auto me = std::this_thread::get_id();
  std::atomic<int> seen{0};
  pool.run_tasks(4, 4, [&](std::int64_t) {
    if (std::this_thread::get_id() == me) {
      eventually([&] { return seen.load() >= 1; });  // leave tasks for the workers
      return;
    }
    cpu_set_t w;
    CPU_ZERO(&w);
    if (sched_getaffinity(0, sizeof(w), &w) == 0) {
      std::lock_guard<std::mutex> l(m);
      masks.push_back(w);
    }
    seen.fetch_add(1);
  });
  REQUIRE(!masks.empty());
  const bool on = kforge::cpu::keep_workers_off_caller_cpu();
  for (const cpu_set_t& w : masks) {
    cpu_set_t both;
    CPU_AND(&both, &w, &caller);
    CHECK(CPU_EQUAL(&both, &w));  // never a CPU the caller may not use
    if (on && CPU_COUNT(&caller) > 1)
      CHECK(CPU_COUNT(&w) == CPU_COUNT(&caller) - 1);  // all of the caller's CPUs but the one it was on
    else
      CHECK(CPU_COUNT(&w) == CPU_COUNT(&caller));
  }
  check_once(4, 64);
  check_gemm<policy::threaded<policy::blocked<>, policy::threads<4>>>(300, 200, 250, 30);
}
#endif
