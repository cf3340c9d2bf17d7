// The one file writer: complete files or none, no temp files left behind, errors name the path.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "harness/runner/atomic_file.hpp"

namespace oomlab {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/oomlab-atomic-test-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::size_t entries() const {
    return static_cast<std::size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }
  std::string dir_;
};

TEST_F(AtomicFile, WritesAndReplacesWholeFiles) {
  std::string path = dir_ + "/record.json";
  write_file_atomically(path, "first version\n");
  EXPECT_EQ(read_text_file(path), "first version\n");
  write_file_atomically(path, std::string(100000, 'x'));
  EXPECT_EQ(read_text_file(path), std::string(100000, 'x'));
  EXPECT_EQ(entries(), 1u);  // no temp file left next to it
}

TEST_F(AtomicFile, MissingDirectoryThrowsNamingThePath) {
  std::string path = dir_ + "/no/such/dir/record.json";
  try {
    write_file_atomically(path, "data");
    FAIL() << "writing into a missing directory must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(), 0u);
}

TEST_F(AtomicFile, FailedRenameRemovesTheTempFile) {
  std::string path = dir_ + "/taken";
  fs::create_directory(path);
  fs::create_directory(path + "/inside");  // a non-empty directory cannot be renamed over
  EXPECT_THROW(write_file_atomically(path, "data"), std::runtime_error);
  EXPECT_EQ(entries(), 1u);  // only the directory: the temp file is gone
  EXPECT_TRUE(fs::is_directory(path));
}

TEST_F(AtomicFile, FailedWriteKeepsTheOldContents) {
  std::string path = dir_ + "/record.json";
  write_file_atomically(path, "old contents\n");
  // A file-size limit makes write() fail part-way; in a child so the limit stays there.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::signal(SIGXFSZ, SIG_IGN);  // write() then fails with EFBIG instead of killing us
    struct rlimit limit {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      write_file_atomically(path, std::string(1 << 20, 'n'));
    } catch (const std::runtime_error& e) {
      ::_exit(std::string(e.what()).find(path) != std::string::npos ? 0 : 2);
    }
    ::_exit(1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no exception, 2: message without the path";
  EXPECT_EQ(read_text_file(path), "old contents\n");
  EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, NewFilesFollowTheUmask) {
  std::string path = dir_ + "/record.json";
  mode_t old_mask = ::umask(022);
  write_file_atomically(path, "x");
  ::umask(old_mask);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0644u);
}

TEST_F(AtomicFile, WritabilityCheck) {
  EXPECT_EQ(why_not_writable(dir_ + "/fine.json"), "");
  EXPECT_NE(why_not_writable(dir_ + "/missing/x.json"), "");
  EXPECT_NE(why_not_writable(dir_), "");  // a directory
  EXPECT_NE(why_not_writable(""), "");
  EXPECT_THROW(read_text_file(dir_ + "/missing.json"), std::runtime_error);
}

// What the user named is what gets written: the link stays a link, its target gets the bytes.
TEST_F(AtomicFile, FollowsASymlinkAndKeepsIt) {
  const std::string target = dir_ + "/real.json", link = dir_ + "/link.json";
  write_file_atomically(target, "old\n");
  fs::create_symlink("real.json", link);
  write_file_atomically(link, "new\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_text_file(target), "new\n");
  // A dangling link creates the file it names.
  const std::string dangling = dir_ + "/dangling.json";
  fs::create_symlink("created.json", dangling);
  write_file_atomically(dangling, "made\n");
  EXPECT_TRUE(fs::is_symlink(dangling));
  EXPECT_EQ(read_text_file(dir_ + "/created.json"), "made\n");
}

TEST_F(AtomicFile, ReplacedFileKeepsItsPermissions) {
  const std::string path = dir_ + "/record.json";
  write_file_atomically(path, "old\n");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  write_file_atomically(path, "new\n");
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
}

// A FIFO is written in place: its reader gets the bytes and the FIFO is still a FIFO.
TEST_F(AtomicFile, WritesIntoAFifoInPlace) {
  const std::string fifo = dir_ + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(why_not_writable(fifo), "");
  std::string received;
  std::thread reader([&] { received = read_text_file(fifo); });
  write_file_atomically(fifo, "through the pipe\n");
  reader.join();
  EXPECT_EQ(received, "through the pipe\n");
  EXPECT_EQ(fs::status(fifo).type(), fs::file_type::fifo);
  EXPECT_EQ(entries(), 1u);
}

// A character device is written in place too: /dev/null takes the bytes, /dev/full fails
// loudly, and neither becomes a regular file (as root the old rename replaced the node).
TEST_F(AtomicFile, WritesIntoACharacterDeviceInPlace) {
  EXPECT_EQ(why_not_writable("/dev/null"), "");
  write_file_atomically("/dev/null", "discarded\n");
  EXPECT_EQ(fs::status("/dev/null").type(), fs::file_type::character);
  if (fs::exists("/dev/full")) {
    try {
      write_file_atomically("/dev/full", "no room\n");
      FAIL() << "writing /dev/full must fail";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("/dev/full"), std::string::npos) << e.what();
    }
    EXPECT_EQ(fs::status("/dev/full").type(), fs::file_type::character);
  }
}

TEST_F(AtomicFile, RefusesASocketInsteadOfReplacingIt) {
  const std::string path = dir_ + "/socket";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address {};
  address.sun_family = AF_UNIX;
  std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
  EXPECT_NE(why_not_writable(path).find("socket"), std::string::npos);
  EXPECT_THROW(write_file_atomically(path, "x"), std::runtime_error);
  EXPECT_EQ(fs::status(path).type(), fs::file_type::socket);
  ::close(fd);
}

// /proc accepts access(W_OK) from root but no new file: the check tries, so it is refused early.
TEST_F(AtomicFile, AFolderThatRefusesNewFilesIsNotWritable) {
  EXPECT_NE(why_not_writable("/proc/oomlab-result.json"), "");
  const std::string locked = dir_ + "/locked";
  fs::create_directory(locked);
  ::chmod(locked.c_str(), 0500);
  if (::geteuid() != 0) {
    EXPECT_NE(why_not_writable(locked + "/r.json"), "");
  }
  ::chmod(locked.c_str(), 0700);
}

}  // namespace
}  // namespace oomlab
