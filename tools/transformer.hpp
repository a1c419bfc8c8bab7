// tools/transformer.hpp — what `kforge transformer` shares between its
// command (cmd_transformer.cpp: options, report, baseline) and the policies'
// translation units (transformer_cpu.cpp, transformer_vulkan.cpp): the run's
// request and result, and the timing loop every session goes through.
#pragma once

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include <kforge/model.hpp>
#include <kforge/model/checkpoint.hpp>

namespace kforge::tool {

struct transformer_request {
  model::config cfg;
  index_t prefill = 128, decode = 32;
  index_t verify_decode = 4;  ///< decode steps the verification runs (after the same prefill)
  dtype type = dtype::f32;
  /// The projections' and LM head's storage: none (dense, in `type`) or a low-precision format (--weights).
  std::optional<qformat> weights;
  /// A Hugging Face checkpoint directory (--model) whose config and weights run; empty: the preset's, random.
  std::filesystem::path model;
  std::string policy = "threaded";
  int reps = 3;
  bool verify = true;
  bool remeasure_bandwidth = false;  ///< probe the machine's bandwidth again (CPU; --remeasure-roofline)
  /// The warm-up (a prefill and the decode steps) repeats until this many
  /// seconds have passed: a GPU idles at a low clock (docs/DESIGN.md).
  double warm_s = 0;
  /// Vulkan: submit each step in parts while it is recorded (false: --whole-step).
  bool in_parts = true;
};

/// Time of one op of the program: the prefill's call, or a decode step's
/// (mean over the decode steps); median over the timed repetitions.
struct stage_timing {
  std::string step;
  model::stage s;
  int layer;
  std::optional<double> seconds;  ///< none where a repetition left the op untimed
};

struct transformer_result {
  std::string policy;   ///< as given
  std::string knobs;    ///< the policy's knobs in words (micro-kernel and threads, gemm configs, ...)
  std::string device;   ///< CPU, or the Vulkan device's name
  std::string timing;   ///< what the stage times are: "wall" or "gpu"
  bool verified = false;
  model::verification v;
  std::vector<stage_timing> stages;
  double prefill_s = 0;           ///< one prefill, wall (median over reps)
  double decode_s = 0;            ///< one decode step, wall (mean over the steps, median over reps)
  double decode_stage_s = 0;      ///< one decode step, sum of its ops' times (GPU time on Vulkan)
  double decode_block_s = 0;      ///< of which the blocks (layers): what streams the block weights
  /// Sessions with per-op timestamps (Vulkan): the wall times of the steps
  /// that took the stage times (the times above ran without), and the host's
  /// share of the timed steps: from a step's start to its last submission.
  double prefill_profiled_s = 0, decode_profiled_s = 0;
  double prefill_record_s = 0, decode_record_s = 0;
  /// The GPU's span of a timed step, first command to last (gaps and overlap included; none: no timestamps).
  std::optional<double> prefill_gpu_span_s, decode_gpu_span_s;
  model::weight_bytes bytes;      ///< weights, in the dtype as stored where the session runs
  double machine_Bps = 0;         ///< the machine's copy bandwidth (kforge's roofline probe), 0 where not measured
  std::string bandwidth_method;   ///< how and when it was measured
};

/// The run's weights: the checkpoint's (--model) or random from the config's seed, quantized where the request asks.
template <class T>
model::weights<model::host_buffer<T>> make_weights(const transformer_request& r) {
  if (!r.model.empty()) {
    auto w = model::load_weights<T>(model::open_checkpoint(r.model));
    if (r.weights) model::quantize_weights(w, *r.weights);
    return w;
  }
  return r.weights ? model::random_weights<T>(r.cfg, *r.weights) : model::random_weights<T>(r.cfg);
}

/// "dense" or the weights' format, as reports name it.
inline std::string weights_name(const transformer_request& r) {
  return r.weights ? std::string(to_string(*r.weights)) : std::string("dense");
}

transformer_result run_transformer_cpu(const transformer_request& r);
transformer_result run_transformer_vulkan(const transformer_request& r);

/// Runs the request's prefill and decode steps on a session (warm-up, then
/// `reps` timed repetitions from an empty cache) and fills the result's
/// times. Session: host_session or vulkan_session (step(ids, logits),
/// reset(), times()). A step's time runs from its token ids to the sampled
/// next token: the embedding and the argmax are ops of the step (on Vulkan the
/// ids' upload and the token's download are part of the step's stream).
/// A session with per-op GPU timestamps (vulkan_session::profile) runs its
/// timed repetitions without them, as a program does, then `reps` more with
/// them for the stage times (their wall times reported apart: *_profiled_s).
template <class T, class Session>
void time_session(Session& s, const model::config& c, const transformer_request& r, transformer_result& out) {
  constexpr bool profiled = requires(Session& x) { x.profile(false); x.host(); };
  const auto ids = model::random_tokens(c, r.prefill + r.decode, 0x6b666f7267651302ull);
  const std::span<const index_t> all(ids);
  model::host_buffer<T> logits(shape{1, c.vocab});
  using maybe = std::optional<double>;  // none: not timed
  std::vector<double> prefill_wall, decode_wall, decode_ops, decode_block, prefill_prof, decode_prof, prefill_rec, decode_rec;
  std::vector<maybe> prefill_span, decode_span;
  std::vector<std::vector<maybe>> pre_t, dec_t;  // [rep][call]
  std::vector<model::stage_time> pre_calls, dec_calls;
  // One repetition from an empty cache: the prefill, then the decode steps. `stages`: keep the ops' times.
  auto rep_once = [&](bool stages) {
    s.reset();
    auto t0 = std::chrono::steady_clock::now();
    s.step(all.first(static_cast<std::size_t>(r.prefill)), logits.view());
    const double pw = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double prec = 0, drec = 0;
    maybe pspan, dspan = 0.0;
    if constexpr (profiled) prec = s.host().record_s, pspan = s.host().gpu_s;
    std::vector<maybe> pt, dt;
    for (const auto& tm : s.times()) pt.push_back(tm.seconds);
    if (stages) pre_calls = s.times();
    double dw = 0, dops = 0, dblock = 0;
    for (index_t d = 0; d < r.decode; ++d) {
      t0 = std::chrono::steady_clock::now();
      s.step(all.subspan(static_cast<std::size_t>(r.prefill + d), 1), logits.view());
      dw += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if constexpr (profiled) {
        drec += s.host().record_s / static_cast<double>(r.decode);
        dspan = dspan && s.host().gpu_s ? maybe(*dspan + *s.host().gpu_s / static_cast<double>(r.decode)) : std::nullopt;
      }
      if (dt.empty()) dt.assign(s.times().size(), 0.0);
      for (std::size_t i = 0; i < s.times().size(); ++i) {
        const maybe sec = s.times()[i].seconds;
        dt[i] = dt[i] && sec ? maybe(*dt[i] + *sec / static_cast<double>(r.decode)) : std::nullopt;
        if (!sec) continue;  // not timed (a recording past the stream's timestamps)
        dops += *sec / static_cast<double>(r.decode);
        if (s.times()[i].layer >= 0) dblock += *sec / static_cast<double>(r.decode);
      }
      if (stages) dec_calls = s.times();
    }
    return std::make_tuple(pw, dw / static_cast<double>(std::max<index_t>(r.decode, 1)), dops, dblock, pt, dt, prec, drec,
                           pspan, dspan);
  };
  // The warm-up. The first one creates pipelines and caches and fills pools (seconds on a cold cache,
  // with the GPU idle); r.warm_s of repetitions follow it, long enough for a GPU's clocks to rise.
  rep_once(!profiled);
  const auto warm_start = std::chrono::steady_clock::now();
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - warm_start).count() < r.warm_s) rep_once(!profiled);
  if constexpr (profiled) s.profile(false);
  for (int rep = 0; rep < r.reps; ++rep) {
    const auto [pw, dw, dops, dblock, pt, dt, prec, drec, pspan, dspan] = rep_once(!profiled);
    prefill_wall.push_back(pw);
    prefill_rec.push_back(prec);
    prefill_span.push_back(pspan);
    if constexpr (!profiled) pre_t.push_back(pt);
    if (r.decode > 0) {
      decode_wall.push_back(dw);
      decode_rec.push_back(drec);
      decode_span.push_back(dspan);
      if constexpr (!profiled) {
        decode_ops.push_back(dops);
        decode_block.push_back(dblock);
        dec_t.push_back(dt);
      }
    }
  }
  if constexpr (profiled) {
    s.profile(true);
    for (int rep = 0; rep < r.reps; ++rep) {
      const auto [pw, dw, dops, dblock, pt, dt, prec, drec, pspan, dspan] = rep_once(true);
      prefill_prof.push_back(pw);
      pre_t.push_back(pt);
      if (r.decode > 0) {
        decode_prof.push_back(dw);
        decode_ops.push_back(dops);
        decode_block.push_back(dblock);
        dec_t.push_back(dt);
      }
    }
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  // The median of values that every repetition timed; none where one did not.
  auto timed_median = [&](const std::vector<maybe>& m) -> maybe {
    std::vector<double> v;
    for (const maybe& x : m) {
      if (!x) return std::nullopt;
      v.push_back(*x);
    }
    return median(v);
  };
  auto column = [&](const std::vector<std::vector<maybe>>& m, std::size_t i) {
    std::vector<maybe> c;
    for (const auto& row : m) c.push_back(i < row.size() ? row[i] : std::nullopt);
    return timed_median(c);
  };
  out.prefill_s = median(prefill_wall);
  out.decode_s = median(decode_wall);
  out.decode_stage_s = median(decode_ops);
  out.decode_block_s = median(decode_block);
  out.prefill_profiled_s = median(prefill_prof);
  out.decode_profiled_s = median(decode_prof);
  out.prefill_record_s = profiled ? median(prefill_rec) : 0;
  out.decode_record_s = profiled ? median(decode_rec) : 0;
  if constexpr (profiled) {
    out.prefill_gpu_span_s = timed_median(prefill_span);
    out.decode_gpu_span_s = timed_median(decode_span);
  }
  for (std::size_t i = 0; i < pre_calls.size(); ++i) out.stages.push_back({"prefill", pre_calls[i].s, pre_calls[i].layer, column(pre_t, i)});
  for (std::size_t i = 0; i < dec_calls.size(); ++i) out.stages.push_back({"decode", dec_calls[i].s, dec_calls[i].layer, column(dec_t, i)});
}

}  // namespace kforge::tool
