// bench/vk_models.cpp — the model-shape bench: policy::vulkan<> (its default
// kernel choice, no tuning) on the shapes of real models, as a user runs
// them: device tensors, one stream, GPU timestamps.
//
//   vk_models [CASES_FILE] [--filter SUBSTRING] [--parts]   (default bench/model_shapes.txt)
//
// --parts: after each RESULT, a PARTS line with the median call's dispatches
// (label and GPU ms), to see where a call of several dispatches spends it.
//
// Each case of the file (NAME OP DTYPE SHAPE [options]) becomes a
// kforge::problem read by the op's own traits (the same SHAPE and options as
// `kforge run`). Inputs are uniform random in [-1, 1] (gamma in [0.5, 1.5]),
// never zeros. Timing: one stream records 3 warm-up and 10 timed calls (a
// call may be several dispatches, e.g. split-K), submitted twice; the median
// of the second submission's timed calls, each the sum of its dispatches' GPU
// time. Output: `RESULT <name> <op> <dtype> <ms> <rate> <unit> <check>` lines,
// joined with bench/torch_models.py's by bench/h100_models.sh.
//
// Check: every case is compared with the Eigen reference on a slice small
// enough for the host (gemm: 8 rows of A; attention: the first (batch, head);
// conv2d: the first image; row ops: the first 256 rows; element-wise: the
// first 1M elements), with the op's own tolerances (validate/suite.hpp). A fast
// wrong kernel prints FAIL, never a silent number.
#include <kforge/validate.hpp>
#include <kforge/vulkan.hpp>
#include <kforge/vulkan/problem.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace kforge;

namespace {

struct bench_case {
  std::string name, op;
  problem p;
};

/// Parses one case line; the options are the op family's own tool options.
bench_case parse_case(const std::string& line) {
  std::istringstream in(line);
  bench_case c;
  std::string dt, shp;
  in >> c.name >> c.op >> dt >> shp;
  c.p.type = parse_dtype(dt);
  if (c.op == "copy") {
    c.p.op = "relu";  // shapes only: a copy has the element-wise family's operands
    set_shape(c.p, shp);
    return c;
  }
  c.p.op = c.op;
  set_shape(c.p, shp);
  for (std::string opt; in >> opt;) {
    const auto eq = opt.find('=');
    const std::string key = opt.substr(0, eq), value = eq == std::string::npos ? "" : opt.substr(eq + 1);
    bool applied = false;
    for (const cli_option& o : family_of(c.p).options())
      if (o.name == key) o.apply(c.p, value), applied = true;
    if (!applied) throw argument_error("vk_models: option '" + key + "' does not apply to " + c.op);
  }
  (void)operands(c.p);
  return c;
}

/// Uniform [lo, hi) floats from a splitmix64 stream (fast enough for GiB of inputs).
void fill(host_tensor& h, std::uint64_t seed, float lo, float hi) {
  std::uint64_t s = seed;
  const index_t n = h.span();
  for (index_t i = 0; i < n; ++i) {
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    h.set(i, lo + (hi - lo) * static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-53));
  }
}

/// The slice of a case checked on the host, and where its output lives in the full output.
struct slice {
  problem p;
  std::vector<host_tensor> in;  // inputs of the slice (copied out of the full inputs)
  index_t out_offset = 0;       // the slice's output is the full output's elements [offset, offset + n)
};

host_tensor rows_of(const host_tensor& full, index_t first, index_t count) {
  shape d = full.dims;
  d[0] = count;
  host_tensor h(full.type, d, row_major_strides(d));
  const index_t per = full.dims.numel() / std::max<index_t>(1, full.dims[0]);
  for (index_t i = 0; i < count * per; ++i) h.set(i, full.get(first * per + i));
  return h;
}

