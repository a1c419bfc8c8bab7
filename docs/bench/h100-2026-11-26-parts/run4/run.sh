#!/bin/bash
# stop 24: the llama3-8b bf16 block twice more (same binaries as run 3), for the spread of the ratio.
set -u
B=.device/bin O=/tmp/o
mkdir -p $O
tar xJf .device/pkg.tar.xz -C .device
L=$(cd .device/lib && pwd)
mv $B/kforge $B/kforge.real
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec "$(dirname "$0")/kforge.real" "$@"\n' "$L" > $B/kforge; chmod +x $B/kforge
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
for i in 1 2; do
  timeout 280 bash bench/h100_transformer.sh $B $O/tf-bf16-$i llama3-8b 1 bf16 > /dev/null 2>&1
  cat $O/tf-bf16-$i/table.txt
done
tar czf $OUT/raw.tgz -C $O .
