// Run records and files for the report tests: a plausible record to mutate, and a scratch folder.
#pragma once
#include <string>

#include "harness/runner/run_record.hpp"

namespace oomlab::report::testing {

// srgan_leak/broken on dry/full: an OOM at step 14 diagnosed as a leak, with per-tag peaks and
// leak metrics, as the dry/full baseline has it.
RunRecord leak_record();
// gpt_train/bf16 on cuda/small: fits, 1000 tokens/s over steps of 0.1 s with 1% noise.
RunRecord training_record();

// A fresh folder under $TMPDIR, removed with its contents at destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path(const std::string& name = "") const { return name.empty() ? dir_ : dir_ + "/" + name; }
  // Writes `text` to path(name), creating folders on the way; returns the path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::string dir_;
};

}  // namespace oomlab::report::testing
