# `--policy autotune` in run, validate and bench (tools/autotune.cpp), on a
# fresh cache directory: a miss runs the default and says so; a miss with
# KFORGE_AUTOTUNE=1 tunes and stores; the next process finds it in the cache
# (gemm through policy::autotune, softmax through the tool's CPU policies); a
# corrupt cache stops the command with a one-line error and is left as it
# was. `bench --json` is read with CMake's JSON parser (Google Benchmark's
# keys). With -DVULKAN=ON it runs cli_bench_vulkan.cmake instead (the
# Vulkan rows of bench and demo).
#   cmake -DTOOL=... -DDIR=... [-DVULKAN=ON] -P cli_autotune.cmake
file(REMOVE_RECURSE "${DIR}")
set(ENV{KFORGE_CACHE_DIR} "${DIR}")
unset(ENV{KFORGE_AUTOTUNE})

include("${CMAKE_CURRENT_LIST_DIR}/cli/functions.cmake")

if(VULKAN)
  include("${CMAKE_CURRENT_LIST_DIR}/cli_bench_vulkan.cmake")
  return()
endif()

# Miss without KFORGE_AUTOTUNE: the default runs, reported as not from the cache.
kf(0 run --op gemm --shape 24x20x16 --policy autotune)
expect("${out}" "autotune: [^\n]+ on cpu [^\n]+, bucket 32x32x16, not from the cache: default \\(no entry" "run (miss)")
kf(0 run --op gemm --shape 24x20x16 --policy autotune --json)
json_get(src "${out}" "run --json (miss)" autotune source)
json_get(hit "${out}" "run --json (miss)" autotune from_cache)
if(NOT src STREQUAL "default" OR NOT hit STREQUAL "OFF")
  message(FATAL_ERROR "run --json (miss): source '${src}', from_cache '${hit}'\n${out}")
endif()
if(EXISTS "${DIR}/tuning.json")
  message(FATAL_ERROR "a miss without KFORGE_AUTOTUNE=1 wrote ${DIR}/tuning.json")
endif()

# Miss with KFORGE_AUTOTUNE=1: tuned now and stored.
set(ENV{KFORGE_AUTOTUNE} 1)
set(ENV{KFORGE_AUTOTUNE_BUDGET} 5)
kf(0 run --op gemm --shape 24x20x16 --policy autotune --json)
json_get(src "${out}" "run --json (tune on miss)" autotune source)
json_get(policy "${out}" "run --json (tune on miss)" autotune policy)
json_get(knobs "${out}" "run --json (tune on miss)" autotune knobs policy)
if(NOT src STREQUAL "tuned" OR NOT out MATCHES "\"within_tolerance\":true")
  message(FATAL_ERROR "run --json (tune on miss): source '${src}'\n${out}")
endif()
kf(0 validate --op softmax --shape 7x33 --policy autotune)
expect("${out}" "autotune: [^\n]+, tuned now \\(KFORGE_AUTOTUNE=1\\) and stored" "validate softmax (tune on miss)")
expect("${out}" "16/16 cases passed" "validate softmax (tune on miss)")
unset(ENV{KFORGE_AUTOTUNE})

# Hit: a new process finds both in the cache, and says what it runs.
kf(0 run --op gemm --shape 17x30x9 --policy autotune --json)
json_get(src "${out}" "run --json (hit)" autotune source)
json_get(hit "${out}" "run --json (hit)" autotune from_cache)
json_get(policy2 "${out}" "run --json (hit)" autotune policy)
json_get(bucket "${out}" "run --json (hit)" autotune bucket)
if(NOT src STREQUAL "cache" OR NOT hit STREQUAL "ON" OR NOT policy2 STREQUAL policy OR NOT bucket STREQUAL "32x32x16")
  message(FATAL_ERROR "run --json (hit): source '${src}', from_cache '${hit}', policy '${policy2}' (tuned '${policy}'), bucket '${bucket}'\n${out}")
