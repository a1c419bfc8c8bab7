# Compiles SRC with -fsyntax-only for -march=${MARCH}; fails with the
# compiler's diagnostics if it does not compile.
set(args -std=c++20 -fsyntax-only -march=${MARCH})
foreach(dir ${INCLUDES})
  list(APPEND args -I${dir})
endforeach()
execute_process(COMMAND ${CXX} ${args} ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SRC} does not compile with -march=${MARCH}:\n${err}")
endif()
