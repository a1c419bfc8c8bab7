// tools/cmd_transformer.cpp — `kforge transformer`: a decoder (kforge::model)
// from a preset (random weights) or a Hugging Face checkpoint (--model) on one policy and dtype, verified stage by stage against the
// Eigen reference, timed per stage, with prefill and decode throughput; its
// JSON report, and the comparison with a previous report (--baseline).
//
// Regressions (--baseline FILE, or --compare NEW --baseline OLD for two
// reports without running): a time is one when it is more than
// --max-slowdown (default 1.25) times the baseline's AND more than
// --time-floor-us (default 50) µs slower — the floor keeps the noise of
// microsecond stages from tripping it; an error (a stage's isolated max
// relative error or its end-to-end error) when it is more than 4× the
// baseline's plus 0.1 eps of the dtype (errors are deterministic for one
// build and machine; another blocking may legitimately move them by a small
// factor); a stage that passed its isolated check and now fails is one
// always. The thresholds are printed with the result. Exit 1 on any
// regression or failed verification, 2 on a usage error (bad preset, config,
// option, or a baseline of another preset, size or dtype), 3 when the policy
// cannot run here.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <sstream>

#include <kforge/core/file.hpp>
#include <kforge/core/json.hpp>

#include "cli.hpp"
#include "transformer.hpp"

#if defined(KFORGE_TOOL_HAS_TUNE)
#include <kforge/tune.hpp>
#endif

