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
python3 bench/join_results.py "$OUT/vk_bench.txt" "$OUT/torch_peers.txt" | tee "$OUT/table.txt"
for t in vulkan_ops:60 vulkan_vector_paths:40 vulkan_runtime:60 vulkan_gemm:150; do
  lim=${t#*:} t=${t%:*}
  echo "== $t" >> "$OUT/tests.txt"
  (cd "$BIN" && timeout $lim stdbuf -oL -eL ./$t -d >> "$OUT/tests.txt" 2>&1; echo "$t rc=$?" >> "$OUT/tests.txt")
  tail -4 "$OUT/tests.txt"
done
timeout 90 "$BIN"/vk_bench --sweep > "$OUT/vk_sweep.txt" 2>&1; echo "sweep rc=$?" >> "$OUT/vk_sweep.txt"
