# CPack: `cpack -G TGZ` and `cpack -G DEB` in a build folder package the installed tree
# (OomlabInstall.cmake), so a GPU box gets oomlab without compiling it. The name says what was
# built: oomlab-0.1.0-cuda13.0-x86_64.tar.gz from a CUDA build (every GPU of its architecture
# list), oomlab-0.1.0-cpu-x86_64.tar.gz from a CPU-only one (host and dry backends).
#
# Run-time needs of a CUDA build: the CUDA runtime and cuBLAS/cuBLASLt are linked as shared
# libraries (libcudart.so.N, libcublas.so.N, libcublasLt.so.N: readelf -d shows them NEEDED), so
# the .deb depends on NVIDIA's packages of the toolkit version it was built with (cuda-cudart-13-0,
# libcublas-13-0, which holds cuBLASLt too), or Debian's (libcudart13, libcublas13, libcublaslt13).
# The driver (libcuda.so.1, and libnvidia-ml.so.1, which the doctor loads at run time) is the
# machine's own and is not a package dependency. docs/install.md says the same for users.
if(OOMLAB_HAVE_CUDA)
  set(OOMLAB_PACKAGE_FLAVOUR cuda${CUDAToolkit_VERSION_MAJOR}.${CUDAToolkit_VERSION_MINOR})
else()
  set(OOMLAB_PACKAGE_FLAVOUR cpu)
endif()
set(OOMLAB_PACKAGE_MAINTAINER "oomlab maintainers <oomlab@users.noreply.github.com>"
    CACHE STRING "The .deb's Maintainer field")

set(CPACK_PACKAGE_NAME oomlab)
set(CPACK_PACKAGE_VENDOR oomlab)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${OOMLAB_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Reproducible GPU out-of-memory failures, measured and explained")
set(CPACK_PACKAGE_DESCRIPTION
    "oomlab runs scenario programs, each a broken variant that reproduces a real GPU out-of-memory "
    "story and fixed variants that apply the remedy, and measures every variant's peak memory and "
    "throughput on a GPU (cuda), in capped host memory (host) or as a prediction (dry). Includes "
    "the doctor, bisect, advise, compare, report and replay commands and the scenarios' teaching pages.")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_PACKAGE_FILE_NAME oomlab-${PROJECT_VERSION}-${OOMLAB_PACKAGE_FLAVOUR}-${CMAKE_SYSTEM_PROCESSOR})
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_STRIP_FILES TRUE)  # the RelWithDebInfo binary's debug info is most of its size
set(CPACK_PACKAGE_CHECKSUM SHA256)

set(CPACK_DEBIAN_FILE_NAME ${CPACK_PACKAGE_FILE_NAME}.deb)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${OOMLAB_PACKAGE_MAINTAINER}")
# libc6, libstdc++6, libgcc-s1, zlib1g with their versions, read off the binary by dpkg-shlibdeps
# (where it is installed); the CUDA libraries come from no package it knows, so they are named here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
if(OOMLAB_HAVE_CUDA)
  set(cuda_deb_version ${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR})
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "cuda-cudart-${cuda_deb_version} | libcudart${CUDAToolkit_VERSION_MAJOR}"
      "libcublas-${cuda_deb_version} | libcublas${CUDAToolkit_VERSION_MAJOR}"
      "libcublas-${cuda_deb_version} | libcublaslt${CUDAToolkit_VERSION_MAJOR}")
  string(JOIN ", " CPACK_DEBIAN_PACKAGE_DEPENDS ${CPACK_DEBIAN_PACKAGE_DEPENDS})
endif()
include(CPack)
