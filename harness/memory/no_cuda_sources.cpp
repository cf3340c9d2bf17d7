// CPU-only builds: the CUDA sources exist as factories that say why they cannot be made.
#include <stdexcept>

#include "harness/memory/source.hpp"

namespace oomlab::memory {

std::unique_ptr<MemorySource> make_cuda_source() {
  throw std::runtime_error("oomlab was built without CUDA");
}

std::unique_ptr<MemorySource> make_cuda_vmm_source() {
  throw std::runtime_error("oomlab was built without CUDA");
}

}  // namespace oomlab::memory
