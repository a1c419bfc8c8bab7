// examples/06_generate.cpp — kernel generation with no network and no
// configuration: the offline template provider proposes four softmax kernels
// (two of them deliberately wrong), each is compiled, checked against the
// kernel contract and validated in a sandboxed child process; the records go
// to the cache (c_ accepted, r_ rejected). Then the accepted record is loaded
// back and the same op runs through policy::generated, checked against Eigen.
//
// Run: build/examples/06_generate     (needs a Vulkan device, lavapipe is
// fine; the sandbox's worker is the kforge tool, found through
// KFORGE_WORKER_EXE or the path this example was built with; records go to
// KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge)
#include <kforge/gen.hpp>

#include <cstdio>

int main() try {
  using namespace kforge;
  problem p;
  p.op = "softmax";
  set_shape(p, "33x100");

  gen::template_provider provider;
  gen::generate_options opt;
  opt.samples = 4;
  opt.force = true;  // generate even if an accepted kernel is cached
#ifdef KFORGE_EXAMPLE_TOOL
  if (!std::getenv("KFORGE_WORKER_EXE")) opt.sandbox.worker_exe = KFORGE_EXAMPLE_TOOL;
#endif
  opt.progress = [](const std::string& line) { std::printf("  %s\n", line.c_str()); };
  const gen::generate_result res = gen::generate(p, provider, opt);
  for (const auto& a : res.attempts)
    std::printf("%s %-10s %s\n", a.correct() ? "accepted" : "rejected", a.stage.c_str(), a.reason.substr(0, 100).c_str());
  const gen::generation_record* best = res.best_record();
  if (!best) {
    std::printf("no kernel accepted\n");
    return 1;
  }

  // The record on disk holds everything: the kernel, the gate's report, timings.
  const gen::generation_record rec = gen::load_record(best->path);
  std::printf("\nloaded %s\n  spirv %s, %.4f ms vs kforge's own %.4f ms\n", rec.path.c_str(), rec.spirv_hash.c_str(),
              rec.candidate_ms, rec.builtin_ms);

  // The accepted kernel behind an ordinary run<Policy> call.
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> x = Eigen::MatrixXf::Random(33, 100);
  Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> y(33, 100), ref(33, 100);
  run<policy::generated>(op::softmax<float>{}, x, y);
  run<policy::eigen>(op::softmax<float>{}, x, ref);
  std::printf("policy::generated vs Eigen: max abs difference %.3g\n", (y - ref).cwiseAbs().maxCoeff());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "06_generate: %s\n", e.what());
  return 1;
}
