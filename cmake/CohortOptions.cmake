# Optional parts of the build. Each COHORT_ENABLE_X is ON (required: configure fails without it),
# OFF, or AUTO (the default: on where found). The resolved answer is COHORT_HAVE_X (0 or 1), which
# the sources see as a compile definition.

set(COHORT_ENABLE_CUDA AUTO CACHE STRING "Build the CUDA device backend (ON, OFF, AUTO)")
set(COHORT_ENABLE_NCCL AUTO CACHE STRING "Build the NCCL communicator backend (ON, OFF, AUTO)")
set(COHORT_ENABLE_UCX AUTO CACHE STRING "Build the UCX communicator backend (ON, OFF, AUTO)")
foreach(opt CUDA NCCL UCX)
  set_property(CACHE COHORT_ENABLE_${opt} PROPERTY STRINGS ON OFF AUTO)
  string(TOUPPER "${COHORT_ENABLE_${opt}}" _v)
  if(NOT _v MATCHES "^(ON|OFF|AUTO)$")
    message(FATAL_ERROR "COHORT_ENABLE_${opt}='${COHORT_ENABLE_${opt}}': expected ON, OFF or AUTO")
  endif()
  set(COHORT_ENABLE_${opt} "${_v}")
endforeach()

function(_cohort_resolve name found why)
  if(COHORT_ENABLE_${name} STREQUAL "OFF")
    set(COHORT_HAVE_${name} 0 PARENT_SCOPE)
    set(COHORT_WHY_${name} "disabled (COHORT_ENABLE_${name}=OFF)" PARENT_SCOPE)
  elseif(found)
    set(COHORT_HAVE_${name} 1 PARENT_SCOPE)
    set(COHORT_WHY_${name} "${why}" PARENT_SCOPE)
  elseif(COHORT_ENABLE_${name} STREQUAL "ON")
    message(FATAL_ERROR "COHORT_ENABLE_${name}=ON but ${why}")
  else()
    set(COHORT_HAVE_${name} 0 PARENT_SCOPE)
    set(COHORT_WHY_${name} "not found: ${why}" PARENT_SCOPE)
  endif()
endfunction()

# --- required: Kokkos + KokkosKernels (our own find module), oneDNN for host GEMM ---
# Every dependency is looked up with find_path / find_library, which search CMAKE_PREFIX_PATH
# first: a tree of Debian packages unpacked with `dpkg -x` (tools/gpu_deps.sh, for a GPU machine
# without Debian's packages) builds with -DCMAKE_PREFIX_PATH=<prefix>/usr.
find_package(Kokkos MODULE REQUIRED)
find_package(DNNL MODULE REQUIRED)
# Header-only: nlohmann-json (checkpoints, metrics) and CLI11 (examples, tools). Added to every
# target's include path only when found outside the compiler's default folders.
foreach(_hdr nlohmann/json.hpp CLI/CLI.hpp)
  string(MAKE_C_IDENTIFIER "${_hdr}" _id)
  find_path(COHORT_${_id}_DIR ${_hdr})
  if(NOT COHORT_${_id}_DIR)
    message(FATAL_ERROR "${_hdr} not found: install nlohmann-json3-dev libcli11-dev (tools/setup.sh does) or add their prefix to CMAKE_PREFIX_PATH")
  endif()
  if(NOT COHORT_${_id}_DIR STREQUAL "/usr/include")
    include_directories(SYSTEM "${COHORT_${_id}_DIR}")
  endif()
  mark_as_advanced(COHORT_${_id}_DIR)
endforeach()

