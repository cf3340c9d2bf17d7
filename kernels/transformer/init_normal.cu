// Parameter initialisation: one thread per element, grid-stride (7B-parameter tensors exceed a
// grid's reach at one element per thread).
#include "kernels/core/elementwise.cuh"
#include "kernels/transformer/init_normal.hpp"
#include "kernels/transformer/init_normal_math.hpp"

namespace oomlab::ops {

template <class Out>
__global__ void fill_normal_kernel(Out* out, std::size_t n, std::uint64_t seed, float stddev,
                                   std::uint64_t first_index) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = from_f32<Out>(stddev * normal_at(seed, first_index + i));
  }
}

namespace cuda {

void fill_normal(Tensor& out, std::uint64_t seed, float stddev, std::uint64_t first_index,
                 memory::StreamHandle stream) {
  const auto n = static_cast<std::size_t>(out.numel());
  if (n == 0) return;
  dispatch_float(out.dtype(), "fill_normal", [&](auto zero) {
    using Out = decltype(zero);
    unsigned grid = ceil_div(n, kMapBlock);
    if (grid > 65535u * 8) grid = 65535u * 8;
    fill_normal_kernel<<<grid, kMapBlock, 0, as_cuda_stream(stream)>>>(out.data_as<Out>(), n, seed, stddev,
                                                                             first_index);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
