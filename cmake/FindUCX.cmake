# Finds UCX (Debian: libucx-dev) for the ucx communicator. Defines UCX::ucx (ucp + uct + ucs),
# UCX_FOUND, UCX_VERSION.
#
# A find module, not pkg-config: the installed ucx.pc hard-codes prefix=/usr, which is wrong for a
# tree unpacked with `dpkg -x` into another prefix (tools/gpu_deps.sh); find_path/find_library
# search CMAKE_PREFIX_PATH (and its lib/<arch> folders) first, so such a prefix just works.

find_path(UCX_INCLUDE_DIR ucp/api/ucp.h)
find_library(UCX_UCP_LIBRARY ucp)
find_library(UCX_UCT_LIBRARY uct)
find_library(UCX_UCS_LIBRARY ucs)

if(UCX_INCLUDE_DIR AND EXISTS "${UCX_INCLUDE_DIR}/ucp/api/ucp_version.h")
  file(STRINGS "${UCX_INCLUDE_DIR}/ucp/api/ucp_version.h" _uv REGEX "^#define UCP_API_(MAJOR|MINOR) ")
  string(REGEX REPLACE ".*MAJOR +([0-9]+).*MINOR +([0-9]+).*" "\\1.\\2" UCX_VERSION "${_uv}")
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(UCX
  REQUIRED_VARS UCX_UCP_LIBRARY UCX_UCT_LIBRARY UCX_UCS_LIBRARY UCX_INCLUDE_DIR
  VERSION_VAR UCX_VERSION)

if(UCX_FOUND AND NOT TARGET UCX::ucx)
  add_library(UCX::ucx INTERFACE IMPORTED)
  set_target_properties(UCX::ucx PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${UCX_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${UCX_UCP_LIBRARY};${UCX_UCT_LIBRARY};${UCX_UCS_LIBRARY}")
endif()
mark_as_advanced(UCX_INCLUDE_DIR UCX_UCP_LIBRARY UCX_UCT_LIBRARY UCX_UCS_LIBRARY)
