// /proc/<pid>/{comm,stat,status} for the processes list.
#include "harness/doctor/process_info.hpp"

#include <pwd.h>
#include <sys/types.h>

#include <fstream>

namespace oomlab::doctor {
namespace {

// The first line of a /proc file, at most `max_chars` long (these files are tiny, but a process
// can put anything in its comm).
std::string first_line(const std::string& path, std::size_t max_chars) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line.substr(0, max_chars);
}

// The state letter after the ")" that ends the comm field of /proc/<pid>/stat.
char state_of(const std::string& stat_line) {
  std::size_t paren = stat_line.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat_line.size()) return '?';
  return stat_line[paren + 2];
}

// The real uid from /proc/<pid>/status as a login name, else the number; empty when unknown.
std::string user_of(const std::string& status_path) {
  std::ifstream in(status_path);
  std::string key;
  while (in >> key) {
    if (key != "Uid:") {
      in.ignore(4096, '\n');
      continue;
    }
    long uid = -1;
    if (!(in >> uid) || uid < 0) return "";
    passwd entry{};
    passwd* found = nullptr;
    char buffer[1024];
    if (::getpwuid_r(static_cast<uid_t>(uid), &entry, buffer, sizeof buffer, &found) == 0 && found &&
        found->pw_name) {
      std::string name = found->pw_name;
      bool printable = name.size() <= 32;
      for (char c : name) printable = printable && c > ' ' && c < 0x7f;
      if (printable) return name;
    }
    return "uid " + std::to_string(uid);
  }
  return "";
}

}  // namespace

bool read_process_info(const std::string& proc_root, int pid, GpuProcess& process) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  std::ifstream comm(dir + "/comm");
  if (!comm) return false;
  std::getline(comm, process.name);
  process.name = process.name.empty() ? "?" : process.name.substr(0, 64);
  process.state = state_of(first_line(dir + "/stat", 4096));
  process.user = user_of(dir + "/status");
  return true;
}

}  // namespace oomlab::doctor
