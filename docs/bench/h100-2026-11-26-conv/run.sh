#!/bin/bash
# session 25: conv2d explicit GEMM. usage: run_conv.sh [tests] [models FILTER]
set -u
B=.device/bin O=/tmp/o
mkdir -p $O/r
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
      for t in "vulkan_ops -tc=*conv2d*" vulkan_suite vulkan_bf16; do
        n=${t%% *}
        (cd $B && LD_LIBRARY_PATH=$L timeout 200 ./$t > $O/r/test-$n.txt 2>&1; echo "rc=$?" >> $O/r/test-$n.txt)
      done
      shift
      for f in $O/r/test-*.txt; do echo "== $f"; grep -E "test cases|assertions|rc=" $f; done ;;
    models)
      LD_LIBRARY_PATH=$L timeout 400 bash bench/h100_models.sh $B $O/models "$2" > /dev/null 2>&1
      cat $O/models/table.txt; shift 2 ;;
    parts)
      (LD_LIBRARY_PATH=$L timeout 300 $B/vk_models bench/model_shapes.txt --filter "$2" --parts > $O/parts.txt 2>&1)
      grep -E "RESULT|PARTS|ERROR" $O/parts.txt; shift 2 ;;
    sweep)
      (LD_LIBRARY_PATH=$L timeout 400 $B/vk_bench --gemm-sweep $2 > $O/sweep.txt 2>&1)
      grep -E "RESULT|SWEEP|best" $O/sweep.txt | awk '{print}' ; shift 2 ;;
    *) shift ;;
  esac
done
mkdir -p $OUT/o; cp -r $O/* $OUT/o/
