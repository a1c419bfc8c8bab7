#!/bin/bash
# H100 check (run by the device tool with .gl and .device carried; .device holds
# kforge, vulkan_suite and vulkan_ops built with -DKFORGE_NATIVE=OFF, their
# shared libraries in .device/lib, and the validation-layer .deb): every op through policy::vulkan with the validation suite
# (tests and the kforge tool), validation layer on, and the demo.
set -u
OUT=${OUT:-/tmp/out}
for f in .gl/*.deb .device/vulkan-validationlayers*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export LD_LIBRARY_PATH=$PWD/.device/lib KFORGE_CACHE_DIR=/tmp/kfc
B=.device/bin
{ date -u; nvidia-smi -L; $B/kforge devices; } > $OUT/devices.txt 2>&1
# `h100_validate.sh mutate OP...` (issue 46): the gate's mutation corpus on
# this GPU, one `kforge mutate --op OP --json` per op, 8 at a time, then
# vulkan_suite with the validation layer on; each kernel's verdict and
# seconds in $OUT/mutate.jsonl.
if [ "${1:-}" = mutate ]; then
  shift
  (KFORGE_VK_VALIDATION=1 timeout 400 $B/vulkan_suite > $OUT/test_vulkan_suite.txt 2>&1; echo "vulkan_suite (validation on) rc=$?" >> $OUT/summary.txt) &
  printf '%s\n' "$@" | xargs -P 8 -I{} sh -c "timeout 480 $B/kforge mutate --op {} --json > /tmp/mut_{}.json 2>/tmp/mut_{}.err; echo {} rc=\$?" |
    sort | tee -a $OUT/summary.txt
  cat /tmp/mut_*.json > $OUT/mutate.jsonl; cat /tmp/mut_*.err > $OUT/mutate_err.txt
  wait; tail -4 $OUT/test_vulkan_suite.txt
  exit 0
fi
for t in vulkan_suite vulkan_ops; do
  timeout 150 $B/$t > $OUT/test_$t.txt 2>&1; echo "$t rc=$?" | tee -a $OUT/summary.txt
done
export KFORGE_VK_VALIDATION=1
: > $OUT/validate.txt
for dt in f32 f16; do
  for spec in "gemm 257x100x33" "gemm 1000x3x17 --epilogue bias_gelu" "relu 3x7x257" "gelu 3x7x257" "exp 3x7x257" "sigmoid 100x257" \
              "add 7x1x33,17x1" "mul 33x1000" "max 33x1000" "reduce_sum 7x257x3 --axis 1" "reduce_max 100x257" "reduce_mean 33x7 --axis 0" \
              "softmax 100x257" "layer_norm 3x1000" "rms_norm 100x257" "conv2d 2x4x17x17,6x2x3x3 --groups 2 --stride 2 --pad 1" \
              "conv2d 1x3x17x13,5x3x3x2 --dilation 2 --epilogue bias_relu" "attention 2x3x33x17" "attention 1x2x100x33 --causal"; do
    set -- $spec; op=$1; shp=$2; shift 2
    r=$($B/kforge validate --op $op --shape $shp --dtype $dt --policy vulkan "$@" 2>&1 | tail -1)
    echo "$dt $spec: $r (rc=$?)" >> $OUT/validate.txt
  done
done
grep -c PASSED $OUT/validate.txt | sed 's/^/validate PASSED lines: /' | tee -a $OUT/summary.txt
grep -v PASSED $OUT/validate.txt | tee -a $OUT/summary.txt
KFORGE_VK_VALIDATION=0 timeout 200 $B/kforge demo > $OUT/demo.txt 2>&1; echo "demo rc=$?" | tee -a $OUT/summary.txt
tail -40 $OUT/demo.txt
