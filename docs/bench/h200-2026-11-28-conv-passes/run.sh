#!/bin/bash
# session 35. usage: run.sh [tests SECS FILTER] [models FILTER] [parts FILTER] [attn MODE SECS]
set -u
B=.device/bin O=$OUT/o
mkdir -p $O
tar xJf .device/pkg.tar.xz -C .device
if [ ! -e /tmp/.unpacked ]; then
  for f in .gl/*.deb $B/vulkan-validationlayers*.deb; do dpkg -x "$f" /; done; ldconfig
  touch /tmp/.unpacked
fi
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export KFORGE_CACHE_DIR=/tmp/kforge-cache
L=$(cd .device/lib && pwd)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $O/env.txt 2>&1
while [ $# -gt 0 ]; do
  case $1 in
    tests)
      f="$O/test-$RANDOM.txt"
      (cd $B && LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL ./vulkan_ops -tc="$3" > "$f" 2>&1; echo "rc=$?" >> "$f")
      echo "== tests $3"; grep -E "test cases|assertions|rc=|ERROR|FAIL|rror|layer" "$f" | head -20; shift 3 ;;
    models)
      LD_LIBRARY_PATH=$L timeout 560 bash bench/h100_models.sh $B $O/models-$2 "$2" > /dev/null 2>&1
      cat $O/models-$2/table.txt; shift 2 ;;
    parts)
      g=$O/parts-$2.txt
      (LD_LIBRARY_PATH=$L timeout 120 stdbuf -oL $B/vk_models bench/model_shapes.txt --filter "$2" --parts > $g 2>&1; echo "rc=$?" >> $g)
      echo "== parts $2"; grep -v '^ *$' $g | tail -60; shift 2 ;;
    attn)
      g=$O/attention-$2.txt
      (KFORGE_VK_PIPELINE_STATS=1 LD_LIBRARY_PATH=$L timeout $3 stdbuf -oL $B/vk_bench --attention$2 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== attn$2"; grep -E "kernel|sweep|stats|rc=|rror" $g | grep -v "split\|coopmat2" | sed 's/Binary Size = [0-9]*, //' ; shift 3 ;;
    partsab)
      for bin in vk_models_old vk_models vk_models_old vk_models; do
        g=$O/parts-$bin-$RANDOM.txt
        (LD_LIBRARY_PATH=$L timeout 120 stdbuf -oL $B/$bin bench/model_shapes.txt --filter "$2" --parts > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin $2"; grep -E "conv2d|rc=" $g | grep -v "^ *$" | head -40
      done; shift 2 ;;
    *) shift ;;
  esac
done
