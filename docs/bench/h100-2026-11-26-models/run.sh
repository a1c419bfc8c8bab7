#!/bin/bash
set -u
B=.device/bin O=/tmp/o
mkdir -p $O
tar xJf .device/pkg.tar.xz -C .device
timeout 540 bash bench/h100_models.sh $B $O/models > /dev/null 2>&1
cp $O/models/table.txt $OUT/models-table.txt
tar czf $OUT/raw.tgz -C $O .
tail -25 $O/models/table.txt
