#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "harness/memory/size.hpp"
#include "scenarios/weights7b/staging_ring.hpp"

namespace oomlab::scenarios::weights7b {

void parallel_read(const safetensors::SafetensorsFile& file, const safetensors::TensorEntry& entry,
                   std::uint64_t offset, void* dst, std::size_t bytes) {
  // Below a few MiB a thread costs more than it saves.
  constexpr std::size_t kBytesPerThread = 4 * MiB;
  const std::size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::max<std::size_t>(1, std::min<std::size_t>({16, hardware, bytes / kBytesPerThread}));
  const std::size_t piece = (bytes / threads + 4095) / 4096 * 4096;  // page-aligned pieces
  std::vector<std::exception_ptr> errors(threads);
  auto read_piece = [&](std::size_t t) {
    const std::size_t begin = std::min(bytes, t * piece);
    const std::size_t n = std::min(bytes, begin + piece) - begin;
    try {
      if (n > 0) file.read_tensor_bytes(entry, offset + begin, static_cast<char*>(dst) + begin, n);
    } catch (...) {
      errors[t] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < threads; ++t) workers.emplace_back(read_piece, t);
  read_piece(0);
  for (std::thread& worker : workers) worker.join();
  for (const std::exception_ptr& error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

}  // namespace oomlab::scenarios::weights7b