namespace kforge::tool {
namespace {

/// A time the report holds as -1 where nothing measured it (no GPU
/// timestamps): no value in the JSON, never a number.

struct thresholds {
  double max_slowdown = 1.25;
  double time_floor_s = 50e-6;
  double error_factor = 4;
  double error_floor_eps = 0.1;
};

/// "prefill attention layer 3"; the stages outside the blocks (layer -1: the
/// embedding and the head) have names of their own: "decode lm_head".
std::string stage_key(const std::string& step, std::string_view stage, std::int64_t layer) {
  return step + " " + std::string(stage) + (layer >= 0 ? " layer " + std::to_string(layer) : "");
}
std::string stage_key(const std::string& step, model::stage s, int layer) { return stage_key(step, model::to_string(s), layer); }

std::string config_json(const model::config& c) {
  json_writer w;
  w.begin_object().field("name", c.name).field("hidden", c.hidden).field("heads", c.heads).field("kv_heads", c.kv_heads);
  w.field("head_dim", c.head_dim).field("mlp", c.mlp).field("vocab", c.vocab).field("layers", c.layers);
  w.field("norm", std::string(model::to_string(c.norm))).field("norm_eps", c.norm_eps);
  w.field("mlp_type", std::string(model::to_string(c.mlp_type))).field("activation", std::string(to_string(c.activation)));
  w.field("rope", c.rope).field("rope_base", c.rope_base).field("bias", c.bias).field("qkv_bias", c.qkv_bias).field("window", c.window);
  w.field("learned_positions", c.learned_positions).field("tied_embeddings", c.tied_embeddings);
  w.end_object();
  return w.str();
}

/// The report (see the help's JSON paragraph).
std::string report_json(const transformer_request& r, const transformer_result& res, const thresholds& th) {
  std::map<std::string, const model::stage_report*> checked;
  for (const auto& s : res.v.stages) checked[stage_key(s.step, s.s, s.layer)] = &s;
  json_writer w;
  w.begin_object().field("format", "kforge-transformer-report").field("version", 1);
  w.field("preset", r.cfg.name).key("config").raw(config_json(r.cfg));
  if (!r.model.empty()) w.field("model", r.model.string());
  w.field("dtype", std::string(to_string(r.type))).field("weights", weights_name(r)).field("policy", res.policy).field("knobs", res.knobs).field("device", res.device);
  w.field("prefill", r.prefill).field("decode", r.decode).field("reps", r.reps).field("stage_time", res.timing);
  w.key("totals").begin_object();
  w.field("prefill_s", res.prefill_s).field("prefill_tokens_per_s", res.prefill_s > 0 ? static_cast<double>(r.prefill) / res.prefill_s : 0.0);
  w.field("decode_s", res.decode_s).field("decode_ms_per_token", res.decode_s * 1e3);
  w.field("decode_tokens_per_s", res.decode_s > 0 ? 1.0 / res.decode_s : 0.0);
  w.field("decode_stage_s", res.decode_stage_s).field("decode_block_s", res.decode_block_s);
  w.field("block_weight_bytes", res.bytes.block * static_cast<double>(r.cfg.layers)).field("head_weight_bytes", res.bytes.head);
  w.field("decode_block_weight_gbps",
          res.decode_block_s > 0 ? res.bytes.block * static_cast<double>(r.cfg.layers) / res.decode_block_s / 1e9 : 0.0);
  if (res.machine_Bps > 0) w.field("machine_copy_gbps", res.machine_Bps / 1e9).field("machine_copy_method", res.bandwidth_method);
  if (res.prefill_profiled_s > 0) {
    w.field("prefill_record_s", res.prefill_record_s).field("decode_record_s", res.decode_record_s);
    w.field("prefill_gpu_span_s", res.prefill_gpu_span_s).field("decode_gpu_span_s", res.decode_gpu_span_s);
    w.field("prefill_profiled_s", res.prefill_profiled_s).field("decode_profiled_s", res.decode_profiled_s);
  }
  w.end_object();
  w.key("verification").begin_object().field("run", res.verified);
  if (res.verified) {
    w.field("passed", res.v.passed).field("reference", "eigen").field("prefill", res.v.prefill).field("decode", res.v.decode);
    w.field("growth", res.v.growth).field("first_failure", res.v.first_failure);
  }
  w.end_object();
  w.key("thresholds").begin_object().field("max_slowdown", th.max_slowdown).field("time_floor_s", th.time_floor_s);
  w.field("error_factor", th.error_factor).field("error_floor", th.error_floor_eps * epsilon_of(r.type)).end_object();
  w.key("stages").begin_array();
  for (const stage_timing& t : res.stages) {
    w.begin_object().field("step", t.step).field("stage", std::string(model::to_string(t.s))).field("layer", t.layer);
    w.field("time_s", t.seconds);
    auto it = checked.find(stage_key(t.step, t.s, t.layer));
    if (it != checked.end()) {
      const model::stage_report& s = *it->second;
      w.field("op", s.op).field("shape", s.dims.str()).field("knobs", s.knobs).field("calls_checked", s.calls);
      w.field("iso_passed", s.iso_passed).field("iso_max_abs", s.iso_max_abs).field("iso_max_rel", s.iso_max_rel);
      w.field("iso_mismatches", s.iso_mismatches);
      if (!s.iso_detail.empty()) w.field("iso_detail", s.iso_detail);
      w.field("e2e_passed", s.e2e_passed).field("e2e_max_abs", s.e2e_max_abs).field("e2e_rel", s.e2e_rel).field("e2e_bound", s.e2e_bound);
    }
    w.end_object();
  }
  w.end_array().end_object();
  return w.str();
}

std::string ms(double s) { return fmt("%.4f", s * 1e3); }
std::string ms(std::optional<double> s) { return s ? ms(*s) : "-"; }
std::string sci(double v) { return fmt("%.2e", v); }

void print_text(const transformer_request& r, const transformer_result& res) {
  const model::config& c = r.cfg;
  std::cout << "transformer " << c.name << (r.model.empty() ? "" : " from " + r.model.string()) << ": " << c.layers << " layer" << (c.layers == 1 ? "" : "s") << ", hidden " << c.hidden
            << ", " << c.heads << " heads / " << c.kv_heads << " KV of " << c.head_dim << ", MLP " << c.mlp << " ("
            << model::to_string(c.mlp_type) << " " << to_string(c.activation) << "), " << model::to_string(c.norm) << ", vocab "
            << c.vocab << "\n  " << to_string(r.type) << (r.weights ? " activations, " + weights_name(r) + " weights," : "")
            << " on " << res.policy << " (" << res.knobs << "), " << res.device
            << "\n  prefill " << r.prefill << " tokens, then " << r.decode << " decode steps; median of " << r.reps
            << " repetitions after a warm-up; stage times: " << (res.timing == "gpu" ? "GPU timestamps" : res.timing) << "\n";
  std::map<std::string, const model::stage_report*> checked;
  for (const auto& s : res.v.stages) checked[stage_key(s.step, s.s, s.layer)] = &s;
  if (res.verified)
    std::cout << "\nverification against eigen (prefill " << res.v.prefill << " + " << res.v.decode
              << " decode steps): isolated = the policy's op on the reference's inputs, within the op's tolerance;\n"
                 "end-to-end = max|out - ref| / max|ref| of the policy's own run, within "
              << res.v.growth << " x the ops' tolerances summed along the step\n";
  std::printf("\n%-8s %-19s %5s %-16s %10s %10s %4s %10s %10s %4s\n", "step", "stage", "layer", "output", "time ms", "iso rel", "", "e2e rel",
              "bound", "");
  for (const stage_timing& t : res.stages) {
    auto it = checked.find(stage_key(t.step, t.s, t.layer));
    const std::string layer = t.layer >= 0 ? std::to_string(t.layer) : model::in_embedding(t.s) ? "embed" : "head";
    if (it == checked.end()) {
      std::printf("%-8s %-19s %5s %-16s %10s\n", t.step.c_str(), std::string(model::to_string(t.s)).c_str(), layer.c_str(), "",
                  ms(t.seconds).c_str());
      continue;
    }
    const model::stage_report& s = *it->second;
    std::printf("%-8s %-19s %5s %-16s %10s %10s %4s %10s %10s %4s\n", t.step.c_str(), std::string(model::to_string(t.s)).c_str(),
                layer.c_str(), s.dims.str().c_str(), ms(t.seconds).c_str(), sci(s.iso_max_rel).c_str(), s.iso_passed ? "ok" : "FAIL",
                sci(s.e2e_rel).c_str(), sci(s.e2e_bound).c_str(), s.e2e_passed ? "ok" : "FAIL");
  }
  std::cout << "\nprefill: " << r.prefill << " tokens in " << ms(res.prefill_s) << " ms = "
            << fmt("%.1f", static_cast<double>(r.prefill) / res.prefill_s) << " tokens/s";
  if (res.prefill_profiled_s > 0)
    std::cout << " (host recording " << ms(res.prefill_record_s) << " ms, GPU span " << ms(res.prefill_gpu_span_s) << " ms; "
              << ms(res.prefill_profiled_s) << " ms with the stage timestamps)";
  std::cout << "\n";
  if (r.decode > 0) {
    std::cout << "decode:  " << ms(res.decode_s) << " ms/token = " << fmt("%.1f", 1.0 / res.decode_s) << " tokens/s";
    if (res.timing == "gpu") std::cout << " (GPU " << ms(res.decode_stage_s) << " ms/token)";
    if (res.decode_profiled_s > 0)
      std::cout << " (host recording " << ms(res.decode_record_s) << " ms, GPU span " << ms(res.decode_gpu_span_s) << " ms; "
                << ms(res.decode_profiled_s) << " ms with the stage timestamps)";
    std::cout << "\n";
    const double block = res.bytes.block * static_cast<double>(c.layers);
    if (res.decode_block_s > 0) {
      const double gbps = block / res.decode_block_s / 1e9;
      std::cout << "decode:  the blocks read " << fmt("%.1f", block / 1e6) << " MB of weights per token in " << ms(res.decode_block_s)
                << " ms = " << fmt("%.2f", gbps) << " GB/s";
      if (res.machine_Bps > 0)
        std::cout << " = " << fmt("%.2f", gbps * 1e9 / res.machine_Bps) << " x this machine's copy bandwidth, "
                  << fmt("%.2f", res.machine_Bps / 1e9) << " GB/s (" << res.bandwidth_method << ")";
      std::cout << "\n";
    }
  }
  if (res.verified) {
    if (res.v.passed) std::cout << "verification: PASSED (every stage, isolated and end to end)\n";
    else std::cout << "verification: FAILED\n" << model::failure_lines(res.v);
  }
}

#if defined(KFORGE_TOOL_HAS_TUNE)
/// The comparable numbers of a report.
struct report_numbers {
  std::string preset, dtype, policy;
  std::int64_t layers = 0, prefill = 0, decode = 0;
  std::map<std::string, double> times, errors;
  std::map<std::string, bool> iso_passed;
};

report_numbers parse_report(const std::string& text, const std::string& what) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view format;
  if (parser.parse(simdjson::padded_string(text)).get(doc) || doc["format"].get_string().get(format) ||
      format != "kforge-transformer-report")
    throw usage_error(what + " is not a kforge transformer report (kforge transformer --json)");
  report_numbers n;
  auto str = [&](simdjson::dom::element e, const char* k) {
    std::string_view v;
    if (e[k].get_string().get(v)) throw usage_error(what + ": field '" + k + "' is missing");
    return std::string(v);
  };
  auto num = [&](simdjson::dom::element e, const char* k, double& out) { return !e[k].get_double().get(out); };
  n.preset = str(doc, "preset"), n.dtype = str(doc, "dtype"), n.policy = str(doc, "policy");
  // Quantized weights are part of what is compared (reports before them have no field: dense).
  if (std::string_view wv; !doc["weights"].get_string().get(wv) && wv != "dense") n.dtype += " with " + std::string(wv) + " weights";
  if (doc["config"]["layers"].get_int64().get(n.layers) || doc["prefill"].get_int64().get(n.prefill) ||
      doc["decode"].get_int64().get(n.decode))
    throw usage_error(what + ": config.layers, prefill or decode is missing");
  double v = 0;
  if (num(doc["totals"], "prefill_s", v)) n.times["prefill (total)"] = v;
  if (num(doc["totals"], "decode_s", v)) n.times["decode step (total)"] = v;
  simdjson::dom::array stages;
  if (doc["stages"].get_array().get(stages)) throw usage_error(what + ": 'stages' is missing");
  for (simdjson::dom::element s : stages) {
    std::int64_t layer = -1;
    if (s["layer"].get_int64().get(layer)) layer = -1;
    std::string_view name, step;
    if (s["stage"].get_string().get(name) || s["step"].get_string().get(step)) continue;
    const std::string key = stage_key(std::string(step), name, layer);
    if (num(s, "time_s", v) && v >= 0) n.times[key] = v;
    if (num(s, "iso_max_rel", v)) n.errors[key + " (isolated error)"] = v;
    if (num(s, "e2e_rel", v)) n.errors[key + " (end-to-end error)"] = v;
    bool p = false;
    if (!s["iso_passed"].get_bool().get(p)) n.iso_passed[key] = p;
  }
  return n;
}

std::string read_file(const std::string& path) {
  try {
    return read_regular_file(path, file_limits::report, "report");
  } catch (const file_error& e) {
    throw usage_error(e.what());
  }
}

/// One line per regression of `now` against `base`.
std::vector<std::string> regressions(const report_numbers& now, const report_numbers& base, const thresholds& th, dtype type) {
  if (now.preset != base.preset || now.layers != base.layers || now.dtype != base.dtype || now.prefill != base.prefill ||
      now.decode != base.decode)
    throw usage_error("the baseline is " + base.preset + " x" + std::to_string(base.layers) + " " + base.dtype + " prefill " +
                      std::to_string(base.prefill) + " decode " + std::to_string(base.decode) + "; this run is " + now.preset +
                      " x" + std::to_string(now.layers) + " " + now.dtype + " prefill " + std::to_string(now.prefill) + " decode " +
                      std::to_string(now.decode) + ": compare runs of the same model, dtype and lengths");
  std::vector<std::string> out;
  for (const auto& [key, t] : now.times) {
    auto it = base.times.find(key);
    if (it == base.times.end()) continue;
    const double b = it->second;
    if (t > th.max_slowdown * b && t - b > th.time_floor_s)
      out.push_back(key + ": time " + ms(t) + " ms vs " + ms(b) + " ms in the baseline (" + fmt("%.2f", b > 0 ? t / b : 0.0) + "x)");
  }
  const double floor = th.error_floor_eps * epsilon_of(type);
  for (const auto& [key, e] : now.errors) {
    auto it = base.errors.find(key);
    if (it == base.errors.end()) continue;
    if (e > th.error_factor * it->second + floor)
      out.push_back(key + ": " + sci(e) + " vs " + sci(it->second) + " in the baseline");
  }
  for (const auto& [key, p] : now.iso_passed) {
    auto it = base.iso_passed.find(key);
    if (it != base.iso_passed.end() && it->second && !p) out.push_back(key + ": fails its isolated check; the baseline passed");
  }
  return out;
}

std::string thresholds_text(const thresholds& th, dtype type) {
  return "a time more than " + fmt("%.2f", th.max_slowdown) + "x the baseline's and more than " + fmt("%.0f", th.time_floor_s * 1e6) +
         " us slower; an error more than " + fmt("%.0f", th.error_factor) + "x the baseline's + " + sci(th.error_floor_eps * epsilon_of(type)) +
         "; an isolated check that passed and now fails";
}
#endif

int compare_reports(const args& a, const thresholds& th) {
#if defined(KFORGE_TOOL_HAS_TUNE)
  const auto base_file = a.get("baseline");
  if (!base_file) throw usage_error("--compare NEW.json needs --baseline OLD.json");
  const std::string now_text = read_file(*a.get("compare"));
  const report_numbers now = parse_report(now_text, *a.get("compare")), base = parse_report(read_file(*base_file), *base_file);
  const dtype type = parse_dtype(now.dtype);
  const auto regs = regressions(now, base, th, type);
  std::cout << *a.get("compare") << " against " << *base_file << ": " << regs.size() << " regression" << (regs.size() == 1 ? "" : "s")
            << " (thresholds: " << thresholds_text(th, type) << ")\n";
  for (const auto& l : regs) std::cout << "  REGRESSION " << l << "\n";
  return regs.empty() ? ok : failed;
#else
  (void)a, (void)th;
  throw usage_error("--baseline and --compare need kforge::tune (simdjson), and this kforge was built without it");
#endif
}

/// Refuses a model the host cannot hold before anything is allocated (exit
/// 3, one line with the bytes and the limit), as run does for an op: the
/// weights (quantized ones in their format's bytes, and the largest
/// projection once dense while it is drawn) and the KV cache in the run's
/// dtype, the same again in f32 for the Eigen reference that verifies it,
/// and the largest activations (the prefill's logits and MLP rows, f32).
void require_transformer_memory(const transformer_request& r) {
  const model::config& c = r.cfg;
  const double es = static_cast<double>(size_of(r.type)), L = static_cast<double>(c.layers);
  const double tokens = static_cast<double>(r.prefill + r.decode), T = static_cast<double>(r.prefill);
  const double d = static_cast<double>(c.hidden), vocab = static_cast<double>(c.vocab);
  const double params = L * static_cast<double>(c.block_params()) + vocab * d * (c.tied_embeddings ? 1 : 2) +
                        static_cast<double>(c.learned_positions + 1) * d;
  double weight_bytes = params * es;
  if (r.weights) {
    // Projections and the LM head in the format's bytes a weight; the largest drawn dense first.
    const qformat_info in = info_of(*r.weights);
    const double per = static_cast<double>(in.block_bytes) / static_cast<double>(in.block);
    const double proj = L * d * static_cast<double>(c.q_dim() + 2 * c.kv_dim() + c.q_dim() + c.up_dim() + c.mlp) + d * vocab;
    const double largest = d * std::max({vocab, static_cast<double>(c.up_dim()), static_cast<double>(c.q_dim())});
    weight_bytes = (params - proj) * es + proj * per + largest * es;
  }
  const double kv = L * 2 * tokens * static_cast<double>(c.kv_dim());
  const double acts = T * static_cast<double>(c.vocab + c.up_dim() + 3 * c.hidden + c.q_dim() + 2 * c.kv_dim()) * 4;
  const double bytes = weight_bytes + kv * es + (r.verify ? (params + kv) * 4 + acts : 0) + acts;
  const memory_limit lim = host_memory_limit();
  if (bytes > lim.bytes) {
    char layers[32];
    std::snprintf(layers, sizeof layers, "%lld", static_cast<long long>(c.layers));
    throw memory_error("kforge: transformer " + c.name + " with " + layers + " layers, " + std::to_string(r.prefill) +
                       " prefill + " + std::to_string(r.decode) + " decode tokens needs " + bytes_text(bytes) +
                       " (weights, KV cache and activations" + (r.verify ? ", and the Eigen reference's f32 copy" : "") +
                       "), more than the " + bytes_text(lim.bytes) + " limit (" + lim.what + ")");
  }
}

}  // namespace

