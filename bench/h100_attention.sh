#!/bin/bash
# bench/h100_attention.sh — attention on the GPU machine in one command
# (issue 11); its time limits add up to 220 s of the 4 minutes:
#   1. vulkan_ops' attention tests and vulkan_suite (validation layer on):
#      the cooperative-matrix kernel at head dims 64, 80, 96, 128, 256,
#      grouped KV heads, both layouts, causal S < L and S > L, the split
#      (decode) kernel, an Inf in a masked V row, the catalog's 10-case suite;
#   2. `vk_bench --attention` and bench/torch_attention.py (PyTorch SDPA, CUDA
#      events) on the same f16 cases: causal B1 H32 S4096 D64 / D128 with 32
#      and 8 KV heads, decode B1 H32 S1 L4096 / L32768 D128 over 8 KV heads,
#      B8 H16 S2048 D64; a table of both, last.
#
#   bench/h100_attention.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds vk_bench, vulkan_ops and vulkan_suite (built here with
# -DKFORGE_NATIVE=OFF) and optionally vulkan-validationlayers*.deb; the
# Vulkan loader is unpacked from .gl/*.deb (the device README). Each step
# has its own time limit and raw file under OUT_DIR. Ratio = PyTorch time /
# kforge time: above 1 means kforge is faster.
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR}
mkdir -p "$OUT"
for f in .gl/*.deb "$BIN"/vulkan-validationlayers*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache
{ date -u; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
: > "$OUT/tests.txt"
for t in "vulkan_ops:60:-tc=*attention*" "vulkan_suite:60:"; do
  IFS=: read -r name lim filter <<< "$t"
  echo "== $name $filter" >> "$OUT/tests.txt"
  (cd "$BIN" && timeout "$lim" stdbuf -oL -eL ./"$name" ${filter:+"$filter"} >> "$OUT/tests.txt" 2>&1
   echo "$name rc=$?" >> "$OUT/tests.txt")
done
grep -E "rc=|test cases:|assertions:" "$OUT/tests.txt"
timeout 50 "$BIN"/vk_bench --attention > "$OUT/vk_bench.txt" 2>&1; echo "vk_bench rc=$?" >> "$OUT/vk_bench.txt"
PYTHONUNBUFFERED=1 timeout 50 python3 bench/torch_attention.py > "$OUT/torch.txt" 2>&1; echo "torch rc=$?" >> "$OUT/torch.txt"
grep -E "error|rc=" "$OUT/vk_bench.txt" "$OUT/torch.txt"
python3 bench/result_table.py "$OUT/vk_bench.txt" "$OUT/torch.txt" | tee "$OUT/table.txt"
