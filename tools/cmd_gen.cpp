// tools/cmd_gen.cpp — `kforge gen` (generate kernels for one problem) and
// `kforge validate --kernel FILE.comp` (put one hand-written or generated
// kernel through the same sandboxed gate). See docs/GENERATION.md.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <kforge/gen.hpp>

#include "cli.hpp"

namespace kforge::tool {
namespace {
bool has_flag(const std::vector<std::string>& flags, const char* f) {
  return std::find(flags.begin(), flags.end(), f) != flags.end();
}
/// The gate validates p and its held-out shapes in a sandboxed worker on the
/// Vulkan device: refused before anything is allocated when one would not fit.
/// The held-out shapes come from the gate's secret seed; the ones drawn here
/// from seed 0 stand for them (every draw keeps each extent within 3d/2 + 9).
void require_gate_memory(const problem& p) {
  std::vector<problem> shapes = gen::held_out_problems(p, 0);
  shapes.insert(shapes.begin(), p);
  for (const problem& q : shapes) {
    require_host_memory(q, validation_bytes(q), std::string("the gate's worker: ") + validation_bytes_what);
    for (const policy_entry& e : policies())
      if (e.name == "vulkan" && e.unavailable().empty()) require_device_memory(q, e);
  }
}
}  // namespace

int cmd_validate_kernel(const problem& p, const std::map<std::string, std::string>& values,
                        const std::vector<std::string>& flags) {
  const std::string file = values.at("kernel");
  std::string glsl;
  try {
    glsl = gen::read_kernel_source(file);
  } catch (const std::exception& e) {
    std::cerr << one_line(e.what());
    return 2;
  }
  require_gate_memory(p);
  const std::vector<problem> shapes{p};  // the gate draws the held-out shapes
  gen::sandbox_options so;
  so.benchmark = false;
  const gen::sandbox_result r = gen::run_sandboxed(shapes, glsl, so);
  if (has_flag(flags, "json")) {
    json_writer w;
    w.begin_object().field("kernel", file).field("problem", describe(p)).key("held_out").begin_array();
    for (const auto& h : r.held_out) w.value(h);
    w.end_array().field("grid_2d", r.grid_2d);
    w.field("accepted", r.accepted).field("stage", r.stage).field("reason", r.reason);
    if (!r.gate_json.empty()) w.key("gate").raw(r.gate_json);
    w.end_object();
    std::cout << w.str() << "\n";
  } else {
    std::cout << file << " for " << describe(p) << " (held out: " << r.held_out_text() << "): "
              << (r.accepted ? "ACCEPTED" : "REJECTED at " + r.stage) << "\n  " << r.reason << "\n";
  }
  return r.accepted ? 0 : 1;
}

namespace {
std::string value_or(const std::map<std::string, std::string>& v, const char* k, std::string d) {
  auto it = v.find(k);
  return it == v.end() ? d : it->second;
}
}  // namespace

int cmd_gen(const problem& p, const std::map<std::string, std::string>& values, const std::vector<std::string>& flags) {
  const bool json = has_flag(flags, "json");
  std::unique_ptr<gen::provider> prov;
  gen::generate_options o;
  try {
    const std::string kind = value_or(values, "provider", "template");
    if (kind == "template") {
      prov = std::make_unique<gen::template_provider>();
    } else if (kind == "replay") {
      if (!values.count("replay")) throw argument_error("--provider replay needs --replay FILE.jsonl");
      prov = std::make_unique<gen::replay_provider>(values.at("replay"));
    } else if (kind == "openai") {
      gen::openai_options oo;
      oo.base_url = value_or(values, "base-url", "");
      oo.model = value_or(values, "model", "");
      oo.timeout_ms = static_cast<long>(number_option(values, "timeout-ms", number_ranges::timeout_ms, oo.timeout_ms));
      oo.total_timeout_ms =
          static_cast<long>(number_option(values, "total-timeout-ms", number_ranges::timeout_ms, oo.total_timeout_ms));
      prov = std::make_unique<gen::openai_provider>(oo);
    } else {
      throw argument_error("unknown provider '" + kind + "' (template, replay, openai)");
    }
    prov->temperature = number_option(values, "temperature", {0, 2, false, false}, prov->temperature);
    prov->max_tokens = static_cast<int>(number_option(values, "max-tokens", {1, 1000000, false, true}, prov->max_tokens));
    o.samples = static_cast<int>(number_option(values, "samples", {1, 10000, false, true}, o.samples));
    o.force = has_flag(flags, "force");
    o.prove_bucket = !has_flag(flags, "no-bucket");
  } catch (const std::exception& e) {
    std::cerr << one_line(e.what());
    return 2;
  }
  require_gate_memory(p);
  try {
    gen::require_writable_dir(gen::records_dir());  // before the model is asked, not after a kernel passed
  } catch (const cache_error& e) {
    std::cerr << one_line(e.what());
    return 3;
  }
  const bool tty = !json && isatty(2);
  o.progress = [&](const std::string& line) {
    if (!json) std::cerr << (tty ? "\r\033[K" : "") << line << (tty ? "" : "\n") << std::flush;
  };
  gen::generate_result res;
  try {
    res = gen::generate(p, *prov, o);
  } catch (const unsupported_error& e) {
    std::cerr << (tty ? "\n" : "") << one_line(gen::redact_env(e.what()));
    return 3;
  } catch (const std::exception& e) {
    std::cerr << (tty ? "\n" : "") << one_line(gen::redact_env(e.what()));
    return 1;
  }
  if (tty) std::cerr << "\r\033[K";
  std::vector<std::string> exported;
  const gen::generation_record* best = res.best_record();
  if (best && values.count("export")) {
    try {
      for (const auto& f : gen::export_kernel(best->extracted_glsl, values.at("export"), "kernel")) exported.push_back(f.string());
    } catch (const std::exception& e) {
      std::cerr << "kforge: export failed: " << e.what() << "\n";
      return 1;
    }
  }
  if (json) {
    json_writer w;
    w.begin_object().field("problem", describe(p)).field("provider", prov->name()).field("model", prov->model());
    w.field("from_cache", res.from_cache).key("summary").begin_object();
    for (const auto& [k, n] : res.by_stage) w.field(k, n);
    w.end_object().key("attempts").begin_array();
    for (const auto& a : res.attempts)
      w.begin_object().field("file", a.path).field("status", a.status).field("stage", a.stage).field("reason", a.reason)
          .field("candidate_ms", a.candidate_ms).field("builtin_ms", a.builtin_ms).field("speedup_vs_builtin", a.speedup)
          .field("total_tokens", a.usage.total).end_object();
    w.end_array();
    if (best) {
      w.field("best", best->path).key("bucket").begin_object().field("key", best->bucket).field("proven", best->bucket_proven);
      w.field("reason", best->bucket_reason).key("shapes").begin_array();
      for (const auto& b : best->bucket_shapes) w.value(b);
      w.end_array().end_object();
    }
    w.key("exported").begin_array();
    for (const auto& f : exported) w.value(f);
    w.end_array().end_object();
    std::cout << w.str() << "\n";
  } else {
    std::cout << "kforge gen " << describe(p) << " with " << prov->name() << " (" << prov->model() << ")"
              << (res.from_cache ? ": cached accepted kernel (use --force to generate anew)" : "") << "\n";
    for (const auto& a : res.attempts)
      std::cout << "  " << (a.correct() ? "accepted " : "rejected ") << "[" << a.stage << "] "
                << std::filesystem::path(a.path).filename().string() << "\n      " << a.reason.substr(0, 300) << "\n";
    if (!res.from_cache) {
      std::cout << "summary: " << res.attempts.size() << " attempts:";
      for (const auto& [k, n] : res.by_stage) std::cout << " " << k << " " << n << ";";
      std::cout << "\n";
    }
    if (best) {
      char buf[256];
      if (best->candidate_ms > 0 && best->builtin_ms > 0)
        std::snprintf(buf, sizeof buf, "best: %.4f ms vs kforge's own kernel %.4f ms (%.2fx)", best->candidate_ms,
                      best->builtin_ms, best->speedup);
      else
        std::snprintf(buf, sizeof buf, "best: not timed");
      std::cout << buf << "\n  " << best->path << "\n";
      if (!best->bucket.empty()) {
        std::cout << "bucket " << best->bucket << ": " << best->bucket_reason.substr(0, 300);
        std::string shapes;
        for (const auto& b : best->bucket_shapes) shapes += (shapes.empty() ? "" : ", ") + b;
        std::cout << (shapes.empty() ? "" : " (" + shapes + ")") << "\n";
      }
      for (const auto& f : exported) std::cout << "  exported " << f << "\n";
    } else {
      std::cout << "no kernel was accepted\n";
    }
  }
  return best ? 0 : 1;
}

/// --policy generated: the accepted kernel of exactly the problem, or one
/// proven for its bucket once the sandbox has passed it on the exact shape
/// (gen/bucket.hpp; the verdict is cached). No such kernel: exit 3 with what
/// was looked for.
const policy_entry& generated_policy() {
  static const policy_entry e = [] {
    policy_entry g;
    g.name = "generated";
    g.detail = "kforge gen's accepted kernels (" + gen::records_dir().string() + ")";
    g.execute = [](const problem& p, std::vector<host_tensor>& ts) { gen::execute_generated(p, ts); };
    g.unavailable = [] { return vulkan_problem(); };
    return g;
  }();
  return e;
}

void require_generated(const problem& p) { (void)gen::resolve_generated(p, vulkan::default_context()); }

/// `kforge cache list --status c|r`: the generation records (the tuning
/// cache's own listing lives in cmd_cache.cpp).
int gen_records_list(const std::map<std::string, std::string>& values, const std::vector<std::string>& flags) {
  const std::string st = value_or(values, "status", "");
  if (!st.empty() && st != "c" && st != "r") {
    std::cerr << "kforge: --status takes c (correct) or r (rejected)\n";
    return 2;
  }
  std::vector<std::string> skipped;
  const auto rs = gen::list_records(st.empty() ? 0 : st[0], gen::records_dir(), &skipped);
  if (!skipped.empty())
    std::cerr << one_line("warning: " + std::to_string(skipped.size()) + " file(s) in " + gen::records_dir().string() +
                          " named like records are not readable ones (first: " + skipped.front() + ")");
  if (has_flag(flags, "json")) std::cout << gen::records_json(rs) << "\n";
  else std::cout << rs.size() << " generation records in " << gen::records_dir().string() << "\n" << gen::records_text(rs);
  return 0;
}

}  // namespace kforge::tool
