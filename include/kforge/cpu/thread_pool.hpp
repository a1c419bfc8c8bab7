// kforge/cpu/thread_pool.hpp — the persistent thread pool behind
// policy::threaded.
//
// Threads are created once (lazily, by the first call that needs them) and
// reused by every later call. A call is a job of `ntasks` independent tasks;
// the tasks are claimed one at a time from a shared counter, so:
//   - the caller starts on task 0 at once and never waits for a worker to
//     wake up (a worker that is still asleep, or was just created, joins
//     whatever is left when it gets a core);
//   - a worker that is descheduled (another process holds its core) holds
//     at most the one task it is running, not a fixed share of the call;
//   - the call returns when every task has finished.
// Idle workers spin for spin_before_sleep() (2 ms) after their last task (a
// call that follows within it starts on all threads without a futex
// wake-up), yielding the core while they spin, then sleep on a futex: an idle
// process burns no core.
//
// A call made from inside a task, or while another thread owns the pool, runs
// its tasks serially on the calling thread. An exception thrown by a task is
// rethrown to the caller once every claimed task has finished.
//
// Thread count: the policy's threads<N> knob, else KFORGE_NUM_THREADS, else
// std::thread::hardware_concurrency(). More threads than cores is allowed.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <type_traits>

#include "kforge/core/input.hpp"
#include <vector>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KFORGE_CPU_PAUSE() _mm_pause()
#else
#define KFORGE_CPU_PAUSE() ((void)0)
#endif

namespace kforge::cpu {

/// The most threads KFORGE_NUM_THREADS may ask for: 4 × the hardware's
/// threads, at least 64 (oversubscribing a small machine stays possible for
/// tests; 100000 threads would only exhaust the process).
inline int max_num_threads() {
  const unsigned h = std::thread::hardware_concurrency();
  return std::max(64, 4 * static_cast<int>(h));
}

/// Threads used when a policy does not fix the count: KFORGE_NUM_THREADS
/// (a whole number >= 1, else env_var_error; above max_num_threads() capped
/// with a warning), else the hardware's concurrency.
inline int default_num_threads() {
  static const int n = [] {
    const unsigned h = std::thread::hardware_concurrency();
    return env_threads("KFORGE_NUM_THREADS", max_num_threads(), h > 0 ? static_cast<int>(h) : 1);
  }();
  return n;
}

/// How long an idle worker spins before it sleeps, and how long a caller
/// spins for the last running tasks before it sleeps: KFORGE_POOL_SPIN_US
/// (microseconds, 0 = sleep at once) if set, else 2000 µs. Why 2 ms: it
/// covers the issue-14 scenario of calls made 1 ms apart with room for the
/// call itself, so such calls find the workers awake, and it costs an idle
/// process at most 2 ms of one core after its last call (OpenBLAS 0.3.21's
/// threads wait 2^28 TSC cycles, ~0.1 s, before sleeping; libgomp spins
/// 300,000 times by default, GOMP_SPINCOUNT). What a futex wake-up
/// costs instead is measured by bench/cpu_calls.sh (the gap scenario with
/// KFORGE_POOL_SPIN_US=0 beside the default; docs/bench/HISTORY.md). While
/// spinning, a thread yields its core every ~20 µs, so it does not hold a
/// core that another thread is ready to run on.
inline std::chrono::microseconds spin_before_sleep() {
  static const std::chrono::microseconds us = [] {
    // A whole number in [0, 1 s] (env_var_error otherwise).
    const double v = env_number("KFORGE_POOL_SPIN_US", number_range{0, 1e6, false, true}, 2000);
    return std::chrono::microseconds(static_cast<long>(v));
  }();
  return us;
}

/// Whether the pool keeps its workers off the core the calling thread is on
/// (Linux): KFORGE_POOL_AFFINITY, 1 (default) or 0. Why: the scheduler puts a
/// new or woken thread beside the thread that woke it and, on the 2-core
/// development machine, often leaves it there for several calls while the
/// other core is idle; a call then runs its two threads on one core, at one
/// thread's speed, and whether a fresh process gets that is luck
/// (docs/bench/HISTORY.md, "A worker beside its caller"). With 1, whenever a
/// call's thread is on another CPU than at the last placement, the workers'
/// affinity is set to the calling thread's allowed CPUs minus that one (left
/// alone when that would leave none). The caller's own affinity is never
/// touched. 0 leaves placement to the scheduler.
inline bool keep_workers_off_caller_cpu() {
  static const bool on = env_number("KFORGE_POOL_AFFINITY", number_range{0, 1, false, true}, 1) != 0;
  return on;
}

namespace detail {
/// Test seam (tests/cpu_thread_pool.cpp). While hold() is true, a worker that
/// has seen a new job waits before claiming any of its tasks, as a worker
/// whose core another process holds would. The counters say what the workers
/// did since the process started: tasks run (not counting the callers') and
/// futex sleeps begun.
struct pool_test_hooks {
  static std::atomic<bool>& hold() {
    static std::atomic<bool> h{false};
    return h;
  }
  static std::atomic<std::int64_t>& worker_tasks() {
    static std::atomic<std::int64_t> n{0};
    return n;
  }
  static std::atomic<std::int64_t>& worker_sleeps() {
    static std::atomic<std::int64_t> n{0};
    return n;
  }
};
}  // namespace detail

class thread_pool {
 public:
  /// The process-wide pool.
  static thread_pool& instance() {
    static thread_pool pool;
    return pool;
  }

