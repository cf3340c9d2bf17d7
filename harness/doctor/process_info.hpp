// What /proc says about a process, in the terms a user recognises: name, owner, state.
#pragma once
#include <string>

#include "harness/doctor/machine_facts.hpp"

namespace oomlab::doctor {

// Fills process.name (comm), .user and .state from <proc_root>/<pid>. Returns false, leaving
// them empty, when the pid is not there (gone, or in another PID namespace).
bool read_process_info(const std::string& proc_root, int pid, GpuProcess& process);

}  // namespace oomlab::doctor