/// The check slice of a case (see the header comment).
slice check_slice(const bench_case& c, const std::vector<host_tensor>& full) {
  slice s{c.p, {}, 0};
  const std::string fam(family_of(c.p).family);
  if (fam == "gemm") {
    s.p.dims[0] = std::min<index_t>(8, c.p.dims[0]);
    s.in = {rows_of(full[0], 0, s.p.dims[0])};
    for (std::size_t i = 1; i + 1 < full.size(); ++i) s.in.push_back(full[i]);
  } else if (fam == "attention" || fam == "conv2d") {
    // The first (batch, head) of attention; the first image of conv2d.
    const index_t heads = fam == "attention" ? c.p.dims[1] : 1;
    s.p.dims[0] = 1;
    if (fam == "attention") s.p.dims[1] = 1;
    if (fam == "attention" && s.p.dims2.rank() == 2) s.p.dims2[1] = 1;  // its KV head (query head 0 reads KV head 0)
    for (std::size_t i = 0; i + 1 < full.size(); ++i) {
      if (fam == "conv2d" && i > 0) {
        s.in.push_back(full[i]);  // filters, bias
        continue;
      }
      const host_tensor& t = full[i];
      shape d = t.dims;
      d[0] = 1;
      if (fam == "attention") d[1] = 1;
      host_tensor h(t.type, d, row_major_strides(d));
      for (index_t e = 0; e < d.numel(); ++e) h.set(e, t.get(e));  // the leading block is contiguous
      s.in.push_back(std::move(h));
      (void)heads;
    }
  } else if (c.p.dims.rank() >= 1) {
    // Row ops and element-wise: leading rows of every input that has the output's leading extent.
    const index_t lead = c.p.dims[0], per = c.p.dims.numel() / std::max<index_t>(1, lead);
    const index_t keep = std::max<index_t>(1, std::min<index_t>(lead, std::max<index_t>(256, (1 << 20) / std::max<index_t>(1, per))));
    s.p.dims[0] = std::min(lead, keep);
    for (std::size_t i = 0; i + 1 < full.size(); ++i)
      s.in.push_back(full[i].dims.rank() == c.p.dims.rank() && full[i].dims[0] == lead ? rows_of(full[i], 0, s.p.dims[0])
                                                                                     : full[i]);
  }
  s.in.emplace_back(c.p.type, operands(s.p).back().dims, row_major_strides(operands(s.p).back().dims));
  return s;
}

