// All checks in the order the table prints them.
#include "harness/doctor/checks.hpp"

namespace oomlab::doctor {

std::vector<Check> run_checks(const MachineFacts& facts) {
  return {check_gpu(facts),         check_driver(facts),     check_runtime(facts),
          check_architecture(facts), check_memory(facts),     check_processes(facts),
          check_context(facts),     check_mig(facts),        check_ecc(facts),
          check_persistence(facts), check_oomlab_alloc_conf(facts), check_pytorch_alloc_conf(facts)};
}

}  // namespace oomlab::doctor
