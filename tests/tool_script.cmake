# Helpers of the cmake -P scripts that drive the kforge tool (TOOL):
#   run_tool(OUT EXPECTED_EXIT args...)  runs it; OUT gets stdout then stderr
#   expect(TEXT REGEX WHAT)              fails with WHAT unless TEXT matches
function(run_tool out_var expected)
  execute_process(COMMAND ${TOOL} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 600)
  if(NOT rc STREQUAL "${expected}")
    message(FATAL_ERROR "kforge ${ARGN}: exit ${rc}, expected ${expected}\n${out}\n${err}")
  endif()
  set(${out_var} "${out}${err}" PARENT_SCOPE)
endfunction()
function(expect text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for ${regex} in\n${text}")
  endif()
endfunction()
