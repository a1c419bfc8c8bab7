// tests/gen_race.cpp — the gate's static checks (gen/race.hpp) and its
// device-limit check (gen/runner.hpp, check_contract): for each class of
// wrong kernel, one is rejected with the class in the reason and a correct
// one beside it is accepted. Everything but the last case needs no device:
// compile with glslang and analyse. kforge's own kernels (the template
// provider's, every knob set) pass every check, and every missing-barrier
// mutant of them is flagged.
#include "gen/common.hpp"

#include <algorithm>
#include <string>
#include <vector>

using namespace kforge;
using kgt::relu_kernel;
using kgt::relu_problem;

namespace {

gen::race_report races_of(const std::string& glsl) { return gen::check_shared_races(gen::compile_glsl("race", glsl, true)); }

/// A compute kernel with 64 invocations, a storage buffer b, shared s[128]
/// and t = gl_LocalInvocationID.x, `body` as the rest of main().
std::string kernel(const std::string& body, const std::string& decls = "") {
  return "#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, set = 0, binding = 0) buffer B { float b[]; };\n"
         "shared float s[128];\n" +
         decls + "void main() {\n  uint t = gl_LocalInvocationID.x;\n" + body + "\n}\n";
}

std::string all_findings(const gen::race_report& r) {
  std::string s;
  for (const auto& f : r.findings) s += f.text() + "\n";
  return s;
}

/// The report has a finding whose text holds `what`.
bool reports(const gen::race_report& r, const std::string& what) {
  return std::any_of(r.findings.begin(), r.findings.end(), [&](const auto& f) { return f.text().find(what) != std::string::npos; });
}


/// The interface_error check_contract throws for a relu kernel, or "" when it passes.
std::string contract_error(const std::string& glsl, const gen::device_limits& lim = {}) {
  try {
    (void)gen::check_contract(relu_problem(), gen::compile_glsl("contract", glsl), lim);
    return "";
  } catch (const vulkan::interface_error& e) {
    return e.what();
  }
}

/// relu_kernel with `line` inserted after #version (an extension, a declaration).
std::string relu_with(const std::string& line, const std::string& body) {
  std::string k = relu_kernel(body);
  k.insert(k.find('\n') + 1, line + "\n");
  return k;
}

const std::string relu_body = "  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0); }";

}  // namespace

