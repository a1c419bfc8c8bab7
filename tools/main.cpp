// tools/main.cpp — the kforge command-line tool: help and dispatch.
//
//   kforge devices | run | validate | bench | demo | transformer | gen | mutate | tune | cache
//   (kforge <command> --help)
//
// Exit codes: 0 ok, 1 validation failed / kernel rejected, 2 usage error,
// 3 environment problem (e.g. no Vulkan device). Every error is one line on
// stderr; every command has --json. Each command lives in its own file
// (cmd_*.cpp); what they share is cli.hpp.
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <kforge/core/file.hpp>

#include "cli.hpp"

namespace kforge::tool {
int cmd_devices(const args& a);
int cmd_run(const args& a);
int cmd_validate(const args& a);
int cmd_bench(const args& a);
int cmd_demo(const args& a);
int cmd_transformer(const args& a);
int cmd_inspect(const args& a);
#if defined(KFORGE_TOOL_HAS_TUNE)
// The tuner's commands (cmd_tune.cpp, cmd_cache.cpp); they print their own
// one-line errors and return the exit code.
int cmd_tune(const problem& p, const std::map<std::string, std::string>& values, const std::vector<std::string>& flags,
             const std::vector<policy_entry>& policies);
int cmd_cache(const std::string& sub, const std::map<std::string, std::string>& values,
              const std::vector<std::string>& flags);
#endif
#if defined(KFORGE_TOOL_HAS_GEN)
// Kernel generation's commands (cmd_gen.cpp, cmd_mutate.cpp, cmd_worker.cpp).
int cmd_gen(const problem& p, const std::map<std::string, std::string>& values, const std::vector<std::string>& flags);
int cmd_validate_kernel(const problem& p, const std::map<std::string, std::string>& values,
                        const std::vector<std::string>& flags);
int cmd_mutate(const std::map<std::string, std::string>& values, const std::vector<std::string>& flags);
int cmd_worker(const std::map<std::string, std::string>& values);
int gen_records_list(const std::map<std::string, std::string>& values, const std::vector<std::string>& flags);
#endif
}  // namespace kforge::tool

using namespace kforge::tool;

namespace {

const char* main_help = R"(kforge — fast, portable numeric kernels you can trust

usage: kforge <command> [options]

commands:
  devices    list the CPU and Vulkan devices and their features
  run        run one op once on a policy; print time, throughput and max error vs Eigen
  validate   run the 16-case validation suite for one op against the Eigen reference
  bench      time one op on several policies; medians and ratios vs a peer
  demo       the default problem set on every available policy, validated, as a table
  transformer  a decoder from a preset or a checkpoint on a policy: verified stage by stage, timed
  inspect    what a checkpoint (Hugging Face directory or GGUF file) holds, as kforge reads it
  gen        generate GLSL kernels for one op (LLM or offline templates), admit only validated ones
  mutate     check that the validation gate rejects plausible-but-wrong kernels (mutation testing)
  tune       search a backend's knobs for one problem; store the winner in the tuning cache
  cache      list, show or clear the tuning cache (kforge cache list|show|clear)
  options    every command's options, one line each (--json: the table the tool checks them against)

Run `kforge <command> --help` for the options of a command.
Exit codes: 0 ok, 1 validation failed, 2 usage error, 3 environment problem.
)";

// The --policy autotune paragraph of run, validate and bench.
const std::string autotune_help =
    "--policy autotune (or auto): what the tuning cache holds for this problem on this CPU, resolved as\n"
    "policy::autotune resolves it for host data: the cached winner of the shape bucket; on a miss,\n"
    "tuned now with KFORGE_AUTOTUNE=1, else the default policy. What it resolved to (policy, knobs,\n"
    "device, bucket, from the cache or not) is printed first (--json: \"autotune\"). A tuning cache\n"
    "that does not parse is an error (exit 3) and is left as it is.\n";

#if defined(KFORGE_TOOL_HAS_GEN)
const std::string generated_help =
    "--policy generated: the kernel kforge gen accepted for exactly this problem, or one proven for its\n"
    "tuning bucket after the sandbox has passed it on this shape (the verdict is cached); exit 3 when\n"
    "there is none, saying what was looked for.\n";
