// tests/cli/fuzz.cpp — spawns the kforge tool with generated malformed
// invocations (shapes, numbers, flags, environment variables, kernel files,
// problems too large for memory) and checks each one: no signal, no hang
// (a per-invocation timeout), exit 1, 2 or 3 and never 0, the exact exit code
// where the README documents it (a number or variable outside its range: 2;
// a problem larger than the memory limit: 3), and for 2 and 3 one line on
// stderr starting "kforge: ". Deterministic: the cases come from a fixed seed.
//
//   cli_fuzz TOOL [--vulkan] [--gen] [--tune] [--seed N] [--jobs N] [--timeout-s S] [--foreign-every N]
//
// --vulkan / --gen / --tune: the tool was built with kforge::vulkan /
// kforge::llm+vulkan / kforge::tune, so their variables, gen, mutate,
// validate --kernel and tune are fuzzed too. --foreign-every N: of the
// "foreign option" cases (every option of the tool given to each command that
// does not take it), one in N, counted across the commands so that each
// command still gets its share (the sanitizer build: the refusal is one code
// path per command, and each case costs a second of CPU there).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

extern char** environ;

namespace {

struct invocation {
  // A constructor rather than an aggregate: most cases give no `names`,
  // which -Wmissing-field-initializers reports for aggregates.
  invocation(std::vector<std::string> args_, std::vector<std::pair<std::string, std::string>> env_ = {}, int expect_ = -1,
             std::string what_ = {}, std::string names_ = {})
      : args(std::move(args_)), env(std::move(env_)), expect(expect_), what(std::move(what_)), names(std::move(names_)) {}
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  int expect = -1;  ///< the exact exit code, or -1 for any of 1, 2, 3
  std::string what; ///< the category, for the summary
  std::string names;  ///< text stderr must hold (the option refused), or empty
};

struct outcome {
  bool ok = true;
  std::string why;
  double seconds = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string quoted(const invocation& c) {
  std::string s;
  for (const auto& [k, v] : c.env) s += k + "='" + v + "' ";
  s += "kforge";
  for (const auto& a : c.args) s += " '" + a + "'";
  return s;
}

/// Runs one invocation with stdout/stderr in files of `dir`; kills it after `timeout_s`.
outcome run_one(const std::string& tool, const invocation& c, const std::string& dir, double timeout_s) {
  outcome o;
  const std::string out_path = dir + "/out", err_path = dir + "/err";
  std::vector<std::string> envs;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    bool replaced = false;
    for (const auto& [k, v] : c.env) replaced = replaced || s.rfind(k + "=", 0) == 0;
    if (!replaced) envs.push_back(s);
  }
  for (const auto& [k, v] : c.env) envs.push_back(k + "=" + v);
  std::vector<char*> argv{const_cast<char*>(tool.c_str())}, envp;
  for (const auto& a : c.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);

  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) return {false, "fork failed", 0};
  if (pid == 0) {
    setpgid(0, 0);  // the tool's sandbox workers are killed with it
    const int fo = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fe = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int fi = open("/dev/null", O_RDONLY);
    if (fo < 0 || fe < 0 || fi < 0) _exit(126);
    dup2(fi, 0), dup2(fo, 1), dup2(fe, 2);
    execve(tool.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  int status = 0;
  bool timed_out = false;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (o.seconds > timeout_s) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string out = read_file(out_path), err = read_file(err_path);
  auto fail = [&](const std::string& why) {
    o.ok = false;
    o.why = why + "\n    " + quoted(c) + "\n    stderr: " + err.substr(0, 600) + (out.empty() ? "" : "\n    stdout: " + out.substr(0, 300));
  };
  if (timed_out) {
    fail("hung: killed after " + std::to_string(timeout_s) + " s");
    return o;
  }
  if (WIFSIGNALED(status)) {
    fail(std::string("killed by signal ") + strsignal(WTERMSIG(status)));
    return o;
  }
  const int rc = WEXITSTATUS(status);
  if (rc == 0) return fail("exit 0 on malformed input"), o;
  if (rc != 1 && rc != 2 && rc != 3) return fail("exit " + std::to_string(rc) + ", not 1, 2 or 3"), o;
  if (c.expect >= 0 && rc != c.expect)
    return fail("exit " + std::to_string(rc) + ", expected " + std::to_string(c.expect)), o;
  if (rc == 1) {
    if (out.empty() && err.empty()) fail("exit 1 without a word");
    return o;
  }
  // 2 and 3: exactly one line on stderr, "kforge: ...", naming the input
  // refused, with no control character (an echoed escape sequence) in it.
  const auto lines = std::count(err.begin(), err.end(), '\n');
  if (lines != 1 || err.back() != '\n' || err.rfind("kforge: ", 0) != 0) return fail("stderr is not one line starting 'kforge: '"), o;
  if (!c.names.empty() && err.find(c.names) == std::string::npos) return fail("the message does not name '" + c.names + "'"), o;
  for (std::size_t i = 0; i + 1 < err.size(); ++i)
    if (static_cast<unsigned char>(err[i]) < 0x20 || err[i] == 0x7f) return fail("a raw control character in the message"), o;
  return o;
}

// ---- the cases -------------------------------------------------------------------

// Text that is never a number in any range, and numbers no option accepts.
const std::vector<std::string> not_numbers = {
    "nan", "NaN", "-nan", "inf", "-inf", "Infinity", "abc", "1e999", "-1e999", "0x", "1,5", " 1", "1 ", "+-1", "--1",
    "1e", "\xd9\xa1", "1..2", "e5", "1e5e5", "\t2", "0b11", "1e39", "-1e39", "0x1p200"};

struct number_case {
  std::vector<std::string> base;   ///< a command that exits 0 as it is
  std::string option;
  std::vector<std::string> bad;    ///< values outside the option's documented range
  bool needs_gen = false, needs_tune = false;
};

std::vector<number_case> number_cases() {
  const std::vector<std::string> relu = {"run", "--op", "relu", "--shape", "4x4", "--policy", "eigen", "--reps", "1"};
  auto run_op = [](std::string op, std::string shape) {
    return std::vector<std::string>{"run", "--op", std::move(op), "--shape", std::move(shape), "--policy", "eigen", "--reps", "1"};
  };
  const auto ln = run_op("layer_norm", "4x8"), conv = run_op("conv2d", "1x2x5x5,3x2x3x3"), topk = run_op("topk", "3x20");
  const auto att = run_op("attention", "1x2x3x8,5"), rope = run_op("rope", "3x2x8"), gemm = run_op("gemm", "4x4x4");
  const auto kv = run_op("kv_append", "1x2x2x4,1x8x2x4"), red = run_op("reduce_sum", "4x4");
  const std::vector<std::string> val = {"validate", "--op", "softmax", "--shape", "3x5", "--policy", "eigen"};
  const std::vector<std::string> tune = {"tune", "--op", "gemm", "--shape", "8x8x8", "--trials", "1", "--reps", "1"};
  const std::vector<std::string> gen = {"gen", "--op", "relu", "--shape", "8x8"};
  const std::vector<std::string> genai = {"gen", "--op", "relu", "--shape", "8x8", "--provider", "openai",
                                          "--base-url", "http://127.0.0.1:9/v1", "--model", "m"};
  const std::vector<std::string> tf = {"transformer", "--preset", "tiny", "--policy", "eigen", "--prefill", "2",
                                       "--decode", "1", "--reps", "1"};
  return {
      {relu, "reps", {"0", "-1", "1.5", "1000001", "99999999999999999999999"}},
      {val, "seed", {"-1", "1.5", "1e30", "4611686018427387905", "-99999999999999999999999"}},
      {ln, "eps", {"-1", "0", "-0", "1e39", "-1e-9", "0.0"}},
      {topk, "k", {"0", "-1", "21", "1.5", "3000000000"}},
      {conv, "stride", {"0", "-1", "1.5", "2x0", "1073741825", "x2", "2x"}},
      {conv, "pad", {"-1", "1.5", "1x-1", "1073741825"}},
      {conv, "dilation", {"0", "-2", "1x0"}},
      {conv, "groups", {"0", "-1", "1.5"}},
      {red, "axis", {"5", "-5", "1.5", "2147483648"}},
      {att, "scale", {"1e39", "-1e39"}},
      {att, "kv-len", {"-1", "1.5", "6", "100"}},
      {gemm, "alpha", {"1e39", "-1e39"}},
      {gemm, "beta", {"1e39"}},
      {rope, "base", {"1", "0.5", "-1", "0", "1e31"}},
      {rope, "offset", {"-1", "1073741825", "0.5"}},
      {kv, "pos", {"-1", "1073741825", "2.5", "7"}},
      {tune, "trials", {"0", "-1", "1.5"}, false, true},
      {tune, "budget", {"0", "-1", "86401"}, false, true},
      {tune, "reps", {"0", "-3"}, false, true},
      {gen, "samples", {"0", "-1", "10001", "2.5"}, true},
      {gen, "temperature", {"-0.1", "2.5", "-3"}, true},
      {gen, "max-tokens", {"0", "1000001"}, true},
      {genai, "timeout-ms", {"0", "-5", "86400001", "0.5"}, true},
      {genai, "total-timeout-ms", {"0", "-1"}, true},
      {{"mutate", "--op", "relu"}, "timeout-ms", {"0", "-1", "86400001"}, true},
      {tf, "layers", {"0", "4097", "-1"}},
      {tf, "prefill", {"0", "1048577"}},
      {tf, "decode", {"-1", "1048577"}},
      {tf, "verify-decode", {"-1"}},
      {tf, "reps", {"0"}},
      {tf, "max-slowdown", {"0.5", "0", "-1"}},
      {tf, "time-floor-us", {"-1", "0.5"}},
  };
}

struct env_case {
  std::string name;
  std::vector<std::string> bad;
};
const std::vector<env_case> env_cases = {
    {"KFORGE_NUM_THREADS", {"0", "-3", "abc", "1.5", "99999999999999999999", "4 "}},
    {"KFORGE_POOL_SPIN_US", {"-1", "1000001", "abc", "1.5"}},
    {"KFORGE_GEMM_PARALLEL_MIN_FLOPS", {"-1", "nan", "inf", "abc"}},
    {"KFORGE_POOL_AFFINITY", {"2", "-1", "yes", "0.5"}},
    {"KFORGE_VK_TIMEOUT_MS", {"0", "-1", "abc", "86400001", "1.5"}},
    {"KFORGE_VK_BLOCK_MIB", {"0", "1048577", "x", "-1"}},
    {"KFORGE_VK_DEVICE", {"99999999", "99999999999999999999999"}},
    {"KFORGE_AUTOTUNE", {"2", "yes", "-1"}},
    {"KFORGE_AUTOTUNE_BUDGET", {"0", "-1", "nan"}},
    {"KFORGE_AUTOTUNE_STRATEGY", {"magic", "GRID"}},
    {"KFORGE_VK_VALIDATION", {"2", "on"}},
    {"KFORGE_VK_PIPELINE_STATS", {"yes"}},
};

// Shapes no op accepts (exit 2), per op.
const std::vector<std::string> bad_shapes = {
    "x", "4x", "x4", "4xx4", "-4x4", "4x-4", "4.5x4", "4x4x4x4x4x4x4", "1e3x4", "4X4", " 4x4", "4x4 ", "9999999999999x4",
    "99999999999x99999999999", "4x4,", "4x4,,4", ",4", "4;4", "0x", "4*4", "four", "4x4x", "\xff\xfe", "4 x 4"};
const std::vector<std::pair<std::string, std::string>> wrong_rank = {
    {"gemm", "4x4"}, {"gemm", "4x4x4x4"}, {"conv2d", "1x2x3"}, {"conv2d", "1x2x5x5"}, {"attention", "1x2"},
    {"embedding", "100x8"}, {"softmax", "4x4,4"}, {"conv2d", "1x3x2x2,4x3x5x5"}, {"attention", "1x4x3x8,5x3"},
    {"add", "4x3,5"}, {"kv_append", "1x2x2x4"}, {"embedding", "0x8,5"}};
// Problems beyond any machine's memory limit (exit 3).
const std::vector<std::pair<std::string, std::string>> huge = {
    {"gemm", "20000000x20000000x10"}, {"relu", "100000000x100000"}, {"softmax", "1000000x1000000"},
    {"layer_norm", "30000000x3000000"}, {"add", "100000000x100000,100000"}, {"conv2d", "1000x100x1000x1000,100x100x3x3"},
    {"attention", "64x64x100000x128,100000"}, {"embedding", "100000x1000000,1000000"}, {"topk", "1000000x10000000"},
    {"relu", "2147483648x100x100"}};

/// The tool's option table (`kforge options`): per command its value
/// options and flags and whether it takes a problem; the problem's options.
struct option_table {
  struct command {
    std::string name;
    std::vector<std::string> values, flags;
    bool problem = false;
  };
  std::vector<command> commands;
  std::vector<std::string> problem_values, problem_flags;
};

option_table read_option_table(const std::string& tool) {
  option_table t;
  FILE* f = popen(("'" + tool + "' options").c_str(), "r");
  if (!f) return t;
  std::string text;
  char buf[4096];
  for (std::size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) text.append(buf, n);
  pclose(f);
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    option_table::command c{line.substr(0, colon), {}, {}, false};
    std::stringstream words(line.substr(colon + 1));
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (w[i] == "[problem]") c.problem = true;
      if (w[i].rfind("--", 0) != 0) continue;
      const bool value = i + 1 < w.size() && w[i + 1] == "V";
      (value ? c.values : c.flags).push_back(w[i].substr(2));
    }
    if (c.name == "problem") t.problem_values = c.values, t.problem_flags = c.flags;
    else t.commands.push_back(std::move(c));
  }
  return t;
}

