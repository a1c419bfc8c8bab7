// bench/bench_gemm_calls.cpp — sgemm timed call by call, the way a program
// calls it, beside OpenBLAS (cblas_sgemm) and Eigen in the same process.
//
// Google Benchmark (bench_gemm) times thousands of back-to-back calls, which
// keeps a thread pool hot; a program calls a gemm once, or now and then.
// This executable times each call on its own (steady_clock around the call)
// and reports, per shape and peer, the very first call, the median and the
// slowest decile (nearest-rank 90th percentile) of the timed calls.
//
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_gemm_calls --scenario first
//   env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE build/bench/bench_gemm_calls --scenario gap --gap-us 1000
//
// Scenarios (run each in a fresh process; bench/cpu_calls.sh runs them all):
//   first  per shape and peer: one warm-up call, then --calls (15) calls back
//          to back — the issue-14 user program. The warm-up of the first
//          shape is the process's first call (thread creation included).
//   gap    per shape and peer: one warm-up, then --calls (40) calls, each
//          after sleeping --gap-us (1000) µs: the pool's threads go idle.
// Peers, in this order for every shape (--peers to choose): threaded
// (policy::threaded<>), openblas (cblas_sgemm, its default thread count),
// blocked (policy::blocked<>, one thread), eigen (policy::eigen: Eigen's
// product, one thread). Shapes: square n (--sizes, default
// 64,128,256,512,1024,2048) and skinny M×4096×4096 (--skinny, default 1,4,8,32).
// All operands are row-major Eigen matrices, f32, values in [-1, 1).
#include <cblas.h>

#include <kforge/kforge.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using rmat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using clk = std::chrono::steady_clock;

struct options {
  std::string scenario = "first";
  std::vector<long> sizes{64, 128, 256, 512, 1024, 2048};
  std::vector<long> skinny{1, 4, 8, 32};
  std::vector<std::string> peers{"threaded", "openblas", "blocked", "eigen"};
  int calls = -1;  // per scenario default
  long gap_us = 1000;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

std::vector<long> split_long(const std::string& s) {
  std::vector<long> out;
  for (const auto& t : split(s)) out.push_back(std::atol(t.c_str()));
  return out;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "bench_gemm_calls: %s\nusage: bench_gemm_calls [--scenario first|gap] [--calls N] [--gap-us US]\n"
               "       [--sizes 64,128,...|none] [--skinny 1,4,8,32|none] [--peers threaded,openblas,blocked,eigen]\n",
               why);
  std::exit(2);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--scenario") o.scenario = value();
    else if (a == "--calls") o.calls = std::atoi(value().c_str());
    else if (a == "--gap-us") o.gap_us = std::atol(value().c_str());
    else if (a == "--sizes") { const auto v = value(); o.sizes = v == "none" ? std::vector<long>{} : split_long(v); }
    else if (a == "--skinny") { const auto v = value(); o.skinny = v == "none" ? std::vector<long>{} : split_long(v); }
    else if (a == "--peers") o.peers = split(value());
    else usage(("unknown option " + a).c_str());
  }
  if (o.scenario != "first" && o.scenario != "gap") usage("--scenario must be first or gap");
  if (o.calls < 0) o.calls = o.scenario == "first" ? 15 : 40;
  if (o.calls < 1) usage("--calls must be at least 1");
  for (const auto& p : o.peers)
    if (p != "threaded" && p != "openblas" && p != "blocked" && p != "eigen") usage(("unknown peer " + p).c_str());
  return o;
}

struct shape_case {
  long m, n, k;
};

struct result {
  double first_us, median_us, p90_us, max_us;
};

double nearest_rank(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const std::size_t r = static_cast<std::size_t>(std::max(1.0, std::ceil(q * static_cast<double>(v.size()))));
  return v[std::min(r, v.size()) - 1];
}

