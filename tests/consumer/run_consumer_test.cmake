# cmake -P script: install COHORT_BUILD_DIR into WORK_DIR/prefix, then build and run the consumer
# project against it. Fails (non-zero exit) at the first step that fails, saying which.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer test: ${what} failed (exit ${rc})\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ok")
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
run_step("install" ${CMAKE_COMMAND} --install "${COHORT_BUILD_DIR}" --prefix "${prefix}")
run_step("configure consumer" ${CMAKE_COMMAND} -S "${CONSUMER_SOURCE_DIR}" -B "${WORK_DIR}/build"
         -G "${GENERATOR}" -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
         "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINK_FLAGS}")
run_step("build consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("run consumer" "${WORK_DIR}/build/consumer")
message(STATUS "${last_output}")
if(NOT last_output MATCHES "consumer OK")
  message(FATAL_ERROR "consumer test: unexpected output: ${last_output}")
endif()
# The examples installed with the package build as a user's own project would.
run_step("configure installed examples" ${CMAKE_COMMAND} -S "${prefix}/share/cohort/examples"
         -B "${WORK_DIR}/examples" -G "${GENERATOR}" -DCMAKE_PREFIX_PATH=${prefix}
         -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}"
         "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_LINK_FLAGS}")
run_step("build installed examples" ${CMAKE_COMMAND} --build "${WORK_DIR}/examples")
if(NOT EXISTS "${WORK_DIR}/examples/custom_ddp")
  message(FATAL_ERROR "consumer test: the installed examples built no custom_ddp")
endif()
