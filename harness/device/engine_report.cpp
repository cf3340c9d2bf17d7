#include "harness/device/engine_report.hpp"

namespace oomlab {
namespace {
EngineReporter registered_reporter = nullptr;
}  // namespace

void register_engine_reporter(EngineReporter reporter) { registered_reporter = reporter; }

std::map<std::string, std::string> reported_engines() {
  return registered_reporter ? registered_reporter() : std::map<std::string, std::string>{};
}

}  // namespace oomlab