TEST_CASE("race check: no race in any kernel the template provider emits; every missing-barrier mutant flagged") {
  // No device needed: compile and analyse only. So the mutants that survive
  // on a device where the race changes no output are still killed.
  int flagged = 0, templates = 0;
  std::vector<std::string> must{"gemm.missing_barrier.barrier_after_compute", "conv2d.missing_barrier.barrier_after_compute",
                                "attention.missing_barrier.q_barrier"};
  for (const auto& o : all_ops()) {
    const problem p = gen::mutation_problem(std::string(o.name));
    CAPTURE(o.name);
    for (int i : {0, 2, 4, 5}) {  // the template provider's valid samples (1 and 3 are broken on purpose)
      const auto [src, what] = gen::template_provider::variant(p, i);
      if (what.find("deliberately") != std::string::npos) continue;
      ++templates;
      const auto r = races_of(src);
      CHECK_MESSAGE(!r.race(), what << ": " << all_findings(r));
      // Nor do they use anything the contract check refuses.
      const auto refused = gen::static_refusals(gen::compile_glsl("template", src));
      CHECK_MESSAGE(refused.empty(), what << ": " << (refused.empty() ? "" : refused.front()));
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
  MESSAGE(templates << " template kernels, " << flagged << " missing-barrier mutants flagged");
  CHECK_MESSAGE(must.empty(), "missing-barrier mutants not found: " << must.size());
  CHECK(flagged >= 3);
  CHECK(templates > 30);
}

TEST_CASE("race check: read after write, write after read across iterations, and what it leaves alone") {
  // Each invocation reads its neighbour's element with no barrier.
  const auto raw = races_of(kernel("  s[t] = b[t];\n  b[t] = s[(t + 1u) % 64u];"));
  REQUIRE(raw.race());
  CHECK(raw.findings.front().kind == "read after write within a step");
  CHECK(raw.findings.front().text().find("shared memory race (read after write within a step): store at line 7 reaches "
                                         "load at line 8 of 's'") != std::string::npos);
  // The same with a barrier: fine.
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  b[t] = s[(t + 1u) % 64u];")).race());
  // A barrier of the subgroup only does not order the workgroup.
  std::string sub = kernel("  s[t] = b[t];\n  subgroupBarrier();\n  b[t] = s[(t + 1u) % 64u];");
  sub.insert(sub.find('\n') + 1, "#extension GL_KHR_shader_subgroup_basic : require\n");
  CHECK(races_of(sub).race());
  // A loop that reads the tile and then overwrites it with the next, with a
  // barrier only after the store: write after read across the iteration.
  const auto war = races_of(kernel("  float acc = 0.0;\n  for (uint k = 0; k < 8u; ++k) {\n    s[t] = b[k * 64u + t];\n"
                                   "    barrier();\n    acc += s[63u - t];\n  }\n  b[t] = acc;"));
  REQUIRE(war.race());
  CHECK(war.findings.front().kind == "write after read across a loop iteration");
  // An invocation's own element, through the same index variable: no report.
  CHECK_FALSE(races_of(kernel("  for (uint d = t; d < 128u; d += 64u) { s[d] = b[d]; s[d] = s[d] * 2.0; }\n"
                              "  barrier();\n  b[t] = s[127u - t];"))
                  .race());
  // A constant index is everybody's element: thread 0 writes, all read.
  CHECK(races_of(kernel("  if (t == 0u) s[0] = b[0];\n  b[t] = s[0];")).race());
  // ... and with a barrier between, everybody reads what thread 0 wrote.
  CHECK_FALSE(races_of(kernel("  if (t == 0u) s[0] = b[0];\n  barrier();\n  b[t] = s[0];")).race());
  // A kernel without shared memory has nothing to check.
  const auto none = races_of("#version 450\nlayout(local_size_x = 64) in;\nlayout(std430, set = 0, binding = 0) buffer B { float b[]; };\n"
                             "void main() { b[gl_GlobalInvocationID.x] = 1.0; }\n");
  CHECK(none.shared_variables == 0);
  CHECK_FALSE(none.race());
}

TEST_CASE("race check: an index through a local variable is followed to its value") {
  const std::string cls = "shared memory race (read after write within a step)";
  // j = (t + 1) % 64 in a local: the neighbour's element, not the invocation's own.
  const auto neighbour = races_of(kernel("  s[t] = b[t];\n  uint j = (t + 1u) % 64u;\n  b[t] = s[j];"));
  INFO(all_findings(neighbour));
  CHECK(reports(neighbour, cls));
  // One variable, given another value between the two accesses.
  const auto reassigned = races_of(kernel("  uint j = t;\n  s[j] = b[t];\n  j = (t + 1u) % 64u;\n  b[t] = s[j];"));
  CHECK(reports(reassigned, cls));
  // A loop variable that walks into the neighbours' elements (j = (j + 1) % 64).
  CHECK(races_of(kernel("  uint j = t;\n  float acc = 0.0;\n  for (uint k = 0u; k < 4u; ++k) {\n    s[j] = b[k * 64u + t];\n"
                        "    acc += s[j];\n    j = (j + 1u) % 64u;\n  }\n  b[t] = acc;"))
            .race());
  // Either the invocation's element or its neighbour's, by the data.
  CHECK(reports(races_of(kernel("  uint j = b[t] > 0.0 ? t : (t + 1u) % 64u;\n  s[j] = b[t];\n  b[t] = s[j];")), cls));
  // Two invocations on one element (t / 2), and an element chosen by the data.
  CHECK(reports(races_of(kernel("  s[t / 2u] = b[t];\n  b[t] = s[t / 2u];")), cls));
  CHECK(reports(races_of(kernel("  uint j = t + uint(b[t]);\n  s[j] = 1.0;\n  b[t] = s[j];")), cls));

  // Correct beside them: the same value through a local, a row and column of
  // the id, and a chunk of the invocation's own.
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  uint j = t;\n  b[t] = s[j] * 2.0;")).race());
  CHECK_FALSE(races_of(kernel("  uint r = t / 8u, c = t % 8u;\n  s2[r][c] = b[t];\n  b[t] = s2[r][c] * 2.0;",
                              "shared float s2[8][8];\n"))
                  .race());
  CHECK_FALSE(races_of(kernel("  uint r = t / 8u, c = t % 8u;\n  s[r * 8u + c] = b[t];\n  b[t] = s[t] * 2.0;")).race());
  CHECK(races_of(kernel("  uint r = t / 8u, c = t % 8u;\n  s2[r][c] = b[t];\n  b[t] = s2[c][r];", "shared float s2[8][8];\n"))
            .race());
  CHECK_FALSE(races_of(kernel("  for (uint j = 0u; j < 2u; ++j) s[t * 2u + j] = b[t * 2u + j];\n  float acc = 0.0;\n"
                              "  for (uint j = 0u; j < 2u; ++j) acc += s[t * 2u + j];\n  b[t] = acc;"))
                  .race());
  // A strided loop's first values are in the invocation's orbit; its neighbour's are not.
  CHECK_FALSE(races_of(kernel("  for (uint d = t; d < 128u; d += 64u) s[d] = b[d];\n  b[t] = s[t] + s[t + 64u];")).race());
  CHECK(races_of(kernel("  for (uint d = t; d < 128u; d += 64u) s[d] = b[d];\n  b[t] = s[t] + s[t + 1u];")).race());
  // ... but chunks of 2 written 3 wide overlap the next invocation's.
  CHECK(races_of(kernel("  for (uint j = 0u; j < 3u; ++j) s[t * 2u + j] = b[t * 2u + j];\n  float acc = 0.0;\n"
                        "  for (uint j = 0u; j < 2u; ++j) acc += s[t * 2u + j];\n  b[t] = acc;"))
            .race());
}

TEST_CASE("race check: write after read within a step, and the guards that keep a tree reduction apart") {
  const std::string war = "shared memory race (write after read within a step)";
  // The tree reduction without its `if (t < k)`: invocation t + k writes what t reads.
  const auto unguarded = races_of(kernel("  s[t] = b[t];\n  s[t + 64u] = 0.0;\n  barrier();\n"
                                         "  for (uint k = 32u; k > 0u; k >>= 1) {\n    s[t] += s[t + k];\n    barrier();\n  }\n"
                                         "  if (t == 0u) b[0] = s[0];"));
  INFO(all_findings(unguarded));
  REQUIRE(unguarded.race());
  CHECK(unguarded.findings.front().text().find(war) != std::string::npos);
  CHECK(unguarded.findings.front().text().find("load at line 11 reaches store at line 11 of 's'") != std::string::npos);
  // A guard that does not separate them.
  CHECK(reports(races_of(kernel("  s[t] = b[t];\n  s[t + 64u] = 0.0;\n  barrier();\n"
                                "  for (uint k = 32u; k > 0u; k >>= 1) {\n    if (t + k < 64u) s[t] += s[t + k];\n    barrier();\n  }\n"
                                "  if (t == 0u) b[0] = s[0];")),
                war));
  // The interleaved reduction with t % k instead of t % (2 k).
  CHECK(reports(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 1u; k < 64u; k *= 2u) {\n"
                                "    if (t % k == 0u) s[t] += s[t + k];\n    barrier();\n  }\n  if (t == 0u) b[0] = s[0];")),
                war));
  // The barrier left out of the loop: across the iteration.
  CHECK(reports(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 32u; k > 0u; k >>= 1) {\n"
                                "    if (t < k) s[t] += s[t + k];\n  }\n  barrier();\n  if (t == 0u) b[0] = s[0];")),
                "across a loop iteration"));
  // The max of a softmax read by all, then overwritten by the sum with no barrier between.
  CHECK(reports(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 32u; k > 0u; k >>= 1) {\n"
                                "    if (t < k) s[t] = max(s[t], s[t + k]);\n    barrier();\n  }\n  float m = s[0];\n"
                                "  s[t] = exp(b[t] - m);\n  barrier();\n  b[t] = s[t] / s[0];")),
                war));
  // A ping-pong buffer whose two halves are one.
  CHECK(races_of(kernel("  float acc = 0.0;\n  uint buf = 0u;\n  s[t] = b[t];\n  barrier();\n  for (uint k = 1u; k < 8u; ++k) {\n"
                        "    s[buf * 64u + t] = b[k * 64u + t];\n    acc += s[buf * 64u + (63u - t)];\n    barrier();\n"
                        "    buf = 1u - buf;\n  }\n  b[t] = acc;"))
            .race());

  // Correct beside them: kforge's guarded reduction, with a loop bound and
  // with constant bounds; the interleaved reductions; ping-pong buffers.
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 32u; k > 0u; k >>= 1) {\n"
                              "    if (t < k) s[t] += s[t + k];\n    barrier();\n  }\n  if (t == 0u) b[0] = s[0];"))
                  .race());
  // ... with the guard in a short-circuit && (glslang makes a phi of it).
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 32u; k > 0u; k >>= 1) {\n"
                              "    if (t < k && t + k < uint(b.length())) s[t] += s[t + k];\n    barrier();\n  }\n"
                              "  if (t == 0u) b[0] = s[0];"))
                  .race());
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = gl_WorkGroupSize.x / 2u; k > 0u; k /= 2u) {\n"
                              "    if (t < k) s[t] = max(s[t], s[t + k]);\n    barrier();\n  }\n  if (t == 0u) b[0] = s[0];"))
                  .race());
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  if (t < 32u) s[t] += s[t + 32u];\n  barrier();\n"
                              "  if (t < 16u) s[t] += s[t + 16u];\n  barrier();\n  if (t == 0u) b[0] = s[0] + s[1];"))
                  .race());
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 1u; k < 64u; k *= 2u) {\n"
                              "    if (t % (2u * k) == 0u) s[t] += s[t + k];\n    barrier();\n  }\n  if (t == 0u) b[0] = s[0];"))
                  .race());
  CHECK_FALSE(races_of(kernel("  s[t] = b[t];\n  barrier();\n  for (uint k = 1u; k < 64u; k <<= 1) {\n    uint j = 2u * k * t;\n"
                              "    if (j < 64u) s[j] += s[j + k];\n    barrier();\n  }\n  if (t == 0u) b[0] = s[0];"))
                  .race());
  CHECK_FALSE(races_of(kernel("  float acc = 0.0;\n  uint buf = 0u;\n  s[t] = b[t];\n  barrier();\n  for (uint k = 1u; k < 8u; ++k) {\n"
                              "    s[(1u - buf) * 64u + t] = b[k * 64u + t];\n    acc += s[buf * 64u + (63u - t)];\n"
                              "    barrier();\n    buf = 1u - buf;\n  }\n  b[t] = acc;"))
                  .race());
  // The work-efficient scan's up-sweep (odd and even multiples of the offset), and a wrong one.
  const std::string up = "  s[2u * t] = b[2u * t];\n  s[2u * t + 1u] = b[2u * t + 1u];\n  uint off = 1u;\n"
                         "  for (uint d = 64u; d > 0u; d >>= 1) {\n    barrier();\n    if (t < d) {\n"
                         "      uint ai = off * (2u * t + 1u) - 1u;\n      uint bi = off * (2u * t + 2u) - 1u;\n"
                         "      s[bi] += s[ai];\n    }\n    off *= 2u;\n  }\n  barrier();\n  b[t] = s[t];";
  CHECK_FALSE(races_of(kernel(up)).race());
  std::string up_wrong = up;
  up_wrong.replace(up_wrong.find("2u * t + 2u"), 11, "2u * t + 3u");
  CHECK(reports(races_of(kernel(up_wrong)), war));
  // The naive scan, double-buffered: reads s[pin][t - off] under t >= off, writes the other half.
  CHECK_FALSE(races_of(kernel("  uint pin = 0u;\n  s[t] = b[t];\n  barrier();\n  for (uint off = 1u; off < 64u; off <<= 1) {\n"
                              "    uint pout = 1u - pin;\n    float v = s[pin * 64u + t];\n"
                              "    if (t >= off) v += s[pin * 64u + t - off];\n    s[pout * 64u + t] = v;\n    barrier();\n"
                              "    pin = pout;\n  }\n  b[t] = s[pin * 64u + t];"))
                  .race());
  CHECK(reports(races_of(kernel("  uint pin = 0u;\n  s[t] = b[t];\n  barrier();\n  for (uint off = 1u; off < 64u; off <<= 1) {\n"
                                "    float v = s[pin * 64u + t];\n    if (t >= off) v += s[pin * 64u + t - off];\n"
                                "    s[pin * 64u + t] = v;\n    barrier();\n  }\n  b[t] = s[pin * 64u + t];")),
                war));
  // A tiled gemm that loads the next tile into the other buffer while it multiplies this one.
  const std::string gemm = R"(#version 450