#else
const std::string generated_help;
#endif

const std::map<std::string, std::string>& command_help() {
  static const std::map<std::string, std::string> help = {
    {"gen", std::string("usage: kforge gen --op OP --shape SHAPE [--dtype T] [--provider template|replay|openai]\n"
                        "                  [--model M] [--base-url URL] [--replay FILE.jsonl] [--samples N] [--force]\n"
                        "                  [--temperature T] [--max-tokens N] [--timeout-ms MS] [--total-timeout-ms MS]\n"
                        "                  [--export DIR] [--no-bucket] [--json]\n\n"
                        "Asks the provider for N kernels (default 4), feeding each rejection back into the next\n"
                        "prompt; compiles each with glslang, checks it against docs/KERNEL_CONTRACT.md, validates it in\n"
                        "a sandboxed child process (16 cases with a secret seed, on SHAPE and a held-out shape,\n"
                        "guard regions, determinism), benchmarks accepted ones against kforge's own kernel, and\n"
                        "writes one record per attempt (c_/r_ *.json) under the cache dir's generated/ folder.\n"
                        "A cached accepted kernel is returned without asking the provider unless --force.\n"
                        "Providers: template (default; offline variants of kforge's kernels, some deliberately\n"
                        "wrong), replay (--replay FILE.jsonl), openai (any OpenAI-compatible server: --base-url,\n"
                        "--model, key from KFORGE_LLM_API_KEY or OPENAI_API_KEY): 429, 5xx and timeouts are retried with\n"
                        "backoff until --total-timeout-ms (default 300000); a refused connection, an unknown host,\n"
                        "TLS failure, 401/403 or 404 stop the run at once (exit 1). --export DIR writes the best\n"
                        "kernel as GLSL, SPIR-V, HLSL and MSL. The best accepted kernel is then validated on three\n"
                        "shapes spread over its tuning bucket (each extent in the same power-of-two octave; both\n"
                        "corners and a random one): proven, `--policy generated` (and policy::generated) serves any\n"
                        "shape of the bucket with it after one sandboxed check of that exact shape, cached per\n"
                        "device (--no-bucket skips the proof). Exit 0 if a kernel was accepted, 1 if none.\n"
                        "`kforge cache list --status c|r` lists the accepted (c) or rejected (r) records.\n") + op_help()},
    {"mutate", "usage: kforge mutate [--op OP] [--json]\n\nRuns kforge's own kernel for each op (or one op) and its built-in mutants (off-by-one\nbounds, missing tail, missing barrier, dropped scale, wrong init, reading past the end,\npartial output, returning an input, f16 accumulation) through the generation gate. Exit 0\nwhen every mutant is rejected and every original accepted.\n"},
    {"inspect", "usage: kforge inspect --model DIR|FILE.gguf [--json]\n\nOpens a checkpoint as kforge::model does — a Hugging Face directory (config.json and\n"
                "model.safetensors or its shards) or a GGUF file — without loading it: prints the format, the config\n"
                "kforge derives, and every tensor (type, extents, bytes). A checkpoint kforge cannot run is refused\n"
                "with the reason (exit 2).\n"},
    {"devices", "usage: kforge devices [--json]\n\nLists the CPU (features, compiled micro-kernel, threads) and every Vulkan device\nwith the features kforge uses.\n"},
    {"run", std::string("usage: kforge run --op OP --shape SHAPE [--dtype T] [--policy NAME] [--epilogue E] [--reps N] [--json]\n\n"
                        "Runs the op on the policy (default: threaded if present, else eigen), prints the median\n"
                        "time of N runs (default 5), throughput, and the max error against the Eigen reference.\n"
                        "Exit 1 if the result is outside the op's tolerance.\n") + autotune_help + generated_help + op_help()},
    {"validate", std::string("usage: kforge validate --op OP --shape SHAPE [--dtype T] [--policy NAME] [--seed N] [--kernel FILE.comp] [--json]\n\n"
                             "Runs the 16-case suite (uniform, normal, sparse, large/small magnitude, zeros, ones,\n"
                             "alternating signs, extremes, NaN/Inf) against the Eigen reference. Exit 1 on any failure.\n"
                             "With --kernel FILE.comp the kernel (following docs/KERNEL_CONTRACT.md) goes through the\n"
                             "sandboxed generation gate instead; exit 0 accepted, 1 rejected with the reason.\n") + autotune_help + generated_help + op_help()},
    {"bench", std::string("usage: kforge bench --op OP --shape SHAPE [--policy P[,P...]] [--vs eigen] [--reps N] [--roofline FILE.svg] [--json]\n\n"
                          "Times each policy (median of N runs, default 10, after a warm-up) and prints GFLOP/s or\n"
                          "GB/s and the ratio to the peer given by --vs (default eigen). Results are validated once.\n"
                          "e.g. --policy autotune,threaded,vulkan after `kforge tune` for the same problem.\n"
                          "Every row is timed where a program keeps its data: a CPU row is a call on host data (wall\n"
                          "time); a vulkan row is the kernels on device-resident tensors (uploaded once, warmed up,\n"
                          "GPU timestamps, median), followed by a vulkan:host_view row (the call on host data: upload +\n"
                          "kernels + download, wall) and the upload and download times on their own.\n"
                          "Each case also gets its arithmetic intensity, the roofline bound from its device's bandwidth\n"
                          "and peak measured by kforge's probes (once per device, cached in the cache dir: the CPU for\n"
                          "CPU policies, the Vulkan device for vulkan) and the fraction reached (a vulkan row: by its\n"
                          "kernels' time; its host-view fraction beside it). --roofline FILE.svg writes one chart with\n"
                          "each device's roof and its points; --remeasure-roofline probes again (do it on an idle\n"
                          "machine: the probes use every core, or the whole GPU).\n"
                          "--json: Google Benchmark's format (context, benchmarks[] with name, run_name, real_time,\n"
                          "cpu_time, time_unit, iterations, GFLOPS / bytes_per_second), kforge's fields prefixed kforge_.\n") + autotune_help + generated_help + op_help()},
    {"tune", std::string("usage: kforge tune --op OP --shape SHAPE [--dtype T] [--policy FAMILY] [--strategy grid|halving|descent]\n"
                         "                   [--budget SECONDS] [--trials N] [--reps N] [--no-generated] [--json]\n\n"
                         "Validates every candidate of the family's search space with the 16-case suite, times the\n"
                         "valid ones (warm-up, N samples, median; default 9), re-validates the winner and stores it in\n"
                         "the tuning cache (KFORGE_CACHE_DIR, else $XDG_CACHE_HOME/kforge, else ~/.cache/kforge) for\n"
                         "the problem's shape bucket (each dim rounded up to a power of two); every trial goes to\n"
                         "history.csv. FAMILY: cpu (default: blocked and threaded), blocked, threaded, eigen, vulkan.\n"
                         "vulkan: kforge's Vulkan gemm configs (gemm) or its own Vulkan kernel (other ops), and the\n"
                         "accepted generated kernels of exactly this problem (kforge gen's c_ records), each named\n"
                         "generated:<record file>; --no-generated leaves those out. Other ops need at least one.\n"
                         "Strategies: halving (default; successive halving), grid (every candidate), descent\n"
                         "(coordinate descent from the default). --budget (default 60) and --trials bound the search.\n"
                         "Exit 1 if no candidate passed validation.\n") + op_help()},
    {"cache", "usage: kforge cache list|show|clear [--op OP --shape SHAPE [--dtype T]] [--device TEXT] [--json]\n\n"
              "list: one line per tuned (device, op, dtype, bucket), CPU and Vulkan alike. show: every field,\n"
              "or with --op/--shape the entries this machine uses for that problem, one per device (the CPU,\n"
              "and the Vulkan device where there is one; exit 1 if none). --device TEXT keeps the entries\n"
              "whose device contains TEXT (e.g. --device vulkan). clear: remove every entry, or those whose\n"
              "device contains --device. See docs/TUNING.md for the format.\n"},
    {"transformer",
     "usage: kforge transformer --preset tiny|gpt2-small|llama3-8b [--layers N] | --model DIR|FILE.gguf\n"
     "                          [--prefill T] [--decode T] [--dtype f32|f16|bf16]\n"
     "                          [--policy eigen|blocked|threaded|autotune|vulkan] [--reps N] [--verify-decode N] [--no-verify]\n"
     "                          [--seed N] [--json] [--baseline FILE] [--max-slowdown F] [--time-floor-us N]\n"
     "                          [--warmup SECONDS] [--remeasure-roofline] [--whole-step]\n"
     "                          [--weights dense|q8_0|q4_0|mxfp4|fp8|fp8_e5m2]\n"
     "       kforge transformer --compare NEW.json --baseline OLD.json\n\n"
     "Builds a decoder from kforge ops (kforge::model: token embedding (+ learned positions), then RMSNorm/LayerNorm,\n"
     "Q/K/V projections, RoPE, KV-cache append, causal grouped-query attention over the cache, output projection +\n"
     "residual, norm, gated or plain MLP + residual; N layers; final norm, LM head and the argmax of the logits, the\n"
     "greedy next token) with random weights from a fixed seed, or a checkpoint's (--model DIR: a Hugging Face directory,\n"
     "config.json and model.safetensors or its shards, LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM,\n"
     "GPT2LMHeadModel; or --model FILE.gguf: llama or qwen2, F32/F16/BF16/Q8_0/Q4_0/MXFP4 tensors, quantized ones kept\n"
     "as stored; a field kforge does not implement is refused by name), runs a prefill of T tokens\n"
     "(default 128) then T decode steps (default 32) on the policy (default threaded), and prints each stage's time\n"
     "(CPU: wall; vulkan: GPU timestamps, each step one recorded stream), prefill tokens/s, decode ms/token and\n"
     "tokens/s (vulkan: wall times of steps run without the per-op timestamps, which order every dispatch after the\n"
     "one before; the stage times come from as many further repetitions with them; the host's recording time is\n"
     "printed beside), and the GB/s at which decode reads the blocks' weights (CPU: beside this machine's copy bandwidth,\n"
     "kforge's roofline probe, cached like bench --roofline's; --remeasure-roofline probes again).\n"
     "Before the timed repetitions, prefill and decode steps repeat for --warmup seconds (vulkan: 1.5, the time a GPU\n"
     "takes to raise its clocks from idle; CPU policies: 0, one untimed repetition).\n"
     "A Vulkan step goes to the GPU in parts while it is recorded (the GPU starts on the first ops while the host\n"
     "records the rest); --whole-step records each step whole before submitting it, for comparison.\n"
     "--weights FORMAT quantizes every projection and the LM head (activations stay in --dtype, sums in f32; the\n"
     "embedding and norms stay dense); the reference then runs on the same weights dequantized (the format's meaning).\n"
     "Presets: tiny (CI-sized, 2 layers), gpt2-small (GPT-2 small's block: LayerNorm, biases, GELU MLP, learned\n"
     "positions, tied head; 1 of its 12 layers unless --layers), llama3-8b (1 of its 32 layers unless --layers).\n"
     "Verification (unless --no-verify): the same model on the Eigen reference for the prefill and --verify-decode\n"
     "decode steps (default 4); per stage, the policy's op on the reference's inputs within the op's own tolerance\n"
     "(isolated: names the op that is wrong) and the policy's whole run against the reference's, max-norm relative\n"
     "error within 2x the ops' tolerances summed along the step (end to end). A failure names the stage, layer, shape,\n"
     "policy and kernel; exit 1.\n"
     "--json: the report (config, policy, knobs, device, totals, verification, thresholds, and per stage: step, stage,\n"
     "layer, op, shape, time_s, iso_* and e2e_* errors). --baseline FILE diffs this run against a previous report:\n"
     "a time more than --max-slowdown (1.25) x the baseline's and --time-floor-us (50) us slower, an error more than\n"
     "4x the baseline's + 0.1 eps of the dtype, or a stage that passed and now fails is a regression: exit 1.\n"
     "--compare NEW.json --baseline OLD.json compares two reports without running.\n"},
    {"options", "usage: kforge options [--json]\n\nPrints every command's options. Each command takes only its own options, each once\n(anything else is a usage error, exit 2, naming the option); --json gives the same table\nwith the op families' options and whether each takes a value.\n"},
    {"demo", "usage: kforge demo [--policy P[,P...]] [--json] [--quick]\n\nRuns gemm, conv2d, softmax, layer_norm and attention on every available policy (or those of\n--policy, autotune included), validates each with the 16-case suite, and prints policy, time,\nthroughput, speed-up vs Eigen and max error. A vulkan row's time is its kernels on\ndevice-resident tensors (GPU timestamps); the line below it gives the upload, the download\nand the whole host-view call. An autotune row says what it resolved to. --quick uses smaller\nshapes.\n"},
};
  return help;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" || std::string(argv[1]) == "help")) {
      std::cout << main_help;
      return ok;
    }
    // `kforge cache SUB [options]`: the subcommand is the one positional argument (args::sub).
    const args a = parse_args(argc, argv);
    const std::string& cache_sub = a.sub;
    if (a.has("help")) {
      auto it = command_help().find(a.command);
      if (it == command_help().end()) throw usage_error("unknown command '" + a.command + "' (try kforge --help)");
      std::cout << it->second;
      return ok;
    }
    check_env_cpu();
    check_env_vulkan();
    check_env_tune();
