#!/bin/bash
# stop 24: parts-submitted steps, no per-op timestamps in timed steps, vector gated/embedding.
# usage: run_s24.sh tests|bf16|f16 ...
set -u
B=.device/bin O=/tmp/o
mkdir -p $O/r
if [ ! -e $B/kforge.real ]; then
  tar xJf .device/pkg.tar.xz -C .device
  L=$(cd .device/lib && pwd)
  mv $B/kforge $B/kforge.real
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec "$(dirname "$0")/kforge.real" "$@"\n' "$L" > $B/kforge; chmod +x $B/kforge
  for f in .gl/*.deb $B/vulkan-validationlayers*.deb; do dpkg -x "$f" /; done; ldconfig
fi
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export KFORGE_CACHE_DIR=/tmp/kforge-cache
L=$(cd .device/lib && pwd)
for what in "$@"; do
  case $what in
    tests)
      git rev-parse HEAD > $O/r/commit.txt 2>/dev/null; git status --short >> $O/r/commit.txt 2>/dev/null
      for t in "vulkan_runtime -tc=*stream*" vulkan_model_block "vulkan_transformer_ops" vulkan_suite; do
        set -- $t; n=$1
        (cd $B && LD_LIBRARY_PATH=$L timeout 200 ./$t > $O/r/test-$n.txt 2>&1; echo "rc=$?" >> $O/r/test-$n.txt)
      done
      for f in $O/r/test-*.txt; do echo "== $f"; grep -E "test cases|assertions|rc=" $f; done | tee $OUT/tests-tail.txt ;;
    bf16|f16)
      timeout 330 bash bench/h100_transformer.sh $B $O/tf-$what llama3-8b 1 $what > /dev/null 2>&1
      cat $O/tf-$what/table.txt; cp $O/tf-$what/table.txt $OUT/tf-$what-table.txt ;;
  esac
done
tar czf $OUT/raw.tgz -C $O .