layout(local_size_x = 256) in;
layout(std430, set = 0, binding = 0) readonly buffer A { float a[]; };
layout(std430, set = 0, binding = 1) readonly buffer Bb { float bm[]; };
layout(std430, set = 0, binding = 2) buffer C { float c[]; };
layout(push_constant) uniform P { uint M, N, K; } pc;
const uint T = 16u;
shared float As[2][T][T];
shared float Bs[2][T][T];
void main() {
  uint tx = gl_LocalInvocationID.x % T, ty = gl_LocalInvocationID.x / T;
  uint row = gl_WorkGroupID.y * T + ty, col = gl_WorkGroupID.x * T + tx;
  float acc = 0.0;
  uint tiles = (pc.K + T - 1u) / T;
  As[0][ty][tx] = (row < pc.M && tx < pc.K) ? a[row * pc.K + tx] : 0.0;
  Bs[0][ty][tx] = (ty < pc.K && col < pc.N) ? bm[ty * pc.N + col] : 0.0;
  barrier();
  for (uint t = 0u; t < tiles; ++t) {
    uint cur = t & 1u, nxt = (t + 1u) & 1u;
    if (t + 1u < tiles) {
      uint k0 = (t + 1u) * T;
      As[nxt][ty][tx] = (row < pc.M && k0 + tx < pc.K) ? a[row * pc.K + k0 + tx] : 0.0;
      Bs[nxt][ty][tx] = (k0 + ty < pc.K && col < pc.N) ? bm[(k0 + ty) * pc.N + col] : 0.0;
    }
    for (uint k = 0u; k < T; ++k) acc += As[cur][ty][k] * Bs[cur][k][tx];
    barrier();
  }
  if (row < pc.M && col < pc.N) c[row * pc.N + col] = acc;
}
)";
  const auto g = races_of(gemm);
  CHECK_MESSAGE(!g.race(), all_findings(g));
  std::string same_buffer = gemm;
  same_buffer.replace(same_buffer.find("nxt = (t + 1u) & 1u"), 19, "nxt = t & 1u");
  CHECK(races_of(same_buffer).race());
}

