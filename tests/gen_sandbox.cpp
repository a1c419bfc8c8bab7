// tests/gen_sandbox.cpp — the gate and its sandbox on a real Vulkan device
// (lavapipe in CI): hostile kernels are rejected with the right reason and
// never hang the run; the offline loop writes c_/r_ records and caches;
// policy::generated runs an accepted kernel; export; and mutation testing —
// every mutant of kforge's own kernels killed, no original rejected.
#include "gen/common.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>

using namespace kforge;
using kgt::relu_kernel;

namespace {

problem relu_problem() {
  problem p;
  p.op = "relu";
  set_shape(p, "3x7x19");
  return p;
}


gen::sandbox_result sandboxed(const std::string& glsl, int dispatch_timeout_ms = 1500) {
  const problem p = relu_problem();
  gen::sandbox_options o;
  o.dispatch_timeout_ms = dispatch_timeout_ms;
  o.wall_timeout_ms = 60000;
  o.benchmark = false;
  return gen::run_sandboxed({p}, glsl, o);  // the worker draws the held-out shapes
}

}  // namespace

TEST_CASE("sandbox: a correct hand-written kernel is accepted") {
  KGT_NEED_VULKAN();
  const auto r = sandboxed(relu_kernel("  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); }"));
  INFO(r.reason << "\n" << r.log_tail);
  CHECK(r.accepted);
  CHECK(r.stage == "accepted");
  // The worker ran the untrusted kernel with robust buffer access (lavapipe offers it).
  CHECK(r.robust_buffer_access);
  CHECK(r.gate_json.find("\"robust_buffer_access\":true") != std::string::npos);
  CHECK(r.gate_json.find("\"plain_validation\"") != std::string::npos);
}

TEST_CASE("sandbox: a kernel that never finishes is rejected as a timeout, and the parent carries on") {
  KGT_NEED_VULKAN();
  const auto t0 = std::chrono::steady_clock::now();
  // The loop waits for a value nothing ever writes, read through a volatile
  // buffer each iteration, so no compiler can prove it finite or remove it.
  // lavapipe ends any loop after 65535 iterations (its guard against hung
  // shaders), so the body is made long enough that even the capped loop
  // outlives the 1 s timeout many times over.
  std::string body = "  float a = float(i);\n  while (y_[0] != -1.0) {\n";
  for (int l = 0; l < 400; ++l) body += "    a = sin(a) * 1.0001 + cos(a * 0.5);\n";
  body += "    if (i < pc.n) y_[i] = a;\n  }";
  std::string spin = relu_kernel(body);
  spin.replace(spin.find(") buffer BufY"), 13, ") volatile coherent buffer BufY");
  const auto r = sandboxed(spin, 1000);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.reason << "\n" << r.log_tail);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "timeout");
  CHECK(secs < 60);
  // The parent is fine: the next candidate runs normally.
  CHECK(sandboxed(relu_kernel("  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); }")).accepted);
}

TEST_CASE("sandbox: a kernel that writes out of bounds is rejected by the guard check") {
  KGT_NEED_VULKAN();
  const auto r = sandboxed(relu_kernel("  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); y_[i + 3u] = 0.0; }"));
  INFO(r.reason);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "validation");
  CHECK(r.reason.find("wrote outside its output") != std::string::npos);
  CHECK(r.reason.find("past its end") != std::string::npos);
}

TEST_CASE("sandbox: a write before the output's start, discarded by robust buffer access, meets the plain context") {
  KGT_NEED_VULKAN();
  // A signed index of -1 is outside the descriptor's range: on the worker's
  // robust context the write is discarded and every result is right. On the
  // plain context a driver may put it in the front guard, but lavapipe and
  // NVIDIA's driver on the H100 (580.159, docs/bench/h100-2026-11-22-gen/)
  // both drop it (the index becomes a huge unsigned offset), so the kernel
  // passes there: what can be checked is that the plain pass ran.
  const auto r = sandboxed(relu_kernel("  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); if (i == 0u) y_[int(i) - 1] = 1.0; }"));
  INFO(r.reason << "\n" << r.log_tail);
  CHECK(r.robust_buffer_access);
  if (r.accepted) {
    CHECK(r.gate_json.find("\"plain_validation\"") != std::string::npos);
    MESSAGE("the driver dropped the write on the plain context too (it bounds-checks every access)");
  } else {
    CHECK(r.stage == "validation");
    CHECK(r.reason.find("without robust buffer access") != std::string::npos);
    CHECK(r.reason.find("before its start") != std::string::npos);
  }
}

