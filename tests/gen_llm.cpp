// tests/gen_llm.cpp — the model side of kforge::gen: the OpenAI-compatible
// provider against a scripted local server (real libcurl path: retries on
// 429/500, timeouts, malformed JSON, answers with no code), GLSL extraction,
// prompts, replay, record naming and the API key never reaching a record;
// and one end-to-end generation through the server (needs Vulkan).
#include "gen/common.hpp"

using namespace kforge;
using kgt::scripted;

namespace {

const char* secret_key = "sk-kforge-test-0123456789abcdef-SECRET";

gen::openai_provider fast_provider(const kgt::llm_server& s, long timeout_ms = 3000, int retries = 3) {
  gen::openai_options o;
  o.base_url = s.base_url();
  o.model = "test-model";
  o.api_key = secret_key;
  o.timeout_ms = timeout_ms;
  o.max_retries = retries;
  o.backoff_ms = 10;  // keep the test quick; the doubling is still exercised
  o.max_backoff_ms = 200;
  return gen::openai_provider(o);
}

gen::llm_request small_request() {
  gen::llm_request r;
  r.model = "test-model";
  r.messages = {{"system", "s"}, {"user", "write a kernel"}};
  return r;
}

problem gemm_problem() {
  problem p;
  p.op = "gemm";
  set_shape(p, "64x48x40");
  return p;
}

}  // namespace

TEST_CASE("extract_glsl: fences, untagged fences, bare #version, nothing") {
  const std::string k = "#version 450\nvoid main() {}\n";
  CHECK(gen::extract_glsl("Here:\n```glsl\n" + k + "```\nDone.").glsl == k);
  CHECK(gen::extract_glsl("Here:\n```glsl\n" + k + "```\n").method == "fence:glsl");
  // A tagged block without main() (e.g. a snippet) is skipped for the one with it.
  CHECK(gen::extract_glsl("```glsl\nfloat f();\n```\n```\n" + k + "```").glsl == k);
  CHECK(gen::extract_glsl("```\n" + k + "```").method == "fence");
  CHECK(gen::extract_glsl("Sure! " + k).method == "version-directive");
  CHECK(gen::extract_glsl("I cannot write that kernel.").glsl.empty());
  CHECK(gen::extract_glsl("```python\nprint(1)\n```").glsl.empty());
}

TEST_CASE("prompts quote the contract, the shapes and the feedback, never the held-out shape") {
  const problem p = gemm_problem();
  // The held-out shapes are drawn in the worker from its secret seed; any seed
  // gives shapes the prompt cannot contain.
  const problem held = gen::held_out_problems(p, 0x1234)[0];
  CHECK(!(held.dims == p.dims));
  for (int i = 0; i < 3; ++i) CHECK(held.dims[i] % 2 == 1);  // not a multiple of any power-of-two tile
  gen::device_facts d;
  d.name = "test device";
  gen::feedback f{"validation", "case 'uniform': 12 of 3072 elements wrong", "void main(){}"};
  const auto m = gen::build_messages(p, d, gen::default_source_spec(p), f);
  REQUIRE(m.size() == 6);  // system, example user/assistant, user, previous answer, feedback
  CHECK(m[0].role == "system");
  CHECK(m[2].content.find("```glsl") != std::string::npos);
  CHECK(m[3].content.find("layout(constant_id = 1) const uint TILE_M") != std::string::npos);
  CHECK(m[3].content.find("[64x40]") != std::string::npos);
  CHECK(m[3].content.find("test device") != std::string::npos);
  CHECK(m[5].content.find("12 of 3072 elements wrong") != std::string::npos);
  std::string all;
  for (const auto& x : m) all += x.content;
  CHECK(all.find(held.dims.str()) == std::string::npos);
}

TEST_CASE("openai provider: 429 and 500 are retried with backoff, usage is recorded") {
  kgt::llm_server s({{429, "{\"error\":\"slow down\"}", 0, "0"},
                     {500, "{\"error\":\"boom\"}"},
                     {200, kgt::completion_body("```glsl\n#version 450\nvoid main() {}\n```", 321, 123)}});
  auto prov = fast_provider(s);
  const gen::llm_response r = prov.complete(small_request(), {gemm_problem(), 0});
  CHECK(r.ok);
  CHECK(r.attempts == 3);
  REQUIRE(r.attempt_log.size() == 3);
  CHECK(r.attempt_log[0].find("HTTP 429") != std::string::npos);
  CHECK(r.attempt_log[1].find("HTTP 500") != std::string::npos);
  CHECK(r.usage.prompt == 321);
  CHECK(r.usage.completion == 123);
  CHECK(r.usage.total == 444);
  CHECK(gen::extract_glsl(r.content).method == "fence:glsl");
  // The server saw the key in the header, and the body is a chat-completions request.
  const std::string log = s.log();
  CHECK(log.find("\"has_auth\": true") != std::string::npos);
  CHECK(log.find("/v1/chat/completions") != std::string::npos);
  CHECK(log.find("write a kernel") != std::string::npos);
}

