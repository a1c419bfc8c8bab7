// kforge/tune/cache.hpp — the tuning cache shared by every kforge process of
// a user (format and keys: docs/TUNING.md).
//
//   <dir>/tuning.json           the winners, one entry per line (parsed with simdjson)
//   <dir>/tuning.lock           flock()ed around every read-modify-write
//   <dir>/history.csv           every trial of every tuning run, appended
//   <dir>/best/<device>.json    the entries of one device, exported after each store
//
// Writers take the lock, re-read the file (another process may have added
// entries since this one read it), merge, write a temporary file, fsync it
// and rename() it over tuning.json, so a reader without the lock sees either
// the old or the new file, never half of one. A file that does not parse
// (corrupt, truncated by a full disk or an editor) is reported, renamed to
// tuning.json.corrupt-<unix time> and its entries salvaged line by line:
// every complete entry line is kept, so one damaged line costs one entry.
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <simdjson.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kforge/core/file.hpp"
#include "kforge/tune/common.hpp"
#include "kforge/validate/problem.hpp"

namespace kforge::tune {

struct cache_key {
  std::string device, driver, kforge, op, dtype, bucket;
  friend bool operator==(const cache_key&, const cache_key&) = default;
};

struct cache_entry {
  cache_key key;
  std::string candidate;  ///< the candidate's name in its space
  std::string family;     ///< cpu, eigen, vulkan
  config cfg;
  std::string shape;      ///< the shape that was tuned (inside the bucket)
  double median_s = 0;    ///< its median time
  std::string strategy;
  int trials = 0;
  std::string tuned_at;   ///< UTC
};

/// The bucket text of a problem: gemm's is the bucket of {M,N,K}, most ops'
/// the bucket of their first operand's dims. Attention's kernel choice turns
/// on more than {B,H,S,D}: its bucket adds the keys attended and the KV heads
/// ("1x32x1x128/32768x8"), and the mask and layout ("/causal", "/bshd").
inline std::string bucket_text(const problem& p) {
  std::string b = dims_text(bucket_of(p.dims));
  if (p.op == "attention" && p.dims.rank() == 4) {
    b += "/" + dims_text(bucket_of(shape{attention_traits::attended(p), attention_traits::kv_heads(p)}));
    if (p.causal) b += "/causal";
    if (attention_traits::layout(p) == attention_layout::bshd) b += "/bshd";
  }
  return b;
}

/// The key of a problem on a device (the host CPU by default), with bucket_text's bucket.
inline cache_key key_for(const problem& p, const device_identity& id = cpu_identity()) {
  return {id.device, id.driver, std::string(kforge_version), p.op, std::string(to_string(p.type)), bucket_text(p)};
}

namespace detail {

inline std::string entry_json(const cache_entry& e) {
  json_writer w;
  w.begin_object().key("key").begin_object();
  w.field("device", e.key.device).field("driver", e.key.driver).field("kforge", e.key.kforge);
  w.field("op", e.key.op).field("dtype", e.key.dtype).field("bucket", e.key.bucket).end_object();
  w.field("candidate", e.candidate).field("family", e.family).key("config");
  write_config(w, e.cfg);
  w.field("shape", e.shape).field("median_s", e.median_s).field("strategy", e.strategy).field("trials", e.trials);
  w.field("tuned_at", e.tuned_at).end_object();
  return w.str();
}

/// One entry from a parsed object; nullopt (and why) when a field is missing.
inline std::optional<cache_entry> entry_from(simdjson::dom::element el, std::string& why) {
  cache_entry e;
  auto str = [&](simdjson::dom::element o, const char* k, std::string& out) {
    std::string_view v;
    if (o[k].get_string().get(v)) {
      why = std::string("field '") + k + "' missing or not a string";
      return false;
    }
    out = std::string(v);
    return true;
  };
  simdjson::dom::element key;
  if (el["key"].get(key)) {
    why = "field 'key' missing";
    return std::nullopt;
  }
  if (!str(key, "device", e.key.device) || !str(key, "driver", e.key.driver) || !str(key, "kforge", e.key.kforge) ||
      !str(key, "op", e.key.op) || !str(key, "dtype", e.key.dtype) || !str(key, "bucket", e.key.bucket) ||
      !str(el, "candidate", e.candidate))
    return std::nullopt;
  std::string_view sv;
  if (!el["family"].get_string().get(sv)) e.family = std::string(sv);
  if (!el["shape"].get_string().get(sv)) e.shape = std::string(sv);
  if (!el["strategy"].get_string().get(sv)) e.strategy = std::string(sv);
  if (!el["tuned_at"].get_string().get(sv)) e.tuned_at = std::string(sv);
  double d;
  if (!el["median_s"].get_double().get(d)) e.median_s = d;
  int64_t n;
  if (!el["trials"].get_int64().get(n)) e.trials = static_cast<int>(n);
  simdjson::dom::object cfg;
  if (!el["config"].get_object().get(cfg)) {
    for (auto field : cfg) {
      std::string value;
      int64_t i;
      double x;
      std::string_view s;
      if (!field.value.get_int64().get(i)) value = std::to_string(i);
      else if (!field.value.get_double().get(x)) value = std::to_string(x);
      else if (!field.value.get_string().get(s)) value = std::string(s);
      else if (field.value.is_bool()) value = field.value.get_bool().value_unsafe() ? "true" : "false";
      e.cfg.emplace_back(std::string(field.key), value);
    }
  }
  return e;
}

/// A cache file under the rule for every file kforge reads (core/file.hpp):
/// missing is `exists = false`; a directory, FIFO or device, or a file over
/// the limit, is a cache_error naming the path.
inline std::string read_file(const std::filesystem::path& p, bool& exists,
                             std::uintmax_t limit = file_limits::tuning_cache) {
  std::optional<std::string> text;
  try {
    text = read_regular_file_if_exists(p, limit, "the cache file");
  } catch (const file_error& e) {
    throw cache_error(e.what());
  }
  exists = text.has_value();
  return text ? std::move(*text) : std::string();
}

/// Writes `text` to `path` atomically (core/file.hpp: temporary file, fsync,
/// rename, fsync of the directory; the temporary file removed on failure).
inline void write_atomically(const std::filesystem::path& path, const std::string& text) { write_file_atomically(path, text); }

/// flock() on <dir>/<name>, held for the object's lifetime.
class file_lock {
 public:
  explicit file_lock(const std::filesystem::path& p) {
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw cache_error("kforge::tune: cannot open lock file " + p.string() + ": " + std::strerror(errno));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const std::string why = std::strerror(errno);
      ::close(fd_);
      throw cache_error("kforge::tune: cannot lock " + p.string() + ": " + why);
    }
  }
  file_lock(const file_lock&) = delete;
  file_lock& operator=(const file_lock&) = delete;
  ~file_lock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_ = -1;
};

/// Renames a file that does not parse to <file>.corrupt-<unix time>[-n], so
/// that nothing overwrites it; returns the new name, or "" (and why in `why`)
/// when it could not be moved.
inline std::filesystem::path set_aside(const std::filesystem::path& file, std::string& why) {
  const auto stamp = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch()).count();
  std::filesystem::path aside = file.string() + ".corrupt-" + std::to_string(stamp);
  for (int i = 1; std::filesystem::exists(aside); ++i)
    aside = file.string() + ".corrupt-" + std::to_string(stamp) + "-" + std::to_string(i);
  std::error_code ec;
  std::filesystem::rename(file, aside, ec);
  why = ec ? ec.message() : "";
  return ec ? std::filesystem::path() : aside;
}