TEST_CASE("race check: shared memory read before anything wrote it") {
  const std::string cls = "reads shared memory nothing wrote";
  const auto never = races_of(kernel("  b[t] = s[t];"));
  REQUIRE(never.race());
  CHECK(never.findings.front().text().find(cls + ": load at line 7 of 's'") != std::string::npos);
  // The first iteration reads the tile the end of the loop loads.
  const auto first = races_of(kernel("  float acc = 0.0;\n  for (uint k = 0u; k < 4u; ++k) {\n    acc += s[t];\n    barrier();\n"
                                     "    s[t] = b[k * 64u + t];\n    barrier();\n  }\n  b[t] = acc;"));
  CHECK(reports(first, cls));
  // A variable read that only another variable's store comes before.
  CHECK(reports(races_of(kernel("  s[t] = b[t];\n  barrier();\n  b[t] = s[t] + r[t];", "shared float r[64];\n")), cls));

  // Correct beside them: loaded before the loop; written by one invocation
  // behind a barrier; written in a loop before the read.
  CHECK_FALSE(races_of(kernel("  float acc = 0.0;\n  s[t] = b[t];\n  barrier();\n  for (uint k = 1u; k < 4u; ++k) {\n"
                              "    acc += s[63u - t];\n    barrier();\n    s[t] = b[k * 64u + t];\n    barrier();\n  }\n  b[t] = acc;"))
                  .race());
  CHECK_FALSE(races_of(kernel("  if (t == 0u) s[0] = b[0];\n  barrier();\n  b[t] = s[0];")).race());
  CHECK_FALSE(races_of(kernel("  for (uint d = t; d < 128u; d += 64u) s[d] = 0.0;\n  barrier();\n  b[t] = s[127u - t];")).race());
}

