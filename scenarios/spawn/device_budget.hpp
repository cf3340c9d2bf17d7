// The device-level budget check the allocator alone cannot make: memory held by OTHER processes
// (each worker's CUDA context) counts against the same card. nvidia-smi's view:
//   used = this process's allocator (reserved) + its own context + every other context.
// The budget (a GPU profile) already excludes this process's context; the workers' contexts
// are the `external` bytes of the OOM diagnosis.
#pragma once
#include <cstddef>
#include <vector>

#include "harness/memory/caching_allocator.hpp"

namespace oomlab::scenarios {

// Device memory held outside this process: one entry per worker process with a context.
struct ExternalHolders {
  std::vector<int> pids;
  std::vector<std::size_t> bytes;  // per pid
  std::size_t total() const;
};

// Throws memory::OomError (diagnosis external when the request would fit without the holders)
// when allocated + request + external exceeds the allocator's budget; the message names the
// holding processes and their bytes. Does nothing with an unlimited budget.
void require_device_room(const memory::CachingAllocator& allocator, std::size_t request,
                         memory::Tag tag, const ExternalHolders& external);

}  // namespace oomlab::scenarios
