// kforge/gen/provider.hpp — where candidate kernels come from.
//
//   template_provider  offline, the default: kforge's own kernels with other
//                      knobs, and deliberately broken variants (a compile
//                      error, a contract violation, a wrong kernel), so the
//                      whole loop runs with no network and no configuration.
//   replay_provider    recorded answers from a JSONL file, one per attempt.
//   openai_provider    any OpenAI-compatible chat-completions server over
//                      libcurl (OpenAI, vLLM, llama.cpp server, Ollama), with
//                      timeouts and retries with exponential backoff on 429,
//                      5xx and timeouts. The API key comes from
//                      KFORGE_LLM_API_KEY or OPENAI_API_KEY and only ever
//                      travels in the Authorization header: requests are
//                      recorded without headers, and every text that reaches a
//                      record or a message is passed through redact().
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kforge/gen/common.hpp"
#include "kforge/gen/prompt.hpp"
#include "kforge/gen/templates.hpp"

namespace kforge::gen {

struct llm_request {
  std::string model;
  double temperature = 0.2;
  int max_tokens = 4096;
  std::vector<chat_message> messages;
  /// The chat-completions body; also what a record keeps as llm_request.
  std::string to_json() const {
    json_writer w;
    w.begin_object().field("model", model).field("temperature", temperature).field("max_tokens", max_tokens);
    w.key("messages").begin_array();
    for (const auto& m : messages) w.begin_object().field("role", m.role).field("content", m.content).end_object();
    w.end_array().end_object();
    return w.str();
  }
};

struct token_usage {
  std::int64_t prompt = 0, completion = 0, total = 0;
};

struct llm_response {
  bool ok = false;
  std::string raw;      ///< the body as received (or the template's text)
  std::string content;  ///< the assistant message
  token_usage usage;
  std::string model;
  int http_status = 0;
  int attempts = 0;     ///< HTTP requests made, retries included
  std::vector<std::string> attempt_log;  ///< one line per HTTP request
  double seconds = 0;
  std::string error;
  /// The failure is the provider's setup, not this request: the server
  /// refused the connection, the host does not resolve, TLS failed, the key
  /// was refused (401/403) or the model or URL does not exist (404). Asking
  /// again, or for the next sample, cannot help: generate() stops at once.
  bool fatal = false;
};

/// A provider that cannot answer at all (llm_response::fatal), thrown by
/// gen::generate with the cause and the URL (never the key).
class provider_error : public error {
 public:
  using error::error;
};

/// What a provider knows about the attempt besides the messages.
struct attempt_context {
  problem prob;
  int sample = 0;
};

class provider {
 public:
  virtual ~provider() = default;
  virtual std::string name() const = 0;
  virtual std::string model() const = 0;
  virtual llm_response complete(const llm_request& req, const attempt_context& ctx) = 0;
  /// Sampling settings the generation loop puts into requests.
  double temperature = 0.2;
  int max_tokens = 4096;
};

// ---- template ---------------------------------------------------------------------

/// kforge's own kernels as candidates. Sample i follows a fixed cycle:
/// 0 default knobs · 1 compile error · 2 other knobs · 3 a wrong kernel ·
/// 4 output at the wrong binding · 5 third knob set; then it repeats.
class template_provider : public provider {
 public:
  std::string name() const override { return "template"; }
  std::string model() const override { return "kforge-templates"; }

  /// The source and a one-line description of sample i for problem p.
  static std::pair<std::string, std::string> variant(const problem& p, int i) {
    const bool tiled = contract_for(p).tile_2d;  // tile knobs, not a workgroup size
    template_knobs k;
    switch (i % 6) {
      case 0: return {template_source(p, k), "kforge's kernel, default knobs " + k.label()};
      case 1: {
        std::string s = template_source(p, k);
        s = detail::replace_all(s, "void main() {", "void main() {\n  kf_undeclared_counter += 1u;", "compile-error variant");
        return {s, "deliberately invalid: uses an undeclared variable (compile error)"};
      }
      case 2:
        if (tiled) k = {32, 32, 8, 2, 2};
        else k.wg = 64;
        return {template_source(p, k), "kforge's kernel, knobs " + k.label()};
      case 3: {
        if (tiled) {
          k.local_size_override = (k.bm / k.tm) * (k.bn / k.tn) / 2;
          return {template_source(p, k), "deliberately invalid: workgroup half the size the tile needs (outputs missing)"};
        }
        for (auto& m : mutants_for(p))
          if (m.kind == "off_by_one" || m.kind == "missing_tail" || m.kind == "partial_output")
            return {m.source, "deliberately invalid: " + m.description};
        return {mutants_for(p).front().source, "deliberately invalid: " + mutants_for(p).front().description};
      }
      case 4: {
        std::string s = template_source(p, k);
        const std::string out = "binding = " + std::to_string(contract_for(p).bindings.size() - 1) + ")";
        const auto at = s.rfind(out);
        if (at != std::string::npos) s.replace(at, out.size(), "binding = 7)");
        return {s, "deliberately invalid: output at binding 7 (contract violation)"};
      }
      default:
        if (tiled) k = {16, 16, 16, 2, 2};
        else k.wg = 128;
        return {template_source(p, k), "kforge's kernel, knobs " + k.label()};
    }
  }

