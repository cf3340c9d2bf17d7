// Private temporary folders: the one way oomlab makes one. mkdtemp's unguessable name and mode
// 0700, so another local user can neither pre-create the folder nor plant a link inside it (a
// root-run oomlab would otherwise write through it); removed, with the plain files inside, when
// the object goes (an interrupt unwinding through it too). Each folder is named
// "<prefix><pid>-XXXXXX", so a later run removes the folders of oomlab processes killed too hard
// to clean up (kill -9): only this user's folders whose process is gone.
#pragma once
#include <string>

namespace oomlab {

class TempDirectory {
 public:
  // Under $TMPDIR (or /tmp). Throws std::runtime_error naming the folder and the reason when it
  // cannot be made (TMPDIR names no writable folder).
  explicit TempDirectory(const std::string& prefix);
  ~TempDirectory();
  TempDirectory(const TempDirectory&) = delete;
  TempDirectory& operator=(const TempDirectory&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A lasting folder of this user's under a shared place (a cache in /tmp): made with mode 0700
// when missing; refused (std::runtime_error naming it and why) when it is a link, belongs to
// another user or others may write to it, since another local user could then plant files or
// links that a root-run oomlab reads or writes through.
void ensure_private_folder(const std::string& path);

// $TMPDIR when set and not empty, else /tmp.
std::string temp_root();

// Empty when a private folder can be made under temp_root(), else the reason; checked before a
// run starts, so a bad TMPDIR is the user's one line and not a variant's error.
std::string why_no_temp_directory();

}  // namespace oomlab