TEST_CASE("sandbox: a kernel that writes only part of the output is rejected (poisoned output)") {
  KGT_NEED_VULKAN();
  const auto r = sandboxed(relu_kernel("  if (i < pc.n / 2u) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); }"));
  INFO(r.reason);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "validation");
  CHECK(r.reason.find("elements wrong") != std::string::npos);
  CHECK(r.reason.find("got nan") != std::string::npos);
}

TEST_CASE("sandbox: a kernel that copies its input is rejected") {
  KGT_NEED_VULKAN();
  const auto r = sandboxed(relu_kernel("  if (i < pc.n) y_[i] = x_[i];"));
  INFO(r.reason);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "validation");
}

TEST_CASE("sandbox: compile errors and contract violations are rejected at their stage with the reason") {
  KGT_NEED_VULKAN();
  const auto c = sandboxed(relu_kernel("  y_[i] = undefined_thing;"));
  CHECK(c.stage == "compile");
  CHECK(c.reason.find("undefined_thing") != std::string::npos);
  std::string writable_input = relu_kernel("  if (i < pc.n) y_[i] = max(x_[i], 0.0);");
  writable_input.replace(writable_input.find("readonly buffer BufX"), 8, "");
  const auto w = sandboxed(writable_input);
  CHECK(w.stage == "interface");
  CHECK(w.reason.find("readonly") != std::string::npos);
  std::string big_push = relu_kernel("  if (i < pc.n) y_[i] = max(x_[i], 0.0);");
  big_push.replace(big_push.find("float slope;"), 12, "float slope; uint extra;");
  const auto b = sandboxed(big_push);
  CHECK(b.stage == "interface");
  CHECK(b.reason.find("push constants") != std::string::npos);
}

TEST_CASE("generate with the template provider: c_ and r_ records, cache hit without the provider, --force") {
  KGT_NEED_VULKAN();
  const auto dir = kgt::test_cache() / "records-template";
  problem p;
  p.op = "gemm";
  set_shape(p, "64x48x40");
  gen::template_provider prov;
  gen::generate_options o;
  o.samples = 4;
  o.dir = dir;
  o.sandbox.bench_reps = 2;
  const auto res = gen::generate(p, prov, o);
  REQUIRE(res.attempts.size() == 4);
  CHECK(res.by_stage.at("accepted") == 2);
  CHECK(res.by_stage.at("compile") == 1);
  CHECK(res.by_stage.at("validation") == 1);
  REQUIRE(res.best_record() != nullptr);
  CHECK(res.best_record()->builtin_ms > 0);
  int c = 0, r = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string n = e.path().filename().string();
    c += n.rfind("c_gemm_i64x40-40x48_o64x48_f32_h", 0) == 0;
    r += n.rfind("r_gemm_i64x40-40x48_o64x48_f32_h", 0) == 0;
  }
  CHECK(c == 2);
  CHECK(r == 2);
  CHECK(gen::list_records('c', dir).size() == 2);
  CHECK(gen::list_records('r', dir).size() == 2);

  /// A provider that must not be asked.
  struct refusing : gen::provider {
    int calls = 0;
    std::string name() const override { return "refusing"; }
    std::string model() const override { return "none"; }
    gen::llm_response complete(const gen::llm_request&, const gen::attempt_context&) override {
      ++calls;
      return {};
    }
  } never;
  const auto cached = gen::generate(p, never, o);
  CHECK(cached.from_cache);
  CHECK(never.calls == 0);
  o.force = true;
  o.samples = 1;
  const auto forced = gen::generate(p, never, o);
  CHECK(never.calls == 1);
  CHECK(forced.attempts[0].stage == "provider");
}