  llm_response complete(const llm_request&, const attempt_context& ctx) override {
    const auto t0 = std::chrono::steady_clock::now();
    llm_response r;
    const auto [src, what] = variant(ctx.prob, ctx.sample);
    r.content = "Variant " + std::to_string(ctx.sample) + ": " + what + ".\n\n```glsl\n" + src + "```\n";
    r.raw = r.content;
    r.model = model();
    r.ok = true;
    r.attempts = 1;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
};

// ---- replay ---------------------------------------------------------------------------

namespace detail {
/// Content, usage and model from a chat-completions body; false if malformed.
inline bool parse_chat_completion(const std::string& body, llm_response& r, std::string& why) {
  try {
    const json_doc doc(body, "the response");
    const auto root = doc.root();
    simdjson::dom::element msg;
    std::string_view content;
    if (root["choices"].at(0)["message"].get(msg) || msg["content"].get_string().get(content)) {
      why = "the response has no choices[0].message.content";
      return false;
    }
    r.content = std::string(content);
    r.model = json::str(root, "model", r.model);
    simdjson::dom::element u;
    if (!root["usage"].get(u)) {
      r.usage.prompt = static_cast<std::int64_t>(json::num(u, "prompt_tokens"));
      r.usage.completion = static_cast<std::int64_t>(json::num(u, "completion_tokens"));
      r.usage.total = static_cast<std::int64_t>(json::num(u, "total_tokens", static_cast<double>(r.usage.prompt + r.usage.completion)));
    }
    return true;
  } catch (const std::exception&) {
    why = "the response is not valid JSON";
    return false;
  }
}
}  // namespace detail

/// Answers from a JSONL file: each line is a chat-completions body
/// ({"choices": ...}), an object {"content": "..."}, or plain text. Attempt i
/// gets line i.
class replay_provider : public provider {
 public:
  explicit replay_provider(std::string path) : path_(std::move(path)) {
    const std::string text = read_text(path_, file_limits::record, "the replay file");
    std::size_t at = 0;
    while (at < text.size()) {
      std::size_t nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      std::string line = text.substr(at, nl - at);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) lines_.push_back(std::move(line));
      at = nl + 1;
    }
  }
  std::string name() const override { return "replay"; }
  std::string model() const override { return "replay:" + std::filesystem::path(path_).filename().string(); }
  std::size_t size() const { return lines_.size(); }

  llm_response complete(const llm_request&, const attempt_context&) override {
    llm_response r;
    r.model = model();
    r.attempts = 1;
    if (next_ >= lines_.size()) {
      r.error = "the replay file " + path_ + " has only " + std::to_string(lines_.size()) + " responses";
      return r;
    }
    r.raw = lines_[next_++];
    std::string why;
    if (r.raw.front() == '{') {
      if (r.raw.find("\"choices\"") != std::string::npos) {
        r.ok = detail::parse_chat_completion(r.raw, r, why);
        r.error = why;
        return r;
      }
      try {
        const json_doc doc(r.raw, "the replayed line");
        r.content = json::str(doc.root(), "content");
        r.ok = true;
        return r;
      } catch (const std::exception& e) {
        r.error = e.what();
        return r;
      }
    }
    r.content = r.raw;
    r.ok = true;
    return r;
  }

