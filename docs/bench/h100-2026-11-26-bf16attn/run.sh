#!/bin/bash
# bf16 attention on the coopmat kernel: tests, attention model rows, llama3-8b bf16 block.
set -u
B=.device/bin O=/tmp/o
mkdir -p $O/r
tar xJf .device/pkg.tar.xz -C .device
L=$(cd .device/lib && pwd)
mv $B/kforge $B/kforge.real
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec "$(dirname "$0")/kforge.real" "$@"\n' "$L" > $B/kforge; chmod +x $B/kforge
for f in .gl/*.deb $B/vulkan-validationlayers*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export KFORGE_CACHE_DIR=/tmp/kforge-cache
$B/kforge devices 2>&1 | head -30 > $O/r/devices.txt
git rev-parse HEAD > $O/r/commit.txt 2>/dev/null; git status --short >> $O/r/commit.txt 2>/dev/null
(cd $B && timeout 150 ./vulkan_ops -tc="*attention*" > $O/r/test-vulkan_ops-attention.txt 2>&1; echo "rc=$?" >> $O/r/test-vulkan_ops-attention.txt)
(cd $B && timeout 90 ./vulkan_bf16 > $O/r/test-vulkan_bf16.txt 2>&1; echo "rc=$?" >> $O/r/test-vulkan_bf16.txt)
(cd $B && timeout 120 ./vulkan_suite > $O/r/test-vulkan_suite.txt 2>&1; echo "rc=$?" >> $O/r/test-vulkan_suite.txt)
for f in $O/r/test-*.txt; do echo "== $f"; grep -E "test cases|assertions|rc=" $f; done | tee $OUT/tests-tail.txt
timeout 150 bash bench/h100_models.sh $B $O/models attn > /dev/null 2>&1
cat $O/models/table.txt; cp $O/models/table.txt $OUT/models-table.txt; tar czf $OUT/raw1.tgz -C $O .
timeout 280 bash bench/h100_transformer.sh $B $O/tf-bf16 llama3-8b 1 bf16 > /dev/null 2>&1
cat $O/tf-bf16/table.txt; cp $O/tf-bf16/table.txt $OUT/tf-bf16-table.txt
timeout 200 bash bench/h100_transformer.sh $B $O/tf-f16 llama3-8b 1 f16 > /dev/null 2>&1
cat $O/tf-f16/table.txt; cp $O/tf-f16/table.txt $OUT/tf-f16-table.txt
tar czf $OUT/raw.tgz -C $O . && rm -f $OUT/raw1.tgz
