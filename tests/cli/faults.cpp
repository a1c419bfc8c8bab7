// The tool under faults (issue 47): the tuning cache and its history survive
// what a user's machine does to them.
//
//   1. SIGKILL in the write window: 24 `kforge tune` processes of distinct
//      shapes, 4 at a time, each killed at a random moment of its run. Then
//      `kforge cache list` must read the cache (exit 0), no temporary file
//      may remain after it, every shape whose process finished must be
//      listed, and every history.csv row must be whole.
//   2. A full disk (a file-size limit, RLIMIT_FSIZE, on the child): a tune
//      whose writes cannot fit exits 3 naming the file; tuning.json and
//      history.csv are as they were and no temporary file is left.
//   3. `kforge cache clear` on that full cache works.
//
// usage: cli_faults TOOL [--seed N]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace fs = std::filesystem;

namespace {
int failures = 0;
void check(bool ok, const std::string& what) {
  if (ok) return;
  ++failures;
  std::cerr << "FAIL " << what << "\n";
}

struct child {
  pid_t pid = -1;
  int err_fd = -1;  ///< the read end of its stderr (a pipe: a file would be cut off by the file-size limit too)
  std::string err;  ///< what it wrote there, once finished
};

/// Starts TOOL args... with KFORGE_CACHE_DIR=dir (and a file-size limit when
/// fsize > 0), stdout to /dev/null, stderr to a pipe.
child start(const std::string& tool, const std::vector<std::string>& args, const fs::path& dir, rlim_t fsize = 0) {
  child c;
  int fds[2];
  if (::pipe(fds) != 0) return c;
  std::cout.flush();  // nothing buffered here is written twice by the child
  c.pid = ::fork();
  if (c.pid == 0) {
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    ::setenv("KFORGE_CACHE_DIR", dir.c_str(), 1);
    if (fsize > 0) {
      std::signal(SIGXFSZ, SIG_IGN);  // a write past the limit fails with EFBIG, as on a full disk
      rlimit lim{fsize, fsize};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    if (!std::freopen("/dev/null", "w", stdout)) ::_exit(126);
    std::vector<char*> argv{const_cast<char*>(tool.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(tool.c_str(), argv.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  c.err_fd = fds[0];
  return c;
}

/// Waits for c (reading its stderr into c.err): its exit code, or 128 + the
/// signal that ended it.
int finish(child& c) {
  char buf[4096];
  for (ssize_t n; (n = ::read(c.err_fd, buf, sizeof buf)) > 0;) c.err.append(buf, static_cast<std::size_t>(n));
  ::close(c.err_fd);
  int status = 0;
  ::waitpid(c.pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::size_t temp_files(const fs::path& dir, std::string* names = nullptr) {
  std::size_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) {
      ++n;
      if (names) *names += " " + e.path().lexically_relative(dir).string();
    }
  return n;
}

/// history.csv's rows are whole: each line has the header's number of
/// fields (quotes understood) and ends in a newline.
bool history_whole(const fs::path& p, std::string& why) {
  const std::string text = slurp(p);
  if (text.empty()) return true;
  if (text.back() != '\n') return why = "does not end in a newline", false;
  std::stringstream lines(text);
  std::size_t fields0 = 0, row = 0;
  for (std::string line; std::getline(lines, line); ++row) {
    std::size_t fields = 1;
    bool quoted = false;
    for (char ch : line) {
      if (ch == '"') quoted = !quoted;
      else if (ch == ',' && !quoted) ++fields;
    }
    if (quoted) return why = "row " + std::to_string(row) + " has an open quote", false;
    if (row == 0) fields0 = fields;
    else if (fields != fields0)
      return why = "row " + std::to_string(row) + " has " + std::to_string(fields) + " fields, the header " +
                   std::to_string(fields0),
             false;
  }
  return true;
}

std::vector<std::string> tune_args(const std::string& shape) {
  return {"tune", "--op", "gemm", "--shape", shape, "--trials", "2", "--reps", "1"};
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: cli_faults TOOL [--seed N]\n";
    return 2;
  }
  const std::string tool = fs::absolute(argv[1]).string();
  std::uint64_t seed = 0x6661756c74730001ull;
  for (int i = 2; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--seed") seed = std::strtoull(argv[++i], nullptr, 0);
  std::mt19937_64 rng(seed);
  const fs::path root = fs::temp_directory_path() / ("kforge-faults-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root);
  const fs::path cache = root / "cache";

  // 1. SIGKILL at random moments of 24 tuning runs of distinct buckets.
  std::vector<std::string> shapes;
  for (int m : {8, 16, 32, 64, 128, 256})
    for (int n : {8, 16, 32, 64}) shapes.push_back(std::to_string(m) + "x" + std::to_string(n) + "x16");
  std::vector<std::string> finished;
  int killed = 0;
  // How long one run of four at once takes here (in a cache of its own).
  double run_us = 0;
  {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<child> timing;
    for (int j = 0; j < 4; ++j) timing.push_back(start(tool, tune_args(shapes[static_cast<std::size_t>(j)]), root / "timing"));
    for (auto& c : timing) check(finish(c) == 0, "an unkilled tune failed: " + c.err);
    run_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  for (std::size_t i = 0; i < shapes.size(); i += 4) {
    std::vector<child> group;
    std::vector<int> delay_us;
    for (std::size_t j = i; j < std::min(shapes.size(), i + 4); ++j) {
      group.push_back(start(tool, tune_args(shapes[j]), cache));
      // Up to 1.5 runs' time: about a third finish, the others die somewhere in theirs.
      delay_us.push_back(static_cast<int>(rng() % static_cast<std::uint64_t>(1.5 * run_us)));
    }
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < group.size(); ++k) {
      std::this_thread::sleep_until(t0 + std::chrono::microseconds(delay_us[k]));
      ::kill(group[k].pid, SIGKILL);
    }
    for (std::size_t k = 0; k < group.size(); ++k) {
      const int rc = finish(group[k]);  // its stderr is read after the kill: a pipe holds what it wrote
      if (rc == 0) finished.push_back(shapes[i + k]);
      else if (rc == 128 + SIGKILL) ++killed;
      else check(false, "tune " + shapes[i + k] + " exited " + std::to_string(rc) + ": " + group[k].err);
    }
  }
  std::cout << "cli_faults: " << shapes.size() << " tuning runs, " << killed << " killed, " << finished.size()
            << " finished\n";
  if (!fs::exists(cache)) fs::create_directories(cache);
  // Besides what the kills left, a dead writer's temporary file beside
  // tuning.json and one beside an export, planted: the next command removes both.
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  fs::create_directories(cache / "best");
  std::ofstream(cache / ("tuning.json.tmp-" + std::to_string(dead) + "-0")) << "{\"part";
  std::ofstream(cache / "best" / ("cpu.json.tmp-" + std::to_string(dead) + "-1")) << "{\"part";
  const std::size_t orphans = temp_files(cache);
  child list = start(tool, {"cache", "list", "--json"}, cache);
  const int list_rc = finish(list);
  check(list_rc == 0, "cache list after the kills exited " + std::to_string(list_rc) + ": " + list.err);
  std::string left;
  const std::size_t remaining = temp_files(cache, &left);
  check(remaining == 0, "temporary files left after the next command:" + left + " (" + std::to_string(orphans) + " before it)");
  const std::string json = slurp(cache / "tuning.json");
  for (const auto& s : finished)
    check(json.find("\"shape\":\"" + s + "\"") != std::string::npos, "entry of finished run " + s + " lost");
  std::string why;
  check(history_whole(cache / "history.csv", why), "history.csv torn: " + why);
  std::cout << "cli_faults: " << orphans << " temporary files of dead writers (2 planted), removed by the next command\n";

  // 2. A full disk: nothing the tune would write fits.
  const std::string before_json = slurp(cache / "tuning.json"), before_history = slurp(cache / "history.csv");
  child full = start(tool, tune_args("512x512x16"), cache, 64);
  const int full_rc = finish(full);
  const std::string& full_err = full.err;
  check(full_rc == 3, "tune on a full disk exited " + std::to_string(full_rc) + ", not 3: " + full_err);
  check(full_err.find(cache.string()) != std::string::npos, "the full-disk message names no cache file: " + full_err);
  check(slurp(cache / "tuning.json") == before_json, "tuning.json changed by a failed write");
  check(slurp(cache / "history.csv") == before_history, "history.csv changed by a failed append");
  check(temp_files(cache) == 0, "a failed write left a temporary file");

  // 3. Clearing a full cache works (it removes; it writes nothing new).
  child clear = start(tool, {"cache", "clear"}, cache, 64);
  const int clear_rc = finish(clear);
  check(clear_rc == 0, "cache clear on a full disk exited " + std::to_string(clear_rc) + ": " + clear.err);
  check(slurp(cache / "tuning.json").find("\"shape\"") == std::string::npos, "cache clear left entries");  // "" when removed

  std::error_code ec;
  fs::remove_all(root, ec);
  std::cout << "cli_faults: " << (failures == 0 ? "passed" : std::to_string(failures) + " failed") << "\n";
  return failures == 0 ? 0 : 1;
}