 private:
  std::string path_;
  std::vector<std::string> lines_;
  std::size_t next_ = 0;
};

// ---- OpenAI-compatible -------------------------------------------------------------------

struct openai_options {
  std::string base_url;        ///< empty: KFORGE_LLM_BASE_URL, else https://api.openai.com/v1
  std::string model;           ///< empty: KFORGE_LLM_MODEL, else gpt-4o
  std::string api_key;         ///< empty: KFORGE_LLM_API_KEY, else OPENAI_API_KEY (may stay empty for local servers)
  long timeout_ms = 120000;    ///< per HTTP request
  long connect_timeout_ms = 10000;
  int max_retries = 4;         ///< after the first request, on 429 / 5xx / timeouts / connection errors
  long backoff_ms = 1000;      ///< first delay; doubles each retry
  long max_backoff_ms = 30000; ///< cap, also for Retry-After
  long total_timeout_ms = 300000; ///< the whole run's: no request starts, and none runs, past this much time since the first
  std::size_t max_response_bytes = std::size_t{8} << 20;  ///< a body past this is cut off there (its first bytes kept)
};

/// A model server's URL: http:// or https:// only (libcurl would read
/// file://, and speak ftp, gopher, smb...), with a host; argument_error otherwise.
inline void check_server_url(const std::string& url, const std::string& from) {
  std::string lower;
  for (char c : url) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const std::size_t scheme = lower.rfind("https://", 0) == 0 ? 8 : lower.rfind("http://", 0) == 0 ? 7 : 0;
  if (scheme == 0)
    throw argument_error("kforge::gen: " + from + " '" + url + "' is not an http:// or https:// URL (kforge asks model servers over HTTP only)");
  if (url.size() == scheme || url[scheme] == '/' || url[scheme] == '?' || url[scheme] == '#')
    throw argument_error("kforge::gen: " + from + " '" + url + "' names no host");
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      throw argument_error("kforge::gen: " + from + " holds a space or control character; a URL has none");
}

class openai_provider : public provider {
 public:
  explicit openai_provider(openai_options o = {}) : o_(std::move(o)) {
    auto env = [](const char* n) -> std::string {
      const char* v = std::getenv(n);
      return v && *v ? v : "";
    };
    std::string from = "--base-url";
    if (o_.base_url.empty()) o_.base_url = env("KFORGE_LLM_BASE_URL"), from = "KFORGE_LLM_BASE_URL";
    if (o_.base_url.empty()) o_.base_url = "https://api.openai.com/v1", from = "the default URL";
    check_server_url(o_.base_url, from);
    while (!o_.base_url.empty() && o_.base_url.back() == '/') o_.base_url.pop_back();
    if (o_.model.empty()) o_.model = env("KFORGE_LLM_MODEL");
    if (o_.model.empty()) o_.model = "gpt-4o";
    if (o_.api_key.empty()) o_.api_key = api_key_from_env();
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }
  std::string name() const override { return "openai"; }
  std::string model() const override { return o_.model; }
  const std::string& base_url() const { return o_.base_url; }

