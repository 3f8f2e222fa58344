# Doc tests: every ```cpp block of README.md and docs/*.md is compiled as part of the build
# (tools/doc_snippets.py says how blocks become files), so a snippet that stops compiling fails
# the build, with the error at the Markdown file's line. Whole programs (with main) are linked too.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
file(GLOB _cohort_docs CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/docs/*.md)
set(_cohort_md ${PROJECT_SOURCE_DIR}/README.md ${_cohort_docs})
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_cohort_md}
             ${PROJECT_SOURCE_DIR}/tools/doc_snippets.py)
execute_process(
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tools/doc_snippets.py
          ${CMAKE_BINARY_DIR}/doc_snippets ${_cohort_md}
  WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
  OUTPUT_VARIABLE _cohort_snippets OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_VARIABLE _cohort_snippets_err RESULT_VARIABLE _rc)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "tools/doc_snippets.py failed: ${_cohort_snippets_err}")
endif()
string(REPLACE "\n" ";" _cohort_snippets "${_cohort_snippets}")
set(_bodies "")
foreach(_f ${_cohort_snippets})
  get_filename_component(_name ${_f} NAME_WE)
  if(_name MATCHES "^main_")
    add_executable(doc_${_name} ${_f})
    target_link_libraries(doc_${_name} PRIVATE cohort::cohort)
    set_target_properties(doc_${_name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/doc_snippets)
  else()
    list(APPEND _bodies ${_f})
  endif()
endforeach()
add_library(doc_snippets OBJECT ${_bodies})
target_link_libraries(doc_snippets PRIVATE cohort::cohort)
list(LENGTH _cohort_snippets _n)
message(STATUS "  docs: ${_n} generated files of ```cpp blocks compiled with the build")
