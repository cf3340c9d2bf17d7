// Many tensors in few launches (as PyTorch's multi_tensor_apply does for its foreach and fused
// optimizers). A backward that makes one gradient per layer and parameter leaves ~150 tensors on
// GPT-2 124M, from 768 to 38M elements; a kernel per tensor then costs more in launches and
// half-empty grids than in bytes moved. The host cuts every tensor into chunks and hands up to
// kChunkBatchChunks of them to one launch, one block per chunk, through the kernel's parameters
// (by value, read in place through __grid_constant__): no device memory (the one invariant,
// docs/architecture.md).
// Include from .cu files only.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/core/elementwise.cuh"

namespace oomlab {

struct TensorChunk {
  std::int64_t begin;   // first element of the chunk in its tensor
  std::int32_t length;  // elements in the chunk
  std::int32_t tensor;  // the tensor's slot in the batch's pointer table
};

constexpr int kChunkBatchTensors = 48;
constexpr int kChunkBatchChunks = 640;

// kLists parallel lists of tensors (AdamW: master, m, v, grad, param copy), as element pointers.
// 12 KiB at five lists: under the 32 KiB of kernel parameters CUDA 12.1+ allows.
template <int kLists>
struct ChunkBatch {
  void* data[kLists][kChunkBatchTensors];
  std::uint64_t vectorized;  // bit t: every list's tensor t allows kMapWidth-wide access
  std::int32_t first_chunk;  // this batch's first chunk, counted over the whole call
  std::int32_t chunk_count;
  TensorChunk chunks[kChunkBatchChunks];
};

// One tensor of the call: its pointer in each list, its elements, and its chunk size (a multiple
// of kMapWidth, so every chunk but a tensor's last is whole vectors).
template <int kLists>
struct ChunkedTensor {
  std::array<void*, kLists> data;
  std::int64_t numel = 0;
  std::int64_t chunk_elements = 0;
  bool vectorized = false;
};

// Fills batches from the tensors in order and calls launch(batch) for each (a full pointer table
// or chunk list ends a batch). Returns the number of chunks over the whole call.
template <int kLists, class Launch>
std::int64_t launch_chunked(const std::vector<ChunkedTensor<kLists>>& tensors, Launch&& launch) {
  ChunkBatch<kLists> batch{};
  int slots = 0;
  std::int64_t total = 0;
  auto flush = [&] {
    if (batch.chunk_count > 0) launch(batch);
    batch.first_chunk = static_cast<std::int32_t>(total);
    batch.chunk_count = 0;
    batch.vectorized = 0;
    slots = 0;
  };
  for (const ChunkedTensor<kLists>& tensor : tensors) {
    if (tensor.numel == 0) continue;
    int slot = -1;
    for (std::int64_t begin = 0; begin < tensor.numel; begin += tensor.chunk_elements) {
      if (batch.chunk_count == kChunkBatchChunks) { flush(); slot = -1; }
      if (slot < 0) {
        if (slots == kChunkBatchTensors) flush();
        slot = slots++;
        for (int list = 0; list < kLists; ++list) batch.data[list][slot] = tensor.data[list];
        if (tensor.vectorized) batch.vectorized |= std::uint64_t{1} << slot;
      }
      const std::int64_t length = std::min(tensor.chunk_elements, tensor.numel - begin);
      batch.chunks[batch.chunk_count++] = {begin, static_cast<std::int32_t>(length), slot};
      ++total;
    }
  }
  flush();
  return total;
}

// The chunk's elements of list `list`, typed.
template <class T, int kLists>
__device__ __forceinline__ T* chunk_data(const ChunkBatch<kLists>& batch, int list, const TensorChunk& chunk) {
  return static_cast<T*>(batch.data[list][chunk.tensor]) + chunk.begin;
}

}  // namespace oomlab
