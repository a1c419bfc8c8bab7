#!/bin/bash
# bench/h100_vulkan.sh — on the GPU machine, in one invocation: kforge's Vulkan
# cases (bench/vk_bench.cpp) and their PyTorch peers (bench/torch_peers.py),
# one table with ratios, then the Vulkan test suites (validation layer on).
#
#   bench/h100_vulkan.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds vk_bench and the vulkan_* test executables (built here with
# -DKFORGE_NATIVE=OFF) and optionally vulkan-validationlayers*.deb; the Vulkan
# loader packages are unpacked from .gl/ (see the device README). Each step
# has its own time limit and its own raw file under OUT_DIR. Ratio = PyTorch
# time / kforge time: above 1 means kforge is faster.
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR}
mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done
for f in "$BIN"/vulkan-validationlayers*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache
{ date -u; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
timeout 120 "$BIN"/vk_bench > "$OUT/vk_bench.txt" 2>&1; echo "vk_bench rc=$?" >> "$OUT/vk_bench.txt"
PYTHONUNBUFFERED=1 timeout 100 python3 bench/torch_peers.py > "$OUT/torch_peers.txt" 2>&1; echo "torch rc=$?" >> "$OUT/torch_peers.txt"
python3 - "$OUT/vk_bench.txt" "$OUT/torch_peers.txt" <<'PY' | tee "$OUT/table.txt"
import sys
def parse(path):
    d = {}
    for line in open(path):
        if line.startswith("RESULT "):
            _, name, ms, rate, unit = line.split()
            d[name] = (float(ms), float(rate), unit)
    return d
kf, pt = parse(sys.argv[1]), parse(sys.argv[2])
print(f"{'case':44s} {'kforge ms':>10s} {'rate':>9s} {'unit':11s} {'torch ms':>10s} {'rate':>9s} {'torch/kforge':>12s}")
for name, (ms, rate, unit) in kf.items():
    p = pt.get(name)
    print(f"{name:44s} {ms:10.4f} {rate:9.2f} {unit:11s} " +
          (f"{p[0]:10.4f} {p[1]:9.2f} {p[0] / ms:12.2f}" if p else f"{'-':>10s} {'-':>9s} {'-':>12s}"))
PY
for t in vulkan_ops:60 vulkan_vector_paths:40 vulkan_runtime:60 vulkan_gemm:90; do
  lim=${t#*:} t=${t%:*}
  echo "== $t" >> "$OUT/tests.txt"
  (cd "$BIN" && timeout $lim stdbuf -oL -eL ./$t -d >> "$OUT/tests.txt" 2>&1; echo "$t rc=$?" >> "$OUT/tests.txt")
  tail -4 "$OUT/tests.txt"
done
timeout 90 "$BIN"/vk_bench --sweep > "$OUT/vk_sweep.txt" 2>&1; echo "sweep rc=$?" >> "$OUT/vk_sweep.txt"
