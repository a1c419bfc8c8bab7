# Generated kernels as tuner candidates, through the tool, on the Vulkan
# device (lavapipe in CI): `kforge gen` (offline template provider) admits a
# kernel for a problem into a private cache; `kforge tune --policy vulkan`
# then times it as "generated:<record>" next to kforge's own kernels; a c_
# record planted without the gate, whose kernel is wrong, is refused by the
# tuner's own validation and never timed; --no-generated leaves them out.
#   cmake -DTOOL=... -DDIR=... -P tune_generated.cmake
file(REMOVE_RECURSE "${DIR}")
set(ENV{KFORGE_CACHE_DIR} "${DIR}")

include(${CMAKE_CURRENT_LIST_DIR}/tool_script.cmake)

# --- gemm: the Vulkan gemm space plus the generated kernels ------------------
run_tool(out 0 gen --op gemm --shape 64x48x40 --samples 1)
file(GLOB accepted "${DIR}/generated/c_gemm_i64x40-40x48_o64x48_f32_h*.json")
list(LENGTH accepted n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "kforge gen left ${n} accepted gemm records, expected 1:\n${out}")
endif()
get_filename_component(good "${accepted}" NAME)

# A wrong kernel under an accepted name: alpha applied twice as 0.5x. It
# compiles and follows the contract; only validation can tell.
file(READ "${accepted}" record)
string(FIND "${record}" "v *= pc.alpha;" at)
if(at LESS 0)
  message(FATAL_ERROR "the template gemm kernel no longer scales by 'v *= pc.alpha;': update this test")
endif()
string(REPLACE "v *= pc.alpha;" "v *= pc.alpha * 0.5;" planted "${record}")
set(bad "c_gemm_i64x40-40x48_o64x48_f32_hdeadbeef.json")
file(WRITE "${DIR}/generated/${bad}" "${planted}")

# halving with 4 trials: the default first, then the two off-grid (generated)
# candidates, then one of the grid.
run_tool(out 0 tune --op gemm --shape 64x48x40 --policy vulkan --strategy halving --trials 4 --reps 3 --json)
expect("${out}" "\"generated_candidates\":2," "gemm: the accepted and the planted record are candidates")
expect("${out}" "\"candidate\":\"generated:${good}\",\"status\":\"ok\"" "gemm: the accepted kernel was timed")
expect("${out}" "\"candidate\":\"generated:${bad}\",\"status\":\"invalid\"" "gemm: the planted wrong kernel was refused")
file(READ "${DIR}/history.csv" history)
expect("${history}" "generated:${good}\",[^\n]*,ok," "history.csv has the generated trial")
expect("${history}" "generated:${bad}\",[^\n]*,invalid," "history.csv has the refused trial")
if(out MATCHES "\"best\":{\"candidate\":\"generated:${bad}\"")
  message(FATAL_ERROR "the planted wrong kernel won:\n${out}")
endif()
# A generated winner is cached as one, with kforge's own best as fallback.
if(out MATCHES "\"best\":{\"candidate\":\"generated:")
  file(READ "${DIR}/tuning.json" cache)
  expect("${cache}" "\"family\":\"generated\"" "the cache entry says generated")
  expect("${cache}" "\"fallback\":\"vulkan/" "the cache entry names kforge's own fallback")
  message(STATUS "a generated kernel won the gemm tuning")
endif()

run_tool(out 0 tune --op gemm --shape 64x48x40 --policy vulkan --strategy halving --trials 2 --reps 3 --no-generated --json)
expect("${out}" "\"generated_candidates\":0" "--no-generated")
if(out MATCHES "generated:")
  message(FATAL_ERROR "--no-generated still timed a generated kernel:\n${out}")
endif()

# --- softmax: kforge's own Vulkan kernel against the generated one -----------
run_tool(out 0 gen --op softmax --shape 5x37 --samples 1)
run_tool(out 0 tune --op softmax --shape 5x37 --policy vulkan --strategy grid --reps 3 --json)
expect("${out}" "\"candidates\":2,\"generated_candidates\":1" "softmax: own + generated")
expect("${out}" "\"candidate\":\"vulkan\",\"status\":\"ok\"" "softmax: kforge's own kernel was timed")
expect("${out}" "\"candidate\":\"generated:c_softmax_i5x37_o5x37_f32_h[0-9a-f]+\\.json\",\"status\":\"ok\"" "softmax: the generated kernel was timed")
expect("${out}" "\"device_time\":true" "softmax: ranked by device time")
file(REMOVE_RECURSE "${DIR}")