std::function<void()> make_call(const std::string& peer, const rmat& a, const rmat& b, rmat& c) {
  namespace policy = kforge::policy;
  if (peer == "threaded") return [&] { kforge::run<policy::threaded<>>(kforge::op::gemm<float>{}, a, b, c); };
  if (peer == "blocked") return [&] { kforge::run<policy::blocked<>>(kforge::op::gemm<float>{}, a, b, c); };
  if (peer == "eigen") return [&] { kforge::run<policy::eigen>(kforge::op::gemm<float>{}, a, b, c); };
  return [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(a.rows()), static_cast<int>(b.cols()),
                static_cast<int>(a.cols()), 1.0f, a.data(), static_cast<int>(a.cols()), b.data(),
                static_cast<int>(b.cols()), 0.0f, c.data(), static_cast<int>(c.cols()));
  };
}

double time_us(const std::function<void()>& f) {
  const auto t0 = clk::now();
  f();
  const auto t1 = clk::now();
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

result measure(const options& o, const std::function<void()>& call) {
  result r{};
  r.first_us = time_us(call);
  std::vector<double> t;
  t.reserve(static_cast<std::size_t>(o.calls));
  for (int i = 0; i < o.calls; ++i) {
    if (o.scenario == "gap") std::this_thread::sleep_for(std::chrono::microseconds(o.gap_us));
    t.push_back(time_us(call));
  }
  r.median_us = nearest_rank(t, 0.5);
  r.p90_us = nearest_rank(t, 0.9);
  r.max_us = *std::max_element(t.begin(), t.end());
  return r;
}

std::string load_average() {
  char buf[128] = {};
  if (FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (!std::fgets(buf, sizeof buf, f)) buf[0] = 0;
    std::fclose(f);
  }
  std::string s(buf);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  std::vector<shape_case> shapes;
  for (long n : o.sizes) shapes.push_back({n, n, n});
  for (long m : o.skinny) shapes.push_back({m, 4096, 4096});

  std::printf(
      "# bench_gemm_calls scenario=%s calls=%d%s isa=%s threaded=\"%s\" spin_us=%lld parallel_min_flops=%.0f "
      "loadavg=\"%s\"\n",
      o.scenario.c_str(), o.calls, o.scenario == "gap" ? (" gap_us=" + std::to_string(o.gap_us)).c_str() : "",
      kforge::cpu::isa_name(), kforge::cpu::microkernel_name<kforge::policy::threaded<>>().c_str(),
      static_cast<long long>(kforge::cpu::spin_before_sleep().count()), kforge::cpu::detail::gemm_parallel_min_flops(),
      load_average().c_str());
  std::printf("%-16s %-9s %10s %10s %10s %10s %9s %8s\n", "shape", "peer", "first_us", "median_us", "p90_us", "max_us",
              "GFLOP/s", "p90/med");
  std::srand(1);
  for (const auto& s : shapes) {
    const rmat a = rmat::Random(s.m, s.k), b = rmat::Random(s.k, s.n);
    rmat c = rmat::Zero(s.m, s.n);
    const double flop = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    const std::string name = std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
    std::map<std::string, result> got;
    for (const auto& peer : o.peers) {
      const result r = measure(o, make_call(peer, a, b, c));
      got[peer] = r;
      std::printf("%-16s %-9s %10.1f %10.1f %10.1f %10.1f %9.1f %8.2f\n", name.c_str(), peer.c_str(), r.first_us,
                  r.median_us, r.p90_us, r.max_us, flop / r.median_us * 1e-3, r.p90_us / r.median_us);
    }
    if (got.count("threaded") && got.count("openblas"))
      std::printf("%-16s ratio threaded/openblas (median time of openblas / threaded) = %.2f\n", name.c_str(),
                  got["openblas"].median_us / got["threaded"].median_us);
    std::fflush(stdout);
  }
  std::printf("# end loadavg=\"%s\"\n", load_average().c_str());
  return 0;
}