TEST_CASE("static rules: a broken module is a shader_error naming the word, never a read past its end") {
  // One reader (vulkan/spirv/module.hpp) serves every rule: each refuses the same broken words the same way.
  const std::vector<std::uint32_t> good = gen::compile_glsl("race", kernel("  s[t] = b[t];\n  barrier();\n  b[t] = s[63u - t];"), true);
  REQUIRE(!races_of(kernel("  s[t] = b[t];\n  barrier();\n  b[t] = s[63u - t];")).race());
  auto refused = [](const std::vector<std::uint32_t>& w, const std::string& word) {
    for (int rule = 0; rule < 3; ++rule) {
      CAPTURE(rule);
      try {
        if (rule == 0) (void)gen::check_shared_races(w);
        if (rule == 1) (void)gen::static_refusals(w);
        if (rule == 2) (void)gen::shared_memory_use(w);
        FAIL_CHECK("accepted broken words");
      } catch (const vulkan::shader_error& e) {
        CHECK_MESSAGE(std::string(e.what()).find("malformed at word " + word) != std::string::npos, e.what());
      }
    }
  };
  auto overrun = good;
  overrun.back() = (200u << 16) | 56u;  // OpFunctionEnd claiming 200 words
  refused(overrun, std::to_string(good.size() - 1));
  auto zero = good;
  zero[5] &= 0xffffu;  // the first instruction's word count 0
  refused(zero, "5");
  refused(std::vector<std::uint32_t>(good.begin(), good.begin() + 3), "0");
}

