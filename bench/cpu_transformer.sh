#!/bin/bash
# bench/cpu_transformer.sh — issue 13's CPU targets in one command: the
# gpt2-small block (f32) on the threaded policy against the eigen policy in
# the same run — prefill of 128 tokens, and decode (32 steps after it) with
# the GB/s at which the block's weights are read beside this machine's copy
# bandwidth (kforge's roofline probe, measured again at the start) — then
# the same at GPT-2 small's full depth (12 layers: 340 MB of weights, far past
# the L3), and the verification errors of the presets in every dtype.
#
#   bench/cpu_transformer.sh BUILD_DIR OUT_DIR
#
# Run it on a quiet machine (it prints the load before and after). OpenBLAS's
# variables are unset here only (kforge's CPU kernels do not read them).
set -u
BUILD=${1:?BUILD_DIR} OUT=${2:?OUT_DIR}
mkdir -p "$OUT"
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE
K="$BUILD/tools/kforge"
{ echo "start $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"; echo "commit $(git rev-parse --short HEAD)";
  lscpu | grep -E "Model name|^CPU\(s\)|L2 cache|L3 cache"; } > "$OUT/meta.txt"
run() {  # NAME ARGS...: one report
  local name=$1; shift
  "$K" transformer "$@" --json > "$OUT/$name.json" 2> "$OUT/$name.err"; echo "$name rc=$?" >> "$OUT/meta.txt"
}
run gpt2-threaded --preset gpt2-small --policy threaded --reps 7 --remeasure-roofline
run gpt2-eigen --preset gpt2-small --policy eigen --reps 7 --no-verify
run gpt2-blocked --preset gpt2-small --policy blocked --reps 7 --no-verify
run gpt2x12-threaded --preset gpt2-small --layers 12 --policy threaded --reps 3 --no-verify
run gpt2x12-eigen --preset gpt2-small --layers 12 --policy eigen --reps 3 --no-verify
for dt in f16 bf16; do run gpt2-threaded-$dt --preset gpt2-small --policy threaded --dtype $dt --decode 8 --reps 3; done
for dt in f32 f16 bf16; do run tiny-threaded-$dt --preset tiny --policy threaded --dtype $dt --reps 3; done
run llama-threaded-f32 --preset llama3-8b --policy threaded --prefill 16 --decode 4 --reps 2
echo "end $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$OUT/meta.txt"
python3 - "$OUT" <<'PY' | tee "$OUT/table.md"
import json, os, sys
out = sys.argv[1]
def load(n):
    try:
        return json.load(open(os.path.join(out, n + ".json")))
    except Exception as e:
        return None
print(open(os.path.join(out, "meta.txt")).read())
print("| run | prefill tokens/s | decode ms/token | decode tokens/s | block weights GB/s | / copy bandwidth | verification (worst e2e / bound) |")
print("|---|---|---|---|---|---|---|")
names = ["gpt2-threaded", "gpt2-eigen", "gpt2-blocked", "gpt2x12-threaded", "gpt2x12-eigen", "gpt2-threaded-f16",
         "gpt2-threaded-bf16", "tiny-threaded-f32", "tiny-threaded-f16", "tiny-threaded-bf16", "llama-threaded-f32"]
copy = None
for n in names:
    r = load(n)
    if not r:
        print(f"| {n} | (no report) |"); continue
    t = r["totals"]
    copy = t.get("machine_copy_gbps", copy)
    v = r["verification"]
    worst = max((s["e2e_rel"] / s["e2e_bound"] for s in r["stages"] if "e2e_rel" in s and s["e2e_bound"] > 0), default=None)
    ver = ("PASSED" if v.get("passed") else "FAILED") + (f" ({worst:.2g})" if worst is not None else "") if v["run"] else "-"
    ratio = f"{t['decode_block_weight_gbps'] / copy:.2f}" if copy else "-"
    print(f"| {n} {r['dtype']} x{r['config']['layers']} | {t['prefill_tokens_per_s']:.0f} | {t['decode_ms_per_token']:.3f} | "
          f"{t['decode_tokens_per_s']:.1f} | {t['decode_block_weight_gbps']:.2f} | {ratio} | {ver} |")
th, ei = load("gpt2-threaded"), load("gpt2-eigen")
if th and ei:
    print(f"\nprefill 128, gpt2-small f32: threaded / eigen = {ei['totals']['prefill_s'] / th['totals']['prefill_s']:.2f}x "
          f"(target >= 1.5); blocks only: "
          f"{sum(s['time_s'] for s in ei['stages'] if s['step'] == 'prefill' and s['layer'] >= 0) / sum(s['time_s'] for s in th['stages'] if s['step'] == 'prefill' and s['layer'] >= 0):.2f}x")
    print(f"decode, gpt2-small block f32: {th['totals']['decode_block_weight_gbps']:.2f} GB/s = "
          f"{th['totals']['decode_block_weight_gbps'] / copy:.2f} x the copy bandwidth {copy:.2f} GB/s (target >= 0.8)")
PY
