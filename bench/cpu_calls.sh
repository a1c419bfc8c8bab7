#!/bin/sh
# bench/cpu_calls.sh BUILD_DIR OUT_DIR [RUNS] — the call-by-call gemm
# scenarios of issue 14, each in fresh processes, OpenBLAS variables unset:
#   first-N.txt  the user program: one warm-up + 15 calls per shape and peer
#                (RUNS fresh processes, default 5)
#   gap.txt      40 calls per shape and peer, 1 ms of sleep before each
#   busy-N.txt   the user program while a second process spins on a core
#                (RUNS fresh processes; the spinner is started here and
#                killed when the runs end)
# Each file starts with the load average seen by the process. Check that the
# machine is quiet before running (cat /proc/loadavg; nothing else busy).
set -eu
build=${1:?usage: cpu_calls.sh BUILD_DIR OUT_DIR [RUNS]}
out=${2:?usage: cpu_calls.sh BUILD_DIR OUT_DIR [RUNS]}
runs=${3:-5}
exe="$build/bench/bench_gemm_calls"
mkdir -p "$out"
bench() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$exe" "$@"; }

for i in $(seq 1 "$runs"); do
  bench --scenario first --sizes 64,128,256,512,1024,2048 --skinny 1,4,8,32 >"$out/first-$i.txt"
done
bench --scenario gap --gap-us 1000 --sizes 64,128,256,512,1024 --skinny 1,8 >"$out/gap.txt"

sh -c 'while :; do :; done' &
spinner=$!
trap 'kill $spinner 2>/dev/null || true' EXIT
for i in $(seq 1 "$runs"); do
  bench --scenario first --sizes 128,256,512,1024 --skinny 1,8 --peers threaded,openblas,blocked >"$out/busy-$i.txt"
done
kill $spinner
trap - EXIT
echo "wrote $out"