TEST_CASE("policy::generated runs the accepted kernel; export writes GLSL, SPIR-V, HLSL and MSL") {
  KGT_NEED_VULKAN();
  problem p;
  p.op = "softmax";
  set_shape(p, "5x37");
  const auto res = kgt::generate_offline(p);
  REQUIRE(res.best_record() != nullptr);
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x = Eigen::MatrixXf::Random(5, 37);
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> y(5, 37), ref(5, 37);
  run<policy::generated>(op::softmax<float>{}, x, y);
  run<policy::eigen>(op::softmax<float>{}, x, ref);
  CHECK((y - ref).cwiseAbs().maxCoeff() < 1e-5f);
  // No accepted kernel for a shape of another bucket (16x64): a clear
  // refusal, not a silent fallback (tests/gen_bucket.cpp: shapes of its own bucket).
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x2 = Eigen::MatrixXf::Random(9, 37), y2(9, 37);
  CHECK_THROWS_AS(run<policy::generated>(op::softmax<float>{}, x2, y2), unsupported_error);

  // A kernel without subgroup operations translates to every target.
  const auto dir = kgt::test_cache() / "export";
  const auto files = gen::export_kernel(relu_kernel("  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); }"), dir);
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.filename().string());
  for (const char* want : {"kernel.comp", "kernel.spv", "kernel.glsl", "kernel.hlsl", "kernel.metal"})
    CHECK_MESSAGE(std::find(names.begin(), names.end(), want) != names.end(), want);
  CHECK(gen::read_text(dir / "kernel.metal").find("kernel void") != std::string::npos);
  CHECK(gen::read_text(dir / "kernel.hlsl").find("[numthreads(") != std::string::npos);
  // kforge's softmax uses gl_NumSubgroups, which HLSL has no builtin for:
  // SPIRV-Cross's refusal is written down, never a file that pretends.
  const auto dir2 = kgt::test_cache() / "export-softmax";
  gen::export_kernel(res.best_record()->extracted_glsl, dir2);
  CHECK(std::filesystem::exists(dir2 / "kernel.spv"));
  CHECK(std::filesystem::exists(dir2 / "kernel.hlsl") != std::filesystem::exists(dir2 / "kernel.hlsl.error.txt"));
}

namespace {
// KFORGE_MUTATION_SHARD=i/n: the ops whose index in all_ops() is i modulo n
// (tests/CMakeLists.txt runs shards 0/n .. n-1/n as separate tests, so that
// ctest spreads the mutation run over the cores); unset: every op.
std::vector<std::string> mutation_shard() {
  unsigned i = 0, n = 1;
  if (const char* e = std::getenv("KFORGE_MUTATION_SHARD")) {
    char slash = 0;
    std::istringstream in(e);
    REQUIRE_MESSAGE((in >> i >> slash >> n && slash == '/' && n > 0 && i < n && in.peek() == EOF),
                    "KFORGE_MUTATION_SHARD='" << e << "' is not i/n with i < n");
  }
  std::vector<std::string> ops;
  for (std::size_t k = 0; k < all_ops().size(); ++k)
    if (k % n == i) ops.emplace_back(all_ops()[k].name);
  return ops;
}
}  // namespace

TEST_CASE("mutation testing: every mutant of every op is killed, no original is rejected") {
  KGT_NEED_VULKAN();
  const std::vector<std::string> ops = mutation_shard();
  REQUIRE(!ops.empty());
  MESSAGE("ops: " << ops.size() << " of " << all_ops().size());
  const auto rep = gen::run_mutation_tests(ops);
  for (const auto& o : rep.outcomes) {
    if (o.kind == "error") FAIL_CHECK(o.name << ": " << o.reason);
    else if (o.original) CHECK_MESSAGE(!o.rejected, o.name << " rejected: " << o.reason);
    else CHECK_MESSAGE(o.rejected, o.name << " survived (" << o.description << ")");
  }
  CHECK(rep.originals == static_cast<int>(ops.size()));
  CHECK(rep.mutants >= 4 * static_cast<int>(ops.size()));
  CHECK(rep.passed());
  MESSAGE(rep.killed << "/" << rep.mutants << " mutants killed");
}

