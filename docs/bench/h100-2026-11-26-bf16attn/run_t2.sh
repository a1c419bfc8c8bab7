#!/bin/bash
set -u
B=.device/bin O=/tmp/o
mkdir -p $O/r
tar xJf .device/pkg.tar.xz -C .device
for f in .gl/*.deb $B/vulkan-validationlayers*.deb; do dpkg -x "$f" /; done; ldconfig
[ -e /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json ] && export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
(cd $B && timeout 150 ./vulkan_ops -tc="*attention*" > $O/r/test-vulkan_ops-attention.txt 2>&1; echo "rc=$?" >> $O/r/test-vulkan_ops-attention.txt)
(cd $B && timeout 90 ./vulkan_bf16 > $O/r/test-vulkan_bf16.txt 2>&1; echo "rc=$?" >> $O/r/test-vulkan_bf16.txt)
nvidia-smi -L > $O/r/env.txt; date -u >> $O/r/env.txt
for f in $O/r/test-*.txt; do echo "== $f"; grep -E "test cases|assertions|rc=" $f; done
tar czf $OUT/raw.tgz -C $O .
