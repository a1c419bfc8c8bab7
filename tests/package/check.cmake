# Builds examples/find_package against kforge the way users will: MODE=install
# installs kforge into a prefix and uses find_package; MODE=subdirectory uses
# add_subdirectory. Then runs the consumer. The consumer builds without a
# build type (no optimisation): what is checked is the package, not the
# code's speed, and its validation of every op's reference compiles in 22 s
# instead of 51 at -O3 (the 2-core machine, 2026-12-02).
set(work ${BINARY_DIR}/package-${MODE})
file(REMOVE_RECURSE ${work})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGN}\n${out}\n${err}")
  endif()
endfunction()
if(MODE STREQUAL "install")
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${work}/kforge -DKFORGE_BUILD_TESTS=OFF -DKFORGE_BUILD_EXAMPLES=OFF
       -DKFORGE_BUILD_BENCH=OFF -DKFORGE_BUILD_TOOLS=OFF -DCMAKE_INSTALL_PREFIX=${work}/prefix)
  step(${CMAKE_COMMAND} --install ${work}/kforge)
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/find_package -B ${work}/consumer -DCMAKE_PREFIX_PATH=${work}/prefix)
else()
  step(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/find_package -B ${work}/consumer -DKFORGE_SOURCE_DIR=${SOURCE_DIR})
endif()
step(${CMAKE_COMMAND} --build ${work}/consumer)
step(${work}/consumer/consumer)
message(STATUS "consumer built and ran (${MODE})")
