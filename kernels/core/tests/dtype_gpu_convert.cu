// Test helper: converts f32 values on the GPU with CUDA's own intrinsics, so the host
// conversions can be compared with them bit for bit.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "kernels/core/launch.cuh"
#include "kernels/core/tests/dtype_gpu_convert.hpp"

namespace oomlab::testing {

__global__ void convert_with_intrinsics_kernel(const float* in, std::size_t n,
                                               std::uint16_t* bf16_out, std::uint16_t* f16_out) {
  std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __nv_bfloat16 b = __float2bfloat16(in[i]);
  __half h = __float2half(in[i]);
  bf16_out[i] = __bfloat16_as_ushort(b);
  f16_out[i] = __half_as_ushort(h);
}

void convert_with_cuda_intrinsics(const float* in, std::size_t n, std::uint16_t* bf16_out,
                                  std::uint16_t* f16_out, memory::StreamHandle stream) {
  constexpr unsigned kBlock = 256;
  convert_with_intrinsics_kernel<<<ceil_div(n, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
      in, n, bf16_out, f16_out);
  OOMLAB_CUDA_CHECK_LAUNCH();
}

}  // namespace oomlab::testing
