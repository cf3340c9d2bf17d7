// Writes a generated snapshot (synthetic_trace.hpp) to a file, for timing `oomlab replay` end
// to end (results/replay/README.md):
//
//   write_synthetic_snapshot OUT.pickle [ENTRIES=1000000] [LIVE_BLOCKS=100000] [torch]
//
// `torch`: the density of a real torch trace (synthetic_trace.hpp), not the densest pickle.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "synthetic_trace.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || argc > 5 || (argc == 5 && std::string(argv[4]) != "torch")) {
    std::fprintf(stderr, "usage: write_synthetic_snapshot OUT.pickle [ENTRIES=1000000] [LIVE_BLOCKS=100000] [torch]\n");
    return 2;
  }
  const bool torch_density = argc == 5;
  const std::size_t entries = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1'000'000;
  const std::size_t live_blocks = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100'000;
  const std::vector<std::uint8_t> bytes =
      oomlab::replay::bench::synthetic_snapshot(entries, live_blocks, torch_density);
  std::ofstream out(argv[1], std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) {
    std::fprintf(stderr, "write_synthetic_snapshot: cannot write %s\n", argv[1]);
    return 2;
  }
  std::printf("%s: %zu entries, %zu live blocks, %zu bytes\n", argv[1], entries, live_blocks, bytes.size());
  return 0;
}
