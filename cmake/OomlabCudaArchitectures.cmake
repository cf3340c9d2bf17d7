# Which GPUs the CUDA build runs on (README.md, "Building for your GPU").
#
# Default: one fat binary for compute capability 7.5 through 12.x, SASS for each family people
# have and PTX so newer GPUs JIT-compile it:
#   75-real    T4, RTX 20xx (Turing: f16/f32 paths; the bf16 tensor-core kernels need 8.0 and say so)
#   80         A100, A30 (SASS, and compute_80 PTX: every GPU >= 8.0 can JIT it, Jetson Thor too)
#   86-real    RTX 30xx, A10, A40, RTX A6000 (also runs on 8.7 Orin)
#   89-real    RTX 40xx, L4, L40S, RTX 6000 Ada
#   90a-real   H100, H200, GH200 (sm_90a: the wgmma / bulk-copy / cluster engines)
#   100-real   B200, GB200 (also runs on 10.3: B300)
#   120        RTX 50xx, RTX PRO 6000 Blackwell (also 12.1: DGX Spark), and compute_120 PTX for
#              the GPUs after it
# "80" and "120" carry their PTX at no extra compile time (the same front-end pass as the SASS).
#
# oomlab_choose_cuda_architectures() runs before enable_language(CUDA): it fills
# CMAKE_CUDA_ARCHITECTURES when neither it nor $CUDAARCHS is given and stops with one clear line
# for an architecture below 7.5 or one this nvcc cannot build. oomlab_resolve_cuda_architectures()
# runs after it: `native` (only this machine's GPUs) and `all`/`all-major` become explicit lists
# (9.0 as 90a-real, so Hopper keeps its engines), and OOMLAB_CUDA_ARCHITECTURES_BUILT holds the list
# the binary reports (harness/device/cuda_archs.hpp).

set(OOMLAB_CUDA_ARCHITECTURES_DEFAULT "75-real;80;86-real;89-real;90a-real;100-real;120")
set(OOMLAB_CUDA_MIN_ARCH 75)

# The capabilities this nvcc compiles for ("75;80;86;...;121"), from `nvcc --list-gpu-arch`.
function(_oomlab_nvcc_archs out)
  execute_process(COMMAND "${CMAKE_CUDA_COMPILER}" --list-gpu-arch
                  OUTPUT_VARIABLE listed RESULT_VARIABLE failed ERROR_QUIET)
  set(archs "")
  if(NOT failed)
    string(REGEX MATCHALL "compute_[0-9]+" found "${listed}")
    foreach(entry IN LISTS found)
      string(REPLACE "compute_" "" number "${entry}")
      list(APPEND archs ${number})
    endforeach()
  endif()
  set(${out} "${archs}" PARENT_SCOPE)
endfunction()

# "90a-real" -> 90; "" when the entry is not an architecture.
function(_oomlab_arch_number entry out)
  set(number "")
  if(entry MATCHES "^([0-9]+)a?(-real|-virtual)?$")
    set(number "${CMAKE_MATCH_1}")
  endif()
  set(${out} "${number}" PARENT_SCOPE)
endfunction()

