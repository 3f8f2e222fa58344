# Finds cuDNN 9 for the CUDA backend. Defines CUDNN::cudnn, CUDNN_FOUND, CUDNN_VERSION.
#
# Looked for, in order: CUDNN_ROOT (CMake or environment variable), CMAKE_PREFIX_PATH, the CUDA
# toolkit's own folders. Both layouts seen in practice work: a toolkit or Debian-style tree
# (include/cudnn.h, lib64/libcudnn.so) and the pip wheel nvidia-cudnn-cu13
# (site-packages/nvidia/cudnn/{include,lib} with only libcudnn.so.9, no unversioned link).

set(_cudnn_hints ${CUDNN_ROOT} $ENV{CUDNN_ROOT} ${CUDAToolkit_LIBRARY_ROOT})
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${_cudnn_hints} ${CUDAToolkit_INCLUDE_DIRS}
  PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
  HINTS ${_cudnn_hints} ${CUDAToolkit_LIBRARY_DIR}
  PATH_SUFFIXES lib64 lib)

if(CUDNN_INCLUDE_DIR)
  foreach(_h cudnn_version.h cudnn.h)
    if(NOT CUDNN_VERSION AND EXISTS "${CUDNN_INCLUDE_DIR}/${_h}")
      file(STRINGS "${CUDNN_INCLUDE_DIR}/${_h}" _cv REGEX "^#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ")
      if(_cv)
        string(REGEX REPLACE ".*MAJOR ([0-9]+).*MINOR ([0-9]+).*PATCHLEVEL ([0-9]+).*" "\\1.\\2.\\3"
               CUDNN_VERSION "${_cv}")
      endif()
    endif()
  endforeach()
endif()

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN
  REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR
  VERSION_VAR CUDNN_VERSION
  FAIL_MESSAGE "cuDNN not found: set CUDNN_ROOT to a folder holding include/cudnn.h and lib/libcudnn.so*")

if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION "${CUDNN_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${CUDNN_INCLUDE_DIR}")
endif()
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)
