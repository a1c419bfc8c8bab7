// kforge/core/file.hpp — the one rule for every file kforge reads.
//
// Every file kforge reads — a user's kernel, report or replay file, the
// worker's request, the tuning cache, a generation record, the SPIR-V and
// pipeline caches — must be a regular file no larger than its kind allows,
// checked before a byte is read: a FIFO where a file was expected blocked
// forever, /dev/zero read until memory ran out, and a directory gave
// "basic_filebuf::underflow error" without a path. The file is opened with
// O_NONBLOCK (opening a FIFO does not wait for a writer) and checked on the
// descriptor (fstat), so a path swapped between a check and the open cannot
// slip past; at most `limit` + 1 bytes are read, so a file that grows while
// read is refused rather than followed.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <atomic>
#include <csignal>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kforge/core/error.hpp"

namespace kforge {

/// A file kforge was asked to read is missing, is not a regular file, is
/// over its kind's size limit, or cannot be read. what() names the file's
/// role, its path and the rule it broke.
class file_error : public argument_error {
 public:
  using argument_error::argument_error;
};

/// Size limits per kind of file (bytes), each well above what kforge writes.
namespace file_limits {
inline constexpr std::uintmax_t kernel_source = std::uintmax_t{1} << 20;   ///< GLSL: kforge's own are 2-20 KiB
inline constexpr std::uintmax_t request = std::uintmax_t{16} << 20;        ///< a worker request (a kernel, a problem)
inline constexpr std::uintmax_t record = std::uintmax_t{32} << 20;         ///< a generation record (a capped response)
inline constexpr std::uintmax_t report = std::uintmax_t{16} << 20;         ///< a JSON report (transformer, roofline)
inline constexpr std::uintmax_t tuning_cache = std::uintmax_t{64} << 20;   ///< tuning.json: ~300 bytes an entry
inline constexpr std::uintmax_t binary_cache = std::uintmax_t{256} << 20;  ///< SPIR-V, VkPipelineCache
}  // namespace file_limits

namespace detail {
inline const char* file_kind(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}
}  // namespace detail

/// Reads `path` whole under the rule above, or returns nullopt when it does
/// not exist (a cache not written yet). `what` names the file's role in a
/// message ("the tuning cache", "report"). Throws file_error.
inline std::optional<std::string> read_regular_file_if_exists(const std::filesystem::path& path, std::uintmax_t limit,
                                                              std::string_view what) {
  const std::string name = std::string(what) + " '" + path.string() + "'";
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw file_error("kforge: cannot open " + name + ": " + std::strerror(errno));
  }
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } c{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw file_error("kforge: cannot stat " + name + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw file_error("kforge: " + name + " is not a regular file (" + detail::file_kind(st.st_mode) + "); kforge reads regular files only");
  const auto size = static_cast<std::uintmax_t>(st.st_size);
  if (size > limit)
    throw file_error("kforge: " + name + " is " + std::to_string(size) + " bytes, over the " + std::to_string(limit) +
                     "-byte limit for " + std::string(what));
  std::string text;
  text.resize(static_cast<std::size_t>(size) + 1);
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw file_error("kforge: cannot read " + name + ": " + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
    if (got > limit)
      throw file_error("kforge: " + name + " grew past the " + std::to_string(limit) + "-byte limit for " +
                       std::string(what) + " while being read");
    if (got == text.size()) text.resize(std::min<std::size_t>(text.size() * 2, static_cast<std::size_t>(limit) + 1));
  }
  text.resize(got);
  return text;
}

/// The same for a file that must exist.
inline std::string read_regular_file(const std::filesystem::path& path, std::uintmax_t limit, std::string_view what) {
  auto text = read_regular_file_if_exists(path, limit, what);
  if (!text) throw file_error("kforge: " + std::string(what) + " '" + path.string() + "' does not exist");
  return std::move(*text);
}

/// The temporary file write_file_atomically writes `path` through:
/// PATH.tmp-PID-N, in the same directory (rename needs one file system).
inline std::filesystem::path temp_path_for(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  return path.string() + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

/// Writes `text` to `path` atomically: a temporary file beside it
/// (temp_path_for), every byte written, fsync, rename over `path`, fsync of
/// the directory (both skipped when not `durable`: caches rebuilt from their
/// source, written many times a run). Readers see the old file or the new one, never a part. On
/// any failure (ENOSPC, EROFS, EDQUOT...) the temporary file is removed and
/// cache_error names the file and the errno's text; `path` is untouched. A
/// process killed inside the window leaves its temporary file, which
/// remove_orphan_temp_files clears on the next start.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view text, bool durable = true) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const std::filesystem::path tmp = temp_path_for(path);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw cache_error("kforge: cannot write " + path.string() + " (temporary file " + tmp.string() + "): " + std::strerror(errno));
  auto fail = [&](const char* step, int e, bool open_fd) {
    if (open_fd) ::close(fd);
    ::unlink(tmp.c_str());
    throw cache_error("kforge: cannot write " + path.string() + " (" + step + "): " + std::strerror(e));
  };
  for (std::size_t off = 0; off < text.size();) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail("writing", w < 0 ? errno : ENOSPC, true);
    off += static_cast<std::size_t>(w);
  }
  if (durable && ::fsync(fd) != 0) fail("flushing", errno, true);
  if (::close(fd) != 0) fail("closing", errno, false);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("renaming into place", errno, false);
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  if (!durable) return;
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

/// Removes the temporary files in `dir` (not below it) that processes left
/// when they died in a write window: names holding ".tmp-PID-" (as
/// temp_path_for makes them) whose PID no longer runs. A live writer's file
/// is left alone. Returns how many were removed.
inline std::size_t remove_orphan_temp_files(const std::filesystem::path& dir) {
  std::size_t removed = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const std::size_t at = name.find(".tmp-");
    if (at == std::string::npos) continue;
    std::size_t i = at + 5, j = i;
    while (j < name.size() && name[j] >= '0' && name[j] <= '9') ++j;
    if (j == i || j - i > 9 || j >= name.size() || name[j] != '-') continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name.substr(i, j - i)));
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to signal): its write may be under way
    std::error_code rm;
    if (it->is_regular_file(rm) && std::filesystem::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

}  // namespace kforge
