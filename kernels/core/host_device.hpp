// OOMLAB_HOST_DEVICE: marks small math functions shared by CPU references and CUDA kernels,
// so both sides compute the same formula.
#pragma once

#if defined(__CUDACC__)
#define OOMLAB_HOST_DEVICE __host__ __device__
#else
#define OOMLAB_HOST_DEVICE
#endif
