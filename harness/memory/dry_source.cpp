// dry: address ranges with no backing. Addresses start at 2^60, which is non-canonical on
// x86-64 and arm64, so an accidental dereference faults at once instead of reading garbage.
// Address space is handed out first-fit from a free list, so released ranges are reused and a
// run's addresses are deterministic.
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>

#include "harness/memory/size.hpp"
#include "harness/memory/source.hpp"

namespace oomlab::memory {
namespace {

constexpr std::uintptr_t kDryBase = std::uintptr_t{1} << 60;
constexpr std::size_t kDrySpace = std::size_t{1} << 58;
constexpr std::size_t kDryGranularity = 2 * MiB;

std::size_t round_up(std::size_t bytes, std::size_t granularity) {
  return (bytes + granularity - 1) / granularity * granularity;
}

class DrySource final : public MemorySource {
 public:
  DrySource() { free_ranges_[kDryBase] = kDrySpace; }

 private:
  // First fit over the free list; nullptr when the (huge) space is exhausted.
  void* take(std::size_t bytes) {
    if (bytes == 0 || bytes > kDrySpace) return nullptr;
    std::size_t size = round_up(bytes, kDryGranularity);
    for (auto it = free_ranges_.begin(); it != free_ranges_.end(); ++it) {
      if (it->second < size) continue;
      std::uintptr_t base = it->first;
      std::size_t left = it->second - size;
      free_ranges_.erase(it);
      if (left > 0) free_ranges_[base + size] = left;
      live_[base] = size;
      return reinterpret_cast<void*>(base);
    }
    return nullptr;
  }

  void give_back(void* ptr, const char* what) {
    auto base = reinterpret_cast<std::uintptr_t>(ptr);
    auto live = live_.find(base);
    if (live == live_.end()) {
      throw std::invalid_argument(std::string("dry source: ") + what + " of an address it did not hand out");
    }
    std::size_t size = live->second;
    live_.erase(live);
    // Insert and coalesce with the free neighbours on both sides.
    auto next = free_ranges_.lower_bound(base);
    if (next != free_ranges_.end() && base + size == next->first) {
      size += next->second;
      next = free_ranges_.erase(next);
    }
    if (next != free_ranges_.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == base) {
        prev->second += size;
        return;
      }
    }
    free_ranges_[base] = size;
  }

  void check_mapped_range(void* address, std::size_t bytes) const {
    auto begin = reinterpret_cast<std::uintptr_t>(address);
    auto it = live_.upper_bound(begin);
    bool inside = it != live_.begin() && begin + bytes <= std::prev(it)->first + std::prev(it)->second;
    if (!inside || begin % kDryGranularity != 0 || bytes % kDryGranularity != 0) {
      throw std::invalid_argument("dry source: map/unmap outside a reserved range or off the 2 MiB grid");
    }
  }

  void* do_allocate(std::size_t bytes) override { return take(bytes); }
  void do_deallocate(void* ptr, std::size_t) override { give_back(ptr, "deallocate"); }
  bool do_supports_expandable() const override { return true; }
  std::size_t do_page_granularity() const override { return kDryGranularity; }
  void* do_reserve(std::size_t bytes) override { return take(bytes); }
  void do_release(void* base, std::size_t) override { give_back(base, "release"); }
  bool do_map(void* address, std::size_t bytes) override {
    check_mapped_range(address, bytes);
    return true;
  }
  void do_unmap(void* address, std::size_t bytes) override { check_mapped_range(address, bytes); }

  EventHandle do_record_event(StreamHandle) override { return ++last_event_; }
  bool do_event_complete(EventHandle) override { return true; }
  void do_destroy_event(EventHandle) override {}

  std::size_t do_external_bytes() const override { return 0; }
  std::string do_name() const override { return "dry"; }
  bool do_has_backing() const override { return false; }

  std::map<std::uintptr_t, std::size_t> free_ranges_;  // base -> size
  std::map<std::uintptr_t, std::size_t> live_;         // segments and reservations
  EventHandle last_event_ = 0;
};

}  // namespace

std::unique_ptr<MemorySource> make_dry_source() { return std::make_unique<DrySource>(); }

}  // namespace oomlab::memory