TEST_CASE("sandbox: the worker's environment keeps this process's and puts the user's GLIBC_TUNABLES after the sandbox's") {
  auto find = [](const std::vector<std::string>& env, const std::string& key) -> const std::string* {
    const std::string* hit = nullptr;
    for (const auto& e : env)
      if (e.rfind(key + "=", 0) == 0) {
        CHECK_MESSAGE(hit == nullptr, key << " twice");
        hit = &e;
      }
    return hit;
  };
  const std::string ours = std::string("GLIBC_TUNABLES=") + gen::detail::worker_malloc_tunables;
  const char* saved = std::getenv("GLIBC_TUNABLES");
  const std::string saved_value = saved ? saved : "";
  REQUIRE(::setenv("KFORGE_SANDBOX_ENV_PROBE", "x=1", 1) == 0);
  REQUIRE(::unsetenv("GLIBC_TUNABLES") == 0);
  auto env = gen::detail::worker_environment();
  REQUIRE(find(env, "KFORGE_SANDBOX_ENV_PROBE"));
  CHECK(*find(env, "KFORGE_SANDBOX_ENV_PROBE") == "KFORGE_SANDBOX_ENV_PROBE=x=1");
  REQUIRE(find(env, "GLIBC_TUNABLES"));
  CHECK(*find(env, "GLIBC_TUNABLES") == ours);
  REQUIRE(::setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0", 1) == 0);
  env = gen::detail::worker_environment();
  REQUIRE(find(env, "GLIBC_TUNABLES"));
  CHECK(*find(env, "GLIBC_TUNABLES") == ours + ":glibc.malloc.hugetlb=0");
  ::unsetenv("KFORGE_SANDBOX_ENV_PROBE");
  if (saved) ::setenv("GLIBC_TUNABLES", saved_value.c_str(), 1);
  else ::unsetenv("GLIBC_TUNABLES");
}

// ---- held-out shapes (gate.hpp, docs/GENERATION.md "Held-out shapes") ------

namespace {
problem shape_of(const char* op, const char* s) {
  problem p;
  p.op = op;
  set_shape(p, s);
  return p;
}
}  // namespace

TEST_CASE("held-out shapes: every axis redrawn, per seed, with each family's relations") {
  for (std::uint64_t seed : {1ull, 2ull, 0xdeadbeefull, 0x123456789abcdefull}) {
    CAPTURE(seed);
    // relu 3x7x19: every extent new, odd, and the two draws differ.
    const problem r = shape_of("relu", "3x7x19");
    const auto hr = gen::held_out_problems(r, seed);
    REQUIRE(hr.size() >= 2);
    for (const auto& h : hr)
      for (int i = 0; i < 3; ++i) {
        CHECK(h.dims[i] != r.dims[i]);
        CHECK(h.dims[i] % 2 == 1);
      }
    CHECK(!(hr[0].dims == hr[1].dims));
    // gemm: M and N cross the kernel's tiles, K crosses every K tile up to 64.
    const problem g = shape_of("gemm", "64x48x40");
    for (const auto& h : gen::held_out_problems(g, seed, launch_tiles{256, 64, 32, 0})) {
      CHECK(h.dims[0] > 64);
      CHECK(h.dims[0] % 64 != 0);
      CHECK(h.dims[1] > 32);
      CHECK(h.dims[1] % 32 != 0);
      CHECK(h.dims[2] > 64);
      CHECK(h.dims[2] % 2 == 1);
    }
    // causal attention with S = L: one draw with S < L, one with S > L, and
    // every other axis new too.
    problem a = shape_of("attention", "1x2x33x16");
    a.causal = true;
    const auto ha = gen::held_out_problems(a, seed);
    CHECK(ha[0].dims[2] < attention_traits::keys(ha[0]));
    CHECK(ha[1].dims[2] > attention_traits::keys(ha[1]));
    for (const auto& h : ha) {
      CHECK(h.dims[0] != 1);
      CHECK(h.dims[2] != 33);
      CHECK(attention_traits::keys(h) != 33);
      CHECK(h.dims[3] != 16);
      CHECK(h.dims[3] <= 32);  // within the head dim's 32-row bucket
    }
    // conv2d: H != W, both new; draw 0 ends H's last window on the padded
    // edge and W's not, draw 1 the other way round.
    problem c = shape_of("conv2d", "1x4x9x9,6x2x3x3");
    c.groups = 2;
    c.stride[0] = c.stride[1] = 2;
    c.pad[0] = c.pad[1] = 1;
    const auto hc = gen::held_out_problems(c, seed);
    for (int i = 0; i < 2; ++i) {
      const problem& h = hc[static_cast<std::size_t>(i)];
      CHECK(h.dims[2] != h.dims[3]);
      CHECK(h.dims[2] != 9);
      CHECK(h.dims[3] != 9);
      CHECK(h.dims[0] != 1);
      const bool h_edge = (h.dims[2] + 2 - 3) % 2 == 0, w_edge = (h.dims[3] + 2 - 3) % 2 == 0;
      CHECK(h_edge == (i == 0));
      CHECK(w_edge == (i == 1));
      (void)operands(h);
    }
  }
  // The draws come from the seed: the same seed, the same shapes.
  const problem r7 = shape_of("relu", "3x7x19");
  CHECK(gen::held_out_problems(r7, 7)[0].dims == gen::held_out_problems(r7, 7)[0].dims);
}

TEST_CASE("held-out shapes: the 2-D-grid shape needs more than 65535 workgroups, or says why there is none") {
  const problem r = shape_of("relu", "3x7x19");
  const auto g = gen::grid_problem(r, launch_tiles{64, 0, 0, 0});
  REQUIRE(g.p.has_value());
  CHECK(g.workgroups > 65535);
  CHECK(g.p->dims.numel() > 65535 * 64);
  // A kernel whose workgroups each take so many elements that the grid would
  // need over the memory limit: skipped, and the reason says by how much.
  const auto big = gen::grid_problem(r, launch_tiles{64, 0, 0, 4096});
  CHECK_FALSE(big.p.has_value());
  CHECK(big.reason.find("MiB") != std::string::npos);
  // A device whose storage buffers are smaller than the grid shape's largest
  // operand (lavapipe's 128 MiB against a gated op's input): skipped, with
  // the device's limit in the reason, never a rejected kernel.
  const problem sw = shape_of("swiglu", "5x6x22");
  const auto unlimited = gen::grid_problem(sw, launch_tiles{256, 0, 0, 0});
  REQUIRE(unlimited.p.has_value());
  const auto small = gen::grid_problem(sw, launch_tiles{256, 0, 0, 0}, 64ull << 20);
  CHECK_FALSE(small.p.has_value());
  CHECK(small.reason.find("maxStorageBufferRange") != std::string::npos);
  const auto fits = gen::grid_problem(r, launch_tiles{64, 0, 0, 0}, 128ull << 20);
  CHECK(fits.p.has_value());
  // gemm's grid is 3-D by contract.
  const auto gm = gen::grid_problem(shape_of("gemm", "64x48x40"), launch_tiles{256, 64, 64, 0});
  CHECK_FALSE(gm.p.has_value());
  CHECK(gm.reason.find("3-D grid") != std::string::npos);
  // A rows op: one row per workgroup, so the rows axis grows.
  const auto gs = gen::grid_problem(shape_of("softmax", "5x37"), launch_tiles{256, 0, 0, 1});
  REQUIRE(gs.p.has_value());
  CHECK(gs.p->dims[0] > 65535);
  CHECK(gs.p->dims[1] == 37);
}

TEST_CASE("sandbox: a causal attention kernel with a bottom-right mask is rejected (held-out S < L and S > L)") {
  KGT_NEED_VULKAN();
  problem p;
  p.op = "attention";
  set_shape(p, "1x2x33x16");
  p.causal = true;
  const std::string own = gen::template_source(p);
  std::string bottom_right = own;
  const std::string top_left = "min(pc.L, row + 1u)";
  REQUIRE(bottom_right.find(top_left) != std::string::npos);
  // Query i sees keys j <= i + L - S: the same as top-left when S = L.
  bottom_right.replace(bottom_right.find(top_left), top_left.size(),
                       "uint(clamp(int(row) + 1 + int(pc.L) - int(pc.S), 0, int(pc.L)))");
  gen::sandbox_options o;
  o.benchmark = false;
  o.wall_timeout_ms = 120000;
  const auto ok = gen::run_sandboxed({p}, own, o);
  INFO(ok.reason << "\n" << ok.log_tail);
  CHECK(ok.accepted);
  CHECK(ok.held_out.size() == 2);
  const auto r = gen::run_sandboxed({p}, bottom_right, o);
  INFO(r.reason);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "validation");
  CHECK(r.reason.find("held-out shape") != std::string::npos);
}