/// Every command's options against the table: each option of every other
/// command given to it, each of its own given twice, with an empty value,
/// with an escape sequence. A new option is fuzzed the day it joins the table.
void table_cases(const option_table& t, std::vector<invocation>& out, bool with_gen, bool with_tune, int foreign_every) {
  const std::map<std::string, std::vector<std::string>> bases = {
      {"devices", {"devices"}},
      {"run", {"run", "--op", "relu", "--shape", "4x4", "--policy", "eigen", "--reps", "1"}},
      {"validate", {"validate", "--op", "relu", "--shape", "4x4", "--policy", "eigen"}},
      {"bench", {"bench", "--op", "relu", "--shape", "4x4", "--policy", "eigen", "--reps", "1"}},
      {"demo", {"demo", "--quick", "--policy", "eigen"}},
      {"transformer", {"transformer", "--preset", "tiny", "--policy", "eigen", "--prefill", "2", "--decode", "1", "--reps", "1"}},
      {"gen", {"gen", "--op", "relu", "--shape", "8x8"}},
      {"mutate", {"mutate", "--op", "relu"}},
      {"worker", {"worker"}},
      {"tune", {"tune", "--op", "gemm", "--shape", "8x8x8", "--trials", "1", "--reps", "1"}},
      {"cache", {"cache", "list"}},
      {"options", {"options"}}};
  std::vector<std::pair<std::string, bool>> every;  // (option, takes a value)
  for (const auto& c : t.commands) {
    for (const auto& v : c.values) every.emplace_back(v, true);
    for (const auto& f : c.flags) every.emplace_back(f, false);
  }
  for (const auto& v : t.problem_values) every.emplace_back(v, true);
  for (const auto& f : t.problem_flags) every.emplace_back(f, false);
  std::sort(every.begin(), every.end());
  every.erase(std::unique(every.begin(), every.end()), every.end());
  std::size_t foreign = 0;
  for (const auto& c : t.commands) {
    const auto b = bases.find(c.name);
    if (b == bases.end()) continue;  // a command this fuzzer has no base for: the table test (cli_options) says so
    if ((!with_gen && (c.name == "gen" || c.name == "mutate" || c.name == "worker")) ||
        (!with_tune && (c.name == "tune" || c.name == "cache")))
      continue;
    auto own = [&](const std::string& o, bool value) {
      const auto& l = value ? c.values : c.flags;
      if (std::find(l.begin(), l.end(), o) != l.end()) return true;
      if (!c.problem) return false;
      const auto& p = value ? t.problem_values : t.problem_flags;
      return std::find(p.begin(), p.end(), o) != p.end();
    };
    for (const auto& [o, value] : every) {
      if (own(o, value) || foreign++ % static_cast<std::size_t>(foreign_every) != 0) continue;
      invocation i{b->second, {}, 2, "foreign option", "--" + o};
      i.args.push_back("--" + o);
      if (value) i.args.push_back("1");
      out.push_back(std::move(i));
    }
    std::vector<std::pair<std::string, bool>> mine;
    for (const auto& v : c.values) mine.emplace_back(v, true);
    for (const auto& f : c.flags) mine.emplace_back(f, false);
    if (c.problem) {
      for (const char* v : {"op", "shape", "dtype"}) mine.emplace_back(v, true);
    }
    for (const auto& [o, value] : mine) {
      invocation twice{b->second, {}, 2, "repeated option", "--" + o};
      for (int k = 0; k < 2; ++k) {
        twice.args.push_back("--" + o);
        if (value) twice.args.push_back("1");
      }
      out.push_back(std::move(twice));
      if (!value) continue;
      invocation empty{b->second, {}, 2, "empty value", "--" + o};
      empty.args.push_back("--" + o + "=");
      out.push_back(std::move(empty));
      invocation esc{b->second, {}, 2, "escape sequence", "--" + o};
      esc.args.push_back("--" + o);
      esc.args.push_back("\x1b]0;pwned\x07\x1b[31mred");
      out.push_back(std::move(esc));
    }
  }
}

