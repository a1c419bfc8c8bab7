# `--policy generated` through the tool on the Vulkan device (lavapipe in
# CI): `kforge gen` proves the accepted kernel on shapes spread over its
# tuning bucket; run and validate then serve a shape of that bucket it was
# never generated for (one sandboxed verdict, cached as v_*.json); a shape of
# another bucket, or with --no-bucket no proof, is exit 3 saying why.
#   cmake -DTOOL=... -DDIR=... -P cli_generated.cmake
file(REMOVE_RECURSE "${DIR}")
set(ENV{KFORGE_CACHE_DIR} "${DIR}")

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)

run_tool(out 0 gen --op softmax --shape 5x37 --samples 1)
expect("${out}" "bucket softmax f32 8x64: proven: passed 3 shapes" "gen proves the bucket")
run_tool(out 0 gen --op softmax --shape 5x37 --samples 1 --json)
expect("${out}" "\"bucket\":{\"key\":\"softmax f32 8x64\",\"proven\":true" "gen --json names the bucket")

run_tool(out 0 run --op softmax --shape 7x50 --policy generated)
expect("${out}" "within tolerance" "run serves 7x50 from the bucket")
function(expect_one_verdict what)
  file(GLOB verdicts "${DIR}/generated/v_softmax_*.json")
  list(LENGTH verdicts n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "${what}: ${n} cached verdicts, expected 1")
  endif()
  set(verdict_file "${verdicts}" PARENT_SCOPE)
endfunction()
expect_one_verdict("after the first run")
file(READ "${verdict_file}" verdict)
expect("${verdict}" "\"passed\":true" "the verdict passed")
run_tool(out 0 validate --op softmax --shape 7x50 --policy generated)
expect("${out}" "16/16 cases passed" "validate on the served shape")
expect_one_verdict("the second use of 7x50 must read the cached verdict")

run_tool(out 3 run --op softmax --shape 9x37 --policy generated)
expect("${out}" "no accepted kernel proven for its bucket \\(softmax f32 16x64\\)" "another bucket is refused")

# Without the proof the bucket is not served.
run_tool(out 0 gen --op relu --shape 3x7x19 --samples 1 --no-bucket)
run_tool(out 0 run --op relu --shape 3x7x19 --policy generated)
run_tool(out 3 run --op relu --shape 3x7x17 --policy generated)
file(REMOVE_RECURSE "${DIR}")
