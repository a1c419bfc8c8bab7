#!/bin/sh
# bench/cpu_calls.sh BUILD_DIR OUT_DIR [RUNS] — every CPU measurement of
# issue 14 in one command, peers in the same processes, OPENBLAS_CORETYPE and
# OPENBLAS_L2_SIZE unset for these commands only. About 4–5 minutes on the
# 2-core development machine; run it when the machine is quiet (the files
# record the load average; cat /proc/loadavg first). Needs the targets
# bench_gemm_calls, bench_gemm and bench_ops built in BUILD_DIR (Release).
#
#   first-N.txt     the user program: per shape and peer one warm-up + 15
#                   calls back to back, n = 64…2048 and M×4096×4096 skinny,
#                   threaded / OpenBLAS / blocked / Eigen (RUNS fresh
#                   processes, default 5)
#   gap.txt         40 calls per shape and peer, 1 ms of sleep before each
#   gap-nospin.txt  the same for threaded and OpenBLAS with the pool's spin
#                   off (KFORGE_POOL_SPIN_US=0): every call wakes a sleeping
#                   worker, which is what the 2 ms spin saves
#   noaff-N.txt     the user program (threaded, OpenBLAS; n = 128…1024) with
#                   KFORGE_POOL_AFFINITY=0: the workers where the scheduler
#                   puts them, often on the caller's core (RUNS processes)
#   idle.txt        30 calls per shape, 5 ms of sleep before each (the
#                   workers are asleep): threaded with its default
#                   thresholds beside blocked, n = 96…384
#   threshold-*.txt policy::threaded with the caller-alone threshold off
#                   (KFORGE_GEMM_PARALLEL_MIN_FLOPS=0) beside policy::blocked
#                   (one thread), n = 32…384, back to back (3 processes) and
#                   after 1 ms gaps: where the pool starts to pay
#   busy-N.txt      the user program while a second process spins on a core
#                   (RUNS fresh processes; the spinner is started and killed here)
#   gemm.json       bench_gemm: gemm + bias + gelu fused vs unfused vs the
#                   plain gemm (incl. K = 64), decode rows M 1/4/8 × 4096 ×
#                   14336 f32/f16/bf16, the copy of the same bytes
#   ops.json        bench_ops: softmax, layer_norm, rms_norm 4096² beside copy
#   table.md        bench/cpu_calls_table.py OUT_DIR (the tables for
#                   docs/bench/HISTORY.md)
set -eu
build=${1:?usage: cpu_calls.sh BUILD_DIR OUT_DIR [RUNS]}
out=${2:?usage: cpu_calls.sh BUILD_DIR OUT_DIR [RUNS]}
runs=${3:-5}
here=$(cd "$(dirname "$0")" && pwd)
calls="$build/bench/bench_gemm_calls"
for exe in "$calls" "$build/bench/bench_gemm" "$build/bench/bench_ops"; do
  [ -x "$exe" ] || { echo "cpu_calls.sh: $exe not built" >&2; exit 2; }
done
mkdir -p "$out"
start=$(date +%s)
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "commit: $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$here" diff --quiet HEAD 2>/dev/null || echo ' (+ uncommitted changes)')"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, flags:$(grep -m1 '^flags' /proc/cpuinfo | grep -o -w -E 'avx2|avx512f|fma' | tr '\n' ' ')"
  echo "loadavg at start: $(cat /proc/loadavg)"
  echo "command: bench/cpu_calls.sh $build $out $runs"
} >"$out/meta.txt"
quiet() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$@"; }
bench() { quiet "$calls" "$@"; }
step() { echo "[$(($(date +%s) - start)) s] $*" >&2; }

step "first calls, $runs fresh processes"
for i in $(seq 1 "$runs"); do
  bench --scenario first --sizes 64,128,256,512,1024,2048 --skinny 1,4,8,32 >"$out/first-$i.txt"
done
step "1 ms gaps"
bench --scenario gap --gap-us 1000 --sizes 64,128,256,512,1024 --skinny 1,8 >"$out/gap.txt"
KFORGE_POOL_SPIN_US=0 bench --scenario gap --gap-us 1000 --sizes 64,128,256,512 --skinny 1,8 \
  --peers threaded,openblas >"$out/gap-nospin.txt"
step "the workers left where the scheduler puts them (KFORGE_POOL_AFFINITY=0), $runs fresh processes"
for i in $(seq 1 "$runs"); do
  KFORGE_POOL_AFFINITY=0 bench --scenario first --sizes 128,256,512,1024 --skinny none --peers threaded,openblas \
    >"$out/noaff-$i.txt"
done
step "calls after 5 ms of idle (the workers asleep): the wake threshold"
bench --scenario gap --gap-us 5000 --calls 30 --sizes 96,128,160,192,256,384 --skinny none \
  --peers threaded,blocked >"$out/idle.txt"
step "caller-alone threshold"
for i in 1 2 3; do
  KFORGE_GEMM_PARALLEL_MIN_FLOPS=0 bench --scenario first --sizes 32,48,64,96,128,160,192,256,384 --skinny none \
    --peers threaded,blocked >"$out/threshold-first-$i.txt"
done
KFORGE_GEMM_PARALLEL_MIN_FLOPS=0 bench --scenario gap --gap-us 1000 --sizes 32,48,64,96,128,160,192,256,384 \
  --skinny none --peers threaded,blocked >"$out/threshold-gap.txt"

step "a second process spinning, $runs fresh processes"
sh -c 'while :; do :; done' &
spinner=$!
trap 'kill $spinner 2>/dev/null || true' EXIT
for i in $(seq 1 "$runs"); do
  bench --scenario first --sizes 128,256,512,1024 --skinny 1,8 --peers threaded,openblas,blocked >"$out/busy-$i.txt"
done
kill $spinner
trap - EXIT

step "bench_gemm: fused epilogue, decode rows, copy"
gb="--benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true --benchmark_out_format=json"
quiet "$build/bench/bench_gemm" --benchmark_filter='^(bias_gelu|decode|copy)/' $gb \
  --benchmark_out="$out/gemm.json" >"$out/gemm.txt"
step "bench_ops: softmax, layer_norm, rms_norm, copy"
quiet "$build/bench/bench_ops" --benchmark_filter='^(copy|softmax|layer_norm|rms_norm)/' $gb \
  --benchmark_out="$out/ops.json" >"$out/ops.txt"

echo "loadavg at end: $(cat /proc/loadavg)" >>"$out/meta.txt"
echo "elapsed: $(($(date +%s) - start)) s" >>"$out/meta.txt"
python3 "$here/cpu_calls_table.py" "$out" >"$out/table.md"
step "done: $out/table.md"
