// tests/scratch_dir.hpp — a test process's own directory under the system's
// temporary directory, removed when the process exits, so that test runs do
// not leave their caches behind (they used to: ~14 directories a run).
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ktest {

/// `<tmp>/<prefix><pid>`, created empty on first use and removed at exit by
/// the process that created it (a forked child that exits normally leaves
/// its parent's directory alone). A function-local static: objects built
/// from it later (a default Vulkan context writing its caches there) are
/// destroyed before it is removed.
inline const std::filesystem::path& scratch_dir(const std::string& prefix) {
  struct owned {
    std::filesystem::path path;
    pid_t owner = ::getpid();
    explicit owned(std::filesystem::path p) : path(std::move(p)) {
      std::filesystem::remove_all(path);
      std::filesystem::create_directories(path);
    }
    ~owned() {
      std::error_code ec;
      if (::getpid() == owner) std::filesystem::remove_all(path, ec);
    }
  };
  static const owned dir(std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid())));
  return dir.path;
}

}  // namespace ktest
