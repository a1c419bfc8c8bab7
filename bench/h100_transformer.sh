#!/bin/bash
# bench/h100_transformer.sh — issue 13's GPU target in one command: a decoder
# block (default llama3-8b, one layer) in f16 on the GPU with kforge's Vulkan
# session (`kforge transformer --policy vulkan`: weights and KV cache on the
# device, one recorded stream per step) and the same block in PyTorch eager
# with SDPA (bench/torch_transformer.py), in the same run:
#   prefill of 2048 tokens from an empty cache, and
#   decode of one token with 4096 tokens in the cache.
#
#   bench/h100_transformer.sh BIN_DIR OUT_DIR [PRESET] [LAYERS] [DTYPE]
#
# DTYPE is f16 (default) or bf16 (the dtype models ship in), on both sides.
#
# BIN_DIR holds the kforge tool (built with -DKFORGE_NATIVE=OFF); the Vulkan
# loader is unpacked from .gl/ as for bench/h100_models.sh. First a short
# verified run (prefill 32 + 2 decode steps against the Eigen reference on the
# CPU, every stage isolated and end to end), then the timed runs without
# verification, each after 1.5 s of GPU warm-up like the PyTorch side (clocks ramp over ~1 s).
# Ratio = PyTorch time / kforge time (above 1: kforge is faster); the targets
# are prefill >= 0.5 and decode >= 0.8. kforge's figure is the wall time of a
# step as a program sees it (record, submit, wait, logits downloaded; steps
# submitted in parts while recorded, without per-op timestamps), with the GPU
# time of its dispatches (from as many repetitions with timestamps), the
# host's recording time and the wall time of the timestamped steps beside it;
# a prefill run with --whole-step (recorded whole, then submitted) and one
# with KFORGE_VK_SPIN_US=0 (waits that sleep at once) for comparison. PyTorch's is CUDA events around the eager step (launch gaps
# included).
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR} PRESET=${3:-llama3-8b} LAYERS=${4:-1} DTYPE=${5:-f16}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$OUT/env.txt" 2>&1
K=("$BIN"/kforge transformer --preset "$PRESET" --layers "$LAYERS" --dtype "$DTYPE" --policy vulkan --json)
timeout 900 "${K[@]}" --prefill 32 --decode 2 --reps 1 > "$OUT/verify.json" 2> "$OUT/verify.err"; echo "verify rc=$?" >> "$OUT/env.txt"
# SM clock every 100 ms beside the timed runs (clocks.csv): a GPU left at low clocks shows there.
nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu --format=csv,noheader -lms 100 > "$OUT/clocks.csv" 2>/dev/null &
CLK=$!
timeout 300 "${K[@]}" --prefill 2048 --decode 0 --reps 10 --no-verify > "$OUT/prefill.json" 2> "$OUT/prefill.err"; echo "prefill rc=$?" >> "$OUT/env.txt"
timeout 300 "${K[@]}" --prefill 2048 --decode 0 --reps 10 --no-verify --whole-step > "$OUT/prefill-whole.json" 2> "$OUT/prefill-whole.err"; echo "prefill whole-step rc=$?" >> "$OUT/env.txt"
# Waits that sleep at once (no polling of the fence first) for comparison.
KFORGE_VK_SPIN_US=0 timeout 300 "${K[@]}" --prefill 2048 --decode 32 --reps 5 --no-verify > "$OUT/sleep.json" 2> "$OUT/sleep.err"; echo "sleep rc=$?" >> "$OUT/env.txt"
# The same prefill followed by 8 decode steps per repetition (a generation as a program runs it).
timeout 300 "${K[@]}" --prefill 2048 --decode 8 --reps 10 --no-verify > "$OUT/prefill-decode.json" 2> "$OUT/prefill-decode.err"; echo "prefill+decode rc=$?" >> "$OUT/env.txt"
timeout 300 "${K[@]}" --prefill 4096 --decode 32 --reps 5 --no-verify > "$OUT/decode.json" 2> "$OUT/decode.err"; echo "decode rc=$?" >> "$OUT/env.txt"
kill $CLK 2>/dev/null
PYTHONUNBUFFERED=1 timeout 300 python3 bench/torch_transformer.py --preset "$PRESET" --layers "$LAYERS" --dtype "$DTYPE" \
  --prefill 2048 --decode-cache 4096 > "$OUT/torch.txt" 2>&1; echo "torch rc=$?" >> "$OUT/torch.txt"
python3 - "$OUT" <<'PY' | tee "$OUT/table.txt"
import json, sys, os
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        print(f"{name}: {e}")
        return None
v, p, d = load("verify.json"), load("prefill.json"), load("decode.json")
pd = load("prefill-decode.json")
pw = load("prefill-whole.json")
sl = load("sleep.json")
torch = {}
for line in open(os.path.join(out, "torch.txt")):
    f = line.split()
    if f and f[0] == "RESULT":
        torch[f[2]] = float(f[4])
if v:
    ver = v["verification"]
    print(f"verification ({ver.get('prefill')} + {ver.get('decode')} decode steps vs eigen): "
          f"{'PASSED' if ver.get('passed') else 'FAILED: ' + ver.get('first_failure', '')}")
print(f"{'case':32s} {'kforge ms':>10s} {'kforge GPU ms':>14s} {'GPU span ms':>12s} {'host rec ms':>12s} "
      f"{'timestamped ms':>15s} {'torch ms':>9s} {'ratio':>6s} target")
tot = lambda rep, k: rep["totals"].get(k, float("nan")) * 1e3
for rep, suffix in ((p, ""), (pw, " (--whole-step)"), (sl, " (KFORGE_VK_SPIN_US=0)"), (pd, " (+8 decode)")):
    if not rep:
        continue
    ms = rep["totals"]["prefill_s"] * 1e3
    gpu = sum(s["time_s"] for s in rep["stages"] if s["step"] == "prefill" and s["time_s"] >= 0) * 1e3
    t = torch.get("prefill")
    print(f"{'prefill ' + str(rep['prefill']) + suffix:32s} {ms:10.3f} {gpu:14.3f} {tot(rep, 'prefill_gpu_span_s'):12.3f} "
          f"{tot(rep, 'prefill_record_s'):12.3f} "
          f"{tot(rep, 'prefill_profiled_s'):15.3f} {t if t else float('nan'):9.3f} {(t / ms) if t else float('nan'):6.2f} >= 0.5")
for d, suffix in ((d, ""), (sl, " (KFORGE_VK_SPIN_US=0)")):
    if not d:
        continue
    ms = d["totals"]["decode_ms_per_token"]
    gpu = d["totals"]["decode_stage_s"] * 1e3
    t = torch.get("decode")
    print(f"{'decode, cache ' + str(d['prefill']) + suffix:32s} {ms:10.3f} {gpu:14.3f} {tot(d, 'decode_gpu_span_s'):12.3f} "
          f"{tot(d, 'decode_record_s'):12.3f} "
          f"{tot(d, 'decode_profiled_s'):15.3f} {t if t else float('nan'):9.3f} {(t / ms) if t else float('nan'):6.2f} >= 0.8")
PY