# cohort_check_cuda_architectures(NVCC LIST): fails at configure time, naming the entry, when an
# entry of LIST is neither native, all, all-major nor an architecture this nvcc compiles for
# (`nvcc --list-gpu-arch`, with -real / -virtual and the a / f suffixes as CMake spells them).
# Without it a bad entry surfaces as CMake's failed compiler test, dozens of lines of nvcc output.
function(cohort_check_cuda_architectures nvcc archs)
  execute_process(COMMAND ${nvcc} --list-gpu-arch OUTPUT_VARIABLE _known RESULT_VARIABLE _rc
                  ERROR_QUIET TIMEOUT 60)
  if(NOT _rc EQUAL 0)
    return()  # an nvcc too old to list them: CMake's own test decides
  endif()
  string(REGEX MATCHALL "compute_[0-9]+" _known "${_known}")
  string(REPLACE "compute_" "" _known "${_known}")
  foreach(_a IN LISTS archs)
    if(_a MATCHES "^(native|all|all-major)$")
      continue()
    endif()
    if(NOT _a MATCHES "^([0-9]+)[af]?(-real|-virtual)?$" OR NOT CMAKE_MATCH_1 IN_LIST _known)
      string(REPLACE ";" " " _k "${_known}")
      message(FATAL_ERROR "CMAKE_CUDA_ARCHITECTURES entry '${_a}' is not an architecture ${nvcc} "
                          "compiles for (it knows: ${_k}; also native, all, all-major; suffixes "
                          "-real, -virtual)")
    endif()
  endforeach()
endfunction()

# --- CUDA: nvcc from the toolkit at /usr/local/cuda unless the user points elsewhere ---
set(_cuda_found FALSE)
set(_cuda_why "no CUDA compiler (set CMAKE_CUDA_COMPILER)")
if(NOT COHORT_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Which GPUs to compile for (docs/GPU.md, "Build"). Unless the user sets
    # CMAKE_CUDA_ARCHITECTURES: `native` where nvidia-smi lists a GPU (this machine's GPUs only),
    # else `90` (sm_90 machine code for the H100/H200 plus sm_90 PTX that newer GPUs compile at
    # load time), a build that is mostly a compile check: one architecture instead of three costs a
    # third of nvcc's time. A build carried to other GPUs names them, e.g. `75-real;80-real;90`
    # (T4, A100, H100); tools/gpu_deps.sh bundle checks that its build has an sm_90 image.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(_cohort_gpus "")
      find_program(COHORT_NVIDIA_SMI nvidia-smi)
      mark_as_advanced(COHORT_NVIDIA_SMI)
      if(COHORT_NVIDIA_SMI)
        execute_process(COMMAND ${COHORT_NVIDIA_SMI} -L OUTPUT_VARIABLE _cohort_gpus
                        ERROR_QUIET RESULT_VARIABLE _cohort_smi_rc TIMEOUT 20)
        if(NOT _cohort_smi_rc EQUAL 0)
          set(_cohort_gpus "")
        endif()
      endif()
      if(_cohort_gpus MATCHES "GPU [0-9]+:")
        set(CMAKE_CUDA_ARCHITECTURES native)
        set(_cohort_arch_why "native: nvidia-smi lists a GPU")
      else()
        set(CMAKE_CUDA_ARCHITECTURES 90)
        set(_cohort_arch_why "no GPU seen: sm_90 only, a compile check; set CMAKE_CUDA_ARCHITECTURES for other GPUs")
      endif()
    else()
      set(_cohort_arch_why "CMAKE_CUDA_ARCHITECTURES")
    endif()
    message(STATUS "CUDA architectures: ${CMAKE_CUDA_ARCHITECTURES} (${_cohort_arch_why})")
    cohort_check_cuda_architectures("${CMAKE_CUDA_COMPILER}" "${CMAKE_CUDA_ARCHITECTURES}")
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit)
    find_package(CUDNN MODULE QUIET)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND TARGET CUDA::cudart AND NOT CUDNN_FOUND)
      set(_cuda_why "cuDNN not found (set CUDNN_ROOT to a folder with include/cudnn.h and lib/libcudnn.so*)")
    elseif(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND TARGET CUDA::cudart)
      set(_cuda_found TRUE)
      set(_cuda_why "nvcc ${CMAKE_CUDA_COMPILER_VERSION} at ${CMAKE_CUDA_COMPILER}, archs ${CMAKE_CUDA_ARCHITECTURES} (${_cohort_arch_why}), cuDNN ${CUDNN_VERSION} at ${CUDNN_LIBRARY}")
    else()
      set(_cuda_why "nvcc found but the CUDA toolkit libraries (cudart, cublas) were not")
    endif()
  endif()
endif()
_cohort_resolve(CUDA "${_cuda_found}" "${_cuda_why}")

