// Device fill used by Tensor::fill on cuda (defined in fill.cu; declared without CUDA types so
// host code can call it behind OOMLAB_WITH_CUDA).
#pragma once
#include <cstddef>
#include <cstdint>

#include "harness/memory/source.hpp"

namespace oomlab {

// Writes `count` copies of the element whose bytes are the low `element_bytes` (1, 2, 4 or 8)
// bytes of `pattern` to dst, on `stream`.
void fill_pattern_cuda(void* dst, std::size_t count, std::size_t element_bytes,
                       std::uint64_t pattern, memory::StreamHandle stream);

}  // namespace oomlab
