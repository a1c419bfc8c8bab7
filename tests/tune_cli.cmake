# Two `kforge tune` processes at once on one cache directory (execute_process
# runs its COMMANDs concurrently), then `kforge cache` sees both entries; a
# corrupt cache is reported and set aside; clear empties it.
#   cmake -DTOOL=... -DDIR=... -P tune_cli.cmake
file(REMOVE_RECURSE "${DIR}")
set(ENV{KFORGE_CACHE_DIR} "${DIR}")

function(expect_rc rc expected what)
  if(NOT rc STREQUAL "${expected}")
    message(FATAL_ERROR "${what}: exit ${rc}, expected ${expected}")
  endif()
endfunction()

# execute_process pipes each COMMAND's stdout into the next one's stdin: the
# first writes to /dev/null instead, else it dies of SIGPIPE when the second
# (which never reads) has already exited.
execute_process(
  COMMAND sh -c "exec \"$0\" \"$@\" > /dev/null" ${TOOL} tune --op gemm --shape 20x24x16 --strategy grid --trials 8 --reps 3 --budget 60
  COMMAND ${TOOL} tune --op gemm --shape 40x48x36 --strategy descent --reps 3 --budget 60
  RESULTS_VARIABLE rcs OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
if(NOT rcs STREQUAL "0;0")
  message(FATAL_ERROR "concurrent tune: exits ${rcs}\n${out}\n${err}")
endif()

execute_process(COMMAND ${TOOL} cache list --json RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 0 "cache list")
foreach(bucket 32x32x16 64x64x64)
  if(NOT out MATCHES "\"bucket\":\"${bucket}\"")
    message(FATAL_ERROR "cache list lacks bucket ${bucket}:\n${out}")
  endif()
endforeach()
if(EXISTS "${DIR}/history.csv")
  file(STRINGS "${DIR}/history.csv" hist)
  list(LENGTH hist n)
  if(n LESS 9)
    message(FATAL_ERROR "history.csv has ${n} lines, expected a header and at least 8 trials")
  endif()
else()
  message(FATAL_ERROR "no history.csv")
endif()
file(GLOB best "${DIR}/best/*.json")
if(NOT best)
  message(FATAL_ERROR "no best-config export in ${DIR}/best")
endif()

# The entry a nearby shape uses (same bucket), and one with no entry.
execute_process(COMMAND ${TOOL} cache show --op gemm --shape 17x30x9 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 0 "cache show (hit)")
execute_process(COMMAND ${TOOL} cache show --op gemm --shape 999x3x3 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 1 "cache show (miss)")

# Corrupt the file: reported on stderr, set aside, the command still works.
file(WRITE "${DIR}/tuning.json" "{\"format\":\"kforge-tuning-cache\",\"entries\":[ {\"key\": trunc")
execute_process(COMMAND ${TOOL} cache list RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 0 "cache list (corrupt)")
if(NOT err MATCHES "corrupt")
  message(FATAL_ERROR "a corrupt cache was not reported:\n${err}")
endif()
file(GLOB aside "${DIR}/tuning.json.corrupt-*")
if(NOT aside)
  message(FATAL_ERROR "the corrupt cache was not set aside")
endif()

execute_process(COMMAND ${TOOL} tune --op gemm --shape 8x8x8 --trials 2 --reps 2 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 0 "tune after corruption")
execute_process(COMMAND ${TOOL} cache clear RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 0 "cache clear")
if(NOT out MATCHES "removed 1 entries")
  message(FATAL_ERROR "cache clear: ${out}")
endif()
execute_process(COMMAND ${TOOL} cache show --op gemm --shape 8x8x8 RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
expect_rc("${rc}" 1 "cache show after clear")
file(REMOVE_RECURSE "${DIR}")