TEST_CASE("openai provider: a request that outlives its timeout is retried") {
  kgt::llm_server s({{200, kgt::completion_body("late"), 3.0}, {200, kgt::completion_body("on time")}});
  auto prov = fast_provider(s, 500);
  const auto t0 = std::chrono::steady_clock::now();
  const gen::llm_response r = prov.complete(small_request(), {gemm_problem(), 0});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(r.ok);
  CHECK(r.content == "on time");
  CHECK(r.attempts == 2);
  CHECK(r.attempt_log[0].find("transport error") != std::string::npos);
  CHECK(secs < 2.5);  // it did not wait for the slow answer
}

TEST_CASE("openai provider: malformed JSON, missing content, 4xx and exhausted retries are errors with reasons") {
  SUBCASE("malformed") {
    kgt::llm_server s({{200, "{\"choices\": [ {\"message\": "}});
    auto prov = fast_provider(s);
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK_FALSE(r.ok);
    CHECK(r.attempts == 1);  // not retried: the server answered
    CHECK(r.error.find("not valid JSON") != std::string::npos);
  }
  SUBCASE("no content") {
    kgt::llm_server s({{200, "{\"choices\": []}"}});
    auto prov = fast_provider(s);
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK_FALSE(r.ok);
    CHECK(r.error.find("choices[0].message.content") != std::string::npos);
  }
  SUBCASE("401 is not retried") {
    kgt::llm_server s({{401, "{\"error\":\"bad key\"}"}});
    auto prov = fast_provider(s);
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK_FALSE(r.ok);
    CHECK(r.attempts == 1);
    CHECK(r.error.find("401") != std::string::npos);
  }
  SUBCASE("gives up") {
    kgt::llm_server s({{500, "{}"}, {503, "{}"}, {502, "{}"}});
    auto prov = fast_provider(s, 3000, 2);
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK_FALSE(r.ok);
    CHECK(r.attempts == 3);
    CHECK(r.error.find("gave up after 3 requests") != std::string::npos);
  }
}

TEST_CASE("records: deterministic names, round trip, no API key even when the server echoes it") {
  const auto cache = kgt::test_cache();
  setenv("KFORGE_LLM_API_KEY", secret_key, 1);
  kgt::llm_server s({{200, kgt::completion_body("Your key is {AUTH}. No kernel today."), 0, "", true}});
  auto prov = fast_provider(s);
  const problem p = gemm_problem();
  gen::generate_options o;
  o.samples = 1;
  o.force = true;
  o.dir = cache / "records-echo";
  o.device = gen::device_facts{};
  const gen::generate_result res = gen::generate(p, prov, o);
  REQUIRE(res.attempts.size() == 1);
  const auto& a = res.attempts[0];
  CHECK(a.status == "rejected");
  CHECK(a.stage == "extraction");  // no code block in the answer
  const std::string name = std::filesystem::path(a.path).filename().string();
  CHECK(name.rfind("r_gemm_i64x40-40x48_o64x48_f32_h", 0) == 0);
  CHECK(name.size() == std::string("r_gemm_i64x40-40x48_o64x48_f32_h").size() + 8 + 5);
  const std::string text = kgt::all_text_under(o.dir);
  CHECK(text.find(secret_key) == std::string::npos);
  CHECK(text.find("[REDACTED]") != std::string::npos);  // the echo was there, and was redacted
  const gen::generation_record back = gen::load_record(a.path);
  CHECK(back.uuid == a.uuid);
  CHECK(back.prob.dims == p.dims);
  CHECK(back.provider == "openai");
  CHECK(back.model == "test-model");
  CHECK(back.usage.total == 200);
  CHECK(back.llm_request.find("write") != std::string::npos);
  CHECK(back.llm_request.find(secret_key) == std::string::npos);
  CHECK(gen::record_file_name(back) == name);  // the name is a function of the content
  unsetenv("KFORGE_LLM_API_KEY");
}

TEST_CASE("replay provider: chat bodies, {content} objects and plain lines, then exhaustion") {
  const auto f = kgt::test_cache() / "replay.jsonl";
  gen::write_atomic(f, kgt::completion_body("first") + "\n{\"content\": \"second\"}\nthird line\n");
  gen::replay_provider r(f.string());
  CHECK(r.size() == 3);
  CHECK(r.complete({}, {gemm_problem(), 0}).content == "first");
  CHECK(r.complete({}, {gemm_problem(), 1}).content == "second");
  CHECK(r.complete({}, {gemm_problem(), 2}).content == "third line");
  const auto last = r.complete({}, {gemm_problem(), 3});
  CHECK_FALSE(last.ok);
  CHECK(last.error.find("only 3 responses") != std::string::npos);
}