TEST_CASE("shared fill: every float component of every shared variable, the kernel's main after a barrier") {
  // Arrays of arrays, vectors, structs with a matrix, an inner array and an
  // integer member, a lone float, a float16 array; integers are left.
  const std::string glsl = kernel(
      "  s[t] = 1.0; a[t % 4u][t % 33u] = 2.0; v[t % 16u] = vec4(3.0); c[t % 8u].x = 4.0; one = 5.0; h[t] = float16_t(6.0);\n"
      "  cnt = t;\n  barrier();\n  b[t] = s[t] + a[0][t % 33u] + v[0].x + c[0].m[1][0] + c[0].arr[2] + one + float(h[t]) + float(cnt);",
      "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n"
      "struct P { float x; uint i; mat2 m; float arr[3]; };\n"
      "shared float a[4][33];\nshared vec4 v[16];\nshared P c[8];\nshared uint cnt;\nshared float one;\nshared float16_t h[64];\n");
  const gen::shared_fill f = gen::fill_shared_memory(glsl, gen::compile_glsl("fill", glsl));
  INFO(f.glsl);
  std::vector<std::string> filled = f.filled;
  std::sort(filled.begin(), filled.end());
  CHECK(filled == std::vector<std::string>{"a", "c", "h", "one", "s", "v"});
  std::string left;
  for (const auto& l : f.left) left += l + "\n";
  CHECK(left.find("cnt: not a float") != std::string::npos);
  CHECK(left.find(".i: not a float") != std::string::npos);
  // It compiles, renames the kernel's main, and fills before a barrier.
  const auto spirv = gen::compile_glsl("filled", f.glsl);
  CHECK_FALSE(spirv.empty());
  CHECK(f.glsl.find("#version 450\n#define main kforge_user_main\n") == 0);
  CHECK(f.glsl.find("  barrier();\n  kforge_user_main();\n}\n") != std::string::npos);
  CHECK(f.glsl.find("kforge_x1 = kforge_r % uint(a[0].length())") != std::string::npos);
  CHECK(f.glsl.find(".m[1] = vec2(kforge_fill32(") != std::string::npos);
  CHECK(f.glsl.find("float16_t(kforge_fill16(") != std::string::npos);
  // The zero fill for telling a failure's cause; nothing to fill: no source.
  CHECK(gen::fill_shared_memory(glsl, spirv, gen::fill_value::zeros).glsl.find("return 0.0;") != std::string::npos);
  const std::string plain = relu_kernel("  if (i < pc.n) y_[i] = max(x_[i], 0.0);");
  CHECK(gen::fill_shared_memory(plain, gen::compile_glsl("plain", plain)).glsl.empty());
}

