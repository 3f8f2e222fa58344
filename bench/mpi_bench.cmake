# The Open MPI peer of cohort-bench: bench/mpi_allreduce_bench, built only where find_package(MPI)
# finds Open MPI (Debian: libopenmpi-dev openmpi-bin, see tools/setup.sh --peers).
# openmpi-bin alone (the launcher tests' mpirun) installs the mpicc wrapper without the headers it
# names, and FindMPI then fails the whole configure: look for the headers first.
set(_cohort_mpi_headers FALSE)
find_program(COHORT_MPICC mpicc)
if(COHORT_MPICC)
  execute_process(COMMAND ${COHORT_MPICC} --showme:incdirs OUTPUT_VARIABLE _inc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  separate_arguments(_inc)
  foreach(_dir IN LISTS _inc)
    if(_rc EQUAL 0 AND EXISTS "${_dir}/mpi.h")
      set(_cohort_mpi_headers TRUE)
    endif()
  endforeach()
endif()
if(_cohort_mpi_headers)
  set(MPI_DETERMINE_LIBRARY_VERSION TRUE)
  find_package(MPI QUIET COMPONENTS CXX)
endif()
if(MPI_CXX_FOUND AND MPI_CXX_LIBRARY_VERSION_STRING MATCHES "Open MPI")
  add_executable(mpi_allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/mpi_allreduce_bench.cpp)
  target_link_libraries(mpi_allreduce_bench PRIVATE MPI::MPI_CXX)
  # Open MPI's C++ headers warn under -Wextra; the peer is not ours to fix.
  target_compile_definitions(mpi_allreduce_bench PRIVATE OMPI_SKIP_MPICXX=1)
  message(STATUS "  bench: mpi_allreduce_bench against ${MPI_CXX_LIBRARY_VERSION_STRING}")
else()
  message(STATUS "  bench: mpi_allreduce_bench skipped (Open MPI not found)")
endif()
