#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "harness/memory/size.hpp"
#include "scenarios/weights7b/parallel_memcpy.hpp"

namespace oomlab::scenarios::weights7b {

void parallel_memcpy(void* dst, const void* src, std::size_t bytes) {
  // Below a few MiB a thread costs more than it saves.
  constexpr std::size_t kBytesPerThread = 8 * MiB;
  const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>({8, hardware, bytes / kBytesPerThread});
  if (threads <= 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
  const std::size_t piece = (bytes / threads + 4095) / 4096 * 4096;  // page-aligned pieces
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) {
    const std::size_t begin = std::min(bytes, t * piece);
    const std::size_t n = std::min(bytes, begin + piece) - begin;
    if (n == 0) break;
    workers.emplace_back([=] {
      std::memcpy(static_cast<char*>(dst) + begin, static_cast<const char*>(src) + begin, n);
    });
  }
  std::memcpy(dst, src, std::min(bytes, piece));
  for (std::thread& worker : workers) worker.join();
}

}  // namespace oomlab::scenarios::weights7b