#if defined(KFORGE_TOOL_HAS_GEN)
    if (a.command == "gen") return cmd_gen(problem_from(a), a.values, a.flags);
    if (a.command == "validate" && a.get("kernel")) return cmd_validate_kernel(problem_from(a), a.values, a.flags);
    if (a.command == "mutate") return cmd_mutate(a.values, a.flags);
    if (a.command == "worker") return cmd_worker(a.values);
    // `kforge cache list --status c|r` lists generation records; the rest of `cache` is the tuner's.
    if (a.command == "cache" && cache_sub == "list" && a.get("status")) return gen_records_list(a.values, a.flags);
#endif
    if (a.command == "options") {
      std::cout << options_text(a.has("json"));
      return ok;
    }
    if (a.command == "devices") return cmd_devices(a);
    if (a.command == "run") return cmd_run(a);
    if (a.command == "validate") return cmd_validate(a);
    if (a.command == "bench") return cmd_bench(a);
    if (a.command == "demo") return cmd_demo(a);
    if (a.command == "transformer") return cmd_transformer(a);
    if (a.command == "inspect") return cmd_inspect(a);
#if defined(KFORGE_TOOL_HAS_TUNE)
    if (a.command == "tune") return cmd_tune(problem_from(a), a.values, a.flags, policies());
    if (a.command == "cache") return cmd_cache(cache_sub, a.values, a.flags);
#endif
    throw usage_error("unknown command '" + a.command + "' (try kforge --help)");
  } catch (const usage_error& e) {
    std::cerr << one_line(e.what());
    return usage;
  } catch (const kforge::env_var_error& e) {  // a KFORGE_* variable outside its range
    std::cerr << one_line(e.what());
    return usage;
  } catch (const environment_error& e) {
    std::cerr << one_line(e.what());
    return environment;
  } catch (const kforge::file_error& e) {  // a file given to kforge breaks the rule for files (core/file.hpp)
    std::cerr << one_line(e.what());
    return usage;
  } catch (const kforge::cache_error& e) {  // a cache or record that cannot be read or written
    std::cerr << one_line(e.what());
    return environment;
  } catch (const kforge::unsupported_error& e) {
    std::cerr << one_line(e.what());
    return environment;
  } catch (const kforge::error& e) {
    std::cerr << one_line(e.what());
    return device_failure(e) ? environment : failed;  // a lost or timed-out device is not a failed validation
  } catch (const std::exception& e) {
    std::cerr << one_line(e.what());
    return environment;
  }
}
