// The /proc scan, pointed at a fake device file that a child of this test holds open.
#include "harness/doctor/device_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "harness/doctor/process_info.hpp"

namespace oomlab::doctor {
namespace {

class TempFolder {
 public:
  TempFolder() {
    char pattern[] = "/tmp/oomlab-doctor-test-XXXXXX";
    if (::mkdtemp(pattern) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempFolder() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A child named `name` that opens `file` and keeps it open until destroyed.
class FileHolder {
 public:
  FileHolder(const std::string& file, const char* name) {
    int ready[2], release[2];
    if (::pipe(ready) != 0 || ::pipe(release) != 0) throw std::runtime_error("pipe failed");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_NAME, name);
      ::close(ready[0]);
      ::close(release[1]);
      int fd = ::open(file.c_str(), O_RDONLY);
      char byte = fd >= 0 ? 'y' : 'n';
      (void)::write(ready[1], &byte, 1);
      (void)::read(release[0], &byte, 1);  // returns when the parent closes its end
      ::_exit(0);
    }
    ::close(ready[1]);
    ::close(release[0]);
    release_fd_ = release[1];
    char byte = 0;
    opened_ = ::read(ready[0], &byte, 1) == 1 && byte == 'y';
    ::close(ready[0]);
  }
  ~FileHolder() {
    ::close(release_fd_);
    ::waitpid(pid_, nullptr, 0);
  }
  int pid() const { return pid_; }
  bool opened() const { return opened_; }

 private:
  int pid_ = -1;
  int release_fd_ = -1;
  bool opened_ = false;
};

TEST(DeviceFileScan, FindsAnotherProcessHoldingAFileUnderThePrefix) {
  TempFolder folder;
  const std::string device = folder.path() + "/fake-nvidia0";
  std::ofstream(device) << "";
  FileHolder holder(device, "oomlab-holder");
  ASSERT_TRUE(holder.opened());

  DeviceFileScan scan = scan_device_files(folder.path() + "/fake-nvidia", static_cast<int>(::getpid()));
  EXPECT_TRUE(scan.proc_readable);
  EXPECT_EQ(scan.device_files, 1u);
  ASSERT_EQ(scan.holders.size(), 1u);
  EXPECT_EQ(scan.holders[0].pid, holder.pid());
  EXPECT_EQ(scan.holders[0].name, "oomlab-holder");
  EXPECT_FALSE(scan.holders[0].user.empty());
  EXPECT_FALSE(scan.holders[0].bytes.has_value()) << "/proc cannot know GPU bytes";
}

TEST(DeviceFileScan, LeavesOutTheScanningProcess) {
  TempFolder folder;
  const std::string device = folder.path() + "/fake-nvidia0";
  std::ofstream(device) << "";
  int fd = ::open(device.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  DeviceFileScan scan = scan_device_files(folder.path() + "/fake-nvidia", static_cast<int>(::getpid()));
  ::close(fd);
  EXPECT_TRUE(scan.holders.empty());
}

TEST(DeviceFileScan, NoDeviceFilesNoHolders) {
  TempFolder folder;
  DeviceFileScan scan = scan_device_files(folder.path() + "/fake-nvidia", static_cast<int>(::getpid()));
  EXPECT_EQ(scan.device_files, 0u);
  EXPECT_TRUE(scan.holders.empty());
  EXPECT_EQ(scan.prefix, folder.path() + "/fake-nvidia");
}

TEST(DeviceFileScan, MissingProcIsReportedNotEmpty) {
  DeviceFileScan scan = scan_device_files("/dev/nvidia", 1, "/nonexistent-proc");
  EXPECT_FALSE(scan.proc_readable);
}

TEST(ProcessInfo, ReadsNameStateAndUserOfThisProcess) {
  ::prctl(PR_SET_NAME, "doctor-self");
  GpuProcess self;
  ASSERT_TRUE(read_process_info("/proc", static_cast<int>(::getpid()), self));
  EXPECT_EQ(self.name, "doctor-self");
  EXPECT_EQ(self.state, 'R');
  EXPECT_FALSE(self.user.empty());
  GpuProcess gone;
  EXPECT_FALSE(read_process_info("/nonexistent-proc", 1, gone));
}

}  // namespace
}  // namespace oomlab::doctor
