// Where an allocation is made, as the program's phases name it: "forward › block 9 › attention
// scores", "optimizer step", "load weights › layer 17" — the stack a PyTorch user reads in an OOM
// traceback. Code opens a SiteScope around a phase; the allocator takes the current path when a
// request fails, so the OOM message says where. Thread-local, like the tag.
#pragma once
#include <string>

namespace oomlab::memory {

// The open sites on this thread, outermost first, joined by " › "; "" outside any.
std::string current_site();

// The stack itself, for scopes that are not one C++ block (a phase that moves on: ProfilePhases).
void push_site(std::string name);
void pop_site();

// Names a phase for its lifetime; scopes nest.
class SiteScope {
 public:
  explicit SiteScope(std::string name);
  ~SiteScope();
  SiteScope(const SiteScope&) = delete;
  SiteScope& operator=(const SiteScope&) = delete;
};

}  // namespace oomlab::memory
