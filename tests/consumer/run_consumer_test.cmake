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
# The installed cohort-swap with the installed zoo program (libexec/cohort) and plot script
# (share/cohort/tools), as a user runs a backend-swap experiment from the package alone.
foreach(_f bin/cohort-swap bin/cohortrun libexec/cohort/cifar_cnn share/cohort/tools/plot_swap.py
           share/cohort/tools/plot_metrics.py share/cohort/tools/plot_backend_swap.py)
  if(NOT EXISTS "${prefix}/${_f}")
    message(FATAL_ERROR "consumer test: the package has no ${_f}")
  endif()
endforeach()
run_step("installed cohort-swap" ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=1
         "${prefix}/bin/cohort-swap" --model cnn_a --backends shm --nproc 2 --rounds 1
         --out "${WORK_DIR}/swap" -- --synthetic --synthetic-size 128 --epochs 1 --max-steps 2
         --no-eval)
if(NOT last_output MATCHES "\\| shm \\| 2 \\| [0-9.]+ \\|.*\\| reference \\|" OR
   NOT EXISTS "${WORK_DIR}/swap/swap.png")
  message(FATAL_ERROR "consumer test: installed cohort-swap: no shm row or no plot:\n${last_output}")
endif()