std::vector<invocation> all_cases(std::mt19937_64& rng, bool with_vulkan, bool with_gen, bool with_tune, const std::string& dir) {
  std::vector<invocation> out;
  auto pick = [&](const auto& v) -> const auto& { return v[rng() % v.size()]; };
  // 1. Numbers: every option's own out-of-range values, and 4 drawn from the generic ones.
  for (const number_case& nc : number_cases()) {
    if ((nc.needs_gen && !with_gen) || (nc.needs_tune && !with_tune)) continue;
    std::vector<std::string> values = nc.bad;
    for (int i = 0; i < 4; ++i) values.push_back(pick(not_numbers));
    for (const std::string& v : values) {
      invocation c{nc.base, {}, 2, "number"};
      if (rng() % 2) {
        c.args.push_back("--" + nc.option);
        c.args.push_back(v);
      } else {
        c.args.push_back("--" + nc.option + "=" + v);
      }
      out.push_back(std::move(c));
    }
  }
  // 2. Environment: each variable's bad values under a command that runs nothing heavy.
  const std::vector<std::vector<std::string>> env_bases = {
      {"run", "--op", "relu", "--shape", "4x4", "--policy", "eigen", "--reps", "1"},
      {"validate", "--op", "softmax", "--shape", "3x5", "--policy", "threaded"},
      {"devices"}};
  for (const env_case& ec : env_cases) {
    // A module the build lacks does not read its variables.
    if ((!with_vulkan && ec.name.rfind("KFORGE_VK_", 0) == 0) || (!with_tune && ec.name.rfind("KFORGE_AUTOTUNE", 0) == 0)) continue;
    for (const std::string& v : ec.bad) out.push_back({pick(env_bases), {{ec.name, v}}, 2, "environment"});
  }
  // 3. Shapes.
  const std::vector<std::string> ops = {"relu", "gemm", "softmax", "layer_norm", "conv2d", "attention", "add", "topk",
                                        "embedding", "rope", "reduce_sum", "kv_append", "rms_norm", "gated"};
  for (const std::string& s : bad_shapes)
    for (int i = 0; i < 2; ++i)
      out.push_back({{rng() % 2 ? "run" : "validate", "--op", pick(ops), "--shape", s, "--policy", "eigen"}, {}, 2, "shape"});
  for (const auto& [op, s] : wrong_rank) out.push_back({{"validate", "--op", op, "--shape", s}, {}, 2, "shape"});
  // 4. Memory: refused before allocation, on every command that allocates.
  for (const auto& [op, s] : huge) {
    out.push_back({{"validate", "--op", op, "--shape", s, "--policy", "eigen"}, {}, 3, "memory"});
    out.push_back({{"run", "--op", op, "--shape", s, "--policy", "threaded"}, {}, 3, "memory"});
    out.push_back({{"bench", "--op", op, "--shape", s, "--policy", "blocked"}, {}, 3, "memory"});
    if (with_tune && op == "gemm") out.push_back({{"tune", "--op", op, "--shape", s}, {}, 3, "memory"});
    if (with_gen && (op == "relu" || op == "softmax")) out.push_back({{"gen", "--op", op, "--shape", s}, {}, 3, "memory"});
  }
  // 5. Flags and words.
  const std::vector<std::vector<std::string>> flags = {
      {"frobnicate"}, {"run", "--op"}, {"run", "--op", "relu", "--shape"}, {"run", "--json=1"}, {"run", "relu"},
      {"run", "--op", "gemx", "--shape", "3x3x3"}, {"run", "--op", "relu", "--shape", "4x4", "--dtype", "f8"},
      {"run", "--op", "relu", "--shape", "4x4", "--dtype", "f64"}, {"run", "--op", "relu", "--shape", "4x4", "--policy", "turbo"},
      {"run", "--op", "gemm", "--shape", "3x3x3", "--epilogue", "sparkle"}, {"run", "--op", "softmax", "--shape", "4x4", "--k", "2"},
      {"run", "--op", "relu", "--shape", "4x4", "-x"}, {"run", "---op", "relu"}, {"run", "--=", "x"}, {"run", "--"},
      {"run", "--op", "relu", "--shape", "4x4", "--turbo"}, {"run", "--shape", "4x4"}, {"run", "--op", "relu"},
      {"cache"}, {"cache", "frobnicate"}, {"cache", "list", "--strategy", "grid"}, {"transformer", "--preset", "gpt5"},
      {"transformer"}, {"transformer", "--preset", "tiny", "--dtype", "f8"}, 
      {"bench", "--op", "relu", "--shape", "4x4", "--policy", "eigen,turbo"}, {"validate", "--help=1"}, {""},
      {"run", "--op", "attention", "--shape", "1x2x3x8", "--layout", "bsdh"}, {"run", "--op", "", "--shape", "4x4"},
      {"run", "--op", "relu", "--shape", ""}, {"validate", "--op", "argmax", "--shape", "4x4", "--k", "2"}};
  for (const auto& f : flags) out.push_back({f, {}, 2, "flags"});
  // 6. Kernel files (the sandboxed gate; needs the gen module).
  if (with_gen) {
    const std::string empty = dir + "/empty.comp", big = dir + "/big.comp", junk = dir + "/junk.comp",
                      glslish = dir + "/glslish.comp", fifo = dir + "/fifo.comp";
    std::ofstream(empty).close();
    {
      std::ofstream f(big);
      f << std::string((1 << 20) + 1, '/');
    }
    {
      std::ofstream f(junk, std::ios::binary);
      for (int i = 0; i < 4096; ++i) f.put(static_cast<char>(rng() & 0xff));
    }
    {
      std::ofstream f(glslish);
      f << "#version 450\nlayout(local_size_x = 64) in;\nlayout(binding = 0) buffer X { float x[]; };\n"
           "void main() { x[gl_GlobalInvocationID.x] = ; }\n";
    }
    mkfifo(fifo.c_str(), 0644);
    for (const std::string& k : {std::string("/dev/zero"), std::string("/nonexistent/k.comp"), dir, big, fifo})
      out.push_back({{"validate", "--op", "relu", "--shape", "4x4", "--kernel", k}, {}, 2, "kernel"});
    // Read, then rejected by the gate (exit 1), or exit 3 where no Vulkan device exists.
    for (const std::string& k : {junk, glslish, empty})
      out.push_back({{"validate", "--op", "relu", "--shape", "4x4", "--kernel", k}, {}, -1, "kernel"});
  }
  // 6b. Every other file kforge reads gets the same rule as --kernel (issue
  // 47: these blocked forever on a FIFO or read /dev/zero until memory ran
  // out): a FIFO, /dev/zero, a symlink to it and a directory, refused at once
  // with exit 2 naming the file; a tuning cache whose tuning.json is a FIFO
  // is an environment problem (exit 3) naming it.
  {
    const std::string fifo = dir + "/special.fifo", link = dir + "/zero.link", sub = dir + "/a-directory";
    mkfifo(fifo.c_str(), 0644);
    std::error_code ec;
    std::filesystem::create_symlink("/dev/zero", link, ec);
    std::filesystem::create_directories(sub, ec);
    const std::vector<std::vector<std::string>> readers = {
        {"transformer", "--compare", "@", "--baseline", dir + "/missing-baseline.json"},
        {"transformer", "--compare", dir + "/missing-new.json", "--baseline", "@"},
        {"transformer", "--preset", "tiny", "--policy", "eigen", "--prefill", "2", "--decode", "1", "--reps", "1", "--baseline", "@"}};
    std::vector<std::vector<std::string>> all = readers;
    if (with_gen) {
      all.push_back({"gen", "--op", "relu", "--shape", "8x8", "--provider", "replay", "--replay", "@"});
      all.push_back({"worker", "--request", "@", "--response", dir + "/response.json"});
    }
    for (const auto& r : all)
      for (const std::string& f : {fifo, std::string("/dev/zero"), link, sub}) {
        invocation c{r, {}, 2, "special file"};
        for (auto& a : c.args)
          if (a == "@") a = f;
        // The missing file beside it may be read first: either refusal names a path of this run.
        c.names = f == sub || f == fifo || f == link ? f : "/dev/zero";
        if (std::find(r.begin(), r.end(), dir + "/missing-baseline.json") != r.end() ||
            std::find(r.begin(), r.end(), dir + "/missing-new.json") != r.end())
          c.names.clear();
        out.push_back(std::move(c));
      }
    if (with_tune) {
      const std::string cache = dir + "/fifo-cache";
      std::filesystem::create_directories(cache, ec);
      mkfifo((cache + "/tuning.json").c_str(), 0644);
      for (const char* sub_cmd : {"list", "show"})
        out.push_back({{"cache", sub_cmd}, {{"KFORGE_CACHE_DIR", cache}}, 3, "special file", "tuning.json"});
    }
  }
  // 7. Mixed: two defects at once (the first one found decides the message; never exit 0).
  for (int i = 0; i < 30; ++i) {
    invocation c{{"run", "--op", pick(ops), "--shape", pick(bad_shapes), "--reps", pick(not_numbers)}, {}, 2, "mixed"};
    if (rng() % 2) c.env.push_back({"KFORGE_NUM_THREADS", pick(env_cases.front().bad)});
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: cli_fuzz TOOL [--vulkan] [--gen] [--tune] [--seed N] [--jobs N] [--timeout-s S] [--foreign-every N]\n";
    return 2;
  }
  const std::string tool = argv[1];
  bool with_vulkan = false, with_gen = false, with_tune = false;
  std::uint64_t seed = 0x6b66757a7a000001ull;
  int jobs = 4;
  double timeout_s = 10;
  int foreign_every = 1;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--vulkan") with_vulkan = true;
    else if (a == "--gen") with_gen = true;
    else if (a == "--tune") with_tune = true;
    else if (a == "--seed" && i + 1 < argc) seed = std::strtoull(argv[++i], nullptr, 0);
    else if (a == "--jobs" && i + 1 < argc) jobs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--timeout-s" && i + 1 < argc) timeout_s = std::atof(argv[++i]);
    else if (a == "--foreign-every" && i + 1 < argc) foreign_every = std::max(1, std::atoi(argv[++i]));
  }
  const std::string dir = (std::filesystem::temp_directory_path() / ("kforge-fuzz-" + std::to_string(getpid()))).string();
  std::filesystem::create_directories(dir);
  std::mt19937_64 rng(seed);
  std::vector<invocation> cases = all_cases(rng, with_vulkan, with_gen, with_tune, dir);
  const option_table table = read_option_table(tool);
  if (table.commands.size() < 5 || table.problem_values.empty()) {
    std::cerr << "cli_fuzz: '" << tool << " options' gave no option table\n";
    return 1;
  }
  table_cases(table, cases, with_gen, with_tune, foreign_every);

  std::atomic<std::size_t> next{0};
  std::mutex m;
  std::vector<std::string> failures;
  double slowest = 0;
  std::string slowest_case;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> workers;
  for (int j = 0; j < jobs; ++j)
    workers.emplace_back([&, j] {
      const std::string wdir = dir + "/w" + std::to_string(j);
      std::filesystem::create_directories(wdir);
      for (std::size_t i; (i = next++) < cases.size();) {
        const outcome o = run_one(tool, cases[i], wdir, timeout_s);
        std::lock_guard<std::mutex> lock(m);
        if (!o.ok) failures.push_back("[" + cases[i].what + "] " + o.why);
        if (o.seconds > slowest) slowest = o.seconds, slowest_case = quoted(cases[i]);
      }
    });
  for (auto& w : workers) w.join();
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::filesystem::remove_all(dir);

  std::map<std::string, int> per;
  for (const auto& c : cases) per[c.what]++;
  std::cout << "cli_fuzz: " << cases.size() << " malformed invocations (seed " << seed << "):";
  for (const auto& [k, n] : per) std::cout << " " << k << " " << n;
  std::cout << "\ncli_fuzz: " << failures.size() << " failed; " << total << " s in all, slowest " << slowest << " s: "
            << slowest_case << "\n";
  for (const auto& f : failures) std::cout << "FAIL " << f << "\n";
  return failures.empty() ? 0 : 1;
}
