// Build facts for the record: commit, version, time. OOMLAB_GIT_COMMIT_AT_CONFIGURE and
// OOMLAB_VERSION_STRING come from harness/runner/CMakeLists.txt for this file only.
#include <cstdlib>
#include <ctime>
#include <string>

#include "harness/runner/run_record.hpp"

#ifndef OOMLAB_GIT_COMMIT_AT_CONFIGURE
#define OOMLAB_GIT_COMMIT_AT_CONFIGURE "unknown"
#endif
#ifndef OOMLAB_VERSION_STRING
#define OOMLAB_VERSION_STRING "unknown"
#endif

namespace oomlab {

std::string git_commit() {
  // The environment wins: a checkout rebuilt without reconfiguring still says the truth when
  // the caller (ci/) knows better.
  const char* from_env = std::getenv("OOMLAB_GIT_COMMIT");
  if (from_env && *from_env) return from_env;
  return OOMLAB_GIT_COMMIT_AT_CONFIGURE;
}

std::string oomlab_version() { return OOMLAB_VERSION_STRING; }

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace oomlab
