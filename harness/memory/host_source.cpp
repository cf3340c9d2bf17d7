// host: aligned host memory. Expandable ranges are reserved with mmap(PROT_NONE, MAP_NORESERVE)
// and mapped/unmapped with mprotect + madvise, the host analogue of cuMemMap. The budget is
// enforced by the allocator, not here.
#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "harness/memory/size.hpp"
#include "harness/memory/source.hpp"

namespace oomlab::memory {
namespace {

constexpr std::size_t kHostAlignment = 4096;        // page: what cudaMalloc's 256 B can never beat
constexpr std::size_t kHostGranularity = 2 * MiB;   // the GPU's page size, so rounding matches

[[noreturn]] void throw_errno(const char* call) {
  throw std::runtime_error(std::string("host source: ") + call + " failed: " + std::strerror(errno));
}

class HostSource final : public MemorySource {
 private:
  void* do_allocate(std::size_t bytes) override {
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kHostAlignment, bytes) != 0) return nullptr;
    return ptr;
  }
  void do_deallocate(void* ptr, std::size_t) override { std::free(ptr); }

  bool do_supports_expandable() const override { return true; }
  std::size_t do_page_granularity() const override { return kHostGranularity; }
  void* do_reserve(std::size_t bytes) override {
    void* base = mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return base == MAP_FAILED ? nullptr : base;
  }
  void do_release(void* base, std::size_t bytes) override {
    if (munmap(base, bytes) != 0) throw_errno("munmap");
  }
  bool do_map(void* address, std::size_t bytes) override {
    if (mprotect(address, bytes, PROT_READ | PROT_WRITE) == 0) return true;
    if (errno == ENOMEM) return false;
    throw_errno("mprotect");
  }
  void do_unmap(void* address, std::size_t bytes) override {
    // Give the pages back to the kernel, then make the range inaccessible again.
    if (madvise(address, bytes, MADV_DONTNEED) != 0) throw_errno("madvise");
    if (mprotect(address, bytes, PROT_NONE) != 0) throw_errno("mprotect");
  }

  // Host work is synchronous: an event is complete as soon as it is recorded.
  EventHandle do_record_event(StreamHandle) override { return ++last_event_; }
  bool do_event_complete(EventHandle) override { return true; }
  void do_destroy_event(EventHandle) override {}

  std::size_t do_external_bytes() const override { return 0; }
  std::string do_name() const override { return "host"; }
  bool do_has_backing() const override { return true; }

  EventHandle last_event_ = 0;
};

}  // namespace

std::unique_ptr<MemorySource> make_host_source() { return std::make_unique<HostSource>(); }

}  // namespace oomlab::memory