TEST_CASE("openai provider end to end: a served kernel is extracted, validated in the sandbox and cached") {
  KGT_NEED_VULKAN();
  const auto cache = kgt::test_cache();
  const problem p = gemm_problem();
  const std::string kernel = gen::template_source(p);
  kgt::llm_server s({{200, kgt::completion_body("Here is a kernel:\n\n```glsl\n" + kernel + "```\n")},
                     {200, kgt::completion_body("Retry:\n```glsl\n" + kernel + "```\n")}});
  auto prov = fast_provider(s);
  gen::generate_options o;
  o.samples = 1;
  o.force = true;
  o.dir = cache / "records-e2e";
  o.sandbox.bench_reps = 2;
  const auto res = gen::generate(p, prov, o);
  REQUIRE(res.attempts.size() == 1);
  INFO(res.attempts[0].reason);
  CHECK(res.attempts[0].status == "correct");
  CHECK(res.attempts[0].usage.total == 200);
  CHECK(res.attempts[0].candidate_ms > 0);
  CHECK(std::filesystem::path(res.attempts[0].path).filename().string().rfind("c_gemm_", 0) == 0);
  // A second run finds the cached kernel and never calls the server.
  o.force = false;
  const auto again = gen::generate(p, prov, o);
  CHECK(again.from_cache);
  CHECK(s.log().find("\"i\": 1") == std::string::npos);
}

TEST_CASE("openai provider: failures retrying cannot fix end the run at once, naming the cause and the URL") {
  SUBCASE("nothing listens on the port") {
    std::string url;
    {
      kgt::llm_server gone({});
      url = gone.base_url();
    }  // the server is closed: its port now refuses connections
    gen::openai_options o;
    o.base_url = url;
    o.api_key = secret_key;
    o.backoff_ms = 1000;  // a retry would show in the time below
    auto prov = gen::openai_provider(o);
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 0.9);
    CHECK_FALSE(r.ok);
    CHECK(r.fatal);
    CHECK(r.attempts == 1);
    CHECK(r.error.find(url) != std::string::npos);
    CHECK(r.error.find("onnect") != std::string::npos);  // libcurl's "Couldn't connect to server"
    CHECK(r.error.find(secret_key) == std::string::npos);
  }
  SUBCASE("a host name that does not resolve") {
    gen::openai_options o;
    o.base_url = "http://kforge-no-such-host.invalid/v1";  // .invalid never resolves (RFC 2606)
    o.connect_timeout_ms = 5000;
    auto prov = gen::openai_provider(o);
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK_FALSE(r.ok);
    CHECK(r.fatal);
    CHECK(r.attempts == 1);
    CHECK(r.error.find("kforge-no-such-host.invalid") != std::string::npos);
  }
  SUBCASE("401, 403 and 404 are the setup's fault; 400 is this request's") {
    for (const int code : {401, 403, 404, 400}) {
      kgt::llm_server s({{code, "{\"error\":\"no\"}"}});
      auto prov = fast_provider(s);
      const auto r = prov.complete(small_request(), {gemm_problem(), 0});
      CAPTURE(code);
      CHECK_FALSE(r.ok);
      CHECK(r.attempts == 1);
      CHECK(r.fatal == (code != 400));
      CHECK(r.error.find(std::to_string(code)) != std::string::npos);
      CHECK(r.error.find(s.base_url()) != std::string::npos);
    }
  }
  SUBCASE("retries stop at the total time limit") {
    kgt::llm_server s({{503, "{}"}, {503, "{}"}, {503, "{}"}, {503, "{}"}, {200, kgt::completion_body("late")}});
    gen::openai_options o;
    o.base_url = s.base_url();
    o.max_retries = 4;
    o.backoff_ms = 150;
    o.max_backoff_ms = 2000;
    o.total_timeout_ms = 400;  // 150 + 300 ms of backoff already pass it
    auto prov = gen::openai_provider(o);
    const auto r = prov.complete(small_request(), {gemm_problem(), 0});
    CHECK_FALSE(r.ok);
    CHECK_FALSE(r.fatal);
    CHECK(r.attempts == 2);
    CHECK(r.error.find("total limit of 400 ms") != std::string::npos);
  }
}

TEST_CASE("gen::generate stops at the first fatal provider failure with a provider_error") {
  KGT_NEED_VULKAN();
  const auto cache = kgt::test_cache();
  kgt::llm_server s({{404, "{\"error\":\"model not found\"}"}, {404, "{}"}, {404, "{}"}});
  auto prov = fast_provider(s);
  gen::generate_options o;
  o.samples = 3;
  o.force = true;
  o.dir = cache / "records-fatal";
  CHECK_THROWS_AS(gen::generate(gemm_problem(), prov, o), gen::provider_error);
  CHECK(s.log().find("\"i\": 1") == std::string::npos);  // one request, not one per sample
  CHECK(std::distance(std::filesystem::directory_iterator(o.dir), {}) == 1);  // its record was kept
}