TEST_CASE("sandbox: a relu kernel that ignores gl_WorkGroupID.y is rejected on the 2-D-grid shape") {
  KGT_NEED_VULKAN();
  // Right on every shape that needs at most 65535 workgroups (all the prompt's
  // and the held-out draws), wrong past that.
  const auto r = sandboxed(relu_kernel(
      "  uint j = gl_WorkGroupID.x * gl_WorkGroupSize.x + gl_LocalInvocationID.x;\n"
      "  if (j < pc.n) { float v = x_[j]; y_[j] = isnan(v) ? v : max(v, 0.0); }"));
  INFO(r.reason << "\n" << r.log_tail);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "validation");
  CHECK(r.reason.find("2-D grid shape") != std::string::npos);
  CHECK(r.grid_2d.find("workgroups") != std::string::npos);
}

// ---- the static shared-memory race check (race.hpp) -------------------------

namespace {
gen::race_report races_of(const std::string& glsl) { return gen::check_shared_races(gen::compile_glsl("race", glsl, true)); }
}  // namespace

TEST_CASE("race check: no race in any kernel the template provider emits; every missing-barrier mutant flagged") {
  // No device needed: compile and analyse only. So the mutants that survive
  // on a device where the race changes no output are still killed.
  int flagged = 0;
  std::vector<std::string> must{"gemm.missing_barrier.barrier_after_compute", "conv2d.missing_barrier.barrier_after_compute",
                                "attention.missing_barrier.q_barrier"};
  for (const auto& o : all_ops()) {
    const problem p = gen::mutation_problem(std::string(o.name));
    CAPTURE(o.name);
    for (int i : {0, 2, 4, 5}) {  // the template provider's valid samples (1 and 3 are broken on purpose)
      const auto [src, what] = gen::template_provider::variant(p, i);
      if (what.find("deliberately") != std::string::npos) continue;
      const auto r = races_of(src);
      CHECK_MESSAGE(!r.race(), what << ": " << (r.race() ? r.findings.front().text() : ""));
    }
    for (const auto& m : gen::mutants_for(p)) {
      if (m.kind != "missing_barrier") continue;
      const auto r = races_of(m.source);
      CHECK_MESSAGE(r.race(), m.name << " not flagged");
      if (r.race()) {
        ++flagged;
        MESSAGE(m.name << ": " << r.findings.front().text());
        CHECK(r.findings.front().text().find("without a barrier") != std::string::npos);
        CHECK(r.findings.front().text().find("at line ") != std::string::npos);
      }
      must.erase(std::remove(must.begin(), must.end(), m.name), must.end());
    }
  }
  CHECK_MESSAGE(must.empty(), "missing-barrier mutants not found: " << must.size());
  CHECK(flagged >= 3);
}

