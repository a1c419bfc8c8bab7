#!/bin/bash
# 2026-11-27: coopmat2 splits. usage: run.sh [tests] [attn] [gsweep "SHAPES"] [parts "SHAPES"] [vparts FILTER] [models FILTER]
# (unpacks .device/pkg.tar.xz: the binaries and their shared libraries, built here with -DKFORGE_NATIVE=OFF)
set -u
B=.device/bin O=/tmp/o
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
      (LD_LIBRARY_PATH=$L timeout 300 $B/vk_bench --attention-sweep > $O/attn-sweep.txt 2>&1)
      grep -E "RESULT|sweep|kernel" $O/attn-sweep.txt; shift ;;
    gsweep)
      (LD_LIBRARY_PATH=$L timeout 400 $B/vk_bench --gemm-sweep --f16 $2 > $O/gsweep.txt 2>&1)
      cat $O/gsweep.txt | grep -v "^ *$" | tail -150; shift 2 ;;
    tests)
      for t in vulkan_gemm vulkan_bf16; do
        (cd $B && LD_LIBRARY_PATH=$L timeout 250 ./$t > $O/test-$t.txt 2>&1; echo "rc=$?" >> $O/test-$t.txt)
        echo "== $t"; grep -E "test cases|assertions|rc=|ERROR|FAIL" $O/test-$t.txt | head -20
      done; shift ;;
    parts)
      # (the before/variant runs of split-parts-*.txt ran this with temporary variants of
      # spirv/gemm_coopmat2.hpp chosen by an environment variable; the variants are not in the tree)
      (LD_LIBRARY_PATH=$L timeout 200 $B/vk_bench --split-parts $2 2>&1 | tee $O/parts-0.txt | grep PARTS)
      shift 2 ;;
    vparts)
      (LD_LIBRARY_PATH=$L timeout 300 $B/vk_models bench/model_shapes.txt --filter "$2" --parts > $O/vparts.txt 2>&1)
      grep -E "RESULT|PARTS|ERROR" $O/vparts.txt; shift 2 ;;
    models)
      LD_LIBRARY_PATH=$L timeout 400 bash bench/h100_models.sh $B $O/models "$2" > /dev/null 2>&1
      cat $O/models/table.txt; shift 2 ;;
    *) shift ;;
  esac
done
mkdir -p $OUT/o; cp -r $O/* $OUT/o/
