// NVML facts in a build without NVML: every NVML check is then skipped, never failed.
#include "harness/doctor/nvml_facts.hpp"

namespace oomlab::doctor::detail {

NvmlFacts read_nvml_facts(const std::string&, int, std::string&) {
  NvmlFacts facts;
  facts.error = "built without NVML";
  return facts;
}

}  // namespace oomlab::doctor::detail