TEST_CASE("race check: read after write, write after read across iterations, and what it leaves alone") {
  const std::string head = R"(#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer B { float b[]; };
shared float s[64];
void main() {
  uint t = gl_LocalInvocationID.x;
)";
  // Each invocation reads its neighbour's element with no barrier.
  const auto raw = races_of(head + "  s[t] = b[t];\n  b[t] = s[(t + 1u) % 64u];\n}\n");
  REQUIRE(raw.race());
  CHECK(raw.findings.front().kind == "read after write");
  CHECK(raw.findings.front().text().find("store at line 7 reaches load at line 8 of 's'") != std::string::npos);
  // The same with a barrier: fine.
  CHECK_FALSE(races_of(head + "  s[t] = b[t];\n  barrier();\n  b[t] = s[(t + 1u) % 64u];\n}\n").race());
  // A barrier of the subgroup only does not order the workgroup.
  std::string sub_head = head;
  sub_head.insert(sub_head.find('\n') + 1, "#extension GL_KHR_shader_subgroup_basic : require\n");
  CHECK(races_of(sub_head + "  s[t] = b[t];\n  subgroupBarrier();\n  b[t] = s[(t + 1u) % 64u];\n}\n").race());
  // A loop that reads the tile and then overwrites it with the next, with a
  // barrier only after the store: write after read across the iteration.
  const auto war = races_of(head +
                            "  float acc = 0.0;\n  for (uint k = 0; k < 8u; ++k) {\n    s[t] = b[k * 64u + t];\n"
                            "    barrier();\n    acc += s[63u - t];\n  }\n  b[t] = acc;\n}\n");
  REQUIRE(war.race());
  CHECK(war.findings.front().kind == "write after read across a loop iteration");
  // An invocation's own element, through the same index variable: no report.
  CHECK_FALSE(races_of(head + "  for (uint d = t; d < 64u; d += 64u) { s[d] = b[d]; s[d] = s[d] * 2.0; }\n"
                              "  barrier();\n  b[t] = s[63u - t];\n}\n")
                    .race());
  // A constant index is everybody's element: thread 0 writes, all read.
  CHECK(races_of(head + "  if (t == 0u) s[0] = b[0];\n  b[t] = s[0];\n}\n").race());
  // A kernel without shared memory has nothing to check.
  const auto none = races_of("#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, set = 0, binding = 0) buffer B { float b[]; };\n"
                             "void main() { b[gl_GlobalInvocationID.x] = 1.0; }\n");
  CHECK(none.shared_variables == 0);
  CHECK_FALSE(none.race());
}
