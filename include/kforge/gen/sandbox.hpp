// kforge/gen/sandbox.hpp — untrusted kernels run in a child process: the
// kforge tool itself in its hidden worker mode (`kforge worker --request F
// --response F`). The parent writes the request (shapes, GLSL, a fresh secret
// seed, the per-dispatch timeout's floor), waits with a wall-clock deadline,
// and reads the worker's JSON answer. Both limits follow the work
// (docs/GENERATION.md, "Time limits"): the worker sets each shape's
// per-dispatch timeout from its flops, bytes and invocations (gate.hpp,
// dispatch_timeout), and once it has drawn its shapes writes its budget
// beside the answer (F.budget); the parent's deadline grows to it. The worker runs the kernel on a context
// with robust buffer access, and only a kernel that passed the whole suite
// there on a plain one too (gate.hpp says why). An infinite loop ends in the worker's
// per-dispatch timeout (device_lost), or, if the driver itself hangs, in the
// parent's SIGKILL; a crash or a device loss ends the child, never the
// parent. Either way the candidate is rejected with a reason and the
// parent carries on.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <memory>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "kforge/gen/common.hpp"
#include "kforge/gen/gate.hpp"

extern char** environ;

namespace kforge::gen {

struct sandbox_options {
  std::string worker_exe;          ///< empty: KFORGE_WORKER_EXE, else this process if it is the kforge tool
  /// The floor of the worker's per-wait timeout (a hung kernel = device_lost);
  /// a shape whose estimated work needs more gets more (gate.hpp, dispatch_timeout).
  int dispatch_timeout_ms = 5000;
  /// The parent's deadline for the whole worker; 0: 30 s + 4 x dispatch_timeout_ms,
  /// extended to the budget the worker announces once it has drawn its shapes.
  int wall_timeout_ms = 0;
  bool benchmark = true;
  int bench_reps = 5;
  bool revalidate = true;
  bool held_out = true;  ///< the worker draws held-out and 2-D-grid shapes (gate_options::held_out)
};

/// What came back from the sandbox.
struct sandbox_result {
  bool accepted = false;
  std::string stage, reason;
  std::string gate_json;  ///< the worker's full answer ("" when it died)
  std::string log_tail;   ///< the last lines the worker printed
  double wall_s = 0;
  bool robust_buffer_access = false;  ///< the worker's context had it (false when the worker died)
  /// The held-out shapes the worker drew from its secret seed (empty when it
  /// stopped before reflection), and its 2-D-grid shape or why it had none.
  std::vector<std::string> held_out;
  std::string grid_2d;
  /// held_out and grid_2d in one line, for records and messages.
  std::string held_out_text() const {
    std::string s;
    for (const auto& h : held_out) s += (s.empty() ? "" : "; ") + h;
    return grid_2d.empty() ? s : s + (s.empty() ? "" : "; ") + "2-D grid: " + grid_2d;
  }
};

/// The kforge executable that serves as the worker.
inline std::string worker_executable(const sandbox_options& o) {
  if (!o.worker_exe.empty()) return o.worker_exe;
  if (const char* e = std::getenv("KFORGE_WORKER_EXE"); e && *e) return e;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && self.filename() == "kforge") return self.string();
  throw unsupported_error(
      "kforge::gen: no sandbox worker: set KFORGE_WORKER_EXE to the kforge tool (or sandbox_options::worker_exe)");
}

/// The request file the worker reads.
inline std::string worker_request(const std::vector<problem>& shapes, const std::string& glsl, std::uint64_t seed,
                                  const sandbox_options& o) {
  json_writer w;
  w.begin_object().key("shapes").begin_array();
  for (const auto& p : shapes) w.raw(problem_json(p));
  w.end_array().field("glsl", glsl).field("seed", hex(seed)).field("dispatch_timeout_ms", o.dispatch_timeout_ms);
  w.field("benchmark", o.benchmark).field("bench_reps", o.bench_reps).field("revalidate", o.revalidate);
  w.field("held_out", o.held_out).end_object();
  return w.str();
}