endif()
kf(0 validate --op gemm --shape 24x20x16 --policy autotune --json)
expect("${out}" "^\\{\"autotune\":\\{\"policy\":\"[^\"]+\",\"knobs\":\\{[^}]*\"policy\":\"${knobs}\"" "validate --json (hit)")
expect("${out}" "\"all_passed\":true" "validate --json (hit)")
kf(0 run --op softmax --shape 7x33 --policy autotune)
expect("${out}" "autotune: [^\n]+ on cpu [^\n]+, bucket 8x64, from the tuning cache" "run softmax (hit)")

# bench, the workflow of README: tune, then compare the tuned policy with the others.
kf(0 bench --op gemm --shape 24x20x16 --policy autotune,threaded --reps 3)
expect("${out}" "\nautotune +[0-9.]+ +[0-9.]+ GFLOP/s" "bench (autotune row)")
expect("${out}" "\nthreaded +[0-9.]+ " "bench (threaded row)")
expect("${out}" "\nautotune: [^\n]+ on cpu [^\n]+, bucket 32x32x16, from the tuning cache" "bench (what autotune ran)")
kf(0 bench --op gemm --shape 24x20x16 --policy autotune,threaded --reps 3 --json)
json_get(nb "${out}" "bench --json" benchmarks)
string(JSON n LENGTH "${nb}")
if(NOT n EQUAL 3)
  message(FATAL_ERROR "bench --json: ${n} benchmarks, expected 3 (eigen, autotune, threaded)\n${out}")
endif()
json_get(date "${out}" "bench --json" context date)
json_get(ncpu "${out}" "bench --json" context num_cpus)
foreach(i 0 1 2)
  foreach(k name run_name run_type aggregate_name repetitions iterations real_time cpu_time time_unit GFLOPS
            bytes_per_second kforge_policy kforge_within_tolerance)
    json_get(v "${out}" "bench --json benchmarks[${i}]" benchmarks ${i} ${k})
  endforeach()
endforeach()
json_get(name "${out}" "bench --json" benchmarks 1 name)
json_get(unit "${out}" "bench --json" benchmarks 1 time_unit)
json_get(rt "${out}" "bench --json" benchmarks 1 real_time)
json_get(src "${out}" "bench --json" benchmarks 1 kforge_autotune source)
if(NOT name MATCHES "^bench/gemm/24x20x16/f32/autotune_median$" OR NOT unit STREQUAL "ms" OR NOT rt GREATER 0
   OR NOT src STREQUAL "cache")
  message(FATAL_ERROR "bench --json: name '${name}', time_unit '${unit}', real_time '${rt}', autotune source '${src}'\n${out}")
endif()

# A corrupt cache: one-line error, exit 3, the file left exactly as it was.
set(garbage "{\"format\":\"kforge-tuning-cache\",\"entries\":[ {\"key\": trunc")
file(WRITE "${DIR}/tuning.json" "${garbage}")
foreach(cmd run validate bench)
  kf(3 ${cmd} --op gemm --shape 24x20x16 --policy autotune)
  expect("${err}" "^kforge: --policy autotune: the tuning cache [^\n]+tuning.json is corrupt or truncated[^\n]*\n$" "${cmd} (corrupt cache)")
  file(READ "${DIR}/tuning.json" now)
  if(NOT now STREQUAL garbage)
    message(FATAL_ERROR "${cmd} --policy autotune changed the corrupt cache:\n${now}")
  endif()
  file(GLOB aside "${DIR}/tuning.json.corrupt-*")
  if(aside)
    message(FATAL_ERROR "${cmd} --policy autotune moved the corrupt cache aside: ${aside}")
  endif()
endforeach()
# Without autotune the cache is not read: the command runs.
kf(0 run --op gemm --shape 24x20x16 --policy eigen)

file(REMOVE_RECURSE "${DIR}")