  llm_response complete(const llm_request& req_in, const attempt_context&) override {
    llm_request req = req_in;
    if (req.model.empty()) req.model = o_.model;
    const std::string body = req.to_json();
    const std::string url = o_.base_url + "/chat/completions";
    const auto t0 = std::chrono::steady_clock::now();
    if (!run_start_) run_start_ = t0;  // the total limit is the run's, from its first request
    auto spent_ms = [&] {
      return static_cast<long>(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - *run_start_).count());
    };
    llm_response r;
    r.model = req.model;
    const std::vector<std::string> secrets{o_.api_key};
    for (int attempt = 0; attempt <= o_.max_retries; ++attempt) {
      const long left = o_.total_timeout_ms - spent_ms();
      if (left <= 0) {
        r.error = url + ": the run's total limit of " + std::to_string(o_.total_timeout_ms) + " ms (--total-timeout-ms) has passed" +
                  (r.attempts ? " after " + std::to_string(r.attempts) + " requests" : std::string(" before this sample's request"));
        r.fatal = true;
        break;
      }
      http_result h = post(url, body, std::min(o_.timeout_ms, left));
      ++r.attempts;
      r.http_status = static_cast<int>(h.status);
      r.raw = redact(h.body, secrets);
      std::string line = "attempt " + std::to_string(attempt + 1) + ": ";
      bool retry = false;
      if (h.truncated) {
        line += "the response passed the " + std::to_string(o_.max_response_bytes) + "-byte cap and was cut off there";
        r.error = url + ": " + line;
        r.fatal = true;  // the same request would give the same body
        r.attempt_log.push_back(line);
        break;
      }
      if (h.curl != CURLE_OK) {
        line += std::string("transport error: ") + curl_easy_strerror(h.curl);
        // Worth another try: the server was reached or may come back (a
        // timeout, a dropped connection). Not worth one: nothing listens,
        // the name does not resolve, TLS cannot be set up.
        retry = h.curl == CURLE_OPERATION_TIMEDOUT || h.curl == CURLE_RECV_ERROR || h.curl == CURLE_SEND_ERROR ||
                h.curl == CURLE_GOT_NOTHING || h.curl == CURLE_PARTIAL_FILE;
        r.fatal = !retry;
      } else if (h.status == 429 || h.status >= 500) {
        line += "HTTP " + std::to_string(h.status);
        retry = true;
      } else if (h.status != 200) {
        const bool setup = h.status == 401 || h.status == 403 || h.status == 404;
        line += "HTTP " + std::to_string(h.status) +
                (h.status == 404 ? " (unknown model or URL)" : setup ? " (the key was refused)" : " (not retried)");
        r.fatal = setup;
      } else {
        std::string why;
        r.ok = detail::parse_chat_completion(h.body, r, why);
        r.content = redact(r.content, secrets);
        line += r.ok ? "HTTP 200" : "HTTP 200 but " + why;
        if (!r.ok) r.error = why;
      }
      r.attempt_log.push_back(line);
      if (r.ok || (!retry && h.curl == CURLE_OK && h.status == 200)) break;
      if (!retry) {
        r.error = redact(url + ": " + line + (h.body.empty() ? "" : ": " + h.body.substr(0, 300)), secrets);
        break;
      }
      if (attempt == o_.max_retries) {
        r.error = url + ": gave up after " + std::to_string(r.attempts) + " requests; last: " + line;
        break;
      }
      long delay = std::min(o_.max_backoff_ms, o_.backoff_ms << std::min(attempt, 20));
      if (h.retry_after_s >= 0) delay = std::min(o_.max_backoff_ms, std::max(delay, h.retry_after_s * 1000));
      const long spent = spent_ms();
      if (spent + delay > o_.total_timeout_ms) {
        r.error = url + ": gave up after " + std::to_string(r.attempts) + " requests in " + std::to_string(spent) +
                  " ms (the next retry would pass the total limit of " + std::to_string(o_.total_timeout_ms) +
                  " ms); last: " + line;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(delay));
    }
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }

 private:
  struct http_result {
    CURLcode curl = CURLE_OK;
    long status = 0;
    std::string body;
    long retry_after_s = -1;
    std::size_t cap = 0;
    bool truncated = false;
  };
  static std::size_t on_body(char* p, std::size_t size, std::size_t n, void* user) {
    auto* h = static_cast<http_result*>(user);
    const std::size_t bytes = size * n;
    if (h->body.size() + bytes > h->cap) {
      h->body.append(p, h->cap - h->body.size());  // the cap's worth is kept (and recorded)
      h->truncated = true;
      return 0;  // libcurl stops with CURLE_WRITE_ERROR
    }
    h->body.append(p, bytes);
    return bytes;
  }
  static std::size_t on_header(char* p, std::size_t size, std::size_t n, void* user) {
    std::string h(p, size * n);
    for (auto& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (h.rfind("retry-after:", 0) == 0) {
      try {
        *static_cast<long*>(user) = std::stol(h.substr(12));
      } catch (const std::exception&) {
      }
    }
    return size * n;
  }
  http_result post(const std::string& url, const std::string& body, long timeout_ms) const {
    http_result h;
    h.cap = o_.max_response_bytes;
    CURL* c = curl_easy_init();
    if (!c) {
      h.curl = CURLE_FAILED_INIT;
      return h;
    }
    curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    const std::string auth = "Authorization: Bearer " + o_.api_key;
    if (!o_.api_key.empty()) headers = curl_slist_append(headers, auth.c_str());
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &h);
    // HTTP and HTTPS only, redirects included (none is followed: FOLLOWLOCATION
    // stays off), so no URL makes libcurl read a local file or speak another protocol.
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(o_.max_response_bytes));
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &h.retry_after_s);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, o_.connect_timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "kforge-gen/0.1");
    h.curl = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &h.status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    return h;
  }
  openai_options o_;
  std::optional<std::chrono::steady_clock::time_point> run_start_;
};

}  // namespace kforge::gen
