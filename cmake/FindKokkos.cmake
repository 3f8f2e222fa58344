# Finds Debian's Kokkos 3.4 (package libtrilinos-kokkos-dev) and KokkosKernels
# (libtrilinos-kokkos-kernels-dev) and builds the imported targets ourselves: the installed
# KokkosConfig.cmake points its imported target at /usr/lib/include, which does not exist.
#
# Defines Kokkos::kokkoscore and Kokkos::kokkoskernels, Kokkos_FOUND, Kokkos_VERSION.

find_path(Kokkos_INCLUDE_DIR Kokkos_Core.hpp PATH_SUFFIXES trilinos kokkos
          DOC "Directory holding Kokkos_Core.hpp")
find_library(Kokkos_CORE_LIBRARY NAMES trilinos_kokkoscore kokkoscore)
find_library(Kokkos_KERNELS_LIBRARY NAMES trilinos_kokkoskernels kokkoskernels)

if(Kokkos_INCLUDE_DIR AND EXISTS "${Kokkos_INCLUDE_DIR}/KokkosCore_config.h")
  file(STRINGS "${Kokkos_INCLUDE_DIR}/KokkosCore_config.h" _kv REGEX "^#define KOKKOS_VERSION [0-9]+")
  string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _kv "${_kv}")
  if(_kv)
    math(EXPR _maj "${_kv} / 10000")
    math(EXPR _min "${_kv} / 100 % 100")
    math(EXPR _pat "${_kv} % 100")
    set(Kokkos_VERSION "${_maj}.${_min}.${_pat}")
  endif()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(Kokkos
  REQUIRED_VARS Kokkos_CORE_LIBRARY Kokkos_KERNELS_LIBRARY Kokkos_INCLUDE_DIR
  VERSION_VAR Kokkos_VERSION
  FAIL_MESSAGE "Kokkos not found: install libtrilinos-kokkos-dev libtrilinos-kokkos-kernels-dev (tools/setup.sh does)")

if(Kokkos_FOUND AND NOT TARGET Kokkos::kokkoscore)
  find_package(Threads REQUIRED)
  add_library(Kokkos::kokkoscore UNKNOWN IMPORTED)
  set_target_properties(Kokkos::kokkoscore PROPERTIES
    IMPORTED_LOCATION "${Kokkos_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${Kokkos_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS}")
  add_library(Kokkos::kokkoskernels UNKNOWN IMPORTED)
  set_target_properties(Kokkos::kokkoskernels PROPERTIES
    IMPORTED_LOCATION "${Kokkos_KERNELS_LIBRARY}"
    INTERFACE_LINK_LIBRARIES Kokkos::kokkoscore)
endif()
mark_as_advanced(Kokkos_INCLUDE_DIR Kokkos_CORE_LIBRARY Kokkos_KERNELS_LIBRARY)