macro(oomlab_choose_cuda_architectures)
  _oomlab_nvcc_archs(_oomlab_supported)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    # The default list, less what this toolkit cannot build (a later CUDA may drop Turing).
    set(_oomlab_archs "")
    foreach(_oomlab_entry IN LISTS OOMLAB_CUDA_ARCHITECTURES_DEFAULT)
      _oomlab_arch_number("${_oomlab_entry}" _oomlab_number)
      if(NOT _oomlab_supported OR _oomlab_number IN_LIST _oomlab_supported)
        list(APPEND _oomlab_archs "${_oomlab_entry}")
      else()
        message(WARNING "oomlab: nvcc ${CMAKE_CUDA_COMPILER} cannot build for compute ${_oomlab_number}: "
                        "the binary will not run on those GPUs (use a toolkit that supports them)")
      endif()
    endforeach()
    set(CMAKE_CUDA_ARCHITECTURES "${_oomlab_archs}")
  endif()
  set(_oomlab_requested "${CMAKE_CUDA_ARCHITECTURES}")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(_oomlab_requested "$ENV{CUDAARCHS}")
  endif()
  if(NOT _oomlab_requested MATCHES "^(native|all|all-major)$")
    foreach(_oomlab_entry IN LISTS _oomlab_requested)
      _oomlab_arch_number("${_oomlab_entry}" _oomlab_number)
      if(_oomlab_number STREQUAL "")
        message(FATAL_ERROR "oomlab: CMAKE_CUDA_ARCHITECTURES entry '${_oomlab_entry}' is not an "
                            "architecture (write 80, 90a, 86-real, 120-virtual, or native)")
      endif()
      if(_oomlab_number LESS OOMLAB_CUDA_MIN_ARCH)
        message(FATAL_ERROR "oomlab: CMAKE_CUDA_ARCHITECTURES has ${_oomlab_entry}, but oomlab needs "
                            "compute capability 7.5 or newer (T4, RTX 20xx and later)")
      endif()
      if(_oomlab_supported AND NOT _oomlab_number IN_LIST _oomlab_supported)
        string(REPLACE ";" " " _oomlab_supported_text "${_oomlab_supported}")
        message(FATAL_ERROR "oomlab: CMAKE_CUDA_ARCHITECTURES has ${_oomlab_entry}, which "
                            "${CMAKE_CUDA_COMPILER} cannot build (it builds ${_oomlab_supported_text})")
      endif()
    endforeach()
  endif()
endmacro()

macro(oomlab_resolve_cuda_architectures)
  if(CMAKE_CUDA_ARCHITECTURES STREQUAL "native")
    if(NOT CMAKE_CUDA_ARCHITECTURES_NATIVE)
      message(FATAL_ERROR "oomlab: CMAKE_CUDA_ARCHITECTURES=native, but CMake found no GPU on this "
                          "machine: name the architectures instead (README.md, \"Building for your GPU\")")
    endif()
    set(_oomlab_archs "${CMAKE_CUDA_ARCHITECTURES_NATIVE}")  # "89-real", "90-real"
  elseif(CMAKE_CUDA_ARCHITECTURES STREQUAL "all" OR CMAKE_CUDA_ARCHITECTURES STREQUAL "all-major")
    if(CMAKE_CUDA_ARCHITECTURES STREQUAL "all")
      set(_oomlab_archs "${CMAKE_CUDA_ARCHITECTURES_ALL}")
    else()
      set(_oomlab_archs "${CMAKE_CUDA_ARCHITECTURES_ALL_MAJOR}")
    endif()
    list(FILTER _oomlab_archs EXCLUDE REGEX "^([0-6][0-9]|7[0-4])$")  # below 7.5
    list(TRANSFORM _oomlab_archs APPEND "-real")
    list(GET _oomlab_archs -1 _oomlab_newest)
    string(REPLACE "-real" "-virtual" _oomlab_newest "${_oomlab_newest}")
    list(APPEND _oomlab_archs "${_oomlab_newest}")  # PTX of the newest, as nvcc's -arch=all
  else()
    set(_oomlab_archs "${CMAKE_CUDA_ARCHITECTURES}")
    if(_oomlab_archs MATCHES "(^|;)90(-real|-virtual)?(;|$)" AND NOT _oomlab_archs MATCHES "90a")
      message(STATUS "oomlab: 90 without 90a: Hopper GPUs will run the Ampere-class engines "
                     "(list 90a for wgmma)")
    endif()
  endif()
  if(CMAKE_CUDA_ARCHITECTURES MATCHES "^(native|all|all-major)$")
    # Hopper as sm_90a: the generic sm_90 image has none of its engines.
    list(TRANSFORM _oomlab_archs REPLACE "^90-real$" "90a-real")
  endif()
  if(NOT _oomlab_archs STREQUAL CMAKE_CUDA_ARCHITECTURES)
    message(STATUS "oomlab: CUDA architectures ${CMAKE_CUDA_ARCHITECTURES} -> ${_oomlab_archs}")
    set(CMAKE_CUDA_ARCHITECTURES "${_oomlab_archs}")
  endif()
  set(OOMLAB_CUDA_ARCHITECTURES_BUILT "${_oomlab_archs}")
  message(STATUS "oomlab: CUDA architectures ${OOMLAB_CUDA_ARCHITECTURES_BUILT}")
endmacro()