  thread_pool(const thread_pool&) = delete;
  thread_pool& operator=(const thread_pool&) = delete;

  ~thread_pool() {
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_seq_cst);
    generation_.notify_all();
    for (auto& t : workers_) t.join();
  }

  /// Number of worker threads created so far (the caller is not counted).
  int workers() const { return static_cast<int>(workers_.size()); }

  /// Workers that went to sleep on the futex (or past their spin and about
  /// to sleep) since the last job was published: the next call has to wake
  /// them. A worker woken by a job is not counted, even before it is back on
  /// a core.
  int sleeping() const {
    const std::uint64_t w = sleepers_.load(std::memory_order_seq_cst);
    return static_cast<std::uint32_t>(w >> 32) == generation_.load(std::memory_order_seq_cst)
               ? static_cast<int>(w & 0xffffffffu)
               : 0;
  }

  /// Runs f(task) for every task in [0, ntasks) on up to nthreads threads
  /// (the caller is one of them) and returns when all have finished.
  template <class F>
  void run_tasks(int nthreads, std::int64_t ntasks, F&& f) {
    if (ntasks <= 0) return;
    if (nthreads <= 1 || ntasks == 1 || in_job()) {
      for (std::int64_t t = 0; t < ntasks; ++t) f(t);
      return;
    }
    std::unique_lock<std::mutex> owner(run_mutex_, std::try_to_lock);
    if (!owner.owns_lock()) {  // another thread is using the pool: do the work here
      for (std::int64_t t = 0; t < ntasks; ++t) f(t);
      return;
    }
    grow(nthreads - 1);
    place_workers();
    using Fn = std::remove_reference_t<F>;
    ctx_ = const_cast<void*>(static_cast<const void*>(&f));
    call_ = [](void* c, std::int64_t first, std::int64_t end) {
      for (std::int64_t t = first; t < end; ++t) (*static_cast<Fn*>(c))(t);
    };
    // The claim word counts units in 31 bits; more tasks than that are
    // claimed in groups of `per`.
    per_ = (ntasks + max_units - 1) / max_units;
    total_ = ntasks;
    ntasks = (ntasks + per_ - 1) / per_;
    ntasks_ = ntasks;
    job_threads_ = nthreads;
    error_ = nullptr;
    finished_.store(0, std::memory_order_relaxed);
    // Publish: the claim word carries the job's generation, so a worker that
    // wakes up late can only claim tasks of the job it saw.
    const std::uint32_t gen = generation_.load(std::memory_order_relaxed) + 1;
    claim_.store(static_cast<std::uint64_t>(gen) << 32 | static_cast<std::uint64_t>(ntasks), std::memory_order_release);
    generation_.store(gen, std::memory_order_seq_cst);
    wake_sleepers(gen);
    in_job() = true;
    drain(gen);
    in_job() = false;
    wait_finished(ntasks);
    if (error_) std::rethrow_exception(error_);
  }

 private:
  thread_pool() = default;

  static bool& in_job() {
    thread_local bool flag = false;
    return flag;
  }

  static constexpr std::int64_t max_units = 0x7fffffff;

