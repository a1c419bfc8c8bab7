// kforge/gen/generate.hpp — the generation loop (rejection sampling with
// feedback): for each sample, build the prompt (with the previous attempt's
// failure), ask the provider, extract the GLSL, put it through the sandboxed
// gate, write the record. A cached accepted kernel for the same spec is
// returned without asking the provider unless `force`.
#pragma once

#ifndef KFORGE_GEN_INTERNAL
#error "kforge/gen/*.hpp are private headers: include <kforge/gen.hpp>"
#endif

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "kforge/gen/bucket.hpp"
#include "kforge/gen/prompt.hpp"
#include "kforge/gen/provider.hpp"
#include "kforge/gen/record.hpp"
#include "kforge/gen/sandbox.hpp"

#include <spirv_cross/spirv_glsl.hpp>
#include <spirv_cross/spirv_hlsl.hpp>
#include <spirv_cross/spirv_msl.hpp>

namespace kforge::gen {

struct generate_options {
  int samples = 4;
  bool force = false;
  std::string source_spec;  ///< empty: default_source_spec(problem)
  sandbox_options sandbox;
  std::filesystem::path dir;  ///< empty: records_dir()
  std::optional<device_facts> device;  ///< empty: the device the worker will use
  /// Put the best accepted kernel (or a cached one not yet tried) through the
  /// sandbox on shapes spread over its tuning bucket (gen/bucket.hpp), so that
  /// policy::generated may serve the bucket with it.
  bool prove_bucket = true;
  /// Progress lines ("sample 2/4: validating ..."); may be empty.
  std::function<void(const std::string&)> progress;
};

struct generate_result {
  bool from_cache = false;
  std::vector<generation_record> attempts;  ///< this run's (or the cached one)
  int best = -1;                            ///< index into attempts of the fastest accepted
  std::map<std::string, int> by_stage;      ///< attempts per stage (accepted, compile, ...)
  const generation_record* best_record() const { return best >= 0 ? &attempts[static_cast<std::size_t>(best)] : nullptr; }
};

/// Facts about the device the default Vulkan context would pick (same rule:
/// KFORGE_VK_DEVICE, else the best-ranked), for prompts.
inline device_facts query_device_facts() {
  device_facts f;
  try {
    const auto devs = vulkan::list_devices();
    const vulkan::device_info* pick = nullptr;
    const char* env = std::getenv("KFORGE_VK_DEVICE");
    for (const auto& d : devs) {
      if (env && *env) {
        const std::string s = env;
        const bool idx = s.find_first_not_of("0123456789") == std::string::npos;
        if ((idx && d.index == static_cast<int>(env_number("KFORGE_VK_DEVICE", number_range{0, 65535, false, true}, 0))) ||
            (!idx && vulkan::detail::lower(d.name).find(vulkan::detail::lower(s)) != std::string::npos)) {
          pick = &d;
          break;
        }
      } else if (!pick || d.rank < pick->rank) {
        pick = &d;
      }
    }
    if (pick) {
      f.name = pick->name;
      f.max_workgroup_invocations = pick->max_workgroup_invocations;
      f.max_shared_memory = pick->max_shared_memory;
      f.subgroup_size = pick->subgroup_size;
      f.fp16_arithmetic = pick->fp16_arithmetic;
      f.storage_16bit = pick->storage_16bit;
      f.subgroup_arithmetic = (pick->subgroup_ops & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
    }
  } catch (const std::exception&) {
    // No Vulkan: the prompt says "unknown" and the sandbox will reject.
  }
  return f;
}

inline generate_result generate(const problem& p, provider& prov, generate_options o = {}) {
  if (p.a_col_major || p.b_col_major)
    throw argument_error("kforge::gen: generated kernels take dense row-major operands (drop --col-major-*)");
  (void)operands(p);
  const std::filesystem::path dir = o.dir.empty() ? records_dir() : o.dir;
  const std::string spec = o.source_spec.empty() ? default_source_spec(p) : o.source_spec;
  const std::string sh = spec_hash(p, spec);
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  generate_result res;
  if (!o.force) {
    if (auto hit = lookup(p, spec, dir)) {
      say("cached accepted kernel: " + hit->path);
      res.from_cache = true;
      if (o.prove_bucket && hit->bucket.empty()) {
        say("proving the cached kernel on shapes spread over its bucket " + bucket_key(p));
        prove_bucket(*hit, o.sandbox);
        write_atomic(hit->path, redact_env(hit->to_json()));  // where it was found
      }
      res.attempts.push_back(std::move(*hit));
      res.best = 0;
      res.by_stage["cached"] = 1;
      return res;
    }
  }
  const device_facts dev = o.device ? *o.device : query_device_facts();
  std::optional<feedback> previous;
  for (int i = 0; i < o.samples; ++i) {
    const std::string tag = "sample " + std::to_string(i + 1) + "/" + std::to_string(o.samples);
    generation_record r;
    r.uuid = make_uuid();
    r.timestamp = utc_timestamp();
    r.prob = p;
    r.sample = i;
    r.source_spec = spec;
    r.source_hash = sh;
    r.provider = prov.name();
    r.model = prov.model();
    llm_request req;
    req.model = prov.model();
    req.temperature = prov.temperature;
    req.max_tokens = prov.max_tokens;
    req.messages = build_messages(p, dev, spec, previous);
    r.llm_request = req.to_json();
    say(tag + ": asking " + prov.name() + " (" + prov.model() + ")");
    const llm_response resp = prov.complete(req, attempt_context{p, i});
    r.response_raw = resp.raw;
    r.response_content = resp.content;
    r.response_error = resp.error;
    r.attempt_log = resp.attempt_log;
    r.usage = resp.usage;
    r.http_requests = resp.attempts;
    r.llm_seconds = resp.seconds;
    if (!resp.model.empty()) r.model = resp.model;
    if (!resp.ok) {
      r.stage = stage::provider;
      r.reason = resp.error.empty() ? "the provider returned nothing" : resp.error;
    } else {
      const extraction ex = extract_glsl(resp.content);
      r.extracted_glsl = ex.glsl;
      r.extraction_method = ex.method;
      if (ex.glsl.empty()) {
        r.stage = stage::extraction;
        r.reason = "the response contains no GLSL code block (no fenced block or #version with main())";
      } else {
        say(tag + ": compiling and validating in the sandbox (held-out shapes drawn there from its secret seed)");
        const sandbox_result sr = run_sandboxed({p}, ex.glsl, o.sandbox);
        r.held_out_shape = sr.held_out_text();
        r.stage = sr.stage;
        r.reason = sr.reason;
        r.validation = sr.gate_json;
        if (sr.accepted) r.status = "correct";
        if (!sr.gate_json.empty()) {
          try {
            const json_doc g(sr.gate_json, "the gate's answer");
            r.spirv_hash = json::str(g.root(), "spirv_hash");
            simdjson::dom::element b;
            if (!g.root()["benchmark"].get(b)) {
              r.candidate_ms = json::num(b, "candidate_ms", -1);
              r.builtin_ms = json::num(b, "builtin_ms", -1);
              r.speedup = json::num(b, "speedup_vs_builtin");
            }
          } catch (const std::exception&) {
          }
        }
      }
    }
    if (r.status != "correct") {
      r.status = "rejected";
      feedback f{r.stage, r.reason, r.extracted_glsl};
      if (r.stage == stage::compile && !r.validation.empty()) {
        try {
          const json_doc g(r.validation, "the gate's answer");
          f.detail = json::str(g.root(), "compile_log", r.reason);
        } catch (const std::exception&) {
        }
      }
      previous = f;
    } else {
      previous.reset();
    }
    write_record(r, dir);
    if (resp.fatal) throw provider_error("kforge gen: " + prov.name() + " cannot answer: " + r.reason);
    say(tag + ": " + (r.correct() ? std::string("ACCEPTED") : "rejected at " + r.stage) + " -> " +
        std::filesystem::path(r.path).filename().string());
    ++res.by_stage[r.correct() ? std::string(stage::accepted) : r.stage];
    res.attempts.push_back(std::move(r));
  }
  for (std::size_t i = 0; i < res.attempts.size(); ++i) {
    const auto& a = res.attempts[i];
    if (!a.correct()) continue;
    if (res.best < 0) {
      res.best = static_cast<int>(i);
      continue;
    }
    const auto& b = res.attempts[static_cast<std::size_t>(res.best)];
    if (a.candidate_ms > 0 && (b.candidate_ms <= 0 || a.candidate_ms < b.candidate_ms)) res.best = static_cast<int>(i);
  }
  if (o.prove_bucket && res.best >= 0) {
    generation_record& b = res.attempts[static_cast<std::size_t>(res.best)];
    say("proving the accepted kernel on shapes spread over its bucket " + bucket_key(p));
    prove_bucket(b, o.sandbox);
    write_record(b, dir);  // the same file: its name does not depend on the bucket
  }
  return res;
}

// ---- export -----------------------------------------------------------------------

/// Writes an accepted kernel as kernel.comp (its source), kernel.spv, and
/// SPIRV-Cross translations kernel.glsl, kernel.hlsl (SM 6.0) and
/// kernel.metal. Returns the files written.
inline std::vector<std::filesystem::path> export_kernel(const std::string& glsl, const std::filesystem::path& dir,
                                                        const std::string& base = "kernel") {
  std::filesystem::create_directories(dir);
  const auto spirv = compile_glsl(base, glsl);
  std::vector<std::filesystem::path> out;
  auto put = [&](const std::string& ext, std::string_view text) {
    const auto p = dir / (base + ext);
    write_atomic(p, text);
    out.push_back(p);
  };
  put(".comp", glsl);
  put(".spv", std::string_view(reinterpret_cast<const char*>(spirv.data()), spirv.size() * 4));
  // A target SPIRV-Cross cannot express (e.g. an extension it has no
  // translation for) gets a .error.txt with SPIRV-Cross's message instead.
  auto cross = [&](const std::string& ext, auto&& make) {
    try {
      put(ext, make());
    } catch (const std::exception& e) {
      put(ext + ".error.txt", "SPIRV-Cross could not translate this kernel: " + std::string(e.what()) + "\n");
    }
  };
  cross(".glsl", [&] {
    spirv_cross::CompilerGLSL c(spirv);
    auto opts = c.get_common_options();
    opts.version = 450;
    opts.vulkan_semantics = true;
    c.set_common_options(opts);
    return c.compile();
  });
  cross(".hlsl", [&] {
    // Shader model 6.0: kforge's kernels use subgroup (wave) operations.
    // HLSL has no gl_NumWorkGroups: SPIRV-Cross declares a constant buffer
    // (SPIRV_Cross_NumWorkgroups) the host must fill with the group counts.
    spirv_cross::CompilerHLSL c(spirv);
    c.remap_num_workgroups_builtin();
    auto h = c.get_hlsl_options();
    h.shader_model = 60;
    c.set_hlsl_options(h);
    return c.compile();
  });
  cross(".metal", [&] {
    // MSL 2.1: the first with the SIMD-group functions subgroup operations map to.
    spirv_cross::CompilerMSL c(spirv);
    auto m = c.get_msl_options();
    m.set_msl_version(2, 1);
    c.set_msl_options(m);
    return c.compile();
  });
  return out;
}

}  // namespace kforge::gen