inline std::string csv_field(std::string_view s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return out + "\"";
}

}  // namespace detail

/// The cache in one directory. Cheap to construct; every call reads the
/// file afresh (tuning results of other processes become visible at once).
class tuning_cache {
 public:
  explicit tuning_cache(std::filesystem::path dir = default_cache_dir()) : dir_(std::move(dir)) {}

  const std::filesystem::path& dir() const { return dir_; }
  /// Creates the directory and takes the lock once: throws cache_error now,
  /// rather than after a long tuning run, when the cache cannot be written.
  void prepare() {
    ensure_dir();
    detail::file_lock lock(dir_ / "tuning.lock");
  }
  std::filesystem::path file() const { return dir_ / "tuning.json"; }
  std::filesystem::path history_file() const { return dir_ / "history.csv"; }
  std::filesystem::path best_file(std::string_view device) const {
    return dir_ / "best" / (slug(device) + ".json");
  }
  /// Problems found while reading (corrupt file set aside, entries skipped).
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// Receives each warning as it happens; by default they go to stderr.
  std::function<void(const std::string&)> on_warning = [](const std::string& w) {
    std::cerr << "kforge: warning: " << w << "\n";
  };

  /// Every entry. A corrupt file is set aside and salvaged (under the lock).
  std::vector<cache_entry> entries() {
    clear_orphans();  // `kforge cache list` is the next command after a killed tune too
    bool corrupt = false;
    auto es = parse(corrupt);
    if (!corrupt) return es;
    ensure_dir();
    detail::file_lock lock(dir_ / "tuning.lock");
    return load_locked();  // sets aside and rewrites what was salvaged
  }