  /// Claims and runs tasks of job `gen` until none is left.
  void drain(std::uint32_t gen) {
    std::uint64_t v = claim_.load(std::memory_order_acquire);
    for (;;) {
      if (static_cast<std::uint32_t>(v >> 32) != gen || (v & 0xffffffffu) == 0) return;
      if (!claim_.compare_exchange_weak(v, v - 1, std::memory_order_acq_rel, std::memory_order_acquire)) continue;
      // A successful claim means the job is still running: its fields are
      // this job's, not the next one's (that is published only after every
      // task has finished). They are read now, before this task counts as
      // finished: the caller may publish the next job right after that.
      const std::int64_t units = ntasks_, per = per_, unit = units - static_cast<std::int64_t>(v & 0xffffffffu);
      try {
        call_(ctx_, unit * per, std::min(total_, unit * per + per));
      } catch (...) {
        std::lock_guard<std::mutex> lk(error_mutex_);
        if (!error_) error_ = std::current_exception();
      }
      if (!in_caller()) detail::pool_test_hooks::worker_tasks().fetch_add(1, std::memory_order_relaxed);
      if (finished_.fetch_add(1, std::memory_order_seq_cst) + 1 == static_cast<std::int32_t>(units) &&
          caller_sleeping_.load(std::memory_order_seq_cst))
        finished_.notify_all();
      v = claim_.load(std::memory_order_acquire);
    }
  }

  static bool& in_caller() {
    thread_local bool flag = true;  // false on the pool's own threads
    return flag;
  }

  /// Spins until pred() holds or spin_before_sleep() has passed, yielding the
  /// core every 20 µs; returns whether pred() held.
  template <class P>
  static bool spin(P&& pred) {
    using clk = std::chrono::steady_clock;
    const auto start = clk::now();
    const auto until = start + spin_before_sleep();
    auto next_yield = start + std::chrono::microseconds(20);
    for (int i = 1;; ++i) {
      if (pred()) return true;
      KFORGE_CPU_PAUSE();
      if (i % 64 == 0) {
        const auto now = clk::now();
        if (now > until) return false;
        if (now > next_yield) {
          std::this_thread::yield();
          next_yield = now + std::chrono::microseconds(20);
        }
      }
    }
  }

  /// The caller's wait for tasks other threads are still running: spin, then sleep.
  void wait_finished(std::int64_t ntasks) {
    const auto n = static_cast<std::int32_t>(ntasks);
    if (spin([&] { return finished_.load(std::memory_order_acquire) == n; })) return;
    for (std::int32_t f; (f = finished_.load(std::memory_order_seq_cst)) != n;) {
      caller_sleeping_.store(true, std::memory_order_seq_cst);
      f = finished_.load(std::memory_order_seq_cst);
      if (f != n) finished_.wait(f, std::memory_order_acquire);
      caller_sleeping_.store(false, std::memory_order_relaxed);
    }
  }

  /// Keeps the workers off the calling thread's CPU (keep_workers_off_caller_cpu()).
  /// Costs one getcpu per call; the affinity calls only when the caller has
  /// moved to another CPU or new workers were created since the last placement.
  void place_workers() {
#if defined(__linux__)
    if (!keep_workers_off_caller_cpu()) return;
    const int cpu = sched_getcpu();
    if (cpu < 0 || (cpu == placed_cpu_ && placed_workers_ == workers_.size())) return;
    placed_cpu_ = cpu;
    placed_workers_ = workers_.size();
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) != 0 || !CPU_ISSET(cpu, &mask)) return;
    CPU_CLR(cpu, &mask);
    if (CPU_COUNT(&mask) == 0) return;  // the caller may use only this CPU: nothing to keep apart
    for (auto& t : workers_) (void)pthread_setaffinity_np(t.native_handle(), sizeof(mask), &mask);