TEST_CASE("contract check: float atomics are refused, integer atomics are not") {
  // An atomic float add: the sum's bits depend on the order.
  const std::string fadd = contract_error(relu_with("#extension GL_EXT_shader_atomic_float : require",
                                                    "  if (i < pc.n) atomicAdd(y_[0], x_[i]);"));
  INFO(fadd);
  CHECK(fadd.find("float atomic: atomicAdd on a float ('BufY.y_')") != std::string::npos);
  // On shared memory too, and the min/max forms.
  const std::string fmax = contract_error(relu_with("#extension GL_EXT_shader_atomic_float2 : require\nshared float m;",
                                                    "  if (gl_LocalInvocationID.x == 0u) m = 0.0;\n  barrier();\n"
                                                    "  if (i < pc.n) atomicMax(m, x_[i]);\n  barrier();\n"
                                                    "  if (i < pc.n) y_[i] = m;"));
  CHECK(fmax.find("float atomic: atomicMax on a float ('m')") != std::string::npos);
  // The compare-exchange loop of an atomic float add, on the bits as uint.
  const std::string cas = contract_error(relu_with("shared uint bits;",
                                                   "  if (gl_LocalInvocationID.x == 0u) bits = 0u;\n  barrier();\n"
                                                   "  uint old = bits, expected;\n  do {\n    expected = old;\n"
                                                   "    old = atomicCompSwap(bits, expected, floatBitsToUint(uintBitsToFloat(expected) + x_[i]));\n"
                                                   "  } while (old != expected);\n  barrier();\n  if (i < pc.n) y_[i] = uintBitsToFloat(bits);"));
  CHECK(cas.find("float atomic: a compare-exchange loop on float bits ('bits'") != std::string::npos);
  // Integer atomics (a count, a max of non-negative float bits, an integer CAS loop) are allowed.
  const std::string ints = contract_error(relu_with("shared uint cnt;\nshared uint mx;",
                                                    "  if (gl_LocalInvocationID.x == 0u) { cnt = 0u; mx = 0u; }\n  barrier();\n"
                                                    "  atomicAdd(cnt, 1u);\n  if (i < pc.n) atomicMax(mx, floatBitsToUint(abs(x_[i])));\n"
                                                    "  uint old = cnt, expected;\n  do { expected = old; old = atomicCompSwap(cnt, expected, expected + 2u); }"
                                                    " while (old != expected);\n  barrier();\n"
                                                    "  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0) + 0.0 * float(mx); }"));
  CHECK_MESSAGE(ints.empty(), ints);
  CHECK(contract_error(relu_kernel(relu_body)).empty());
}

TEST_CASE("contract check: RelaxedPrecision is refused, naming the variable") {
  const std::string whole = contract_error(relu_with("precision mediump float;", relu_body));
  INFO(whole);
  CHECK(whole.find("RelaxedPrecision: 'v'") != std::string::npos);
  const std::string one = contract_error(relu_kernel("  if (i < pc.n) { mediump float h = x_[i]; y_[i] = isnan(h) ? h : max(h, 0.0); }"));
  CHECK(one.find("RelaxedPrecision: 'h'") != std::string::npos);
  CHECK(one.find("mediump or lowp") != std::string::npos);
  // highp (the default) is fine, and so are the built-ins glslang declares mediump.
  CHECK(contract_error(relu_with("precision highp float;", relu_body)).empty());
  const std::string ext = "#extension GL_KHR_shader_subgroup_basic : require";
  const std::string sub = relu_with(ext, "  uint lane = gl_SubgroupInvocationID;\n"
                                         "  if (i < pc.n) { float v = x_[i]; y_[i + 0u * (gl_SubgroupInvocationID + 1u)] = "
                                         "isnan(v) ? v : max(v, 0.0) + 0.0 * float(lane); }");
  CHECK_MESSAGE(contract_error(sub).empty(), contract_error(sub));
  // Float arithmetic on such a built-in is mediump, though: refused, with where it comes from.
  const std::string lane = contract_error(relu_with(ext, "  if (i < pc.n) { float v = x_[i]; y_[i] = isnan(v) ? v : max(v, 0.0) + "
                                                         "0.0 * float(gl_SubgroupInvocationID); }"));
  CHECK(lane.find("RelaxedPrecision: 2 values (computed from 'gl_SubgroupInvocationID'") != std::string::npos);
}

