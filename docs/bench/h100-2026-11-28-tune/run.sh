#!/bin/bash
# session 33. usage: run.sh [attn MODE SECS] [gsweep SECS BIN "SHAPES"] [models FILTER] [kt SECS "TUNE ARGS"] [ttest BIN SECS]
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
    attn)
      g=$O/attention-$2.txt
      (KFORGE_VK_PIPELINE_STATS=1 LD_LIBRARY_PATH=$L timeout $3 stdbuf -oL $B/vk_bench --attention-$2 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== $2"; grep -E "kernel|sweep|stats|rc=|rror" $g | sed 's/Binary Size = [0-9]*, //' ; shift 3 ;;
    ab)
      for bin in $2 $3; do
        g=$O/attention-$bin.txt
        (LD_LIBRARY_PATH=$L timeout $4 stdbuf -oL $B/$bin --attention > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin"; grep -E "RESULT|rc=|rror" $g
      done; shift 4 ;;
    dec)
      for bin in $2; do
        g=$O/decode-$bin.txt
        (LD_LIBRARY_PATH=$L timeout 60 stdbuf -oL $B/$bin --attention-decode > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin"; grep -E "RESULT|sweep|rc=|rror" $g
      done; shift 2 ;;
    gsweep)
      g=$O/gsweep-$3.txt
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/$3 --gemm-sweep --f16 $4 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== $3"; grep -E "default|BEST|rc=|rror" $g; shift 4 ;;
    tests)
      f="$O/test-attn.txt"
      (cd $B && LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL ./vulkan_ops -tc="*attention*" > "$f" 2>&1; echo "rc=$?" >> "$f")
      grep -E "test cases|assertions|rc=|ERROR|FAIL|rror|layer" "$f" | head -20; shift 2 ;;
    kt)
      g=$O/tune-$RANDOM.txt
      echo "kforge tune $3" > $g
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/kforge tune $3 >> $g 2>&1; echo "rc=$?" >> $g)
      echo "== tune $3"; grep -E "^best|median|default|trials:|rc=|rror" $g | head -8; shift 3 ;;
    ttest)
      f="$O/test-$2.txt"
      (cd $B && LD_LIBRARY_PATH=$L timeout $3 stdbuf -oL ./$2 > "$f" 2>&1; echo "rc=$?" >> "$f")
      echo "== $2"; grep -E "test cases|assertions|rc=|ERROR|FAIL|rror|layer" "$f" | head -20; shift 3 ;;
    models)
      LD_LIBRARY_PATH=$L timeout 700 bash bench/h100_models.sh $B $O/models "$2" > /dev/null 2>&1
      cat $O/models/table.txt; shift 2 ;;
    *) shift ;;
  esac
done
# nomerge: vk_bench_nm --attention-decode with and without KFORGE_PROBE_NO_MERGE (merge dispatch left out: wrong results)
if [ "${NOMERGE:-}" = 1 ]; then
  for e in 0 1 0 1; do
    g=$O/decode-nm-$e-$RANDOM.txt
    if [ $e = 1 ]; then export KFORGE_PROBE_NO_MERGE=1; else unset KFORGE_PROBE_NO_MERGE; fi
    (LD_LIBRARY_PATH=$L timeout 60 stdbuf -oL $B/vk_bench_nm --attention-decode > $g 2>&1; echo "rc=$?" >> $g)
    echo "== no-merge=$e"; grep -E "RESULT|sweep|rc=|rror" $g
  done
fi
cp /tmp/kforge-cache/tuning.json /tmp/kforge-cache/history.csv $O/ 2>/dev/null || true
