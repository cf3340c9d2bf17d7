// Checks shared by the host and GPU tests of SyntheticPairs' staged uploads: a batch on the
// device holds exactly the bytes host_batch() renders for it.
#pragma once
#include <vector>

#include <gtest/gtest.h>

#include "scenarios/models/srgan/synthetic_pairs.hpp"

namespace oomlab::srgan {

inline std::vector<unsigned char> device_bytes(const Tensor& tensor) {
  std::vector<unsigned char> bytes(tensor.nbytes());
  tensor.copy_to_host(bytes.data(), bytes.size());
  return bytes;
}

// `batch` (already returned by some SyntheticPairs) equals batch `index` rendered on the host by
// a fresh SyntheticPairs with `seed`, byte for byte.
inline void expect_batch_is_host_batch(const ImageBatch& batch, std::uint32_t seed, int low_res_size,
                                       int batch_size, std::int64_t index, DType dtype) {
  const HostImageBatch want = SyntheticPairs(seed, low_res_size).host_batch(batch_size, index, dtype);
  EXPECT_TRUE(device_bytes(batch.low_res) == want.low_res) << "low_res of batch " << index;
  EXPECT_TRUE(device_bytes(batch.high_res) == want.high_res) << "high_res of batch " << index;
}

}  // namespace oomlab::srgan
