// CPU-only builds: there is no cuda device, so pinned memory is never asked for.
#include <stdexcept>

#include "scenarios/models/transformer/host_state_buffer.hpp"

namespace oomlab::model {

void* pinned_host_alloc(std::size_t) {
  throw std::logic_error("pinned host memory needs a CUDA build");
}

void pinned_host_free(void*) {}

}  // namespace oomlab::model
