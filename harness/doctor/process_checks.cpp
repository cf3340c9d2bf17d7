// Who else holds the GPU: NVML's process list, or the /proc scan's device-file holders.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "harness/doctor/checks.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::doctor {
namespace {

constexpr std::size_t kListedProcesses = 4;  // one line: the rest are counted, not named

const char* state_note(char state) {
  switch (state) {
    case 'T': return "stopped";  // a Ctrl-Z'd job keeps its GPU memory
    case 't': return "traced";
    case 'Z': return "zombie";
    case 'D': return "in uninterruptible sleep";
  }
  return nullptr;
}

// "pid 4242 'python3' (alice, stopped) 3.00GiB".
std::string describe(const GpuProcess& process) {
  std::string text = "pid " + std::to_string(process.pid);
  text += process.name.empty() ? " (not visible here: another container?)" : " " + quote_user_text(process.name, 20);
  std::string notes = process.user;  // a login name or uid (process_info.cpp keeps it printable)
  if (const char* note = state_note(process.state)) notes += (notes.empty() ? "" : ", ") + std::string(note);
  if (process.graphics_only) notes += (notes.empty() ? "" : ", ") + std::string("graphics");
  if (!notes.empty()) text += " (" + notes + ")";
  if (process.bytes) text += " " + format_size(*process.bytes);
  return text;
}

// Processes that hold GPU memory: NVML's list when it has one (every user's, with bytes), else
// the /proc scan's holders.
std::vector<GpuProcess> memory_holders(const MachineFacts& facts) {
  return facts.nvml.processes_known ? facts.nvml.processes : facts.device_files.holders;
}

// With NVML: /proc holders it does not list. In the same PID namespace these have the device open
// and hold no memory (nvidia-smi, a monitor); in a container NVML reports host pids, and these
// are the same processes under this namespace's pids. Either way they are named, not counted.
std::vector<GpuProcess> device_openers_only(const MachineFacts& facts) {
  std::vector<GpuProcess> extra;
  if (!facts.nvml.processes_known) return extra;
  for (const GpuProcess& holder : facts.device_files.holders) {
    const auto& listed = facts.nvml.processes;
    if (std::none_of(listed.begin(), listed.end(), [&](const GpuProcess& p) { return p.pid == holder.pid; })) {
      extra.push_back(holder);
    }
  }
  return extra;
}

// "pid 1 'a' 3.00GiB, pid 2 'b' and 6 more".
std::string describe_all(const std::vector<GpuProcess>& processes) {
  std::string listed;
  for (std::size_t i = 0; i < processes.size() && i < kListedProcesses; ++i) {
    listed += (i == 0 ? "" : ", ") + describe(processes[i]);
  }
  if (processes.size() > kListedProcesses) {
    listed += " and " + std::to_string(processes.size() - kListedProcesses) + " more";
  }
  return listed;
}

std::string openers_note(const std::vector<GpuProcess>& openers, const std::string& prefix) {
  if (openers.empty()) return "";
  return "; with " + prefix + "* open but no GPU memory in NVML's list: " + describe_all(openers);
}

std::string unreadable_note(const DeviceFileScan& scan) {
  if (scan.unreadable == 0) return "";
  return "; " + std::to_string(scan.unreadable) +
         " processes of other users could not be inspected (sudo fuser -v " + scan.prefix + "*)";
}

// Bytes held by processes that compute (graphics-only clients, a desktop's display server, do
// not make a run fail): NVML's sum when it gave every one, else total - free - context.
std::optional<std::size_t> compute_bytes_held(const std::vector<GpuProcess>& processes, const GpuFacts& gpu) {
  std::size_t sum = 0;
  for (const GpuProcess& p : processes) {
    if (p.graphics_only) continue;
    if (!p.bytes) return held_by_others(gpu);
    sum += *p.bytes;
  }
  return sum;
}

}  // namespace

Check check_processes(const MachineFacts& facts) {
  const DeviceFileScan& scan = facts.device_files;
  const std::vector<GpuProcess> holders = memory_holders(facts);
  const std::string openers = openers_note(device_openers_only(facts), scan.prefix);
  if (holders.empty()) {
    if (facts.nvml.processes_known)
      return {"processes", Verdict::ok, "none besides this one holds GPU memory (NVML)" + openers};
    if (!scan.proc_readable)
      return {"processes", Verdict::skip, "unknown: /proc cannot be read and NVML is not available"};
    if (scan.device_files == 0)
      return {"processes", Verdict::ok, "none: no " + scan.prefix + "* files on this machine"};
    if (scan.unreadable > 0) {
      return {"processes", Verdict::warn, "none found with " + scan.prefix + "* open" + unreadable_note(scan)};
    }
    return {"processes", Verdict::ok, "none besides this one has " + scan.prefix + "* open"};
  }

  std::string detail = std::to_string(holders.size()) + (holders.size() == 1 ? " other process" : " other processes") +
                       " on the GPU: " + describe_all(holders);
  const std::optional<std::size_t> held = compute_bytes_held(holders, facts.gpu);
  const std::size_t total = facts.gpu.available ? facts.gpu.total_bytes : 0;
  if (held && total > 0) {
    detail += "; together " + format_size(*held) + " (" +
              std::to_string(static_cast<int>(100.0 * static_cast<double>(*held) / static_cast<double>(total) + 0.5)) +
              "% of the card)";
  }
  detail += openers + unreadable_note(scan);
  if (held && total > 0 && static_cast<double>(*held) >= kHeldShareThatFails * static_cast<double>(total)) {
    return {"processes", Verdict::fail,
            detail + ": every job on this GPU gets that much less; end the ones you do not need (kill PID; "
                     "a stopped job: fg, then quit it) or plan for a smaller budget"};
  }
  return {"processes", Verdict::warn, detail};
}

}  // namespace oomlab::doctor
