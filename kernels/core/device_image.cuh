// Which device image a .cu file is being compiled into, for kernels that exist only on some
// architectures. nvcc compiles a .cu once for the host and once per entry of
// CMAKE_CUDA_ARCHITECTURES (__CUDA_ARCH__ is set in those device passes only), so one source
// yields an sm_75 image, an sm_80 image, an sm_90a image... and each must compile.
//
//   OOMLAB_IMAGE_SM90A  the sm_90a image (Hopper's wgmma, bulk copies, clusters:
//                       __CUDA_ARCH_FEAT_SM90_ALL), and the host pass
//   OOMLAB_IMAGE_SM80   images of compute 8.0 and up (mma.sync on bf16/f16/tf32, cp.async), and
//                       the host pass
//
// A kernel that needs one of them wraps its body:
//     #if OOMLAB_IMAGE_SM90A
//       ... the kernel ...
//     #else
//       __trap();
//     #endif
// so the other images hold a one-instruction stub: adding an architecture never breaks the build,
// and a Hopper kernel costs nothing in an Ampere image. The host never launches a stub: which
// engine runs is chosen in one place, kernels/core/engines.hpp, from the image the driver loaded.
#pragma once

#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define OOMLAB_IMAGE_SM90A 1
#else
#define OOMLAB_IMAGE_SM90A 0
#endif

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define OOMLAB_IMAGE_SM80 1
#else
#define OOMLAB_IMAGE_SM80 0
#endif
