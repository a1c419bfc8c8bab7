# Compiles SRC with -fsyntax-only for -march=${MARCH}, with -Wall -Wextra
# -Werror (every ISA's code paths warning-free too); fails with the
# compiler's diagnostics if it does not compile.
set(args -std=c++20 -fsyntax-only -march=${MARCH} -Wall -Wextra -Werror)
# kforge's include first, as a normal include; the rest (Eigen) as the system
# includes their CMake targets give.
set(first ON)
foreach(dir ${INCLUDES})
  if(first)
    list(APPEND args -I${dir})
    set(first OFF)
  else()
    list(APPEND args -isystem ${dir})
  endif()
endforeach()
execute_process(COMMAND ${CXX} ${args} ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SRC} does not compile with -march=${MARCH}:\n${err}")
endif()
