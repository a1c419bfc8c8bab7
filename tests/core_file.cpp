// kforge/core/file.hpp: every file kforge reads is a regular file within its
// kind's limit, refused at once otherwise (a FIFO used to block forever,
// /dev/zero to read until memory ran out); an atomic write that fails —
// a full disk, here a file-size limit in a child — leaves the old file and
// no temporary file; a writer killed in its window leaves a temporary file
// that the next start removes, and a live writer's is left alone.
#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kforge/core/file.hpp"

namespace fs = std::filesystem;
using namespace kforge;

namespace {
struct temp_dir {
  fs::path path;
  temp_dir() {
    path = fs::temp_directory_path() / ("kforge_core_file_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void put(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

/// The message of the file_error reading `p` throws ("" when none).
std::string refusal(const fs::path& p, std::uintmax_t limit = 1 << 20) {
  try {
    (void)read_regular_file(p, limit, "test file");
  } catch (const file_error& e) {
    return e.what();
  }
  return "";
}

std::size_t temp_files_in(const fs::path& dir) {
  std::size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) ++n;
  return n;
}
}  // namespace

TEST_CASE("read_regular_file: a regular file within its limit, and nothing else, at once") {
  temp_dir d;
  put(d.path / "ok", "hello");
  CHECK(read_regular_file(d.path / "ok", 5, "test file") == "hello");
  put(d.path / "empty", "");
  CHECK(read_regular_file(d.path / "empty", 5, "test file").empty());
  // Missing: nullopt from the _if_exists form, file_error naming the path from the other.
  CHECK_FALSE(read_regular_file_if_exists(d.path / "missing", 5, "test file").has_value());
  CHECK(refusal(d.path / "missing").find("does not exist") != std::string::npos);
  // One byte over the limit is refused, with the size and the limit.
  const std::string over = refusal(d.path / "ok", 4);
  CHECK(over.find("is 5 bytes, over the 4-byte limit") != std::string::npos);
  CHECK(over.find((d.path / "ok").string()) != std::string::npos);
  // A directory, a FIFO with no writer, a character device and a symlink to
  // one: refused by kind, and the FIFO without blocking.
  CHECK(refusal(d.path).find("is not a regular file (a directory)") != std::string::npos);
  REQUIRE(::mkfifo((d.path / "fifo").c_str(), 0600) == 0);
  const auto t0 = std::chrono::steady_clock::now();
  CHECK(refusal(d.path / "fifo").find("is not a regular file (a FIFO)") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(2));
  CHECK(refusal("/dev/zero").find("is not a regular file (a character device)") != std::string::npos);
  fs::create_symlink("/dev/zero", d.path / "zero_link");
  CHECK(refusal(d.path / "zero_link").find("(a character device)") != std::string::npos);
  // Unreadable: the errno's text (not as root, who reads everything).
  put(d.path / "locked", "x");
  fs::permissions(d.path / "locked", fs::perms::none);
  if (::geteuid() != 0) CHECK(refusal(d.path / "locked").find("cannot open") != std::string::npos);
  // file_error is an argument_error: the tool's exit 2.
  CHECK_THROWS_AS(read_regular_file("/dev/null", 5, "x"), argument_error);
}

TEST_CASE("write_file_atomically: the new file or the old one; a failed write leaves no temporary file") {
  temp_dir d;
  const fs::path f = d.path / "sub" / "cache.json";
  write_file_atomically(f, "old");
  CHECK(slurp(f) == "old");
  write_file_atomically(f, "newer", /*durable=*/false);
  CHECK(slurp(f) == "newer");
  CHECK(temp_files_in(f.parent_path()) == 0);
  // A full disk, as a file-size limit in a child process: the write fails
  // with a cache_error naming the file, the old file is intact and the
  // temporary file is gone.
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    try {
      write_file_atomically(f, std::string(1 << 20, 'x'));
    } catch (const cache_error& e) {
      ::_exit(std::string(e.what()).find(f.string()) != std::string::npos ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(f) == "newer");
  CHECK(temp_files_in(f.parent_path()) == 0);
  // An unwritable place (the parent is a regular file): a cache_error naming
  // the file, not a crash.
  put(d.path / "parent_is_a_file", "");
  try {
    write_file_atomically(d.path / "parent_is_a_file" / "x", "y");
    FAIL("a file under a regular file was written");
  } catch (const cache_error& e) {
    CHECK(std::string(e.what()).find((d.path / "parent_is_a_file" / "x").string()) != std::string::npos);
  }
}

TEST_CASE("remove_orphan_temp_files: a dead writer's temporary file goes, a live writer's stays") {
  temp_dir d;
  put(d.path / "tuning.json", "{}");
  // A writer that died: its PID is reaped, so nothing runs under it.
  const pid_t dead = ::fork();
  REQUIRE(dead >= 0);
  if (dead == 0) ::_exit(0);
  REQUIRE(::waitpid(dead, nullptr, 0) == dead);
  put(d.path / ("tuning.json.tmp-" + std::to_string(dead) + "-0"), "{\"part");
  // A writer still running (a child that waits to be killed).
  const pid_t live = ::fork();
  REQUIRE(live >= 0);
  if (live == 0) {
    ::pause();
    ::_exit(0);
  }
  put(d.path / ("tuning.json.tmp-" + std::to_string(live) + "-3"), "{\"part");
  put(d.path / "notes.tmp-x", "not a writer's name");
  CHECK(remove_orphan_temp_files(d.path) == 1);
  CHECK_FALSE(fs::exists(d.path / ("tuning.json.tmp-" + std::to_string(dead) + "-0")));
  CHECK(fs::exists(d.path / ("tuning.json.tmp-" + std::to_string(live) + "-3")));
  CHECK(fs::exists(d.path / "notes.tmp-x"));
  CHECK(slurp(d.path / "tuning.json") == "{}");
  ::kill(live, SIGKILL);
  ::waitpid(live, nullptr, 0);
  CHECK(remove_orphan_temp_files(d.path) == 1);
  CHECK(temp_files_in(d.path) == 1);  // notes.tmp-x, which is no writer's
  CHECK(remove_orphan_temp_files(d.path / "missing") == 0);
}
