// The `fuser -v /dev/nvidia*` of the checklist, without fuser: which processes have a file under
// a path prefix open. Works without a GPU (it then finds none) and without NVML.
#pragma once
#include <string>

#include "harness/doctor/machine_facts.hpp"

namespace oomlab::doctor {

constexpr const char* kNvidiaDevicePrefix = "/dev/nvidia";

// Reads <proc_root>/<pid>/fd of every process except `self_pid` and lists those with a file
// whose path starts with `prefix` open. Processes whose fds cannot be read (other users, without
// root) are counted in `unreadable`, never reported as holding nothing. The prefix and proc root
// are parameters so a test can scan for a file of its own.
DeviceFileScan scan_device_files(const std::string& prefix, int self_pid, const std::string& proc_root = "/proc");

}  // namespace oomlab::doctor
