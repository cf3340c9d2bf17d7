// RoPE: the CUDA kernel (one thread per rotated pair) and its launcher.
#include "kernels/core/elementwise.cuh"
#include "kernels/transformer/rope.hpp"

namespace oomlab::ops {

template <class T>
__global__ void rope_kernel(T* x, std::size_t pairs, std::int64_t seq, int dim, float base, bool inverse) {
  const std::size_t p = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p >= pairs) return;
  const int half = dim / 2;
  const std::size_t row = p / static_cast<std::size_t>(half);
  const int i = static_cast<int>(p % static_cast<std::size_t>(half));
  const long long t = static_cast<long long>(row % static_cast<std::size_t>(seq));
  T* a = x + row * static_cast<std::size_t>(dim) + i;
  float first = to_f32(a[0]), second = to_f32(a[half]);
  rope_rotate_pair(first, second, rope_angle(t, i, dim, base), inverse);
  a[0] = from_f32<T>(first);
  a[half] = from_f32<T>(second);
}

namespace cuda {

void rope_rotate(Tensor& x, float base, bool inverse, memory::StreamHandle stream) {
  const std::size_t pairs = static_cast<std::size_t>(x.numel()) / 2;
  if (pairs == 0) return;
  dispatch_float(x.dtype(), "rope", [&](auto zero) {
    using T = decltype(zero);
    constexpr unsigned kBlock = 256;
    rope_kernel<T><<<ceil_div(pairs, kBlock), kBlock, 0, as_cuda_stream(stream)>>>(
        x.data_as<T>(), pairs, x.shape()[2], static_cast<int>(x.shape()[3]), base, inverse);
    OOMLAB_CUDA_CHECK_LAUNCH();
  });
}

}  // namespace cuda
}  // namespace oomlab::ops
