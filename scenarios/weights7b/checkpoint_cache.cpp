#include "scenarios/weights7b/checkpoint_cache.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>

#include "harness/memory/size.hpp"
#include "scenarios/models/safetensors/llama_checkpoint.hpp"

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

}  // namespace

std::string cached_checkpoint_path(const std::string& preset, DType dtype) {
  const std::filesystem::path dir =
      env("OOMLAB_WEIGHTS7B_DIR") ? std::filesystem::path(env("OOMLAB_WEIGHTS7B_DIR"))
                                  : std::filesystem::temp_directory_path() / "oomlab-weights7b";
  return (dir / (preset + "-" + dtype_name(dtype) + "-seed" + std::to_string(kCheckpointSeed) +
                 ".safetensors")).string();
}

CheckpointSource checkpoint_for(DeviceKind kind, const std::string& preset, DType dtype,
                                const std::function<void(const std::string&)>& note) {
  const char* given = env(dtype == DType::bf16 ? "OOMLAB_WEIGHTS7B_BF16" : "OOMLAB_WEIGHTS7B_F32");
  if (given) {
    return kind == DeviceKind::dry ? CheckpointSource::header_only(given) : CheckpointSource::open(given);
  }
  const safetensors::LlamaShape& shape = safetensors::llama_preset(preset);
  if (kind == DeviceKind::dry) {
    return CheckpointSource::plan("plan " + preset + " " + dtype_name(dtype),
                                  safetensors::llama_layout(shape, dtype));
  }
  const std::string path = cached_checkpoint_path(preset, dtype);
  if (!usable_cached_file(path, preset, dtype)) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    note("generating " + path + " (" +
         format_size(static_cast<std::size_t>(shape.parameters()) * dtype_size(dtype)) + ")");
    const auto start = std::chrono::steady_clock::now();
    safetensors::generate_llama_checkpoint(path, shape, dtype, kCheckpointSeed);
    note("generated in " +
         std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()) + " s");
  }
  return CheckpointSource::open(path);
}

}  // namespace oomlab::scenarios::weights7b