template <class D>
void run_case(vulkan::context& ctx, const bench_case& c, bool parts) {
  const problem& p = c.p;
  const auto specs = operands(p);
  std::vector<host_tensor> host;
  std::vector<vulkan::device_tensor<D>> dev;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    host.emplace_back(p.type, specs[i].dims, specs[i].strides);
    if (!specs[i].is_output) {
      const bool scale_like = specs[i].name == "gamma";
      fill(host.back(), 0x5eed0000ull + i * 7919, scale_like ? 0.5f : -1.0f, scale_like ? 1.5f : 1.0f);
    }
    dev.emplace_back(ctx, specs[i].dims);
    if (!specs[i].is_output) dev.back().upload(host.back().template view<D>());
  }
  const bool copy = c.op == "copy";
  auto record = [&](vulkan::stream& s) {
    if (copy) vulkan::record_copy(s, dev[0].ref(), dev[1].ref(), dev[0].bytes());
    else vulkan::record_problem(s, p, dev);
  };
  // Warm-up by time, as the peer does: the H100 idles at 345 MHz and boosts
  // to 1980 MHz only under sustained load, so a burst of a few ms after the
  // host prepared the inputs ran at whatever clock it found — the same copy
  // measured 1650 or 2935 GB/s from one case to the next (vk_bench --age,
  // docs/bench/h100-2026-11-23-clocks/). One submission of calls worth about
  // 20 ms, repeated for 0.5 s (a tensor-core gemm's pipeline takes seconds to
  // build, and the GPU idles down meanwhile: 0.1 s after it was not enough).
  {
    vulkan::stream w(ctx);
    w.time_dispatches(false);
    record(w);
    const auto t0 = std::chrono::steady_clock::now();
    w.run();
    const double one = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const int reps = static_cast<int>(std::clamp(0.02 / std::max(one, 1e-6), 1.0, 2000.0));
    w.reset();
    for (int i = 0; i < reps; ++i) record(w);
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 0.5) w.run();
  }
  // Dispatches per call, then 3 warm-up + 10 timed calls, submitted twice.
  vulkan::stream s(ctx);
  s.time_dispatches(true);
  record(s);
  const std::size_t per_call = s.dispatch_count() + s.copy_count();
  for (int i = 1; i < 13; ++i) record(s);
  s.run();
  s.run();
  const auto t = s.timings();
  std::vector<std::pair<double, std::size_t>> ms;  // (call time, call)
  for (std::size_t call = 3; call < 13; ++call) {
    double sum = 0;
    for (std::size_t d = 0; d < per_call; ++d) sum += t[call * per_call + d].ms.value();  // timed: throws if not
    ms.emplace_back(sum, call);
  }
  std::sort(ms.begin(), ms.end());
  const double med = ms[ms.size() / 2].first;
  std::string breakdown;
  for (std::size_t d = 0; parts && d < per_call; ++d) {
    const auto& e = t[ms[ms.size() / 2].second * per_call + d];
    char buf[32];
    std::snprintf(buf, sizeof buf, " %.4f; ", e.ms.value());
    breakdown += e.label + buf;
  }

  std::string check = "ok";
  if (!copy) {
    slice sl = check_slice(c, host);
    std::vector<host_tensor> ref = sl.in;
    execute<policy::eigen>(sl.p, ref);
    const auto out = dev.back().to_vector();
    host_tensor got(p.type, ref.back().dims, ref.back().strides);
    for (index_t e = 0; e < got.span(); ++e) got.set(e, static_cast<float>(out[static_cast<std::size_t>(sl.out_offset + e)]));
    std::vector<host_tensor> inputs(sl.in.begin(), sl.in.end());
    const case_result r = compare_outputs(sl.p, got, ref.back(), error_scale(sl.p, inputs, ref.back()));
    if (!r.passed) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "FAIL(%lld/%lld,max_abs_%.2g)", static_cast<long long>(r.mismatches),
                    static_cast<long long>(r.elements), r.max_abs_err);
      check = buf;
    }
  } else {
    const auto out = dev.back().to_vector();
    for (index_t e = 0; e < std::min<index_t>(host[0].span(), 1 << 20); ++e)
      if (static_cast<float>(out[static_cast<std::size_t>(e)]) != host[0].get(e)) check = "FAIL";
  }
  const bool compute = !copy && compute_bound(p);
  const double rate = compute ? flops(p) / (med * 1e-3) / 1e12 : min_bytes(p) / (med * 1e-3) / 1e9;
  std::printf("RESULT %s %s %s %.4f %.2f %s %s\n", c.name.c_str(), c.op.c_str(), std::string(to_string(p.type)).c_str(),
              med, rate, compute ? "TFLOP/s" : "GB/s", check.c_str());
  if (parts) std::printf("PARTS %s %s: %s\n", c.name.c_str(), std::string(to_string(p.type)).c_str(), breakdown.c_str());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string file = "bench/model_shapes.txt", filter;
  bool parts = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) filter = argv[++i];
    else if (a == "--parts") parts = true;
    else file = a;
  }
  try {
    std::ifstream in(file);
    if (!in) throw kforge::error("vk_models: cannot read " + file);
    vulkan::context ctx;
    std::printf("device: %s\n", ctx.info().name.c_str());
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == '#') continue;
      const bench_case c = parse_case(line);
      if (!filter.empty() && line.find(filter) == std::string::npos) continue;
      try {
        // The storage the device holds the case's dtype in; bf16 widened to f32 (no 16-bit
        // storage) would time the f32 kernels, so it is skipped rather than reported as bf16.
        const dtype stored = vulkan::device_dtype(ctx.info(), c.p.type);
        if (stored == dtype::f16) run_case<half>(ctx, c, parts);
        else if (stored == dtype::bf16) run_case<bfloat16>(ctx, c, parts);
        else if (c.p.type == dtype::f32) run_case<float>(ctx, c, parts);
        else std::printf("SKIP %s %s: dtype %s is not on the device (%s)\n", c.name.c_str(), c.op.c_str(),
                         std::string(to_string(c.p.type)).c_str(),
                         c.p.type == dtype::bf16 ? "no 16-bit storage: bf16 runs as f32 there" : "not a kernel dtype");
      } catch (const vulkan::device_lost&) {
        throw;
      } catch (const std::exception& e) {
        std::printf("ERROR %s %s %s: %s\n", c.name.c_str(), c.op.c_str(), std::string(to_string(c.p.type)).c_str(), e.what());
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vk_models: %s\n", e.what());
    return 3;
  }
  return 0;
}