# --- Thrust (the CCCL headers): header-only, so found, never built. The CUDA device runs its maps,
# fills and row reductions through it; the CPU tests run the same code on Thrust's CPP system
# (tests/backends/cuda/thrust/). CUDA 13 keeps CCCL in include/cccl, CUDA 11-12 directly in
# include/; a standalone CCCL checkout works too (-DCOHORT_CCCL_INCLUDE_DIR=.../cccl). ---
set(_cccl_hints)
foreach(_d ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  list(APPEND _cccl_hints ${_d}/cccl ${_d})
endforeach()
find_path(COHORT_CCCL_INCLUDE_DIR thrust/version.h HINTS ${_cccl_hints}
          DOC "Directory holding the CCCL headers thrust/, cub/ and cuda/")
set(COHORT_HAVE_THRUST 0)
set(COHORT_WHY_THRUST "thrust/version.h not found (set COHORT_CCCL_INCLUDE_DIR): Thrust tests not built")
if(COHORT_CCCL_INCLUDE_DIR AND EXISTS ${COHORT_CCCL_INCLUDE_DIR}/thrust/version.h)
  file(STRINGS ${COHORT_CCCL_INCLUDE_DIR}/thrust/version.h _thrust_version_line
       REGEX "^#define THRUST_VERSION [0-9]+")
  string(REGEX REPLACE "^#define THRUST_VERSION ([0-9]+).*" "\\1" _thrust_v "${_thrust_version_line}")
  # 1.16 brought thrust::cuda::par_nosync, which the CUDA device needs (no sync inside an op).
  if(_thrust_v GREATER_EQUAL 101600)
    math(EXPR _thrust_major "${_thrust_v} / 100000")
    math(EXPR _thrust_minor "${_thrust_v} / 100 % 1000")
    set(COHORT_HAVE_THRUST 1)
    set(COHORT_WHY_THRUST "Thrust ${_thrust_major}.${_thrust_minor} at ${COHORT_CCCL_INCLUDE_DIR}")
  else()
    set(COHORT_WHY_THRUST "Thrust at ${COHORT_CCCL_INCLUDE_DIR} is too old (THRUST_VERSION ${_thrust_v}, need 1.16): Thrust tests not built")
  endif()
endif()
if(COHORT_HAVE_CUDA AND NOT COHORT_HAVE_THRUST)
  message(FATAL_ERROR "the CUDA backend needs Thrust 1.16 or later: ${COHORT_WHY_THRUST}")
endif()

# --- NCCL: needs CUDA ---
set(_nccl_found FALSE)
set(_nccl_why "needs the CUDA backend")
if(COHORT_HAVE_CUDA)
  # NCCL_ROOT covers the pip wheel layout (site-packages/nvidia/nccl/{include,lib}, libnccl.so.2).
  find_library(COHORT_NCCL_LIBRARY NAMES nccl libnccl.so.2
               HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
  find_path(COHORT_NCCL_INCLUDE_DIR nccl.h
            HINTS ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  if(COHORT_NCCL_LIBRARY AND COHORT_NCCL_INCLUDE_DIR)
    set(_nccl_found TRUE)
    set(_nccl_why "${COHORT_NCCL_LIBRARY}")
  else()
    set(_nccl_why "libnccl / nccl.h not found")
  endif()
endif()
_cohort_resolve(NCCL "${_nccl_found}" "${_nccl_why}")

# --- UCX ---
set(_ucx_found FALSE)
set(_ucx_why "ucp/api/ucp.h and libucp/uct/ucs not found (Debian: libucx-dev)")
if(NOT COHORT_ENABLE_UCX STREQUAL "OFF")
  find_package(UCX MODULE QUIET)
  if(UCX_FOUND)
    set(_ucx_found TRUE)
    set(_ucx_why "UCX ${UCX_VERSION}")
  endif()
endif()
_cohort_resolve(UCX "${_ucx_found}" "${_ucx_why}")

function(cohort_print_summary)
  message(STATUS "cohort ${PROJECT_VERSION} configuration:")
  message(STATUS "  host backend: Kokkos ${Kokkos_VERSION} (Serial), GEMM via oneDNN ${DNNL_VERSION}")
  foreach(opt CUDA THRUST NCCL UCX)
    message(STATUS "  ${opt}: ${COHORT_HAVE_${opt}} - ${COHORT_WHY_${opt}}")
  endforeach()
endfunction()
