// tests/gen_sandbox.cpp — the gate and its sandbox on a real Vulkan device
// (lavapipe in CI): hostile kernels are rejected with the right reason and
// never hang the run; the offline loop writes c_/r_ records and caches;
// policy::generated runs an accepted kernel; export; and mutation testing —
// every mutant of kforge's own kernels killed, no original rejected.
#include "gen/common.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <cstdlib>
#include <sstream>

using namespace kforge;
using kgt::relu_kernel;
using kgt::relu_problem;

namespace {

gen::sandbox_result sandboxed(const std::string& glsl, int dispatch_timeout_ms = 1500, int wall_timeout_ms = 60000) {
  const problem p = relu_problem();
  gen::sandbox_options o;
  o.dispatch_timeout_ms = dispatch_timeout_ms;
  o.wall_timeout_ms = wall_timeout_ms;
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
  // outlives the 1 s timeout many times over. On a CPU device the gate's
  // per-dispatch timeout is at least 20 s (gate.hpp, dispatch_timeout), which
  // the capped loop may not outlive there: the worker's 25 s deadline ends
  // it instead, the same stage.
  std::string body = "  float a = float(i);\n  while (y_[0] != -1.0) {\n";
  for (int l = 0; l < 400; ++l) body += "    a = sin(a) * 1.0001 + cos(a * 0.5);\n";
  body += "    if (i < pc.n) y_[i] = a;\n  }";
  std::string spin = relu_kernel(body);
  spin.replace(spin.find(") buffer BufY"), 13, ") volatile coherent buffer BufY");
  const auto r = sandboxed(spin, 1000, 25000);
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

TEST_CASE("records: a model's raw bytes that are not UTF-8 are stored as U+FFFD; a damaged record is reported, not hidden") {
  const auto dir = kgt::test_cache() / "records-utf8";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  gen::generation_record r;
  r.status = "rejected";
  r.stage = "extraction";
  r.reason = "no kernel in the answer";
  r.prob.op = "relu";
  set_shape(r.prob, "8x8");
  r.response_raw = std::string("here: \xff\xfe\xc0\x80 and \xe2\x82\xac fine");  // invalid, overlong, then a valid euro sign
  gen::write_record(r, dir);
  std::vector<std::string> skipped;
  const auto listed = gen::list_records('r', dir, &skipped);
  REQUIRE(listed.size() == 1);
  CHECK(skipped.empty());
  CHECK(listed[0].response_raw == "here: \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd and \xe2\x82\xac fine");
  // A file named like a record that is not one: left out, and said.
  { std::ofstream(dir / "r_relu_damaged.json") << "{\"uuid\": \"cut off"; }
  skipped.clear();
  CHECK(gen::list_records('r', dir, &skipped).size() == 1);
  REQUIRE(skipped.size() == 1);
  CHECK(skipped[0].rfind("r_relu_damaged.json: ", 0) == 0);
  CHECK(gen::valid_utf8("\xf4\x90\x80\x80") == "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");  // past U+10FFFF
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
    // gemm: M and N cross the kernel's tiles; K small on draw 0 (a wrong
    // epilogue constant cannot hide in a tolerance that grows with K) and
    // past every K tile up to 64 on draw 1.
    const problem g = shape_of("gemm", "64x48x40");
    const auto hg = gen::held_out_problems(g, seed, launch_tiles{256, 64, 32, 0});
    for (const auto& h : hg) {
      CHECK(h.dims[0] > 64);
      CHECK(h.dims[0] % 64 != 0);
      CHECK(h.dims[1] > 32);
      CHECK(h.dims[1] % 32 != 0);
      CHECK(h.dims[2] % 2 == 1);
    }
    CHECK(hg[0].dims[2] <= 23);
    CHECK(hg[1].dims[2] > 64);
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
  // A rows op: one row per workgroup, so the rows axis grows, and the rows
  // have a few columns: cheap on a CPU device too, kernels with barriers
  // included, and far inside lavapipe's 128 MiB buffers.
  const auto gs = gen::grid_problem(shape_of("softmax", "5x37"), launch_tiles{256, 0, 0, 1}, 128ull << 20);
  REQUIRE(gs.p.has_value());
  CHECK(gs.p->dims[0] > 65535);
  CHECK(gs.p->dims[1] <= 3);
  CHECK(gen::largest_operand_bytes(*gs.p) < 4.0 * 1048576);
}

namespace {
/// The axes each family calls rows (held_out_draw::row): the ones kernels
/// loop or vectorise along, whose residues the sweep must run through.
std::vector<index_t> row_axes(const problem& h) {
  const std::string& op = h.op;
  const index_t last = h.dims.back();
  if (op == "gemm") return {h.dims[1], h.dims[2]};
  if (op == "attention") return {h.dims[3], attention_traits::keys(h)};
  if (op == "conv2d") return {h.dims[3], h.dims2[1]};
  if (op == "embedding") return {h.dims[1], h.dims[1] * h.dims2.numel()};
  if (op == "kv_append") return {h.dims[3], h.dims[2] * h.dims[3], h.dims.numel()};
  if (op == "rope" || op == "swiglu" || op == "geglu" || op == "geglu_tanh") return {last / 2};
  if (op.rfind("reduce_", 0) == 0) return {h.dims[h.axis < 0 ? h.axis + h.dims.rank() : h.axis], last};
  if (family_of(h).family == "unary") return {last, h.dims.numel()};
  if (family_of(h).family == "binary") return {last, operands(h).back().dims.numel()};
  return {last};
}
}  // namespace

TEST_CASE("held-out shapes: extents of 1 grow, rows leave the prompt's bucket both ways, kv_append has rows after pos + T") {
  const launch_tiles ls256{256, 0, 0, 1};
  for (std::uint64_t seed : {1ull, 2ull, 0xdeadbeefull, 0x123456789abcdefull, 77ull}) {
    CAPTURE(seed);
    // A batch and a row count of one grow.
    for (const auto& h : gen::held_out_problems(shape_of("softmax", "1x1x37"), seed, ls256)) {
      CHECK(h.dims[0] > 1);
      CHECK(h.dims[1] > 1);
    }
    for (const auto& h : gen::held_out_problems(shape_of("relu", "1x19"), seed, ls256)) CHECK(h.dims[0] > 1);
    // Broadcasting: an axis of 1 on both sides grows on both; one that
    // broadcasts against the other side keeps broadcasting.
    for (const auto& h : gen::held_out_problems(shape_of("add", "1x5x1x33,1x5x7x33"), seed)) {
      CHECK(h.dims[0] > 1);
      CHECK(h.dims2[0] == h.dims[0]);
      CHECK(h.dims[2] == 1);
      CHECK(h.dims2[2] > 1);
      CHECK(h.dims[3] == h.dims2[3]);
      CHECK_NOTHROW((void)operands(h));
    }
    for (const auto& h : gen::held_out_problems(shape_of("mul", "1x33,33"), seed)) {
      CHECK(h.dims[0] > 1);
      CHECK(h.dims[1] == h.dims2[0]);
    }
    // Row lengths: draw 0 below the prompt's power-of-two bucket (32, 64],
    // draw 1 above it and above four local sizes.
    const auto hs = gen::held_out_problems(shape_of("softmax", "5x37"), seed, ls256);
    CHECK(hs[0].dims[1] <= 32);
    CHECK(hs[1].dims[1] > 4 * 256);
    const auto big = gen::held_out_problems(shape_of("layer_norm", "3x5000"), seed, ls256);
    CHECK(big[0].dims[1] <= 4096);
    CHECK(big[1].dims[1] > 8192);
    // topk keeps N >= k; attention's keys leave their bucket too (draw 0: S < L long, draw 1: S > L short).
    problem tk = shape_of("topk", "7x300");
    tk.attrs["k"] = 200;
    for (const auto& h : gen::held_out_problems(tk, seed, ls256)) CHECK(h.dims[1] >= 200);
    problem a = shape_of("attention", "1x2x33x16");
    a.causal = true;
    const auto ha = gen::held_out_problems(a, seed, launch_tiles{64, 0, 0, 1});
    CHECK(attention_traits::keys(ha[0]) > 256);
    CHECK(attention_traits::keys(ha[1]) <= 32);
    // kv_append: a decode step (T = 1) into a cache with no rows after it:
    // T and B grow, every draw has rows after pos + T, and draw 1 writes at a
    // new pos > 0.
    problem kv = shape_of("kv_append", "1x1x2x8,4");
    kv.attrs["pos"] = 3;
    const auto hk = gen::held_out_problems(kv, seed, ls256);
    for (const auto& h : hk) {
      CHECK(h.dims[0] > 1);
      CHECK(h.dims[1] > 1);
      CHECK(h.dims2[0] > kv_append_traits::pos(h) + h.dims[1]);
      CHECK_NOTHROW((void)operands(h));
    }
    CHECK(kv_append_traits::pos(hk[0]) == 3);
    CHECK(kv_append_traits::pos(hk[1]) > 0);
    CHECK(kv_append_traits::pos(hk[1]) != 3);
    problem kv0 = shape_of("kv_append", "2x3x2x8,3");  // pos 0 and no rows after
    CHECK(kv_append_traits::pos(gen::held_out_problems(kv0, seed, ls256)[1]) > 0);
  }
}

TEST_CASE("held-out shapes: the residue sweep hits every class modulo 2..32 of every row axis, for every op") {
  for (const auto& o : all_ops()) {
    const problem p = gen::mutation_problem(std::string(o.name));
    CAPTURE(o.name);
    for (std::uint64_t seed : {3ull, 0xfeedull}) {
      const auto rs = gen::residue_problems(p, seed, launch_tiles{128, 32, 32, 0});
      REQUIRE(rs.size() == 32);
      const std::size_t axes = row_axes(rs[0]).size();
      for (std::size_t a = 0; a < axes; ++a) {
        CAPTURE(a);
        for (index_t m : {2, 4, 8, 16, 32}) {
          std::vector<bool> hit(static_cast<std::size_t>(m), false);
          for (const auto& h : rs) hit[static_cast<std::size_t>(row_axes(h)[a] % m)] = true;
          CHECK_MESSAGE(std::all_of(hit.begin(), hit.end(), [](bool b) { return b; }), "mod " << m);
        }
      }
      // Small: the sweep is 32 shapes of one case each.
      for (const auto& h : rs) CHECK(tensor_bytes(h) < 64.0 * 1048576);
    }
    // The full draws are valid problems too, and new.
    for (const auto& h : gen::held_out_problems(p, 9, launch_tiles{128, 32, 32, 0})) {
      CHECK_NOTHROW((void)operands(h));
      CHECK(!(h.dims == p.dims && h.dims2 == p.dims2));
    }
  }
}

TEST_CASE("held-out shapes: fitted to the device's buffers, the 2-D grid shape for every op, time limits from the work") {
  // A held-out shape over the buffer limit is shrunk until it fits, each
  // axis keeping its class modulo 32 (and its oddness).
  const problem big = shape_of("relu", "4097x4099");
  const auto fit = gen::fit_to_device(big, 16.0 * 1048576, 0);
  REQUIRE(fit.has_value());
  CHECK(gen::largest_operand_bytes(*fit) + gen::buffer_slack <= 16.0 * 1048576);
  CHECK(fit->dims[0] % 32 == 4097 % 32);
  CHECK(fit->dims[1] % 32 == 4099 % 32);
  // A broadcast operand stays compatible while it shrinks.
  const auto fb = gen::fit_to_device(shape_of("add", "2001x3001,3001"), 4.0 * 1048576, 0);
  REQUIRE(fb.has_value());
  CHECK(fb->dims[1] == fb->dims2[0]);
  // A shape that fits stays as it is.
  CHECK(gen::fit_to_device(shape_of("relu", "3x7x19"), 16.0 * 1048576, 0)->dims == shape{3, 7, 19});
  // On a CPU device by the work too: a reduction's held-out shape estimated
  // at 14 s a case comes down to the limit, keeping its classes modulo 32.
  const launch_tiles rt{256, 0, 0, 0};
  const std::function<double(const problem&)> case_s = [&](const problem& q) {
    return 2 * gen::dispatch_seconds(q, rt, true) + gen::host_case_seconds(q);
  };
  problem red = shape_of("reduce_min", "7x1735x1529");
  red.axis = 1;
  CHECK(case_s(red) > 5 * gen::cpu_held_out_case_seconds);
  const auto fr = gen::fit_to_device(red, 1024.0 * 1048576, 0, case_s, gen::cpu_held_out_case_seconds);
  REQUIRE(fr.has_value());
  CHECK(case_s(*fr) <= gen::cpu_held_out_case_seconds);
  CHECK(case_s(*fr) > gen::cpu_held_out_case_seconds / 8);
  CHECK(fr->dims[1] % 32 == 1735 % 32);
  CHECK(fr->dims[2] % 32 == 1529 % 32);
  // On a GPU the host's part is the cost: a held-out reduction of ~200 MiB
  // (within the bytes the GPU allows) comes down to gpu_held_out_case_seconds.
  const std::function<double(const problem&)> gpu_case_s = [&](const problem& q) {
    return 2 * gen::dispatch_seconds(q, rt, false) + gen::host_case_seconds(q);
  };
  problem wide = shape_of("reduce_min", "7x4001x1905");
  wide.axis = 1;
  CHECK(gen::operand_bytes(wide) < gen::grid_shape_byte_limit);
  CHECK(gpu_case_s(wide) > 5 * gen::gpu_held_out_case_seconds);
  const auto fg = gen::fit_to_device(wide, 4096.0 * 1048576, gen::grid_shape_byte_limit, gpu_case_s, gen::gpu_held_out_case_seconds);
  REQUIRE(fg.has_value());
  CHECK(gpu_case_s(*fg) <= gen::gpu_held_out_case_seconds);
  CHECK(gpu_case_s(*fg) > gen::gpu_held_out_case_seconds / 8);
  CHECK(fg->dims[1] % 32 == 4001 % 32);

  // Every flat-grid op has a 2-D grid shape within lavapipe's 128 MiB at
  // kforge's usual local size, one row of a few columns per workgroup for
  // the rows ops (so kernels with barriers run it on a CPU device too).
  for (const auto& o : all_ops()) {
    const problem p = gen::mutation_problem(std::string(o.name));
    if (family_of(p).contract(p).tile_2d) continue;
    CAPTURE(o.name);
    const launch_tiles t{256, 0, 0, 0};  // the contract's default TILE: one row, or local_size elements
    const auto g = gen::grid_problem(gen::held_out_problems(p, 5, t).front(), t, 128ull << 20);
    INFO(g.reason);
    if (p.op == "swiglu" || p.op == "geglu" || p.op == "geglu_tanh" || p.op == "rope") {
      // 65536 workgroups of 256 outputs (rotated pairs) read 2 x 4 x 2^24
      // bytes: past 128 MiB whatever the other axes are. Skipped, and said.
      CHECK(g.reason.find("maxStorageBufferRange") != std::string::npos);
      continue;
    }
    REQUIRE(g.p.has_value());
    CHECK(g.workgroups > 65535);
    CHECK(gen::largest_operand_bytes(*g.p) + gen::buffer_slack <= 128.0 * 1048576);
    // One row per workgroup: rows of a few columns, a few MiB in all.
    const std::string tm = family_of(p).contract(p).tile_meaning;
    if (tm.find("(default 1)") != std::string::npos)
      CHECK(gen::operand_bytes(*g.p) < 16.0 * 1048576);
  }

  // Time limits follow the work: a tiny shape gets the floor (on a CPU
  // device at least 20 s: its cores are shared), a large one more, and a
  // CPU device about 100 times a GPU's.
  const std::chrono::milliseconds floor{5000};
  const problem tiny = shape_of("relu", "3x7x19");
  CHECK(gen::dispatch_timeout(tiny, launch_tiles{64, 0, 0, 0}, false, floor) == floor);
  CHECK(gen::dispatch_timeout(tiny, launch_tiles{64, 0, 0, 0}, true, floor) == std::chrono::milliseconds(20000));
  problem att = shape_of("attention", "3x9x300x32,2000");
  const launch_tiles at{256, 0, 0, 1};
  CHECK(gen::dispatch_timeout(att, at, true, floor) > std::chrono::milliseconds(20000));
  CHECK(gen::dispatch_seconds(att, at, true) > 50 * gen::dispatch_seconds(att, at, false));
  CHECK(gen::dispatch_timeout(att, at, false, floor) == floor);

  // The shape the gate judges instead where a device stops loops after
  // 65535 iterations: the long axis shrunk until four passes fit, its class
  // modulo 32 kept; a shape that fits already is left alone.
  const problem sm = gen::loop_fit_problem(shape_of("softmax", "3x32000"), 65535);
  CHECK(sm.dims == shape{3, 16352});
  CHECK(gen::loop_fit_problem(shape_of("softmax", "3x1000"), 65535).dims == shape{3, 1000});
  problem la = shape_of("attention", "1x2x5x64,3000");
  const problem lf = gen::loop_fit_problem(la, 65535);
  CHECK(attention_traits::keys(lf) * (64 + 1) * 4 <= 65535);
  CHECK(lf.dims == la.dims);
}

TEST_CASE("sandbox: a causal attention kernel with a bottom-right mask is rejected (held-out S < L and S > L)") {
  KGT_NEED_VULKAN();
  problem p;
  p.op = "attention";
  set_shape(p, "1x2x33x16");
  p.causal = true;
  const std::string own = gen::template_source(p);
  std::string bottom_right = own;
  // The keys a query sees: KV (the keys attended, pushed since the contract
  // carries kv_len; L before).
  const std::string keys = own.find("min(pc.KV, row + 1u)") != std::string::npos ? "pc.KV" : "pc.L";
  const std::string top_left = "min(" + keys + ", row + 1u)";
  REQUIRE(bottom_right.find(top_left) != std::string::npos);
  // Query i sees keys j <= i + L - S: the same as top-left when S = L.
  bottom_right.replace(bottom_right.find(top_left), top_left.size(),
                       "uint(clamp(int(row) + 1 + int(" + keys + ") - int(pc.S), 0, int(" + keys + ")))");
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

namespace {
gen::sandbox_result gate_of(const problem& p, const std::string& glsl) {
  gen::sandbox_options o;
  o.benchmark = false;
  o.revalidate = false;
  return gen::run_sandboxed({p}, glsl, o);  // the worker draws the held-out shapes
}
std::string replaced(std::string s, const std::string& from, const std::string& to) {
  REQUIRE_MESSAGE(s.find(from) != std::string::npos, from);
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}
/// A softmax kernel of the contract with one invocation per row: TILE rows
/// per workgroup, each invocation three passes over its row (max, sum,
/// write: cols * 3 + cols / 128 loop iterations); `write` is the value stored
/// at column j.
std::string softmax_per_invocation(const std::string& write) {
  return R"(#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 64) in;
layout(constant_id = 1) const uint TILE = 64;
layout(std430, set = 0, binding = 0) readonly buffer BufX { float x_[]; };
layout(std430, set = 0, binding = 1) buffer BufY { float y_[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } pc;
void main() {
  uint row = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * TILE + gl_LocalInvocationID.x;
  if (gl_LocalInvocationID.x >= TILE || row >= pc.rows) return;
  uint base = row * pc.cols;
  float m = -1.0 / 0.0;
  bool nan = false;
  for (uint j = 0u; j < pc.cols; ++j) {
    float v = x_[base + j];
    if (isnan(v)) nan = true;
    else m = max(m, v);
  }
  bool bad = nan || isinf(m);
  float s = 0.0;  // in chunks of 128: a plain running sum of 16000 terms is off by 1e-4
  for (uint j0 = 0u; j0 < pc.cols; j0 += 128u) {
    float c = 0.0;
    for (uint j = j0; j < min(pc.cols, j0 + 128u); ++j) c += exp(x_[base + j] - m);
    s += c;
  }
  float inv = 1.0 / s;
  for (uint j = 0u; j < pc.cols; ++j) y_[base + j] = bad ? uintBitsToFloat(0x7fc00000u) : )" + write + R"(;
}
)";
}
}  // namespace

TEST_CASE("sandbox: wrong kernels the old held-out shapes let through are rejected on a held-out shape, right ones accepted") {
  KGT_NEED_VULKAN();
  // softmax: kforge's own kernel (barriers, one row per workgroup) is
  // accepted, its 2-D grid shape validated on every device (rows of a few
  // columns); the same kernel reading only the first local-size columns is
  // right on the prompt's 37 columns and wrong on the held-out rows past four
  // local sizes; and one that takes its row from gl_WorkGroupID.x alone is
  // wrong on the grid shape.
  const problem sm = shape_of("softmax", "5x37");
  const std::string own = gen::template_source(sm);
  const auto ok = gate_of(sm, own);
  INFO(ok.reason << "\n" << ok.log_tail);
  CHECK(ok.accepted);
  CHECK(ok.grid_2d.find("workgroups") != std::string::npos);
  CHECK(ok.gate_json.find("\"residues\"") != std::string::npos);
  const auto short_rows = gate_of(sm, replaced(own, "j < pc.cols", "j < min(pc.cols, gl_WorkGroupSize.x)"));
  INFO(short_rows.reason);
  CHECK_FALSE(short_rows.accepted);
  CHECK(short_rows.stage == "validation");
  CHECK(short_rows.reason.find("held-out shape") != std::string::npos);
  const auto flat_x = gate_of(sm, replaced(own, "uint row = kf_group_id();", "uint row = gl_WorkGroupID.x;"));
  INFO(flat_x.reason);
  CHECK_FALSE(flat_x.accepted);
  CHECK(flat_x.reason.find("2-D grid shape") != std::string::npos);

  // relu with a vec4 path whose tail skips every other element when two
  // are left (n ≡ 2 mod 4): every full draw has odd extents, so only the
  // residue sweep's shapes meet it.
  const auto vec4 = sandboxed(R"(#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 64) in;
layout(constant_id = 1) const uint TILE = 256;
layout(std430, set = 0, binding = 0) readonly buffer BufX { float x_[]; };
layout(std430, set = 0, binding = 1) buffer BufY { float y_[]; };
layout(push_constant) uniform Push { uint n; float slope; } pc;
float r(float v) { return isnan(v) ? v : max(v, 0.0); }
void main() {
  uint i = ((gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x) * 4u;
  if (i + 4u <= pc.n) {
    vec4 v = vec4(x_[i], x_[i + 1u], x_[i + 2u], x_[i + 3u]);
    y_[i] = r(v.x); y_[i + 1u] = r(v.y); y_[i + 2u] = r(v.z); y_[i + 3u] = r(v.w);
  } else if (i < pc.n) {
    uint left = pc.n - i;
    for (uint k = 0u; k < left; k += (left == 2u ? 2u : 1u)) y_[i + k] = r(x_[i + k]);
  }
}
)");
  INFO(vec4.reason);
  CHECK_FALSE(vec4.accepted);
  CHECK(vec4.reason.find("residue sweep") != std::string::npos);

  // kv_append that clears the cache rows after the new ones: right where the
  // prompt's cache ends at pos + T, wrong on every held-out shape.
  problem kv = shape_of("kv_append", "2x3x2x5,8");
  kv.attrs["pos"] = 5;
  const auto kv_ok = gate_of(kv, gen::template_source(kv));
  INFO(kv_ok.reason << "\n" << kv_ok.log_tail);
  CHECK(kv_ok.accepted);
  const auto clears = gate_of(kv, R"(#version 450
layout(local_size_x_id = 0) in;
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer BufX { float x_[]; };
layout(std430, set = 0, binding = 1) buffer BufC { float c_[]; };
layout(push_constant) uniform Push { uint B, N, HD, Lmax, pos; } pc;
void main() {
  uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (i >= pc.B * pc.N * pc.HD) return;
  uint e = i % pc.HD, t = (i / pc.HD) % pc.N, b = i / (pc.HD * pc.N);
  c_[(b * pc.Lmax + pc.pos + t) * pc.HD + e] = x_[i];
  if (t == pc.N - 1u)
    for (uint r = pc.pos + pc.N; r < pc.Lmax; ++r) c_[(b * pc.Lmax + r) * pc.HD + e] = 0.0;
}
)");
  INFO(clears.reason);
  CHECK_FALSE(clears.accepted);
  CHECK(clears.stage == "validation");
  CHECK(clears.reason.find("held-out shape") != std::string::npos);
}

TEST_CASE("sandbox: a div kernel that flushes subnormal inputs on purpose is rejected where the device keeps them") {
  KGT_NEED_VULKAN();
  bool flushes = true;
  try {
    vulkan::context ctx;
    flushes = vulkan::flushes_subnormals(ctx);
    MESSAGE("subnormals on " << ctx.info().name << ": " << std::string(flushes ? "flushed" : "kept"));
  } catch (const vulkan::no_device&) {
    return;
  }
  const problem p = shape_of("div", "7x33");
  const std::string own = gen::template_source(p);
  const auto ok = gate_of(p, own);
  INFO(ok.reason << "\n" << ok.log_tail);
  CHECK(ok.accepted);
  CHECK(ok.gate_json.find(flushes ? "\"subnormals\":\"flushed by the device" : "\"subnormals\":\"kept by the device") !=
        std::string::npos);
  const auto ftz = gate_of(p, replaced(own, "float kf_div(float a, float b) { return",
                                       "float kf_ftz(float v) {  // a zero of v's sign (v * 0.0 may fold to +0)\n"
                                       "  return abs(v) < 1.17549435e-38 ? uintBitsToFloat(floatBitsToUint(v) & 0x80000000u) : v;\n"
                                       "}\n"
                                       "float kf_div(float a, float b) { a = kf_ftz(a); b = kf_ftz(b); return"));
  INFO(ftz.reason);
  if (flushes) {
    CHECK(ftz.accepted);  // what the device itself computes
  } else {
    CHECK_FALSE(ftz.accepted);
    CHECK(ftz.stage == "validation");
    CHECK(ftz.reason.find("case 'subnormal'") != std::string::npos);
  }
}

TEST_CASE("sandbox: lavapipe's loop limit does not reject a correct kernel; a wrong one is still rejected") {
  KGT_NEED_VULKAN();
  // One invocation per row, three passes over 32000 columns: 96000 loop
  // iterations, past lavapipe's 65535 per invocation (it ends the loops and
  // the invocation writes a wrong row). The gate judges such a shape on the
  // same rows shrunk until four passes fit, and says so.
  const problem p = shape_of("softmax", "2x32000");
  const auto ok = gate_of(p, softmax_per_invocation("exp(x_[base + j] - m) * inv"));
  INFO(ok.reason << "\n" << ok.log_tail);
  CHECK(ok.accepted);
  try {
    vulkan::context ctx;
    const std::uint64_t limit = vulkan::loop_iteration_limit(ctx);
    MESSAGE("loop limit of " << ctx.info().name << ": " << limit);
    if (limit > 0) {
      CHECK(ok.reason.find("judged on softmax [2x16352] f32 instead of softmax [2x32000] f32") != std::string::npos);
      CHECK(ok.reason.find("loop limit of " + std::to_string(limit) + " iterations per invocation") != std::string::npos);
      CHECK(ok.gate_json.find("\"instead_of\"") != std::string::npos);
    } else {
      CHECK(ok.reason.find("instead") == std::string::npos);
    }
  } catch (const vulkan::no_device&) {
  }
  // Wrong in its last column: wrong on the shrunk shape too.
  const auto bad = gate_of(p, softmax_per_invocation("(j + 1u == pc.cols ? 0.5 : exp(x_[base + j] - m) * inv)"));
  INFO(bad.reason);
  CHECK_FALSE(bad.accepted);
  CHECK(bad.stage == "validation");
}

TEST_CASE("sandbox: a reduction whose lanes past the row's end read shared slots nothing wrote is rejected") {
  KGT_NEED_VULKAN();
  // A tree reduction over one slot per invocation: rows of 33 columns leave
  // slots 33..255 of a 256-wide workgroup unwritten. They hold zeros on every
  // device tried, so the sums come out right; the gate fills every float
  // shared variable with +Inf, -Inf and NaN before the kernel runs.
  const problem p = shape_of("reduce_sum", "7x33");
  const std::string own = gen::template_source(p);
  auto tree = [&](const std::string& store) {
    std::string k = replaced(own, "void main() {", "shared float kf_tree[gl_WorkGroupSize.x];\nvoid main() {");
    return replaced(k, "  s = kf_wg_sum(s);\n",
                    "  uint t = gl_LocalInvocationID.x;\n" + store +
                        "  barrier();\n"
                        "  for (uint k = gl_WorkGroupSize.x / 2u; k > 0u; k >>= 1) {\n"
                        "    if (t < k) kf_tree[t] += kf_tree[t + k];\n"
                        "    barrier();\n"
                        "  }\n"
                        "  s = kf_tree[0];\n");
  };
  const auto ok = gate_of(p, tree("  kf_tree[t] = s;\n"));
  INFO(ok.reason << "\n" << ok.log_tail);
  CHECK(ok.accepted);
  CHECK(ok.gate_json.find("\"shared_fill\":{\"filled\":[\"kf_tree\"") != std::string::npos);
  const auto bad = gate_of(p, tree("  if (t < pc.n) kf_tree[t] = s;  // the lanes past the row's end store nothing\n"));
  INFO(bad.reason);
  CHECK_FALSE(bad.accepted);
  CHECK(bad.stage == "validation");
  CHECK(bad.reason.find("reads shared memory no invocation wrote") != std::string::npos);
}

// The static checks (race.hpp: the race check, float atomics, RelaxedPrecision)
// and the device-limit check have their own executable: gen_race.cpp.
