// tests/tune_cache.cpp — the tuning cache: round trip, merge across
// processes (two forked writers on one file), corrupt and truncated files
// (reported, set aside, the other entries kept), history and export files,
// and the shape-bucket rule.
#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <kforge/tune/cache.hpp>

namespace fs = std::filesystem;
namespace tune = kforge::tune;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("kforge-tune-cache-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

tune::cache_entry make_entry(const std::string& bucket, const std::string& candidate, const std::string& device = "cpu test 2t") {
  tune::cache_entry e;
  e.key = {device, "gcc test", "0.1.0", "gemm", "f32", bucket};
  e.candidate = candidate;
  e.family = "cpu";
  e.cfg = {{"policy", "blocked"}, {"micro", "8x32"}, {"mc", "96"}};
  e.shape = bucket;
  e.median_s = 1.25e-3;
  e.strategy = "grid";
  e.trials = 7;
  e.tuned_at = "2026-11-22T00:00:00Z";
  return e;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

int count_corrupt(const fs::path& dir) {
  int n = 0;
  for (const auto& f : fs::directory_iterator(dir))
    if (f.path().filename().string().rfind("tuning.json.corrupt-", 0) == 0) ++n;
  return n;
}

}  // namespace

TEST_CASE("bucketing: each dim rounds up to the next power of two") {
  CHECK(tune::bucket_dim(0) == 0);
  CHECK(tune::bucket_dim(1) == 1);
  CHECK(tune::bucket_dim(2) == 2);
  CHECK(tune::bucket_dim(3) == 4);
  CHECK(tune::bucket_dim(129) == 256);
  CHECK(tune::bucket_dim(256) == 256);
  CHECK(tune::bucket_dim(1000) == 1024);
  CHECK(tune::dims_text(tune::bucket_of(kforge::shape{200, 250, 256})) == "256x256x256");
  CHECK(tune::dims_text(tune::bucket_of(kforge::shape{129, 256, 200})) == "256x256x256");
  CHECK(tune::dims_text(tune::bucket_of(kforge::shape{257, 256, 256})) == "512x256x256");
  kforge::problem a, b;
  kforge::set_shape(a, "200x250x256");
  kforge::set_shape(b, "150x256x131");
  CHECK(tune::key_for(a) == tune::key_for(b));
  b.type = kforge::dtype::f16;
  CHECK_FALSE(tune::key_for(a) == tune::key_for(b));
}

TEST_CASE("cache directory: KFORGE_CACHE_DIR, then XDG_CACHE_HOME/kforge, then ~/.cache/kforge") {
  const char* saved = std::getenv("KFORGE_CACHE_DIR");
  const std::string keep = saved ? saved : "";
  ::setenv("KFORGE_CACHE_DIR", "/tmp/a-kforge-dir", 1);
  CHECK(tune::default_cache_dir() == fs::path("/tmp/a-kforge-dir"));
  ::unsetenv("KFORGE_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  CHECK(tune::default_cache_dir() == fs::path("/tmp/xdg/kforge"));
  ::unsetenv("XDG_CACHE_HOME");
  ::setenv("HOME", "/tmp/home-x", 1);
  CHECK(tune::default_cache_dir() == fs::path("/tmp/home-x/.cache/kforge"));
  if (saved) ::setenv("KFORGE_CACHE_DIR", keep.c_str(), 1);
}

TEST_CASE("round trip: store, find, replace, clear; best-config export") {
  const fs::path dir = fresh_dir("roundtrip");
  tune::tuning_cache c(dir);
  CHECK(c.entries().empty());
  c.store({make_entry("256x256x256", "blocked/8x32/mc96/nc4096/kc128"), make_entry("64x64x64", "threaded/x")});
  tune::tuning_cache again(dir);
  auto es = again.entries();
  REQUIRE(es.size() == 2);
  auto hit = again.find(make_entry("256x256x256", "").key);
  REQUIRE(hit);
  CHECK(hit->candidate == "blocked/8x32/mc96/nc4096/kc128");
  CHECK(hit->cfg == tune::config{{"policy", "blocked"}, {"micro", "8x32"}, {"mc", "96"}});
  CHECK(hit->median_s == doctest::Approx(1.25e-3));
  CHECK(hit->trials == 7);
  CHECK(hit->shape == "256x256x256");
  CHECK(hit->tuned_at == "2026-11-22T00:00:00Z");
  // numbers stay numbers in the file
  CHECK(slurp(dir / "tuning.json").find("\"mc\":96") != std::string::npos);
  // same key replaces
  again.store({make_entry("256x256x256", "replaced")});
  CHECK(tune::tuning_cache(dir).entries().size() == 2);
  CHECK(tune::tuning_cache(dir).find(make_entry("256x256x256", "").key)->candidate == "replaced");
  // export per device
  const std::string best = slurp(c.best_file("cpu test 2t"));
  CHECK(best.find("kforge-best-configs") != std::string::npos);
  CHECK(best.find("replaced") != std::string::npos);
  // clear with a device filter keeps the others
  again.store({make_entry("8x8x8", "other", "vulkan other")});
  CHECK(again.clear("cpu test") == 2);
  auto left = tune::tuning_cache(dir).entries();
  REQUIRE(left.size() == 1);
  CHECK(left[0].key.device == "vulkan other");
  CHECK(again.clear() == 1);
  CHECK(tune::tuning_cache(dir).entries().empty());
  fs::remove_all(dir);
}

TEST_CASE("a corrupt file is reported, set aside, and its complete entries salvaged") {
  const fs::path dir = fresh_dir("corrupt");
  {
    tune::tuning_cache c(dir);
    c.store({make_entry("1x1x1", "a"), make_entry("2x2x2", "b"), make_entry("4x4x4", "c")});
  }
  // Damage the middle entry's line: the file no longer parses as a whole.
  std::string text = slurp(dir / "tuning.json");
  const auto pos = text.find("\"candidate\":\"b\"");
  REQUIRE(pos != std::string::npos);
  text.replace(pos, 5, "}}}{{");
  std::ofstream(dir / "tuning.json") << text;

  tune::tuning_cache c(dir);
  std::vector<std::string> seen;
  c.on_warning = [&](const std::string& w) { seen.push_back(w); };
  auto es = c.entries();
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].find("corrupt") != std::string::npos);
  CHECK(count_corrupt(dir) == 1);
  std::set<std::string> names;
  for (auto& e : es) names.insert(e.candidate);
  CHECK(names == std::set<std::string>{"a", "c"});
  // The rewritten file is whole again and keeps them; storing adds to them.
  c.store({make_entry("8x8x8", "d")});
  tune::tuning_cache fresh(dir);
  fresh.on_warning = [&](const std::string& w) { FAIL("unexpected warning: " << w); };
  CHECK(fresh.entries().size() == 3);
  fs::remove_all(dir);
}

