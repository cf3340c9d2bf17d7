#include "scenarios/weights7b/checkpoint_cache.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "harness/memory/size.hpp"
#include "harness/runner/temp_directory.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"
#include "scenarios/weights7b/checkpoint_match.hpp"
#include "scenarios/weights7b/weights7b_knobs.hpp"

namespace oomlab::scenarios::weights7b {
namespace {

const char* env(const char* name) {
  const char* value = std::getenv(name);
  return value && *value ? value : nullptr;
}

// Whether `path` holds a complete checkpoint made from (preset, dtype, seed).
bool usable_cached_file(const std::string& path, const std::string& preset, DType dtype) {
  std::error_code ignored;
  if (!std::filesystem::is_regular_file(path, ignored)) return false;
  try {
    const safetensors::Header header = safetensors::read_header(path);
    const auto field = [&](const char* key) {
      auto it = header.metadata.find(key);
      return it == header.metadata.end() ? std::string() : it->second;
    };
    return field("oomlab_preset") == preset && field("oomlab_dtype") == dtype_name(dtype) &&
           field("oomlab_seed") == std::to_string(kCheckpointSeed);
  } catch (const safetensors::SafetensorsError&) {
    return false;  // a damaged cache file is regenerated, not loaded
  }
}

// A 70B f32 checkpoint is 276 GB: say so before writing, rather than fill the disk and fail.
void require_room(const std::filesystem::path& dir, std::uint64_t bytes, DType dtype) {
  std::error_code error;
  const std::filesystem::space_info space = std::filesystem::space(dir, error);
  if (error || space.available >= bytes + bytes / 64) return;  // a little room for the header
  throw std::runtime_error("generating the checkpoint needs " + format_size(bytes) + " in " + dir.string() +
                           ", which has " + format_size(space.available) + " free: point " +
                           given_checkpoint_variable(dtype) +
                           " at a checkpoint, or OOMLAB_WEIGHTS7B_DIR at a larger disk");
}

}  // namespace

const char* given_checkpoint_variable(DType dtype) {
  switch (dtype) {
    case DType::bf16: return "OOMLAB_WEIGHTS7B_BF16";
    case DType::f16: return "OOMLAB_WEIGHTS7B_F16";
    default: return "OOMLAB_WEIGHTS7B_F32";
  }
}

const char* given_checkpoint_path(DType dtype) { return env(given_checkpoint_variable(dtype)); }

std::string cached_checkpoint_path(const std::string& preset, DType dtype) {
  // The default cache is this user's own folder under the temp root: a shared, guessable one
  // (another user's, or a link planted there) would have root read or write through it.
  const std::filesystem::path dir =
      env("OOMLAB_WEIGHTS7B_DIR")
          ? std::filesystem::path(env("OOMLAB_WEIGHTS7B_DIR"))
          : std::filesystem::path(temp_root()) / ("oomlab-weights7b-" + std::to_string(::geteuid()));
  return (dir / (preset + "-" + dtype_name(dtype) + "-seed" + std::to_string(kCheckpointSeed) +
                 ".safetensors")).string();
}

CheckpointSource checkpoint_for(DeviceKind kind, const WantedCheckpoint& wanted,
                                const std::function<void(const std::string&)>& note) {
  const safetensors::LlamaShape shape = llama_shape_of(wanted.preset);
  if (const char* given = given_checkpoint_path(wanted.dtype)) {
    const CheckpointSource source =
        kind == DeviceKind::dry ? CheckpointSource::header_only(given) : CheckpointSource::open(given);
    require_llama_checkpoint(source.label(), source.tensors(), wanted);
    const CheckpointSource weights =
        source.without([&](const TensorEntry& entry) { return safetensors::is_llama_rotary_table(entry, shape); });
    if (weights.tensors().size() < source.tensors().size()) {
      note("skipping " + std::to_string(source.tensors().size() - weights.tensors().size()) +
           " rotary tables (rotary_emb.inv_freq: recomputed by every loader, not weights)");
    }
    return weights;
  }
  if (kind == DeviceKind::dry) {
    return CheckpointSource::plan("plan " + shape.name + " " + dtype_name(wanted.dtype),
                                  safetensors::llama_layout(shape, wanted.dtype));
  }
  const std::string path = cached_checkpoint_path(shape.name, wanted.dtype);
  if (!usable_cached_file(path, shape.name, wanted.dtype)) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (env("OOMLAB_WEIGHTS7B_DIR")) {
      std::filesystem::create_directories(dir);  // the user's own choice of folder
    } else {
      ensure_private_folder(dir.string());
    }
    const std::uint64_t bytes = static_cast<std::uint64_t>(shape.parameters()) * dtype_size(wanted.dtype);
    require_room(dir, bytes, wanted.dtype);
    note("generating " + path + " (" + format_size(bytes) + ")");
    const auto start = std::chrono::steady_clock::now();
    safetensors::generate_llama_checkpoint(path, shape, wanted.dtype, kCheckpointSeed);
    note("generated in " +
         std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + " s");
  }
  return CheckpointSource::open(path);
}

}  // namespace oomlab::scenarios::weights7b
