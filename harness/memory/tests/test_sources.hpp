// Test helpers: a source whose record_stream events complete when the test says so, over any
// real source (dry by default).
#pragma once
#include <map>
#include <memory>

#include "harness/memory/source.hpp"

namespace oomlab::memory::testing {

class ManualEventSource final : public MemorySource {
 public:
  // auto_complete_after > 0: an event reports complete on its N-th query (so waits terminate).
  explicit ManualEventSource(std::unique_ptr<MemorySource> inner, int auto_complete_after = 0)
      : inner_(std::move(inner)), auto_complete_after_(auto_complete_after) {}

  void complete_all() {
    for (auto& [event, state] : events_) state.complete = true;
  }
  std::size_t live_events() const { return events_.size(); }
  std::uint64_t events_recorded() const { return next_event_ - 1; }

 private:
  struct EventState {
    StreamHandle stream;
    int queries = 0;
    bool complete = false;
  };
  void* do_allocate(std::size_t bytes) override { return inner_->allocate(bytes); }
  void do_deallocate(void* ptr, std::size_t bytes) override { inner_->deallocate(ptr, bytes); }
  bool do_supports_expandable() const override { return inner_->supports_expandable(); }
  std::size_t do_page_granularity() const override { return inner_->page_granularity(); }
  void* do_reserve(std::size_t bytes) override { return inner_->reserve(bytes); }
  void do_release(void* base, std::size_t bytes) override { inner_->release(base, bytes); }
  bool do_map(void* address, std::size_t bytes) override { return inner_->map(address, bytes); }
  void do_unmap(void* address, std::size_t bytes) override { inner_->unmap(address, bytes); }
  EventHandle do_record_event(StreamHandle stream) override {
    events_[next_event_] = EventState{stream};
    return next_event_++;
  }
  bool do_event_complete(EventHandle event) override {
    EventState& state = events_.at(event);
    ++state.queries;
    if (auto_complete_after_ > 0 && state.queries >= auto_complete_after_) state.complete = true;
    return state.complete;
  }
  void do_destroy_event(EventHandle event) override { events_.erase(event); }
  std::size_t do_external_bytes() const override { return inner_->external_bytes(); }
  std::string do_name() const override { return "manual-events(" + inner_->name() + ")"; }
  bool do_has_backing() const override { return inner_->has_backing(); }

  std::unique_ptr<MemorySource> inner_;
  int auto_complete_after_;
  std::map<EventHandle, EventState> events_;
  EventHandle next_event_ = 1;
};

}  // namespace oomlab::memory::testing
