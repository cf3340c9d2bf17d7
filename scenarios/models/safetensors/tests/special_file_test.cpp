// Checkpoints that are not regular files: a FIFO blocked open() forever (until a writer came),
// a device node may act on open. Both readers must refuse them before opening, in one line.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <future>
#include <string>

#include "scenarios/models/safetensors/safetensors_reader.hpp"
#include "scenarios/models/safetensors/tests/file_image.hpp"
#include "scenarios/models/safetensors/tests/temp_dir.hpp"

namespace oomlab::safetensors {
namespace {

using testing::TempDir;

// The error `read` throws for `path`, or "(no error)". Should `read` block on a FIFO, the test
// fails and a writer opens the FIFO to release it (so a regression fails instead of hanging).
std::string error_without_blocking(const std::string& path, const std::function<void()>& read) {
  auto attempt = std::async(std::launch::async, [&]() -> std::string {
    try {
      read();
    } catch (const SafetensorsError& error) {
      return error.what();
    }
    return "(no error)";
  });
  if (attempt.wait_for(std::chrono::seconds(5)) == std::future_status::timeout) {
    ADD_FAILURE() << path << ": the reader blocked opening it";
    const int writer = ::open(path.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);  // the reader's open returns, then it reads EOF
  }
  return attempt.get();
}

std::string mapped_error(const std::string& path) {
  return error_without_blocking(path, [&] { SafetensorsFile file(path); });
}
std::string header_error(const std::string& path) {
  return error_without_blocking(path, [&] { read_header(path); });
}

TEST(SpecialFiles, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("model.safetensors");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& message : {mapped_error(fifo), header_error(fifo)}) {
    EXPECT_NE(message.find(fifo + ": a FIFO, not a regular file"), std::string::npos) << message;
  }
}

TEST(SpecialFiles, ADirectoryIsRefused) {
  TempDir dir;
  for (const std::string& message : {mapped_error(dir.path().string()), header_error(dir.path().string())}) {
    EXPECT_NE(message.find(": a directory, not a regular file"), std::string::npos) << message;
  }
}

TEST(SpecialFiles, ACharacterDeviceIsRefused) {
  for (const std::string& message : {mapped_error("/dev/null"), header_error("/dev/zero")}) {
    EXPECT_NE(message.find(": a character device, not a regular file"), std::string::npos) << message;
  }
}

TEST(SpecialFiles, ASymlinkToARegularFileIsRead) {
  TempDir dir;
  const std::string target = dir.file("real.safetensors");
  testing::write_file_image(target, "{}");
  const std::string link = dir.file("link.safetensors");
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(mapped_error(link), "(no error)");
  EXPECT_EQ(header_error(link), "(no error)");
}

}  // namespace
}  // namespace oomlab::safetensors