namespace detail {
inline std::string tail_of(const std::filesystem::path& p, std::size_t bytes = 2000) {
  std::string s;
  try {
    s = read_text(p);
  } catch (const std::exception&) {
    return "";
  }
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}
/// glibc's malloc settings for the worker (GLIBC_TUNABLES; other C
/// libraries ignore the variable). The gate allocates and frees operands of
/// tens of MiB per case (the 2-D grid shape's inputs, guarded outputs and
/// reference — up to 256 MiB in all, relu's 34 MB each — and lavapipe's
/// device memory); by default glibc serves each
/// from a fresh mmap, unmaps it on free, and faults it in again 4 KiB at a
/// time. Freed memory kept in the heap (no mmap, no trim) and the heap on
/// transparent huge pages (madvise): `kforge mutate --op relu` on lavapipe,
/// 2-core Zen 5 VM, 42.7–46.1 s → 11.2–12.6 s (docs/GENERATION.md). The
/// user's own GLIBC_TUNABLES come after these, so theirs win.
inline constexpr const char* worker_malloc_tunables =
    "glibc.malloc.hugetlb=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=4294967295";
/// This process's environment with worker_malloc_tunables in GLIBC_TUNABLES.
inline std::vector<std::string> worker_environment() {
  std::vector<std::string> env;
  std::string tunables = worker_malloc_tunables;
  for (char** e = environ; *e; ++e) {
    const std::string_view v(*e), key = "GLIBC_TUNABLES=";
    if (v.starts_with(key)) {
      if (v.size() > key.size()) (tunables += ':') += v.substr(key.size());
    } else {
      env.emplace_back(v);
    }
  }
  env.push_back("GLIBC_TUNABLES=" + tunables);
  return env;
}
/// The wall-clock budget the worker announced (gate_options::on_budget), at
/// most worker_budget_cap_ms; 0 while it has announced none.
inline constexpr double worker_budget_cap_ms = 2.0 * 3600 * 1000;
inline double worker_budget_ms(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) return 0;
  try {
    const double v = std::stod(read_text(file));
    return v > 0 ? std::min(v, worker_budget_cap_ms) : 0;
  } catch (const std::exception&) {
    return 0;  // being replaced: read on the next poll
  }
}
inline std::string last_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const auto nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}
}  // namespace detail

/// Validates `glsl` on `shapes` (the first is the prompt's problem) in a child
/// process; the worker adds the held-out shapes it draws from the secret seed.
inline sandbox_result run_sandboxed(const std::vector<problem>& shapes, const std::string& glsl,
                                    const sandbox_options& o = {}) {
  const std::string exe = worker_executable(o);
  const std::uint64_t seed = secret_seed();
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kforge-sandbox-" + std::to_string(::getpid()) + "-" + hex(seed, 8));
  std::filesystem::create_directories(dir);
  struct cleanup {
    std::filesystem::path d;
    ~cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } clean{dir};
  const auto req = dir / "request.json", resp = dir / "response.json", log = dir / "worker.log";
  write_atomic(req, worker_request(shapes, glsl, seed, o));

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  const std::string a0 = exe, a1 = "worker", a2 = "--request", a3 = req.string(), a4 = "--response", a5 = resp.string();
  char* argv[] = {const_cast<char*>(a0.c_str()), const_cast<char*>(a1.c_str()), const_cast<char*>(a2.c_str()),
                  const_cast<char*>(a3.c_str()), const_cast<char*>(a4.c_str()), const_cast<char*>(a5.c_str()), nullptr};
  const std::vector<std::string> env = detail::worker_environment();
  std::vector<char*> envp;
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw unsupported_error("kforge::gen: cannot start the sandbox worker '" + exe + "': " + std::strerror(rc));

  double deadline_ms = o.wall_timeout_ms > 0 ? o.wall_timeout_ms : 30000.0 + 4.0 * o.dispatch_timeout_ms;
  const auto budget_file = std::filesystem::path(resp.string() + ".budget");
  int status = 0;
  bool killed = false;
  for (int sleep_us = 1000;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    if (o.wall_timeout_ms <= 0) deadline_ms = std::max(deadline_ms, detail::worker_budget_ms(budget_file));
    const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (ms > deadline_ms) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      killed = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    sleep_us = std::min(sleep_us * 2, 20000);
  }
  sandbox_result out;
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.log_tail = redact_env(detail::tail_of(log));
  if (killed) {
    out.stage = stage::timeout;
    out.reason = "the worker did not finish within " + std::to_string(static_cast<long long>(deadline_ms)) + " ms and was killed";
    return out;
  }
  std::string answer;
  if (std::filesystem::exists(resp)) answer = read_text(resp);
  if (answer.empty()) {
    out.stage = stage::crash;
    if (WIFSIGNALED(status))
      out.reason = "the worker died from signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    else
      out.reason = "the worker exited with status " + std::to_string(WEXITSTATUS(status)) + " without an answer";
    if (const std::string l = detail::last_line(out.log_tail); !l.empty()) out.reason += ": " + l;
    return out;
  }
  const json_doc doc(answer, "the worker's answer");
  out.gate_json = redact_env(answer);
  out.accepted = json::boolean(doc.root(), "accepted");
  out.stage = json::str(doc.root(), "stage", stage::crash);
  out.reason = redact_env(json::str(doc.root(), "reason"));
  out.robust_buffer_access = json::boolean(doc.root(), "robust_buffer_access", false);
  simdjson::dom::array held;
  if (!doc.root()["held_out"].get_array().get(held))
    for (auto h : held) {
      std::string_view v;
      if (!h.get_string().get(v)) out.held_out.emplace_back(v);
    }
  simdjson::dom::element grid;
  if (!doc.root()["grid_2d"].get(grid))
    out.grid_2d = json::boolean(grid, "validated") ? json::str(grid, "shape") + " (" + std::to_string(static_cast<long long>(json::num(grid, "workgroups"))) + " workgroups)"
                                                   : json::str(grid, "rule");
  return out;
}

