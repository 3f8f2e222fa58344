# Finds oneDNN (Debian: libdnnl-dev), used for host GEMM. Defines DNNL::dnnl, DNNL_FOUND,
# DNNL_VERSION. A find module rather than oneDNN's own config so the lookup is one plain room.

find_path(DNNL_INCLUDE_DIR dnnl.h)
find_library(DNNL_LIBRARY dnnl)
foreach(_h "${DNNL_INCLUDE_DIR}/oneapi/dnnl/dnnl_version.h" "${DNNL_INCLUDE_DIR}/dnnl_version.h")
  if(NOT DNNL_VERSION AND EXISTS "${_h}")
    file(STRINGS "${_h}" _dv REGEX "^#define DNNL_VERSION_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCH ([0-9]+).*" "\\1.\\2.\\3"
           DNNL_VERSION "${_dv}")
  endif()
endforeach()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(DNNL
  REQUIRED_VARS DNNL_LIBRARY DNNL_INCLUDE_DIR
  VERSION_VAR DNNL_VERSION
  FAIL_MESSAGE "oneDNN not found: install libdnnl-dev (tools/setup.sh does)")

if(DNNL_FOUND AND NOT TARGET DNNL::dnnl)
  add_library(DNNL::dnnl UNKNOWN IMPORTED)
  set_target_properties(DNNL::dnnl PROPERTIES
    IMPORTED_LOCATION "${DNNL_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${DNNL_INCLUDE_DIR}")
endif()
mark_as_advanced(DNNL_INCLUDE_DIR DNNL_LIBRARY)
