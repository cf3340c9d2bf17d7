// Memory sources: where the caching allocator gets its segments. One interface, five
// implementations (cuda, cuda_vmm, host, dry, and replay's, harness/replay/replay_source.hpp).
// Public non-virtual calls forward to private virtuals, as RMM's device_memory_resource does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace oomlab::memory {

// An opaque stream (a cudaStream_t on cuda; 0 is the default stream everywhere).
using StreamHandle = std::uintptr_t;
// An opaque event recorded on a stream (a cudaEvent_t on cuda).
using EventHandle = std::uintptr_t;

class MemorySource {
 public:
  virtual ~MemorySource() = default;

  // A whole segment. Returns nullptr when the source is out of memory; throws on other failures.
  void* allocate(std::size_t bytes) { return do_allocate(bytes); }
  void deallocate(void* ptr, std::size_t bytes) { do_deallocate(ptr, bytes); }

  // Expandable segments: reserve address space once, then map and unmap physical pages in
  // multiples of page_granularity(). map() returns false when out of memory.
  bool supports_expandable() const { return do_supports_expandable(); }
  std::size_t page_granularity() const { return do_page_granularity(); }
  void* reserve(std::size_t bytes) { return do_reserve(bytes); }
  void release(void* base, std::size_t bytes) { do_release(base, bytes); }
  bool map(void* address, std::size_t bytes) { return do_map(address, bytes); }
  void unmap(void* address, std::size_t bytes) { do_unmap(address, bytes); }

  // Stream-ordered reuse (PyTorch's record_stream): a block used on another stream is reused
  // only once the events recorded there have completed. Host and dry complete at once.
  EventHandle record_event(StreamHandle stream) { return do_record_event(stream); }
  bool event_complete(EventHandle event) { return do_event_complete(event); }
  void destroy_event(EventHandle event) { do_destroy_event(event); }

  // Bytes of device memory in use outside this allocator (contexts, other processes), used to
  // diagnose `external` OOMs. 0 where it cannot be known (host, dry).
  std::size_t external_bytes() const { return do_external_bytes(); }
  // Total device memory where known (cudaMemGetInfo's total on cuda), else 0. Used to diagnose
  // a refusal by the device itself when no budget is set.
  std::size_t capacity_bytes() const { return do_capacity_bytes(); }

  // "cuda", "cuda_vmm", "host", "dry".
  std::string name() const { return do_name(); }
  // False for dry: its addresses must never be dereferenced.
  bool has_backing() const { return do_has_backing(); }

 private:
  virtual void* do_allocate(std::size_t bytes) = 0;
  virtual void do_deallocate(void* ptr, std::size_t bytes) = 0;
  virtual bool do_supports_expandable() const = 0;
  virtual std::size_t do_page_granularity() const = 0;
  virtual void* do_reserve(std::size_t bytes) = 0;
  virtual void do_release(void* base, std::size_t bytes) = 0;
  virtual bool do_map(void* address, std::size_t bytes) = 0;
  virtual void do_unmap(void* address, std::size_t bytes) = 0;
  virtual EventHandle do_record_event(StreamHandle stream) = 0;
  virtual bool do_event_complete(EventHandle event) = 0;
  virtual void do_destroy_event(EventHandle event) = 0;
  virtual std::size_t do_external_bytes() const = 0;
  virtual std::size_t do_capacity_bytes() const { return 0; }
  virtual std::string do_name() const = 0;
  virtual bool do_has_backing() const = 0;
};

std::unique_ptr<MemorySource> make_host_source();
std::unique_ptr<MemorySource> make_dry_source();
// Both throw std::runtime_error ("built without CUDA" / "no CUDA device") where unusable.
std::unique_ptr<MemorySource> make_cuda_source();
std::unique_ptr<MemorySource> make_cuda_vmm_source();

}  // namespace oomlab::memory