/// The worker mode: reads a request, runs the gate, writes the answer, and
/// leaves with _exit (a lost device may still be running the kernel; no
/// destructor must wait for it). Returns only on a usage error.
inline int worker_main(const std::string& request_path, const std::string& response_path) {
  std::string answer, request;
  try {
    request = read_text(request_path, file_limits::request, "the worker request");
  } catch (const std::exception& e) {  // not a readable regular file: nothing to judge
    std::string m = e.what();
    for (const char* prefix : {"kforge: ", "kforge::gen: "})
      if (m.rfind(prefix, 0) == 0) m = m.substr(std::string_view(prefix).size());
    std::cerr << "kforge: " << m << "\n";
    return 2;
  }
  try {
    const json_doc doc(request, "the worker request");
    const auto root = doc.root();
    std::vector<problem> shapes;
    simdjson::dom::array arr;
    if (root["shapes"].get_array().get(arr)) throw argument_error("kforge worker: request has no shapes");
    for (auto e : arr) shapes.push_back(problem_from_json(e));
    const std::string glsl = json::str(root, "glsl");
    gate_options go;
    go.seed = std::stoull(json::str(root, "seed", "0"), nullptr, 16);
    go.benchmark = json::boolean(root, "benchmark", true);
    go.bench_reps = static_cast<int>(json::num(root, "bench_reps", 5));
    go.revalidate = json::boolean(root, "revalidate", true);
    go.held_out = json::boolean(root, "held_out", true);
    vulkan::context_options co;
    co.timeout = std::chrono::milliseconds(static_cast<long long>(json::num(root, "dispatch_timeout_ms", 5000)));
    go.dispatch_timeout = co.timeout;
    go.on_budget = [&](double ms) {
      try {
        write_atomic(response_path + ".budget", std::to_string(static_cast<long long>(ms)));
      } catch (const std::exception&) {
        // the parent keeps its floor
      }
    };
    // The pipeline cache would persist driver state of untrusted kernels; the
    // worker keeps none.
    co.persist_pipeline_cache = false;
    // Untrusted code: its out-of-range accesses stay inside its own buffers.
    // A device without robustBufferAccess is refused (the answer says so).
    co.robust_buffer_access = true;
    vulkan::context ctx(co);
    std::unique_ptr<vulkan::context> plain;
    go.plain_context = [&]() -> vulkan::context& {
      if (!plain) {
        vulkan::context_options po = co;
        po.robust_buffer_access = false;
        plain = std::make_unique<vulkan::context>(po);
      }
      return *plain;
    };
    answer = run_gate(ctx, shapes, glsl, go);
    // Leave before ctx's destructor: after a timeout it would be waiting on a
    // device that may still run the kernel.
    write_atomic(response_path, answer);
    std::fflush(nullptr);
    _exit(0);
  } catch (const vulkan::device_lost& e) {
    json_writer w;
    w.begin_object().field("accepted", false).field("stage", stage::timeout).field("reason", std::string(e.what())).end_object();
    answer = w.str();
  } catch (const std::exception& e) {
    json_writer w;
    w.begin_object().field("accepted", false).field("stage", stage::crash).field("reason", "worker: " + std::string(e.what())).end_object();
    answer = w.str();
  }
  write_atomic(response_path, answer);
  std::fflush(nullptr);
  _exit(0);
}

}  // namespace kforge::gen
