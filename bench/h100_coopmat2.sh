#!/bin/bash
# bench/h100_coopmat2.sh — the workgroup-scope tensor-core gemm (coopmat2,
# vulkan/spirv/gemm_coopmat2.hpp) on the GPU machine, in one command: what the
# driver lists (kforge devices), the tensor-core ceiling of the instructions
# (vk_bench --mma-probes), every coopmat2 config at the f16 prefill and
# square shapes beside the NV subgroup-scope kernel, and bf16 gemm (+ bias +
# gelu_tanh) on its default (vk_bench --coopmat2), cuBLAS at the same shapes
# (torch_gemm.py), then the tests against Eigen: without the validation layer
# (coopmat2 runs: vulkan_spirv, vulkan_gemm, vulkan_suite, vulkan_bf16), and
# with Debian's layer if BIN_DIR carries it (the layer predates the
# cooperative-matrix extensions, so contexts under it leave them off and the
# layer validates the kernels that run instead: vulkan_gemm, vulkan_suite,
# vulkan_ops, vulkan_bf16).
#
#   bench/h100_coopmat2.sh BIN_DIR OUT_DIR [--no-tests]
#
# BIN_DIR holds kforge (+ libsimdjson.so.*), vk_bench, vulkan_spirv,
# vulkan_gemm, vulkan_suite, vulkan_ops (built with -DKFORGE_NATIVE=OFF) and
# optionally vulkan-validationlayers*.deb; the Vulkan loader is unpacked from
# .gl/*.deb. About 8 minutes on an H100 with the tests.
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR} MODE=${3:-}
mkdir -p "$OUT"
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache LD_LIBRARY_PATH="$BIN${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ date -u; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
"$BIN"/kforge devices > "$OUT/devices.txt" 2>&1; echo "rc=$?" >> "$OUT/devices.txt"
grep -E "cooperative|bf16" "$OUT/devices.txt"
KFORGE_VK_PIPELINE_STATS=1 timeout 90 "$BIN"/vk_bench --mma-probes > "$OUT/probes.txt" 2>&1; echo "rc=$?" >> "$OUT/probes.txt"
grep -E "^PROBE|rc=" "$OUT/probes.txt"
timeout 240 "$BIN"/vk_bench --coopmat2 > "$OUT/coopmat2.txt" 2>&1; echo "vk_bench rc=$?" >> "$OUT/coopmat2.txt"
grep -E "^coopmat2|^BEST|gelu|default|bf16|WRONG|refused|rc=|rror" "$OUT/coopmat2.txt"
PYTHONUNBUFFERED=1 timeout 60 python3 "$(dirname "$0")"/torch_gemm.py > "$OUT/torch_gemm.txt" 2>&1
grep -E "f16_(4096x4096|512x4096|2048|4096x11008|512x14336|8192)|bf16" "$OUT/torch_gemm.txt"
[ "$MODE" = --no-tests ] && exit 0
run_tests() {  # file, then test:limit pairs
  local out=$1; shift
  : > "$out"
  for t in "$@"; do
    local lim=${t#*:} name=${t%:*}
    echo "== $name" >> "$out"
    (cd "$BIN" && timeout $lim stdbuf -oL -eL ./$name >> "$out" 2>&1; echo "$name rc=$?" >> "$out")
  done
  grep -E "rc=|Status|test cases" "$out"
}
run_tests "$OUT/tests.txt" vulkan_spirv:60 vulkan_gemm:400 vulkan_suite:120 vulkan_bf16:120
for f in "$BIN"/vulkan-validationlayers*.deb; do
  [ -e "$f" ] || continue
  dpkg -x "$f" / && ldconfig
  run_tests "$OUT/tests-layer.txt" vulkan_gemm:300 vulkan_suite:120 vulkan_ops:200 vulkan_bf16:120
  grep -m5 "validation" "$OUT/tests-layer.txt" | cut -c1-300
done
