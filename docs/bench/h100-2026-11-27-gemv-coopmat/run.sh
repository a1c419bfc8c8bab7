#!/bin/bash
# session 28: gemv_coopmat. usage: run_s28.sh [tests SECS] [gsweep SECS "SHAPES"] [models FILTER]
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
    tests)
      for tc in "*default picks*" "*decode boundary*" "*every gemm config*"; do
        f="$O/test-${tc//[^a-z]/}.txt"
        (cd $B && LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL ./vulkan_gemm -tc="$tc" > "$f" 2>&1; echo "rc=$?" >> "$f")
        echo "== $tc"; grep -E "test cases|assertions|rc=|ERROR|FAIL|rror|layer" "$f" | head -20
      done; shift 2 ;;
    gsweep)
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/vk_bench --gemm-sweep --f16 $3 > $O/gsweep.txt 2>&1; echo "rc=$?" >> $O/gsweep.txt)
      grep -E "default|BEST|rc=|rror" $O/gsweep.txt; grep gemv_coopmat $O/gsweep.txt | sort -k9 -n | head -40; shift 3 ;;
    models)
      LD_LIBRARY_PATH=$L timeout 400 bash bench/h100_models.sh $B $O/models "$2" > /dev/null 2>&1
      cat $O/models/table.txt; shift 2 ;;
    *) shift ;;
  esac
done
