#!/bin/bash
# session 27: coopmat2 attention. usage: run_s27.sh [attn] [cm2tests] [models FILTER]
set -u
B=.device/bin O=$OUT/o
mkdir -p $O
if [ ! -e $B/.unpacked ]; then
  tar xJf .device/pkg.tar.xz -C .device
  for f in .gl/*.deb $B/vulkan-validationlayers*.deb; do dpkg -x "$f" /; done; ldconfig
  touch $B/.unpacked
else
  tar xJf .device/pkg.tar.xz -C .device
fi
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export KFORGE_CACHE_DIR=/tmp/kforge-cache
L=$(cd .device/lib && pwd)
while [ $# -gt 0 ]; do
  case $1 in
    attn)
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/vk_bench --attention-sweep > $O/attn-sweep.txt 2>&1; echo "rc=$?" >> $O/attn-sweep.txt)
      grep -E "RESULT|sweep|kernel|rc=|rror" $O/attn-sweep.txt; shift 2 ;;
    probes)
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/vk_bench --attention-probes > $O/attn-probes.txt 2>&1; echo "rc=$?" >> $O/attn-probes.txt)
      grep -E "RESULT|sweep|kernel|rc=|rror" $O/attn-probes.txt; shift 2 ;;
    attn1)
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/vk_bench --attention > $O/attn.txt 2>&1; echo "rc=$?" >> $O/attn.txt)
      grep -E "RESULT|sweep|kernel|rc=|rror" $O/attn.txt; shift 2 ;;
    cm2tests)
      # The attention tests without the validation layer (it hides VK_NV_cooperative_matrix2), so that
      # the coopmat2 kernel runs them; then with it.
      for t in vulkan_ops; do
        (cd $B && VK_LAYER_PATH=/nonexistent LD_LIBRARY_PATH=$L timeout 150 ./$t -tc="*attention*" > $O/test-nolayer-$t.txt 2>&1; echo "rc=$?" >> $O/test-nolayer-$t.txt)
        echo "== $t without the layer"; grep -E "test cases|assertions|rc=|ERROR|FAIL|layer" $O/test-nolayer-$t.txt | head -30
      done
      for t in vulkan_bf16 vulkan_ops; do
        (cd $B && LD_LIBRARY_PATH=$L timeout 100 ./$t -tc="*attention*" > $O/test-$t.txt 2>&1; echo "rc=$?" >> $O/test-$t.txt)
        echo "== $t"; grep -E "test cases|assertions|rc=|ERROR|FAIL" $O/test-$t.txt | head -20
      done; shift ;;
    diag)
      for tc in "*coopmat knob*" "*matches eigen*"; do
        (cd $B && VK_LAYER_PATH=/nonexistent LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL ./vulkan_ops -tc="$tc" -d > "$O/diag-${tc//[^a-z]/}.txt" 2>&1; echo "rc=$?" >> "$O/diag-${tc//[^a-z]/}.txt")
        echo "== $tc"; tail -25 "$O/diag-${tc//[^a-z]/}.txt"
      done; shift 2 ;;
    models)
      LD_LIBRARY_PATH=$L timeout 400 bash bench/h100_models.sh $B $O/models "$2" > /dev/null 2>&1
      cat $O/models/table.txt; shift 2 ;;
    *) shift ;;
  esac
done
