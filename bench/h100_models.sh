#!/bin/bash
# bench/h100_models.sh — the model-shape bench on the GPU machine, in one
# command: kforge's Vulkan cases (bench/vk_models.cpp) and their PyTorch peers
# (bench/torch_models.py) over bench/model_shapes.txt, joined into one table.
#
#   bench/h100_models.sh BIN_DIR OUT_DIR [FILTER]
#
# BIN_DIR holds vk_models (built with -DKFORGE_NATIVE=OFF); the Vulkan loader
# is unpacked from .gl/ (see the device README). Ratio = PyTorch time / kforge
# time (above 1: kforge is faster). Memory-bound rows also give kforge's
# fraction of the copy bandwidth it measured in the same run (copy.256MiB).
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR} FILTER=${3:-}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv; } > "$OUT/env.txt" 2>&1
args=(bench/model_shapes.txt); [ -n "$FILTER" ] && args+=(--filter "$FILTER")
timeout 450 "$BIN"/vk_models "${args[@]}" > "$OUT/vk_models.txt" 2>&1; echo "vk_models rc=$?" >> "$OUT/vk_models.txt"
PYTHONUNBUFFERED=1 timeout 200 python3 bench/torch_models.py "${args[@]}" > "$OUT/torch_models.txt" 2>&1; echo "torch rc=$?" >> "$OUT/torch_models.txt"
python3 - "$OUT/vk_models.txt" "$OUT/torch_models.txt" <<'PY' | tee "$OUT/table.txt"
import sys, statistics
def parse(path):
    d = {}
    for line in open(path):
        f = line.split()
        if f and f[0] == "RESULT":
            d[(f[1], f[2], f[3])] = (float(f[4]), float(f[5]), f[6], f[7] if len(f) > 7 else "")
        elif f and f[0] in ("ERROR", "SKIP"):
            print(line.rstrip())
    return d
kf, pt = parse(sys.argv[1]), parse(sys.argv[2])
copy = next((v[1] for k, v in kf.items() if k[1] == "copy"), None)
print(f"{'case':30s} {'op':10s} {'dt':4s} {'kforge ms':>10s} {'rate':>9s} {'unit':8s} {'torch ms':>9s} {'rate':>9s} {'ratio':>6s} {'%copy':>6s} check")
ratios = []
for (name, op, dt), (ms, rate, unit, chk) in kf.items():
    p = pt.get((name, op, dt))
    ratio = p[0] / ms if p else None
    if ratio: ratios.append(ratio)
    frac = f"{100 * rate / copy:5.0f}%" if copy and unit == "GB/s" else ""
    print(f"{name:30s} {op:10s} {dt:4s} {ms:10.4f} {rate:9.2f} {unit:8s} " +
          (f"{p[0]:9.4f} {p[1]:9.2f} {ratio:6.2f}" if p else f"{'-':>9s} {'-':>9s} {'-':>6s}") + f" {frac:>6s} {chk}")
if ratios:
    print(f"rows {len(ratios)}, median ratio {statistics.median(ratios):.2f}, min {min(ratios):.2f}, rows below 0.5: {sum(r < 0.5 for r in ratios)}")
PY
