#!/bin/bash
# bench/h100_coopmat2.sh — the workgroup-scope tensor-core gemm (coopmat2,
# vulkan/spirv/gemm_coopmat2.hpp) on the GPU machine, in one command: what the
# driver lists (kforge devices), the SPIR-V tests, every coopmat2 config at
# the f16 prefill and square shapes beside the NV subgroup-scope kernel, and
# bf16 gemm (+ bias + gelu_tanh) on its default (vk_bench --coopmat2), cuBLAS
# at the same shapes (torch_gemm.py), and the
# gemm tests against Eigen (every config, odd shapes, epilogues) — first
# without the validation layer, then the SPIR-V tests again with Debian's
# layer if BIN_DIR carries it.
#
#   bench/h100_coopmat2.sh BIN_DIR OUT_DIR
#
# BIN_DIR holds kforge, vk_bench, vulkan_spirv, vulkan_gemm, vulkan_suite
# (built with -DKFORGE_NATIVE=OFF) and optionally vulkan-validationlayers*.deb;
# the Vulkan loader is unpacked from .gl/*.deb.
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR}
mkdir -p "$OUT"
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache
{ date -u; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
"$BIN"/kforge devices > "$OUT/devices.txt" 2>&1; echo "rc=$?" >> "$OUT/devices.txt"
cat "$OUT/devices.txt"
(cd "$BIN" && timeout 60 ./vulkan_spirv > "$OUT/spirv.txt" 2>&1; echo "vulkan_spirv rc=$?" >> "$OUT/spirv.txt")
tail -3 "$OUT/spirv.txt"
timeout 240 "$BIN"/vk_bench --coopmat2 > "$OUT/coopmat2.txt" 2>&1; echo "vk_bench rc=$?" >> "$OUT/coopmat2.txt"
grep -E "^coopmat2|^BEST|gelu|bf16|WRONG|rc=|rror" "$OUT/coopmat2.txt"
PYTHONUNBUFFERED=1 timeout 60 python3 "$(dirname "$0")"/torch_gemm.py > "$OUT/torch_gemm.txt" 2>&1
grep -E "f16_(4096x4096|512x4096|2048|4096x11008|512x14336|8192)|bf16" "$OUT/torch_gemm.txt"
: > "$OUT/tests.txt"
for t in vulkan_gemm:200 vulkan_suite:90; do
  lim=${t#*:} t=${t%:*}
  echo "== $t" >> "$OUT/tests.txt"
  (cd "$BIN" && timeout $lim stdbuf -oL -eL ./$t >> "$OUT/tests.txt" 2>&1; echo "$t rc=$?" >> "$OUT/tests.txt")
done
grep -E "rc=|Status|test cases|ERROR" "$OUT/tests.txt" | head -30
for f in "$BIN"/vulkan-validationlayers*.deb; do
  [ -e "$f" ] || continue
  dpkg -x "$f" / && ldconfig
  (cd "$BIN" && timeout 60 ./vulkan_spirv > "$OUT/spirv-layer.txt" 2>&1; echo "vulkan_spirv (layer) rc=$?" >> "$OUT/spirv-layer.txt")
  grep -E "rc=|Status|VUID" "$OUT/spirv-layer.txt" | head -8
  KFORGE_VK_VALIDATION=1 timeout 120 "$BIN"/vk_bench --coopmat2 --smoke > "$OUT/coopmat2-layer.txt" 2>&1
  echo "vk_bench --coopmat2 --smoke (layer) rc=$?" >> "$OUT/coopmat2-layer.txt"
  grep -c "validation" "$OUT/coopmat2-layer.txt"; grep -m3 "validation" "$OUT/coopmat2-layer.txt" | cut -c1-400
  grep -E "WRONG|rc=" "$OUT/coopmat2-layer.txt"
done
