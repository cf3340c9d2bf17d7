#include "harness/runner/progress.hpp"

#include <unistd.h>

#include <cstdio>

#include "harness/memory/size.hpp"

namespace oomlab {

namespace {
constexpr auto kRedrawInterval = std::chrono::milliseconds(100);
}

ProgressLine::ProgressLine(RunContext& context, std::string label, bool enabled)
    : context_(context), allocator_(context.allocator()), label_(std::move(label)) {
  active_ = enabled && ::isatty(STDERR_FILENO) == 1;
  if (active_) context_.set_progress(&ProgressLine::draw, this);
}

ProgressLine::~ProgressLine() {
  if (!active_) return;
  context_.set_progress(nullptr, nullptr);
  if (drawn_) {
    std::fputs("\r\033[K", stderr);
    std::fflush(stderr);
  }
}

void ProgressLine::draw(void* self, const RunContext& context) {
  auto* line = static_cast<ProgressLine*>(self);
  auto now = std::chrono::steady_clock::now();
  bool last_step = context.current_step() + 1 >= context.steps();
  if (line->drawn_ && !last_step && now - line->last_draw_ < kRedrawInterval) return;
  line->last_draw_ = now;
  line->drawn_ = true;
  auto stats = line->allocator_.stats();
  std::fprintf(stderr, "\r[%s] step %lld/%d  allocated %s  reserved %s\033[K", line->label_.c_str(),
               static_cast<long long>(context.current_step() + 1), context.steps(),
               format_size(static_cast<std::size_t>(stats.allocated.current)).c_str(),
               format_size(static_cast<std::size_t>(stats.reserved.current)).c_str());
  std::fflush(stderr);
}

}  // namespace oomlab
