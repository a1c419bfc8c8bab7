#!/bin/bash
# session 45: the Vulkan suites on the H200 under Debian sid's validation layer (1.4.363, which
# knows VK_NV_cooperative_matrix2, VK_KHR_cooperative_matrix and VK_KHR_shader_bfloat16, so the
# tensor-core kernels stay on under it), then the model-shape table.
# .device/sid/ holds Debian sid's vulkan-validationlayers_1.4.363.0-1_amd64.deb (from
# deb.debian.org/debian/pool/main/v/vulkan-validationlayers/); .device/pkg.tar.xz the binaries
# (bin/) and the shared libraries ldd names but libc, libm, libstdc++, libgcc_s and libvulkan (lib/);
# .gl the loader debs (the device README).
# usage (device, repo root): run.sh [tests SECS "BIN ..."] [bfab "MxNxK ..."] [models FILTER] [devices]
set -u
B=.device/bin O=/tmp/o-$$
mkdir -p $O
[ -d $B ] || tar xJf .device/pkg.tar.xz -C .device
if [ ! -e /tmp/.unpacked ]; then
  for f in .gl/*.deb .device/sid/vulkan-validationlayers_*.deb; do dpkg -x "$f" /; done; ldconfig
  touch /tmp/.unpacked
fi
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export KFORGE_CACHE_DIR=/tmp/kforge-cache
L=$(cd .device/lib && pwd)
{ date -u; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; ls /usr/share/vulkan/explicit_layer.d/; grep -h api_version /usr/share/vulkan/explicit_layer.d/*.json; } > $O/env.txt 2>&1
while [ $# -gt 0 ]; do
  case $1 in
    tests)   # every binary at once (correctness only: they share the GPU), each under its own limit
      for e in $3; do   # BIN or BIN:ARG (one doctest argument, e.g. -tc=..., no spaces: ? matches one)
        t=${e%%:*} f=; [ "$t" != "$e" ] && f="${e#*:}"
        (cd $B && LD_LIBRARY_PATH=$L timeout $2 stdbuf -oL ./$t $f > "$O/test-$t.txt" 2>&1; echo "rc=$?" >> "$O/test-$t.txt") &
      done
      wait
      for e in $3; do t=${e%%:*}; echo "== $e"; grep -E "test cases|assertions|rc=|not installed|VUID|rror" "$O/test-$t.txt" | head -12; done
      shift 3 ;;
    bfab)    # the bf16 gemm's default config, the binary before this change and after, alternated twice
      for bin in vk_bench_old vk_bench vk_bench_old vk_bench; do
        g=$O/bfab-$bin-$RANDOM.txt
        (LD_LIBRARY_PATH=$L timeout 100 stdbuf -oL $B/$bin --gemm-shapes --bf16 $2 > $g 2>&1; echo "rc=$?" >> $g)
        echo "== $bin"; grep -E "default|rc=|rror" $g
      done; shift 2 ;;
    devices)
      LD_LIBRARY_PATH=$L $B/kforge devices > $O/devices.txt 2>&1; echo "rc=$?" >> $O/devices.txt; cat $O/devices.txt; shift ;;
    models)
      LD_LIBRARY_PATH=$L timeout 560 bash bench/h100_models.sh $B $O/models-$2 "$2" > /dev/null 2>&1
      cat $O/models-$2/table.txt; shift 2 ;;
    *) shift ;;
  esac
done
tar czf $OUT/out.tgz -C $O .