  std::optional<cache_entry> find(const cache_key& k) {
    for (auto& e : entries())
      if (e.key == k) return e;
    return std::nullopt;
  }

  /// Adds or replaces (same key) entries; other processes' entries are kept.
  void store(const std::vector<cache_entry>& add) {
    ensure_dir();
    detail::file_lock lock(dir_ / "tuning.lock");
    std::vector<cache_entry> es = load_locked();
    for (const cache_entry& a : add) {
      auto it = std::find_if(es.begin(), es.end(), [&](const cache_entry& e) { return e.key == a.key; });
      if (it != es.end()) *it = a;
      else es.push_back(a);
    }
    write_locked(es);
    std::vector<std::string> devices;
    for (const auto& a : add)
      if (std::find(devices.begin(), devices.end(), a.key.device) == devices.end()) devices.push_back(a.key.device);
    for (const auto& d : devices) export_locked(es, d);
  }

  /// Removes entries (all, or those whose device contains `device_filter`);
  /// returns how many.
  /// Works on a full file system: the exports go first (freeing their
  /// space), and clearing everything removes tuning.json rather than
  /// writing an empty one.
  std::size_t clear(std::string_view device_filter = "") {
    if (!std::filesystem::exists(dir_)) return 0;
    ensure_dir();
    detail::file_lock lock(dir_ / "tuning.lock");
    std::vector<cache_entry> es = load_locked(), kept;
    for (auto& e : es)
      if (!device_filter.empty() && e.key.device.find(device_filter) == std::string::npos) kept.push_back(e);
    const std::size_t removed = es.size() - kept.size();
    std::error_code ec;
    std::filesystem::remove_all(dir_ / "best", ec);
    if (kept.empty()) {
      if (!std::filesystem::remove(file(), ec) && ec)
        throw cache_error("kforge::tune: cannot remove " + file().string() + ": " + ec.message());
    } else {
      write_locked(kept);
    }
    for (const auto& e : kept) export_locked(kept, e.key.device);
    return removed;
  }

