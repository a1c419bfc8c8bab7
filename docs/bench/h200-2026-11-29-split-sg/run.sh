#!/bin/bash
# session 39 (38's modes plus dec SECS: vk_bench --attention-decode). usage: run.sh [tests SECS BIN FILTER] [f32sweep LANES] [shapes LANES "MxNxK ..."] [models FILTER]
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
lanes() { if [ "$1" = "-" ]; then unset KFORGE_EXP_LANES; else export KFORGE_EXP_LANES=$1; fi; }
while [ $# -gt 0 ]; do
  case $1 in
    tests)
      f="$O/test-$3-$RANDOM.txt"
      (cd $B && LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL ./$3 -tc="$4" > "$f" 2>&1; echo "rc=$?" >> "$f")
      echo "== tests $3 $4"; grep -E "test cases|assertions|rc=|ERROR|FAIL|rror|layer" "$f" | head -20; shift 4 ;;
    f32sweep)
      g=$O/sweep-f32-lanes$2.txt; lanes $2
      (KFORGE_VK_PIPELINE_STATS=1 LD_LIBRARY_PATH=$L timeout 200 stdbuf -oL $B/vk_bench --sweep-f32 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== sweep-f32 lanes $2"; grep -E "TFLOP|stats|rc=|rror|FAIL" $g | sed 's/^ *sweep f32 //'; unset KFORGE_EXP_LANES; shift 2 ;;
    shapes)
      g=$O/shapes-lanes$2-$RANDOM.txt; lanes $2
      (LD_LIBRARY_PATH=$L timeout 200 stdbuf -oL $B/vk_bench --gemm-shapes $3 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== shapes lanes $2"; grep -E "f32|rc=|rror|FAIL" $g; unset KFORGE_EXP_LANES; shift 3 ;;
    models)
      LD_LIBRARY_PATH=$L timeout 560 bash bench/h100_models.sh $B $O/models-$2 "$2" > /dev/null 2>&1
      cat $O/models-$2/table.txt; shift 2 ;;
    ab)
      for bin in vk_models_old vk_models vk_models_old vk_models; do
        g=$O/ab-$bin-$RANDOM.txt
        (LD_LIBRARY_PATH=$L timeout 150 stdbuf -oL $B/$bin bench/model_shapes.txt --filter "$2" > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin $2"; grep -E "attention|rc=|rror" $g | head -40
      done; shift 2 ;;
    replay)
      g=$O/replay-$RANDOM.txt
      (LD_LIBRARY_PATH=$L timeout 120 stdbuf -oL $B/vk_bench --replay > $g 2>&1; echo "rc=$?" >> $g)
      echo "== replay"; grep -E "replay|rc=|rror" $g; shift ;;
    replayab)
      for bin in vk_bench_old vk_bench vk_bench_old vk_bench; do
        g=$O/replay-$bin-$RANDOM.txt
        (LD_LIBRARY_PATH=$L timeout 120 stdbuf -oL $B/$bin --replay > $g 2>&1; echo "rc=$?" >> $g)
        echo "== replay $bin"; grep -E "replay|rc=|rror" $g
      done; shift ;;
    barrierexp)
      for v in 0 1 2 3 0 1 2 3; do
        g=$O/barrierexp-$v-$RANDOM.txt
        (KFORGE_EXP_BARRIER=$v LD_LIBRARY_PATH=$L timeout 120 stdbuf -oL $B/vk_bench --replay > $g 2>&1; echo "rc=$?" >> $g)
        echo "== barrier variant $v"; grep -E "dependent   no timestamps|rc=|rror" $g
      done; shift ;;
    shapesab)
      for bin in vk_bench_old vk_bench vk_bench_old vk_bench; do
        g=$O/shapesab-$bin-$RANDOM.txt
        (LD_LIBRARY_PATH=$L timeout 100 stdbuf -oL $B/$bin --gemm-shapes --f16 $2 > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin"; grep -E "f16.*default|rc=|rror" $g
      done; shift 2 ;;
    shapesabf)
      for bin in vk_bench_old vk_bench vk_bench_old vk_bench; do
        g=$O/shapesab$2-$bin-$RANDOM.txt
        (LD_LIBRARY_PATH=$L timeout 100 stdbuf -oL $B/$bin --gemm-shapes $2 $3 > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin $2"; grep -E "default|rc=|rror" $g
      done; shift 3 ;;
    gsweepf)
      g=$O/gsweep$2-$RANDOM.txt
      (LD_LIBRARY_PATH=$L timeout $3 stdbuf -oL $B/vk_bench --gemm-sweep $2 $4 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== gsweep $2"; grep -E "default|BEST|rc=|rror" $g; for s in $4; do grep "SWEEP" $g | grep "_${s} " | awk '{for(i=1;i<=NF;i++) if($i=="ms") print $(i-1), $0}' | sort -n | head -8; done; shift 4 ;;
    gsweep)
      g=$O/gsweep-$RANDOM.txt
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/vk_bench --gemm-sweep --f16 $3 > $g 2>&1; echo "rc=$?" >> $g)
      echo "== gsweep"; grep -E "default|rc=|rror" $g; for s in $3; do grep "gemv_coopmat" $g | grep "_${s} " | awk '{for(i=1;i<=NF;i++) if($i=="ms") print $(i-1), $0}' | sort -n | head -8; done; shift 3 ;;
    dec)
      g=$O/decode-$RANDOM.txt
      (LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL $B/vk_bench --attention-decode > $g 2>&1; echo "rc=$?" >> $g)
      echo "== decode"; grep -E "kernel|rc=|rror|FAIL" $g; grep sweep $g | sort -t: -k2 -n | head -60; shift 2 ;;
    *) shift ;;
  esac
done
