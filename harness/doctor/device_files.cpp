// Scanning /proc/<pid>/fd links for device files.
#include "harness/doctor/device_files.hpp"

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "harness/doctor/process_info.hpp"

namespace oomlab::doctor {
namespace {

namespace fs = std::filesystem;

// Files that exist under `prefix` ("/dev/nvidia" -> /dev/nvidia0, /dev/nvidiactl, ...).
std::size_t count_files_under(const std::string& prefix) {
  const fs::path path(prefix);
  const std::string stem = path.filename().string();
  std::error_code ec;
  std::size_t count = 0;
  for (fs::directory_iterator it(path.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().rfind(stem, 0) == 0) ++count;
  }
  return count;
}

// The pid a /proc entry names, or -1 for the entries that are not processes.
int pid_of(const fs::path& entry) {
  const std::string name = entry.filename().string();
  if (name.empty() || name.size() > 9 || name.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoi(name);
}

enum class FdAnswer { holds, does_not_hold, unreadable };

FdAnswer holds_file_under(const fs::path& fd_dir, const std::string& prefix) {
  std::error_code ec;
  fs::directory_iterator it(fd_dir, ec), end;
  if (ec) return ec.value() == EACCES || ec.value() == EPERM ? FdAnswer::unreadable : FdAnswer::does_not_hold;
  for (; !ec && it != end; it.increment(ec)) {
    std::error_code link_ec;
    const fs::path target = fs::read_symlink(it->path(), link_ec);
    if (!link_ec && target.string().rfind(prefix, 0) == 0) return FdAnswer::holds;
  }
  return FdAnswer::does_not_hold;
}

}  // namespace

DeviceFileScan scan_device_files(const std::string& prefix, int self_pid, const std::string& proc_root) {
  DeviceFileScan scan;
  scan.prefix = prefix;
  scan.device_files = count_files_under(prefix);
  std::error_code ec;
  fs::directory_iterator it(proc_root, ec), end;
  scan.proc_readable = !ec;
  for (; !ec && it != end; it.increment(ec)) {
    const int pid = pid_of(it->path());
    if (pid <= 0 || pid == self_pid) continue;
    switch (holds_file_under(it->path() / "fd", prefix)) {
      case FdAnswer::unreadable: ++scan.unreadable; break;
      case FdAnswer::does_not_hold: break;
      case FdAnswer::holds: {
        GpuProcess holder;
        holder.pid = pid;
        if (read_process_info(proc_root, pid, holder)) scan.holders.push_back(holder);
        break;  // a process gone since the fd listing is not a holder
      }
    }
  }
  return scan;
}

}  // namespace oomlab::doctor