  /// Appends trials to history.csv (time, device, op, dtype, shape, bucket,
  /// strategy, candidate, config, status, median_s, seconds, note).
  struct history_row {
    std::string device, op, dtype, shape, bucket, strategy, candidate, config_json, status, note;
    double median_s = -1, seconds = 0;
  };
  /// The rows go in one write() under the lock, so a reader never sees
  /// half a row; a write that fails part-way (ENOSPC) is cut back to the
  /// file's previous end and reported (cache_error), never left torn.
  void append_history(const std::vector<history_row>& rows) {
    ensure_dir();
    detail::file_lock lock(dir_ / "tuning.lock");
    std::string text;
    const std::string now = utc_now();
    for (const auto& r : rows) {
      char nums[64];
      std::snprintf(nums, sizeof nums, "%.9g,%.6f", r.median_s, r.seconds);
      text += now + ',' + detail::csv_field(r.device) + ',' + r.op + ',' + r.dtype + ',' + r.shape + ',' + r.bucket + ',' +
              r.strategy + ',' + detail::csv_field(r.candidate) + ',' + detail::csv_field(r.config_json) + ',' + r.status +
              ',' + nums + ',' + detail::csv_field(r.note) + '\n';
    }
    const std::string path = history_file().string();
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) throw cache_error("kforge::tune: cannot append to " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw cache_error("kforge::tune: " + path + " is not a regular file");
    }
    if (st.st_size == 0) text = "time,device,op,dtype,shape,bucket,strategy,candidate,config,status,median_s,seconds,note\n" + text;
    std::size_t off = 0;
    int err = 0;
    while (off < text.size()) {
      const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) {
        err = w < 0 ? errno : ENOSPC;
        break;
      }
      off += static_cast<std::size_t>(w);
    }
    if (err) {
      const bool cut = ::ftruncate(fd, st.st_size) == 0;  // no torn row stays
      ::close(fd);
      throw cache_error("kforge::tune: cannot append " + std::to_string(rows.size()) + " rows to " + path + ": " +
                        std::strerror(err) + (cut ? " (nothing of them was kept)" : " (and the partial row could not be cut off)"));
    }
    if (::close(fd) != 0) throw cache_error("kforge::tune: cannot append to " + path + ": " + std::strerror(errno));
  }

 private:
  void ensure_dir() {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec) throw cache_error("kforge::tune: cannot create cache directory " + dir_.string() + ": " + ec.message());
    clear_orphans();
  }
  /// Once per object, on the first read or write: the temporary files killed
  /// writers left (tuning.json.tmp-PID-N, best/*.json.tmp-PID-N).
  void clear_orphans() {
    if (orphans_cleared_) return;
    orphans_cleared_ = true;
    remove_orphan_temp_files(dir_);
    remove_orphan_temp_files(dir_ / "best");
  }
  bool orphans_cleared_ = false;
  void warn(std::string w) {
    warnings_.push_back(w);
    if (on_warning) on_warning(w);
  }

  /// Parses the file; `corrupt` when it exists and does not parse as a whole.
  std::vector<cache_entry> parse(bool& corrupt) {
    corrupt = false;
    bool exists = false;
    const std::string text = detail::read_file(file(), exists);
    std::vector<cache_entry> es;
    if (!exists) return es;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    simdjson::dom::array arr;
    std::string_view format;
    if (parser.parse(simdjson::padded_string(text)).get(doc) || doc["entries"].get_array().get(arr) ||
        doc["format"].get_string().get(format) || format != "kforge-tuning-cache") {
      corrupt = true;
      return es;
    }
    for (auto el : arr) {
      std::string why;
      if (auto e = detail::entry_from(el, why)) es.push_back(std::move(*e));
      else warn("tuning cache " + file().string() + ": skipped an entry (" + why + ")");
    }
    return es;
  }

  /// Reads under the lock; a corrupt file is renamed aside and the complete
  /// entry lines in it are salvaged into a fresh file.
  std::vector<cache_entry> load_locked() {
    bool corrupt = false;
    std::vector<cache_entry> es = parse(corrupt);
    if (!corrupt) return es;
    bool exists = false;
    const std::string text = detail::read_file(file(), exists);
    std::string why;
    const std::filesystem::path aside = detail::set_aside(file(), why);
    // Salvage: the writer puts one entry per line, so every line that parses
    // on its own as an entry survives whatever happened to the others.
    simdjson::dom::parser parser;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      line = detail::trim(line);
      if (!line.empty() && line.back() == ',') line.pop_back();
      if (line.rfind("{\"key\"", 0) != 0) continue;
      simdjson::dom::element el;
      if (parser.parse(simdjson::padded_string(line)).get(el)) continue;
      std::string why;
      if (auto e = detail::entry_from(el, why)) es.push_back(std::move(*e));
    }
    warn("tuning cache " + file().string() + " is corrupt or truncated; " +
         (aside.empty() ? "could not move it aside (" + why + ")" : "moved to " + aside.string()) + ", " +
         std::to_string(es.size()) + " entries salvaged");
    write_locked(es);
    return es;
  }

  void write_locked(const std::vector<cache_entry>& es) {
    std::string text = "{\"format\":\"kforge-tuning-cache\",\"version\":1,\"entries\":[\n";
    for (std::size_t i = 0; i < es.size(); ++i) text += detail::entry_json(es[i]) + (i + 1 < es.size() ? ",\n" : "\n");
    text += "]}\n";
    detail::write_atomically(file(), text);
  }

  void export_locked(const std::vector<cache_entry>& es, const std::string& device) {
    std::error_code ec;
    std::filesystem::create_directories(dir_ / "best", ec);
    std::string text = "{\"format\":\"kforge-best-configs\",\"device\":" + json_writer::escape(device) +
                       ",\"exported_at\":\"" + utc_now() + "\",\"entries\":[\n";
    bool first = true;
    for (const auto& e : es)
      if (e.key.device == device) {
        text += (first ? "" : ",\n") + detail::entry_json(e);
        first = false;
      }
    text += "\n]}\n";
    detail::write_atomically(best_file(device), text);
  }

  std::filesystem::path dir_;
  std::vector<std::string> warnings_;
};

}  // namespace kforge::tune