TEST_CASE("contract check: what the device allows (shared memory, local size, push constants)") {
  gen::device_limits lim;  // lavapipe's shared memory, a small device otherwise
  lim.max_shared_memory = 32768;
  lim.max_invocations = 256;
  lim.max_workgroup_size = {512, 512, 64};
  lim.max_push_constants = 128;
  lim.device = "test device";
  // 1 GiB of shared memory.
  const std::string big = contract_error(relu_with("shared float big[268435456];",
                                                   "  big[gl_LocalInvocationID.x] = 1.0;\n  barrier();\n" + relu_body +
                                                       "\n  if (i == 0u) y_[0] += 0.0 * big[63u - gl_LocalInvocationID.x];"),
                                         lim);
  INFO(big);
  CHECK(big.find("exceeds the device's maxComputeSharedMemorySize") != std::string::npos);
  CHECK(big.find("'big' 1073741824 bytes") != std::string::npos);
  CHECK(big.find("allows 32768 bytes") != std::string::npos);
  // Sized by a specialization constant: its default counts (the host runs the kernel at the defaults).
  const std::string spec = contract_error(relu_with("layout(constant_id = 3) const uint ROWS = 4096;\nshared vec4 rows[ROWS];",
                                                    "  rows[gl_LocalInvocationID.x] = vec4(1.0);\n  barrier();\n" + relu_body +
                                                        "\n  if (i == 0u) y_[0] += 0.0 * rows[63u - gl_LocalInvocationID.x].x;"),
                                          lim);
  CHECK(spec.find("'rows' 65536 bytes") != std::string::npos);
  // Within the limit: passes.
  CHECK(contract_error(relu_with("shared float fits[4096];", "  fits[gl_LocalInvocationID.x] = 1.0;\n  barrier();\n" + relu_body +
                                                                 "\n  if (i == 0u) y_[0] += 0.0 * fits[63u - gl_LocalInvocationID.x];"),
                       lim)
            .empty());
  // The local size: over maxComputeWorkGroupSize.x, then over maxComputeWorkGroupInvocations.
  std::string wide = relu_kernel(relu_body);
  wide.replace(wide.find("local_size_x = 64"), 17, "local_size_x = 1024");
  const std::string w = contract_error(wide, lim);
  CHECK(w.find("exceeds the device's maxComputeWorkGroupSize: local size x is 1024") != std::string::npos);
  std::string many = relu_kernel(relu_body);
  many.replace(many.find("local_size_x = 64"), 17, "local_size_x = 512");
  CHECK(contract_error(many, lim).find("exceeds the device's maxComputeWorkGroupInvocations: its workgroup has 512 "
                                       "invocations; the device ('test device') allows 256") != std::string::npos);
  // The push-constant block: relu's 8 bytes over a limit of 4.
  gen::device_limits tiny = lim;
  tiny.max_push_constants = 4;
  CHECK(contract_error(relu_kernel(relu_body), tiny).find("exceeds the device's maxPushConstantsSize: its push-constant block") !=
        std::string::npos);
  CHECK(contract_error(relu_kernel(relu_body), lim).empty());
}

TEST_CASE("gate: a kernel over the device's shared memory is refused at stage interface before anything runs") {
  KGT_NEED_VULKAN();
  gen::sandbox_options o;
  o.benchmark = false;
  o.wall_timeout_ms = 60000;
  const std::string glsl = relu_with("shared float big[268435456];",
                                     "  big[gl_LocalInvocationID.x] = 1.0;\n  barrier();\n" + relu_body +
                                         "\n  if (i == 0u) y_[0] += 0.0 * big[63u - gl_LocalInvocationID.x];");
  const auto r = gen::run_sandboxed({relu_problem()}, glsl, o);
  INFO(r.reason << "\n" << r.log_tail);
  CHECK_FALSE(r.accepted);
  CHECK(r.stage == "interface");
  CHECK(r.reason.find("exceeds the device's maxComputeSharedMemorySize") != std::string::npos);
  CHECK(r.reason.find("'big' 1073741824 bytes") != std::string::npos);
  // The static checks reach the gate's reason with their class too.
  const auto race = gen::run_sandboxed({relu_problem()}, relu_with("shared float s[64];",
                                                                  "  uint t = gl_LocalInvocationID.x;\n  s[t] = i < pc.n ? x_[i] : 0.0;\n"
                                                                  "  uint j = (t + 1u) % 64u;\n  float v = s[j];\n"
                                                                  "  if (i < pc.n) y_[i] = max(v, 0.0);"),
                                       o);
  CHECK(race.stage == "race");
  CHECK(race.reason.find("shared memory race (read after write within a step)") != std::string::npos);
}
