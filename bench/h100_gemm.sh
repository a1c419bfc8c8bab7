#!/bin/bash
# bench/h100_gemm.sh — the Vulkan gemm by shape class on the GPU machine, in
# one command (about 4 minutes on an H100): kforge's default config at the
# model shapes (vk_bench --gemm-shapes: decode M = 1..16, prefill, N = 11008
# / 14336 / 128256, f32 and f16, each on a fresh context, plus a 256 MiB copy
# as the bandwidth reference) and their PyTorch peers (torch_gemm.py beside
# this script, TF32 off), then the gemm tests and the suite with the
# validation layer on (on the H100 they run the cooperative-matrix, gemv and
# split-K kernels against Eigen), then one table with ratios, printed last.
#
#   bench/h100_gemm.sh BIN_DIR OUT_DIR [--sweep]
#
# BIN_DIR holds vk_bench, vulkan_gemm and vulkan_suite (built with
# -DKFORGE_NATIVE=OFF) and optionally vulkan-validationlayers*.deb; the
# Vulkan loader is unpacked from .gl/*.deb. --sweep also times the candidate
# configs of every shape (vk_bench --gemm-sweep, about 3 more minutes; SWEEP
# and BEST lines in OUT_DIR/vk_gemm.txt, and the f16 4096×11008×4096 case
# again on a context holding the other shapes' memory): how the defaults were
# chosen (docs/bench/h100-2026-11-23-gemm-sweep.txt).
# Ratio = PyTorch time / kforge time: above 1 means kforge is faster.
set -u
BIN=${1:?BIN_DIR} OUT=${2:?OUT_DIR} MODE=${3:-}
mkdir -p "$OUT"
for f in .gl/*.deb "$BIN"/vulkan-validationlayers*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done
ldconfig
if [ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ]; then
  export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
fi
export KFORGE_CACHE_DIR=/tmp/kforge-cache
{ date -u; nvidia-smi -L; } > "$OUT/env.txt" 2>&1
bench=--gemm-shapes lim=100
[ "$MODE" = --sweep ] && bench=--gemm-sweep lim=420
timeout $lim "$BIN"/vk_bench $bench > "$OUT/vk_gemm.txt" 2>&1; echo "vk_bench rc=$?" >> "$OUT/vk_gemm.txt"
PYTHONUNBUFFERED=1 timeout 100 python3 "$(dirname "$0")"/torch_gemm.py > "$OUT/torch_gemm.txt" 2>&1
echo "torch rc=$?" >> "$OUT/torch_gemm.txt"
: > "$OUT/tests.txt"
for t in vulkan_gemm:150 vulkan_suite:60; do
  lim=${t#*:} t=${t%:*}
  echo "== $t" >> "$OUT/tests.txt"
  (cd "$BIN" && timeout $lim stdbuf -oL -eL ./$t -d >> "$OUT/tests.txt" 2>&1; echo "$t rc=$?" >> "$OUT/tests.txt")
done
grep -E "rc=|Status|test cases| s: " "$OUT/tests.txt"
grep -E "FAIL|WRONG" "$OUT/vk_gemm.txt" "$OUT/tests.txt" | head -20
grep -E "^BEST|after_other" "$OUT/vk_gemm.txt"
grep -E " default: " "$OUT/vk_gemm.txt" | sed 's/^ *//'
python3 "$(dirname "$0")"/join_results.py "$OUT/vk_gemm.txt" "$OUT/torch_gemm.txt" | tee "$OUT/table.txt"
