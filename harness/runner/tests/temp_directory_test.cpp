// Private temporary folders: unguessable and 0700, so a planted folder or link under a shared
// /tmp is never written through (report's scratch folder was $TMPDIR/oomlab-report-<pid>, taken
// as it was when another user had made it first); lasting caches are refused when unsafe.
#include "harness/runner/temp_directory.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace oomlab {
namespace {

namespace fs = std::filesystem;

mode_t mode_of(const std::string& path) {
  struct stat info {};
  EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
  return info.st_mode & 07777;
}

TEST(TempDirectory, IsPrivateUnguessableAndRemovedWithItsFiles) {
  std::string kept;
  {
    TempDirectory first("oomlab-test-"), second("oomlab-test-");
    EXPECT_NE(first.path(), second.path());
    EXPECT_EQ(mode_of(first.path()), 0700u);
    EXPECT_EQ(first.path().rfind(temp_root() + "/oomlab-test-" + std::to_string(::getpid()) + "-", 0), 0u)
        << first.path();
    std::FILE* file = std::fopen((first.path() + "/trace.json").c_str(), "w");
    ASSERT_NE(file, nullptr);
    std::fclose(file);
    kept = first.path();
  }
  EXPECT_FALSE(fs::exists(kept));
}

// The old scheme's name, made in advance by someone else and holding a planted link: never used.
TEST(TempDirectory, APlantedFolderOfTheOldNameIsNotUsed) {
  const std::string planted = temp_root() + "/oomlab-test-" + std::to_string(::getpid());
  fs::create_directories(planted);
  fs::create_symlink("/etc/hostname", planted + "/victim");
  TempDirectory made("oomlab-test-");
  EXPECT_NE(made.path(), planted);
  EXPECT_FALSE(fs::exists(made.path() + "/victim"));
  fs::remove_all(planted);
}

TEST(TempDirectory, ATmpdirThatCannotHoldOneIsSaidNotThrownLater) {
  const char* old = std::getenv("TMPDIR");
  const std::string saved = old ? old : "";
  ::setenv("TMPDIR", "/nonexistent/oomlab", 1);
  EXPECT_NE(why_no_temp_directory().find("TMPDIR"), std::string::npos);
  EXPECT_THROW(TempDirectory("oomlab-test-"), std::runtime_error);
  if (old) ::setenv("TMPDIR", saved.c_str(), 1); else ::unsetenv("TMPDIR");
  EXPECT_EQ(why_no_temp_directory(), "");
}

TEST(EnsurePrivateFolder, MakesAMissingOneForThisUserOnly) {
  TempDirectory parent("oomlab-test-");
  const std::string cache = parent.path() + "/cache";
  ensure_private_folder(cache);
  EXPECT_EQ(mode_of(cache), 0700u);
  ensure_private_folder(cache);  // and takes it again
  fs::remove(cache);
}

TEST(EnsurePrivateFolder, RefusesALinkAFolderOthersWriteAndAnotherUsersFolder) {
  TempDirectory parent("oomlab-test-");
  const std::string link = parent.path() + "/link", open = parent.path() + "/open", theirs = parent.path() + "/theirs";
  fs::create_symlink(parent.path(), link);
  EXPECT_THROW(ensure_private_folder(link), std::runtime_error);
  ASSERT_EQ(::mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  EXPECT_THROW(ensure_private_folder(open), std::runtime_error);
  if (::geteuid() == 0) {  // only root can give a folder away
    ASSERT_EQ(::mkdir(theirs.c_str(), 0700), 0);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    try {
      ensure_private_folder(theirs);
      ADD_FAILURE() << "another user's folder was taken";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("another user"), std::string::npos) << e.what();
    }
  }
  fs::remove(link);
  fs::remove(open);
  fs::remove(theirs);
}

}  // namespace
}  // namespace oomlab
