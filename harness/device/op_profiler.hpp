// Where a step's device time goes, by named range (each range is also a memory site, so an OOM
// inside it says where): call sites open a ProfileRange ("attn.core",
// "mlp.down.backward"), an OpProfiler active on the thread times each range on the device's
// compute stream (CUDA events on cuda; the wall clock on host, whose kernels are synchronous;
// nothing on dry) and sums them by name. With no active profiler a ProfileRange costs a branch,
// so the ranges stay in the code. Ranges may nest; each name's total is its own time (a parent
// includes its children).
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/memory/site.hpp"

namespace oomlab {

class OpProfiler {
 public:
  struct Total {
    std::string name;
    std::int64_t calls = 0;
    double milliseconds = 0;
  };

  explicit OpProfiler(Device& device);  // becomes this thread's active profiler
  ~OpProfiler();                        // gives the previous one back
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  static OpProfiler* active();  // this thread's, or nullptr

  void begin(const char* name);
  void end();
  // Every closed range so far, summed by name, largest first. Waits for the device on cuda.
  std::vector<Total> totals();
  // Forgets what was timed (e.g. a warm-up step); open ranges stay open.
  void reset();

 private:
  struct Range {
    std::size_t name;                        // index into names_
    std::uintptr_t start = 0, stop = 0;      // cuda timing events
    std::chrono::steady_clock::time_point host_start;
    double host_ms = -1;                     // host: measured at end()
  };
  std::size_t name_index(const char* name);
  std::uintptr_t take_event();

  Device& device_;
  OpProfiler* previous_;
  std::vector<std::string> names_;
  std::vector<Range> closed_, open_;
  std::vector<std::uintptr_t> spare_events_;
};

// No profiler is active on this thread within its scope (a planning run beside the measured one).
class ProfilingPaused {
 public:
  ProfilingPaused();
  ~ProfilingPaused();
  ProfilingPaused(const ProfilingPaused&) = delete;
  ProfilingPaused& operator=(const ProfilingPaused&) = delete;

 private:
  OpProfiler* paused_;
};

// Times its scope under `name` when a profiler is active on this thread.
class ProfileRange {
 public:
  explicit ProfileRange(const char* name) : profiler_(OpProfiler::active()) {
    memory::push_site(name);  // an OOM inside names the range (site.hpp)
    if (profiler_) profiler_->begin(name);
  }
  ~ProfileRange() {
    if (profiler_) profiler_->end();
    memory::pop_site();
  }
  ProfileRange(const ProfileRange&) = delete;
  ProfileRange& operator=(const ProfileRange&) = delete;

 private:
  OpProfiler* profiler_;
};

// Consecutive ranges through straight-line code: each next() closes the current range and opens
// the next; the destructor closes the last.
class ProfilePhases {
 public:
  explicit ProfilePhases(const char* first) : profiler_(OpProfiler::active()) {
    memory::push_site(first);
    if (profiler_) profiler_->begin(first);
  }
  void next(const char* name) {
    memory::pop_site();
    memory::push_site(name);
    if (!profiler_) return;
    profiler_->end();
    profiler_->begin(name);
  }
  ~ProfilePhases() {
    if (profiler_) profiler_->end();
    memory::pop_site();
  }
  ProfilePhases(const ProfilePhases&) = delete;
  ProfilePhases& operator=(const ProfilePhases&) = delete;

 private:
  OpProfiler* profiler_;
};

}  // namespace oomlab
