// tests/gen/common.hpp — shared helpers of the gen test executables: a
// private cache directory per process, the no-Vulkan skip rule, and the
// scripted OpenAI-compatible server (tests/gen/llm_server.py) on loopback.
#pragma once

#include <doctest/doctest.h>

#include <kforge/gen.hpp>

#include "../scratch_dir.hpp"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace kgt {

using namespace kforge;

/// A fresh cache directory for this process, set as KFORGE_CACHE_DIR.
inline std::filesystem::path test_cache() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path& d = ktest::scratch_dir("kforge-gen-test-");
    setenv("KFORGE_CACHE_DIR", d.c_str(), 1);
    return d;
  }();
  return dir;
}

/// The problem of the tests' relu kernels: a 3x7x19 f32 tensor.
inline problem relu_problem() {
  problem p;
  p.op = "relu";
  set_shape(p, "3x7x19");
  return p;
}

/// A relu kernel following the contract, with `body` as main()'s body
/// (i: the flat invocation index, n: pc.n).
inline std::string relu_kernel(const std::string& body) {
  return R"(#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer BufX { float x_[]; };
layout(std430, set = 0, binding = 1) buffer BufY { float y_[]; };
layout(push_constant) uniform Push { uint n; float slope; } pc;
void main() {
  uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
)" + body + "\n}\n";
}

/// One sample from the offline template provider into KFORGE_CACHE_DIR
/// (where policy::generated looks), timed with 2 repetitions.
inline gen::generate_result generate_offline(const problem& p) {
  gen::template_provider prov;
  gen::generate_options o;
  o.samples = 1;
  o.sandbox.bench_reps = 2;
  return gen::generate(p, prov, o);
}

/// Why Vulkan cannot run kernels here ("" when it can).
inline std::string no_vulkan_reason() {
  static const std::string why = [] {
    try {
      if (vulkan::list_devices().empty()) return std::string("no Vulkan device");
      return std::string();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  }();
  return why;
}

#define KGT_NEED_VULKAN()                                                      \
  if (const std::string why = kgt::no_vulkan_reason(); !why.empty()) {          \
    std::printf("kforge gen test skipped (no Vulkan): %s\n", why.c_str());      \
    MESSAGE("skipped: " << why);                                               \
    return;                                                                    \
  }

/// One scripted answer of the test server.
struct scripted {
  // A constructor rather than an aggregate: the scripts give the leading
  // fields only, which -Wmissing-field-initializers reports for aggregates.
  scripted(int status_ = 200, std::string body_ = {}, double delay_s_ = 0, std::string retry_after_ = {}, bool echo_auth_ = false)
      : status(status_), body(std::move(body_)), delay_s(delay_s_), retry_after(std::move(retry_after_)), echo_auth(echo_auth_) {}
  int status = 200;
  std::string body;
  double delay_s = 0;
  std::string retry_after;  ///< Retry-After header, "" for none
  bool echo_auth = false;
};

/// A chat-completions body whose message is `content`.
inline std::string completion_body(const std::string& content, int prompt_tokens = 120, int completion_tokens = 80) {
  json_writer w;
  w.begin_object().field("id", "chatcmpl-test").field("object", "chat.completion").field("model", "test-model");
  w.key("choices").begin_array().begin_object().field("index", 0).key("message").begin_object();
  w.field("role", "assistant").field("content", content).end_object().field("finish_reason", "stop").end_object().end_array();
  w.key("usage").begin_object().field("prompt_tokens", prompt_tokens).field("completion_tokens", completion_tokens);
  w.field("total_tokens", prompt_tokens + completion_tokens).end_object().end_object();
  return w.str();
}

/// The scripted server, started on 127.0.0.1 with a free port; killed on destruction.
class llm_server {
 public:
  explicit llm_server(const std::vector<scripted>& script) {
    const char* py = std::getenv("KFORGE_GEN_TEST_SERVER");
    REQUIRE_MESSAGE(py != nullptr, "KFORGE_GEN_TEST_SERVER must name tests/gen/llm_server.py");
    dir_ = test_cache() / ("server-" + std::to_string(counter()++));
    std::filesystem::create_directories(dir_);
    json_writer w;
    w.begin_array();
    for (const auto& s : script) {
      w.begin_object().field("status", s.status).field("body", s.body).field("delay_s", s.delay_s).field("echo_auth", s.echo_auth);
      w.key("headers").begin_object();
      if (!s.retry_after.empty()) w.field("Retry-After", s.retry_after);
      w.end_object().end_object();
    }
    w.end_array();
    gen::write_atomic(dir_ / "scenario.json", w.str());
    const std::string cmd = "exec python3 '" + std::string(py) + "' '" + (dir_ / "scenario.json").string() + "' '" +
                            (dir_ / "log.jsonl").string() + "'";
    pipe_ = popen(cmd.c_str(), "r");
    REQUIRE(pipe_ != nullptr);
    char line[128] = {0};
    REQUIRE(std::fgets(line, sizeof line, pipe_) != nullptr);
    REQUIRE(std::sscanf(line, "PORT %d PID %d", &port_, &pid_) == 2);
  }
  ~llm_server() {
    if (pid_ > 0) ::kill(pid_, SIGTERM);
    if (pipe_) pclose(pipe_);
  }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  /// The requests the server saw, one JSON object per line.
  std::string log() const {
    try {
      return gen::read_text(dir_ / "log.jsonl");
    } catch (const std::exception&) {
      return "";
    }
  }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path dir_;
  FILE* pipe_ = nullptr;
  int port_ = 0, pid_ = 0;
};

/// Every file under dir, concatenated (to search records for a secret).
inline std::string all_text_under(const std::filesystem::path& dir) {
  std::string s;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (e.is_regular_file()) s += gen::read_text(e.path());
  return s;
}

}  // namespace kgt