int cmd_transformer(const args& a) {
  thresholds th;
  th.max_slowdown = number_option(a.values, "max-slowdown", {1, 1e6, false, false}, th.max_slowdown);
  if (a.get("time-floor-us")) th.time_floor_s = 1e-6 * number_option(a.values, "time-floor-us", {0, 1e12, false, true}, 0);
  if (a.get("compare")) return compare_reports(a, th);

  transformer_request r;
  const auto preset = a.get("preset");
  const auto model_dir = a.get("model");
  if (!preset == !model_dir)
    throw usage_error(preset ? "--preset and --model both name the model: give one"
                             : "--preset (tiny, gpt2-small, llama3-8b) or --model DIR (a Hugging Face checkpoint) is required");
  if (model_dir && (a.get("layers") || a.get("seed")))
    throw usage_error(std::string(a.get("layers") ? "--layers" : "--seed") +
                      " shapes a preset's random model; a checkpoint (--model) brings its own layers and weights");
  try {
    if (model_dir) {
      // The config now (a bad one is a usage error before anything runs); the weights when the run loads them.
      r.model = *model_dir;
      r.cfg = model::open_checkpoint(r.model).cfg;
    } else {
      r.cfg = model::preset(*preset);
      r.cfg.layers = static_cast<index_t>(number_option(a.values, "layers", {1, 4096, false, true}, static_cast<double>(r.cfg.layers)));
      // Only a given seed goes through number_option: a default's 64 bits need not fit a double.
      if (a.get("seed")) r.cfg.seed = static_cast<std::uint64_t>(number_option(a.values, "seed", option_ranges::seed, 0));
    }
    r.cfg.validate();
    // Token counts: at most 2^20 (a cache of more rows is no transformer run a machine holds).
    r.prefill = static_cast<index_t>(number_option(a.values, "prefill", {1, 1 << 20, false, true}, static_cast<double>(r.prefill)));
    r.decode = static_cast<index_t>(number_option(a.values, "decode", {0, 1 << 20, false, true}, static_cast<double>(r.decode)));
    r.verify_decode = static_cast<index_t>(
        number_option(a.values, "verify-decode", {0, 1 << 20, false, true}, static_cast<double>(r.verify_decode)));
    if (a.get("verify-decode") && r.verify_decode > r.decode)
      throw usage_error("--verify-decode " + std::to_string(r.verify_decode) + " exceeds the " + std::to_string(r.decode) +
                        " decode steps (--decode): it verifies at most as many steps as run");
    r.reps = static_cast<int>(number_option(a.values, "reps", option_ranges::reps, r.reps));
    if (auto v = a.get("dtype")) r.type = parse_dtype(*v);
    if (r.type == dtype::f64) throw usage_error("--dtype must be f32, f16 or bf16");
    // --weights: dense (in --dtype; its name, too) or a low-precision format for the projections and the LM head.
    if (auto v = a.get("weights"); v && *v != "dense" && *v != to_string(r.type)) {
      r.weights = parse_qformat(*v);
      model::check_quantizable(r.cfg, *r.weights);
    }
    r.cfg.validate_run(r.prefill, r.decode, r.prefill + r.decode);
  } catch (const kforge::argument_error& e) {
    throw usage_error(e.what());
  }
  r.policy = a.get("policy").value_or("threaded");
  r.verify = !a.has("no-verify");
  require_transformer_memory(r);
  // GPU clocks ramp up over about a second of sustained work (an H100 left idle sits at 345 MHz and
  // reaches 1980 MHz ~1 s into the work; docs/bench/HISTORY.md): the Vulkan warm-up lasts that long.
  r.warm_s = r.policy == "vulkan" ? 1.5 : 0.0;
  r.warm_s = number_option(a.values, "warmup", {0, 60, false, false}, r.warm_s);
  r.remeasure_bandwidth = a.has("remeasure-roofline");
  r.in_parts = !a.has("whole-step");
  if (!r.in_parts && r.policy != "vulkan") throw usage_error("--whole-step is for --policy vulkan (a CPU step submits nothing)");
  if (r.policy != "vulkan" && r.policy != "eigen" && r.policy != "blocked" && r.policy != "threaded" && r.policy != "autotune" &&
      r.policy != "auto")
    throw usage_error("unknown policy '" + r.policy + "' for transformer (eigen, blocked, threaded, autotune, vulkan)");
  const transformer_result res = r.policy == "vulkan" ? run_transformer_vulkan(r) : run_transformer_cpu(r);
  const std::string report = report_json(r, res, th);
  bool regressed = false;
  std::string baseline_json;
  if (auto base_file = a.get("baseline")) {
#if defined(KFORGE_TOOL_HAS_TUNE)
    const auto regs = regressions(parse_report(report, "this run's report"), parse_report(read_file(*base_file), *base_file), th, r.type);
    regressed = !regs.empty();
    json_writer w;
    w.begin_object().field("file", *base_file).field("thresholds", thresholds_text(th, r.type)).key("regressions").begin_array();
    for (const auto& l : regs) w.value(l);
    w.end_array().end_object();
    baseline_json = w.str();
    if (!a.has("json")) {
      std::ostringstream s;
      s << "\nbaseline " << *base_file << ": " << regs.size() << " regression" << (regs.size() == 1 ? "" : "s") << " (thresholds: "
        << thresholds_text(th, r.type) << ")\n";
      for (const auto& l : regs) s << "  REGRESSION " << l << "\n";
      baseline_json = s.str();
    }
#else
    (void)base_file;
    throw usage_error("--baseline needs kforge::tune (simdjson), and this kforge was built without it");
#endif
  }
  if (a.has("json")) {
    std::string j = report;
    if (!baseline_json.empty()) j.insert(j.size() - 1, ",\"baseline\":" + baseline_json);
    std::cout << j << "\n";
  } else {
    print_text(r, res);
    std::cout << baseline_json;
  }
  return (res.verified && !res.v.passed) || regressed ? failed : ok;
}

}  // namespace kforge::tool