TEST_CASE("a truncated file loses only the entry that was cut") {
  const fs::path dir = fresh_dir("truncated");
  {
    tune::tuning_cache c(dir);
    std::vector<tune::cache_entry> es;
    for (int i = 0; i < 5; ++i) es.push_back(make_entry(std::to_string(1 << i) + "x1x1", "cand" + std::to_string(i)));
    c.store(es);
  }
  const std::string text = slurp(dir / "tuning.json");
  // Cut in the middle of the last entry (as a full disk or a killed editor would).
  const auto last = text.rfind("{\"key\"");
  std::ofstream(dir / "tuning.json", std::ios::trunc) << text.substr(0, last + 40);

  tune::tuning_cache c(dir);
  int warnings = 0;
  c.on_warning = [&](const std::string&) { ++warnings; };
  CHECK(c.entries().size() == 4);
  CHECK(warnings == 1);
  CHECK(count_corrupt(dir) == 1);
  // An empty file and garbage are handled the same way, never a crash.
  std::ofstream(dir / "tuning.json", std::ios::trunc) << "";
  tune::tuning_cache c2(dir);
  c2.on_warning = [](const std::string&) {};
  CHECK(c2.entries().empty());
  std::ofstream(dir / "tuning.json", std::ios::trunc) << "\x01\x02 not json at all [[[";
  CHECK(c2.entries().empty());
  CHECK(count_corrupt(dir) >= 2);
  fs::remove_all(dir);
}

TEST_CASE("two processes writing one cache at once both land every entry") {
  const fs::path dir = fresh_dir("concurrent");
  constexpr int per_child = 25;
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = ::fork();
    REQUIRE(kids[k] >= 0);
    if (kids[k] == 0) {
      int rc = 0;
      try {
        tune::tuning_cache c(dir);
        // One store per entry: 25 read-merge-write cycles racing the other child.
        for (int i = 0; i < per_child; ++i)
          c.store({make_entry(std::to_string(i + 1) + "x" + std::to_string(k + 1) + "x1", "child" + std::to_string(k))});
      } catch (...) {
        rc = 1;
      }
      std::_Exit(rc);
    }
  }
  for (pid_t pid : kids) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
  }
  tune::tuning_cache c(dir);
  c.on_warning = [](const std::string& w) { FAIL("unexpected warning: " << w); };
  const auto es = c.entries();
  CHECK(es.size() == 2 * per_child);
  int from[2] = {0, 0};
  for (const auto& e : es) ++from[e.candidate == "child1"];
  CHECK(from[0] == per_child);
  CHECK(from[1] == per_child);
  // No temporary file is left behind.
  for (const auto& f : fs::directory_iterator(dir)) CHECK(f.path().filename().string().find(".tmp-") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("history: one CSV row per trial, with a header") {
  const fs::path dir = fresh_dir("history");
  tune::tuning_cache c(dir);
  c.append_history({{"cpu x", "gemm", "f32", "3x3x3", "4x4x4", "grid", "cand,1", "{\"a\":1}", "ok", "", 1e-3, 0.5},
                    {"cpu x", "gemm", "f32", "3x3x3", "4x4x4", "grid", "bad", "{}", "invalid", "failed case ones", -1, 0.2}});
  c.append_history({{"cpu x", "gemm", "f32", "3x3x3", "4x4x4", "grid", "c", "{}", "ok", "", 2e-3, 0.1}});
  std::ifstream f(c.history_file());
  std::vector<std::string> lines;
  for (std::string l; std::getline(f, l);) lines.push_back(l);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].rfind("time,device,op", 0) == 0);
  CHECK(lines[1].find("\"cand,1\"") != std::string::npos);
  CHECK(lines[1].find("\"{\"\"a\"\":1}\"") != std::string::npos);
  CHECK(lines[2].find(",invalid,") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("an unwritable cache directory is a cache_error, not a crash") {
  tune::tuning_cache c("/proc/kforge-cannot-exist/cache");
  CHECK(c.entries().empty());
  CHECK_THROWS_AS(c.prepare(), kforge::cache_error);
  CHECK_THROWS_AS(c.store({make_entry("1x1x1", "a")}), kforge::cache_error);
}
