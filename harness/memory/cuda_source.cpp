// cuda: segments from cudaMalloc/cudaFree; no expandable segments (cuda_vmm has them).
#include <stdexcept>

#include "harness/memory/detail/cuda_source_base.hpp"

namespace oomlab::memory {
namespace {

class CudaSource final : public detail::CudaSourceBase {
 private:
  bool do_supports_expandable() const override { return false; }
  std::size_t do_page_granularity() const override { return 2 << 20; }
  void* do_reserve(std::size_t) override { throw unsupported(); }
  void do_release(void*, std::size_t) override { throw unsupported(); }
  bool do_map(void*, std::size_t) override { throw unsupported(); }
  void do_unmap(void*, std::size_t) override { throw unsupported(); }
  std::string do_name() const override { return "cuda"; }

  static std::logic_error unsupported() {
    return std::logic_error("cuda source: expandable segments need the cuda_vmm source");
  }
};

}  // namespace

std::unique_ptr<MemorySource> make_cuda_source() {
  detail::require_cuda_device();
  return std::make_unique<CudaSource>();
}

}  // namespace oomlab::memory
