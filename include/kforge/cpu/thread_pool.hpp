// kforge/cpu/thread_pool.hpp — the persistent thread pool behind
// policy::threaded.
//
// Threads are created once (lazily, the first time a call needs them) and
// reused by every later call: a call publishes a job, the caller runs share 0
// itself and the workers run the others. Idle workers spin briefly (a call
// that follows within ~50 µs starts without a futex wake-up) and then sleep
// on a condition variable, so an idle process does not burn a core.
//
// The job is SPMD: f(tid, nthreads) runs once on each of nthreads threads, and
// the shares may meet at a spin_barrier (the blocked gemm packs B together,
// then computes). A call made from inside a job, or while another thread owns
// the pool, runs serially as f(0, 1), so every body must accept nthreads == 1.
//
// Thread count: the policy's threads<N> knob, else KFORGE_NUM_THREADS, else
// std::thread::hardware_concurrency().
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KFORGE_CPU_PAUSE() _mm_pause()
#else
#define KFORGE_CPU_PAUSE() ((void)0)
#endif

namespace kforge::cpu {

/// Threads used when a policy does not fix the count: KFORGE_NUM_THREADS if
/// set to a positive integer, else the hardware's concurrency.
inline int default_num_threads() {
  static const int n = [] {
    if (const char* e = std::getenv("KFORGE_NUM_THREADS")) {
      const int v = std::atoi(e);
      if (v > 0) return v;
    }
    const unsigned h = std::thread::hardware_concurrency();
    return h > 0 ? static_cast<int>(h) : 1;
  }();
  return n;
}

/// A barrier for the nthreads shares of one job. Spins briefly, then sleeps
/// on a futex (std::atomic::wait) so that an oversubscribed machine still
/// makes progress.
class spin_barrier {
 public:
  explicit spin_barrier(int n) : n_(n) {}
  void wait() {
    if (n_ <= 1) return;
    const int gen = gen_.load(std::memory_order_acquire);
    if (count_.fetch_add(1, std::memory_order_acq_rel) == n_ - 1) {
      count_.store(0, std::memory_order_relaxed);
      gen_.fetch_add(1, std::memory_order_release);
      gen_.notify_all();
      return;
    }
    // Spin briefly (the partner is usually microseconds away), then sleep on
    // the futex: when another process holds the partner's core, a spinning or
    // yielding waiter only takes CPU from it (measured 4x slower 256³ gemm
    // under a load average of 6 on 2 cores).
    for (int spin = 0; spin < 2048; ++spin) {
      if (gen_.load(std::memory_order_acquire) != gen) return;
      KFORGE_CPU_PAUSE();
    }
    while (gen_.load(std::memory_order_acquire) == gen) gen_.wait(gen, std::memory_order_acquire);
  }

 private:
  int n_;
  std::atomic<int> count_{0};
  std::atomic<int> gen_{0};
};

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
    {
      std::lock_guard<std::mutex> lk(sleep_mutex_);
      stop_ = true;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    for (auto& t : workers_) t.join();
  }

  /// Number of worker threads created so far (the caller is not counted).
  int workers() const { return static_cast<int>(workers_.size()); }

  /// Runs f(tid, nthreads) for tid in [0, nthreads) and returns when all
  /// shares have finished. The caller runs share 0.
  template <class F>
  void run(int nthreads, F&& f) {
    if (nthreads <= 1 || in_job()) {
      f(0, 1);
      return;
    }
    std::unique_lock<std::mutex> owner(run_mutex_, std::try_to_lock);
    if (!owner.owns_lock()) {  // another thread is using the pool: do the work here
      f(0, 1);
      return;
    }
    grow(nthreads - 1);
    using Fn = std::remove_reference_t<F>;
    ctx_ = const_cast<void*>(static_cast<const void*>(&f));
    call_ = [](void* c, int tid, int nt) { (*static_cast<Fn*>(c))(tid, nt); };
    nthreads_ = nthreads;
    remaining_.store(nthreads - 1, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lk(sleep_mutex_);
      generation_.fetch_add(1, std::memory_order_release);
    }
    if (sleepers_.load(std::memory_order_acquire) > 0) wake_.notify_all();
    in_job() = true;
    f(0, nthreads);
    in_job() = false;
    for (int spin = 0; spin < 4096 && remaining_.load(std::memory_order_acquire) != 0; ++spin) KFORGE_CPU_PAUSE();
    for (int left; (left = remaining_.load(std::memory_order_acquire)) != 0;)
      remaining_.wait(left, std::memory_order_acquire);
  }

 private:
  thread_pool() = default;

  static bool& in_job() {
    thread_local bool flag = false;
    return flag;
  }

  void grow(int n) {
    while (static_cast<int>(workers_.size()) < n) {
      const int tid = static_cast<int>(workers_.size()) + 1;
      // The generation is read here, before the job that needs this thread is
      // published, so the new thread cannot miss it.
      const std::uint64_t gen = generation_.load(std::memory_order_acquire);
      workers_.emplace_back([this, tid, gen] { worker(tid, gen); });
    }
  }

  void worker(int tid, std::uint64_t seen) {
    in_job() = true;
    for (;;) {
      // Spin ~50 µs for the next job, then sleep.
      int spin = 0;
      while (generation_.load(std::memory_order_acquire) == seen && spin < 20000) {
        KFORGE_CPU_PAUSE();
        ++spin;
      }
      if (generation_.load(std::memory_order_acquire) == seen) {
        std::unique_lock<std::mutex> lk(sleep_mutex_);
        sleepers_.fetch_add(1, std::memory_order_acq_rel);
        wake_.wait(lk, [&] { return generation_.load(std::memory_order_acquire) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_acq_rel);
      }
      seen = generation_.load(std::memory_order_acquire);
      if (stop_) return;
      if (tid < nthreads_) {
        call_(ctx_, tid, nthreads_);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) remaining_.notify_all();
      }
    }
  }

  std::vector<std::thread> workers_;
  std::mutex run_mutex_;
  std::mutex sleep_mutex_;
  std::condition_variable wake_;
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<int> remaining_{0};
  std::atomic<int> sleepers_{0};
  void* ctx_ = nullptr;
  void (*call_)(void*, int, int) = nullptr;
  int nthreads_ = 1;
  std::atomic<bool> stop_{false};
};

namespace detail {
/// [begin, end) of share `tid` when n items are split evenly over nt shares.
inline void split_range(std::int64_t n, int tid, int nt, std::int64_t& begin, std::int64_t& end) {
  const std::int64_t q = n / nt, r = n % nt;
  begin = tid * q + std::min<std::int64_t>(tid, r);
  end = begin + q + (tid < r ? 1 : 0);
}

/// Runs f(begin, end) over [0, n) on up to nthreads threads; items are split
/// into equal contiguous ranges (no thread gets fewer than `grain` items).
template <class F>
void parallel_for(int nthreads, std::int64_t n, std::int64_t grain, F&& f) {
  if (n <= 0) return;
  const std::int64_t by_grain = std::max<std::int64_t>(1, n / std::max<std::int64_t>(grain, 1));
  const int nt = static_cast<int>(std::min<std::int64_t>(nthreads, by_grain));
  if (nt <= 1) {
    f(std::int64_t{0}, n);
    return;
  }
  thread_pool::instance().run(nt, [&](int tid, int t) {
    std::int64_t b, e;
    split_range(n, tid, t, b, e);
    if (b < e) f(b, e);
  });
}
}  // namespace detail

}  // namespace kforge::cpu
