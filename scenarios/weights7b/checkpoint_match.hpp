// Whether a checkpoint the user named is the model a weights7b run loads. A file with other
// tensors (a 2x2 test file, another preset, the other dtype) must never be loaded in its place:
// the run would report the numbers of another plan as the story's.
#pragma once
#include <string>
#include <vector>

#include "kernels/core/dtype.hpp"
#include "scenarios/models/safetensors/safetensors_format.hpp"

namespace oomlab::scenarios::weights7b {

// What a run loads: a preset's layout in the file's dtype. `chosen_by` says what picked the
// preset, for messages: "--set model=llama-13b", "--scale full".
struct WantedCheckpoint {
  std::string preset;
  DType dtype = DType::f32;
  std::string chosen_by = "this run";
};

// Throws std::invalid_argument, one line starting with `label`, unless `tensors` are exactly the
// tensors of the wanted preset's layout in its dtype (same names, dtypes and shapes; any order),
// leaving aside the rotary tables older Hugging Face files carry (is_llama_rotary_table). When
// the file is another known preset or dtype it says which and how to load it ("the file is a
// llama-7b f32 checkpoint; --set model=llama-13b loads llama-13b (--set model=llama-7b loads this
// file)"); otherwise it names the first difference (a tensor the layout lacks, one of another
// shape, one missing).
void require_llama_checkpoint(const std::string& label, const std::vector<safetensors::TensorEntry>& tensors,
                              const WantedCheckpoint& wanted);

}  // namespace oomlab::scenarios::weights7b
