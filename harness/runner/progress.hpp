// The terminal progress line: "\r[fragmentation/broken] step 12/50  allocated 1.20GiB
// reserved 1.50GiB", redrawn at most every 100 ms, and only when stderr is a terminal.
#pragma once
#include <chrono>
#include <string>

#include "harness/runner/run_context.hpp"

namespace oomlab {

class ProgressLine {
 public:
  // Attaches to `context` when `enabled` and stderr is a terminal; otherwise does nothing.
  ProgressLine(RunContext& context, std::string label, bool enabled);
  ~ProgressLine();  // clears the line
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  static void draw(void* self, const RunContext& context);

  RunContext& context_;
  memory::CachingAllocator& allocator_;
  std::string label_;
  bool active_ = false;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace oomlab
