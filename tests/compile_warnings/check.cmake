# Compiles SRC as a user's program would include kforge: kforge's headers as a
# normal include (-I, not -isystem), Eigen as the system include its CMake
# target gives, -Wall -Wextra -Werror. MODE syntax: -fsyntax-only (every
# front-end warning, templates instantiated); MODE object: a real -O2 compile
# (GCC's middle-end warnings: -Wuninitialized, -Wmaybe-uninitialized,
# -Wrestrict, which only optimisation finds). Fails with the diagnostics.
set(args -std=c++20 -march=${MARCH} -Wall -Wextra -Werror -I${KFORGE_INCLUDE} -isystem ${EIGEN_INCLUDE})
foreach(d ${DEFINES})
  list(APPEND args -D${d})
endforeach()
if(MODE STREQUAL "object")
  list(APPEND args -O2 -c -o /dev/null)
else()
  list(APPEND args -fsyntax-only)
endif()
execute_process(COMMAND ${CXX} ${args} ${SRC} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${SRC} is not warning-free under ${CXX} -Wall -Wextra -Werror (-march=${MARCH}, ${MODE}):\n${err}")
endif()
message(STATUS "${SRC}: no warning under ${CXX} -Wall -Wextra -Werror (-march=${MARCH}, ${MODE})")