#endif
  }

  void grow(int n) {
    while (static_cast<int>(workers_.size()) < n) {
      const int slot = static_cast<int>(workers_.size()) + 1;
      // The generation is read before the job that needs this thread is
      // published, so the new thread cannot miss it.
      const std::uint32_t gen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, slot, gen] { worker(slot, gen); });
    }
  }

  /// The sleeper count (sleepers_) is `tag << 32 | n`: n workers went to
  /// sleep on job `tag` since it was published. Counts only grow; a count is
  /// dropped when the tag moves on. The publisher of job g (run_tasks, after
  /// its seq_cst store of the generation) calls wake_sleepers(g); a worker
  /// calls count_sleeper(seen) before its seq_cst load of the generation and
  /// its futex wait. Both sides' accesses are seq_cst, so either the
  /// publisher sees the worker's count or the worker sees job g and does not
  /// wait.

  /// Counts this worker as asleep on job `seen`: one more if the tag is
  /// `seen`; a count of one if `seen` is still the newest job (the tag is an
  /// older job's, whose sleepers were woken when a later job was published);
  /// nothing if a newer job is out (this worker will see it and not wait).
  void count_sleeper(std::uint32_t seen) {
    std::uint64_t w = sleepers_.load(std::memory_order_seq_cst);
    for (;;) {
      std::uint64_t next;
      if (static_cast<std::uint32_t>(w >> 32) == seen)
        next = w + 1;
      else if (generation_.load(std::memory_order_seq_cst) == seen)
        next = static_cast<std::uint64_t>(seen) << 32 | 1u;
      else
        return;
      if (sleepers_.compare_exchange_weak(w, next, std::memory_order_seq_cst, std::memory_order_seq_cst)) return;
    }
  }

  /// After publishing job `gen`: wakes the workers counted on the previous
  /// job (or already on this one: a worker that ran this job's tasks and went
  /// to sleep may have taken the count over). A count under an older tag has
  /// no sleeper left (the job after it woke them), so it needs nothing; tags
  /// are only compared for equality, and one that equals `gen - 1` or `gen`
  /// after 2^32 jobs costs at most a futex wake that finds nobody.
  void wake_sleepers(std::uint32_t gen) {
    const std::uint64_t s = sleepers_.load(std::memory_order_seq_cst);
    const auto tag = static_cast<std::uint32_t>(s >> 32);
    if ((s & 0xffffffffu) != 0 && (tag == gen - 1 || tag == gen)) generation_.notify_all();
  }

  /// Waits for a generation other than `seen`: spins, then sleeps on the futex.
  std::uint32_t next_job(std::uint32_t seen) {
    std::uint32_t g = seen;
    if (spin([&] { return (g = generation_.load(std::memory_order_acquire)) != seen; })) return g;
    detail::pool_test_hooks::worker_sleeps().fetch_add(1, std::memory_order_relaxed);  // before it counts as asleep
    count_sleeper(seen);
    while ((g = generation_.load(std::memory_order_seq_cst)) == seen) generation_.wait(seen, std::memory_order_acquire);
    return g;
  }

  void worker(int slot, std::uint32_t seen) {
    in_job() = true;
    in_caller() = false;
    for (;;) {
      seen = next_job(seen);
      if (stop_.load(std::memory_order_relaxed)) return;
      while (detail::pool_test_hooks::hold().load(std::memory_order_acquire))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      // job_threads_ is read before any claim; a stale value only makes this
      // worker sit out a job or try to claim from one that is over (its
      // claim word then has another generation or no task left).
      if (slot < job_threads_.load(std::memory_order_relaxed)) drain(seen);
    }
  }

  std::vector<std::thread> workers_;
  int placed_cpu_ = -1;             // the caller's CPU at the last place_workers()
  std::size_t placed_workers_ = 0;  // workers_.size() then
  std::mutex run_mutex_;
  std::mutex error_mutex_;
  std::exception_ptr error_;
  std::atomic<std::uint32_t> generation_{0};
  std::atomic<std::uint64_t> claim_{0};  // generation << 32 | tasks not yet claimed
  std::atomic<std::int32_t> finished_{0};
  std::atomic<std::uint64_t> sleepers_{0};  // job tag << 32 | workers that went to sleep on it (count_sleeper)
  std::atomic<bool> caller_sleeping_{false};
  std::atomic<int> job_threads_{1};
  std::atomic<bool> stop_{false};
  void* ctx_ = nullptr;
  void (*call_)(void*, std::int64_t, std::int64_t) = nullptr;
  std::int64_t ntasks_ = 0, per_ = 1, total_ = 0;
};

namespace detail {
/// [begin, end) of share `tid` when n items are split evenly over nt shares.
inline void split_range(std::int64_t n, int tid, int nt, std::int64_t& begin, std::int64_t& end) {
  const std::int64_t q = n / nt, r = n % nt;
  begin = tid * q + std::min<std::int64_t>(tid, r);
  end = begin + q + (tid < r ? 1 : 0);
}

/// Runs f(begin, end) over [0, n) on up to nthreads threads. The range is cut
/// into chunks of at least `grain` items — up to 8 per thread, so that a
/// thread that is descheduled holds one chunk, not half the work — and the
/// chunks are claimed dynamically. One chunk (n < 2·grain or one thread)
/// runs on the calling thread.
template <class F>
void parallel_for(int nthreads, std::int64_t n, std::int64_t grain, F&& f) {
  if (n <= 0) return;
  const std::int64_t by_grain = std::max<std::int64_t>(1, n / std::max<std::int64_t>(grain, 1));
  const std::int64_t chunks = std::min<std::int64_t>(by_grain, nthreads <= 1 ? 1 : 8 * std::int64_t{nthreads});
  if (chunks <= 1) {
    f(std::int64_t{0}, n);
    return;
  }
  thread_pool::instance().run_tasks(nthreads, chunks, [&](std::int64_t c) {
    std::int64_t b, e;
    split_range(n, static_cast<int>(c), static_cast<int>(chunks), b, e);
    if (b < e) f(b, e);
  });
}
}  // namespace detail

}  // namespace kforge::cpu
