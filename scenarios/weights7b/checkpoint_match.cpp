#include "scenarios/weights7b/checkpoint_match.hpp"

#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/checkpoint_cache.hpp"
#include "scenarios/weights7b/weights7b.hpp"
#include "scenarios/weights7b/weights7b_knobs.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

using safetensors::LlamaShape;
using safetensors::TensorEntry;

constexpr DType kFileDtypes[] = {DType::f32, DType::bf16, DType::f16};

std::string describe(const TensorEntry& entry) {
  return std::string(dtype_name(entry.dtype)) + " " + safetensors::shape_for_message(entry.shape);
}

std::string layout_name(const std::string& preset, DType dtype) { return preset + " " + dtype_name(dtype); }

// "an f32", "a bf16", "an f16".
std::string a_dtype(DType dtype) { return (dtype == DType::bf16 ? "a " : "an ") + std::string(dtype_name(dtype)); }

// The first way `tensors` differ from `shape`'s layout in `dtype` (in the file's order, then the
// layout's), or "" when they hold the same tensors. Rotary tables are not weights: skipped.
std::string first_difference(const std::vector<TensorEntry>& tensors, const LlamaShape& shape, DType dtype) {
  const std::vector<TensorEntry> layout = safetensors::llama_layout(shape, dtype);
  const std::string name = layout_name(shape.name, dtype);
  std::map<std::string, const TensorEntry*> expected;
  for (const TensorEntry& entry : layout) expected.emplace(entry.name, &entry);
  std::set<std::string> present;
  for (const TensorEntry& entry : tensors) {
    if (safetensors::is_llama_rotary_table(entry, shape)) continue;
    const auto it = expected.find(entry.name);
    const std::string tensor = "tensor " + quote_user_text(entry.name);
    if (it == expected.end()) return tensor + " " + describe(entry) + " is not in the " + name + " layout";
    if (entry.dtype != it->second->dtype || entry.shape != it->second->shape) {
      return tensor + " is " + describe(entry) + "; the " + name + " layout has " + describe(*it->second);
    }
    present.insert(entry.name);
  }
  for (const TensorEntry& entry : layout) {
    if (!present.count(entry.name)) {
      return "tensor " + quote_user_text(entry.name) + " (" + describe(entry) + ") of the " + name +
             " layout is missing";
    }
  }
  return "";
}

struct KnownLayout {
  std::string preset;
  DType dtype;
};

// The preset and dtype whose layout `tensors` are, when they are one oomlab knows.
std::optional<KnownLayout> identify(const std::vector<TensorEntry>& tensors) {
  for (const LlamaShape& shape : safetensors::llama_presets()) {
    for (DType dtype : kFileDtypes) {
      if (first_difference(tensors, shape, dtype).empty()) return KnownLayout{shape.name, dtype};
    }
  }
  return std::nullopt;
}

// "--scale tiny or " when a scale loads `preset` by default and the run's preset came from its
// scale (a --set model= wins over any scale).
std::string scale_alternative(const std::string& preset, const std::string& chosen_by) {
  if (chosen_by.rfind("--scale", 0) != 0) return "";
  for (Scale scale : {Scale::tiny, Scale::small, Scale::full}) {
    if (weights7b_plan(scale).preset == preset) return std::string("--scale ") + scale_name(scale) + " or ";
  }
  return "";
}

}  // namespace

void require_llama_checkpoint(const std::string& label, const std::vector<TensorEntry>& tensors,
                              const WantedCheckpoint& wanted) {
  const std::string difference = first_difference(tensors, llama_shape_of(wanted.preset), wanted.dtype);
  if (difference.empty()) return;
  // The right kind of file for another run: say which and how to load it, rather than its first
  // odd tensor. A dtype is a variable of its own, so that comes first.
  if (const std::optional<KnownLayout> held = identify(tensors)) {
    const std::string is = label + ": the file is a " + layout_name(held->preset, held->dtype) + " checkpoint; ";
    if (held->dtype != wanted.dtype) {
      throw std::invalid_argument(is + given_checkpoint_variable(wanted.dtype) + " is read as " +
                                  a_dtype(wanted.dtype) + " file (" + a_dtype(held->dtype) + " one goes in " +
                                  given_checkpoint_variable(held->dtype) +
                                  ", read with --set dtype=" + dtype_name(held->dtype) + ")");
    }
    throw std::invalid_argument(is + wanted.chosen_by + " loads " + wanted.preset + " (" +
                                scale_alternative(held->preset, wanted.chosen_by) + "--set model=" + held->preset +
                                " loads this file)");
  }
  throw std::invalid_argument(label + ": " + difference);
}

}  // namespace oomlab::scenarios::weights7b
