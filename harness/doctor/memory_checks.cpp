// How much memory there is, who else holds some, and what one process's context costs.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::doctor {
namespace {

constexpr const char* kNoGpu = "no GPU to measure";
constexpr std::size_t kListedProcesses = 4;  // one line: the rest are counted, not named

// total - free - one context: what other processes hold, seen from cudaMemGetInfo alone.
std::optional<std::size_t> held_by_others(const GpuFacts& gpu) {
  if (!gpu.context_bytes) return std::nullopt;
  const std::size_t used = gpu.total_bytes - std::min(gpu.free_bytes, gpu.total_bytes);
  return used > *gpu.context_bytes ? used - *gpu.context_bytes : 0;
}

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

const memory::GpuProfile* profile_for_device(const GpuFacts& gpu) {
  const memory::GpuProfile* best = nullptr;
  std::size_t best_distance = gpu.total_bytes / 10 + 1;
  for (const memory::GpuProfile& profile : memory::gpu_profiles()) {
    // Descriptions are "<device name>, <memory>" or the device name alone.
    if (profile.description.substr(0, profile.description.find(',')) != gpu.name) continue;
    std::size_t distance = profile.card_bytes > gpu.total_bytes ? profile.card_bytes - gpu.total_bytes
                                                                 : gpu.total_bytes - profile.card_bytes;
    if (distance < best_distance) {
      best = &profile;
      best_distance = distance;
    }
  }
  return best;
}

Check check_memory(const MachineFacts& facts) {
  const GpuFacts& gpu = facts.gpu;
  if (!gpu.available) return {"memory", Verdict::skip, kNoGpu};
  std::string detail = format_size(gpu.total_bytes) + " total, " + format_size(gpu.free_bytes) +
                       " free with this process's context";
  if (auto others = held_by_others(gpu)) detail += ", " + format_size(*others) + " held by others";
  const memory::GpuProfile* profile = profile_for_device(gpu);
  if (profile && gpu.free_bytes < profile->budget()) {
    return {"memory", Verdict::warn,
            detail + "; less than the " + profile->name + " budget (" + format_size(profile->budget()) +
                "): what fits that budget elsewhere may not fit here (see processes)"};
  }
  if (profile) detail += "; fits the " + profile->name + " budget (" + format_size(profile->budget()) + ")";
  return {"memory", Verdict::ok, detail};
}

Check check_processes(const MachineFacts& facts) {
  const DeviceFileScan& scan = facts.device_files;
  const std::vector<GpuProcess> holders = memory_holders(facts);
  const std::string openers = openers_note(device_openers_only(facts), scan.prefix);
  if (holders.empty()) {
    if (facts.nvml.processes_known) return {"processes", Verdict::ok, "none besides this one holds GPU memory (NVML)" + openers};
    if (!scan.proc_readable) return {"processes", Verdict::skip, "unknown: /proc cannot be read and NVML is not available"};
    if (scan.device_files == 0) return {"processes", Verdict::ok, "none: no " + scan.prefix + "* files on this machine"};
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

Check check_context(const MachineFacts& facts) {
  const GpuFacts& gpu = facts.gpu;
  if (!gpu.available) return {"context", Verdict::skip, kNoGpu};
  if (!gpu.context_bytes) return {"context", Verdict::skip, "not measured: " + gpu.context_error};
  const std::size_t measured = *gpu.context_bytes;
  const std::string head = format_size(measured) + " per process (measured in a second process)";
  const memory::GpuProfile* profile = profile_for_device(gpu);
  if (!profile) {
    return {"context", Verdict::ok,
            head + "; oomlab has no profile for this card: its budget would be " +
                format_size(gpu.total_bytes > measured ? gpu.total_bytes - measured : 0)};
  }
  const std::int64_t difference = static_cast<std::int64_t>(measured) - static_cast<std::int64_t>(profile->context_bytes);
  const std::size_t tolerance = std::max<std::size_t>(64 * MiB, profile->context_bytes / 8);
  const std::string assumed = "; profile " + profile->name + " assumes " + format_size(profile->context_bytes);
  if (static_cast<std::size_t>(std::llabs(difference)) <= tolerance) return {"context", Verdict::ok, head + assumed};
  return {"context", Verdict::warn,
          head + assumed + ": a run here has " + format_size(static_cast<std::size_t>(std::llabs(difference))) +
              (difference > 0 ? " less" : " more") + " than that profile's budget"};
}

}  // namespace oomlab::doctor
