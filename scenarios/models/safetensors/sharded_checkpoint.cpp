#include "scenarios/models/safetensors/sharded_checkpoint.hpp"

#include <cmath>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/safetensors/header_json.hpp"
#include "scenarios/models/safetensors/safetensors_reader.hpp"

namespace oomlab::safetensors {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string repeated_index_key(int depth, const std::string& top_level_key, const std::string& key) {
  if (depth == 1) return "key " + quote_user_text(key) + " is given twice";
  if (top_level_key == "weight_map") return "weight_map: tensor " + quote_user_text(key) + " is listed twice";
  return quote_user_text(top_level_key) + ": key " + quote_user_text(key) + " is given twice";
}

// A shard must sit beside the index: a name, not a path. '..', '/' and '\' would reach other
// directories; control characters (a NUL from "\u0000") would cut or garble the name.
bool is_plain_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '/' || c == '\\' || byte < 0x20 || byte == 0x7f) return false;
  }
  return true;
}

// A JSON value in a message: its type and (capped, escaped) text.
std::string describe_value(const json& value) {
  return std::string(value.type_name()) + " " + quote_user_text(value.dump());
}

std::uint64_t parse_total_size(const json& value, const std::string& path) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  // Some writers store it as a float: accept one that is a whole, non-negative byte count.
  if (value.is_number_float()) {
    const double size = value.get<double>();
    if (size >= 0 && size < 9.0e15 && std::floor(size) == size) return static_cast<std::uint64_t>(size);
  }
  throw SafetensorsError(path + ": metadata.total_size is " + describe_value(value) + ", not a byte count");
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::size_t tensors_in(const ShardedIndex& index, const std::string& shard) {
  std::size_t count = 0;
  for (const auto& [tensor, name] : index.weight_map) count += name == shard;
  return count;
}

}  // namespace

std::string ShardedIndex::shard_path(const std::string& shard) const {
  return (fs::path(path).parent_path() / shard).string();
}

ShardedIndex parse_sharded_index(std::string_view text, const std::string& path) {
  static const JsonDocument document{"index", "a checkpoint index needs 2", repeated_index_key};
  const json root = parse_checked_json(text, path, document);
  const auto fail = [&](const std::string& what) { return SafetensorsError(path + ": " + what); };
  if (!root.is_object()) throw fail("the index is " + describe_value(root) + ", not a JSON object");

  ShardedIndex index;
  index.path = path;
  const auto metadata = root.find("metadata");
  if (metadata != root.end()) {
    if (!metadata->is_object()) throw fail("metadata is " + describe_value(*metadata) + ", not an object");
    const auto total = metadata->find("total_size");
    if (total != metadata->end()) index.total_size = parse_total_size(*total, path);
  }
  const auto weight_map = root.find("weight_map");
  if (weight_map == root.end()) throw fail("the index has no weight_map (tensor -> shard file)");
  if (!weight_map->is_object()) throw fail("weight_map is " + describe_value(*weight_map) + ", not an object");
  if (weight_map->empty()) throw fail("the weight_map lists no tensors");
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : weight_map->items()) {
    const std::string where = "weight_map: tensor " + quote_user_text(tensor);
    if (!shard.is_string()) throw fail(where + " maps to " + describe_value(shard) + ", not a shard file name");
    const std::string& name = shard.get_ref<const std::string&>();
    if (!is_plain_file_name(name)) {
      throw fail(where + " is in shard " + quote_user_text(name) +
                 ", which is not a file name: shards sit beside the index");
    }
    index.weight_map.emplace(tensor, name);
    shards.insert(name);
  }
  index.shards.assign(shards.begin(), shards.end());
  return index;
}

ShardedIndex read_sharded_index(const std::string& path) {
  return parse_sharded_index(read_small_file(path, kMaxIndexBytes), path);
}

CheckpointFiles locate_checkpoint(const std::string& path) {
  std::error_code ignored;
  std::string file = path;
  if (fs::is_directory(path, ignored)) {
    const fs::path dir(path);
    if (fs::exists(dir / kSingleFileName, ignored)) {
      file = (dir / kSingleFileName).string();
    } else if (fs::exists(dir / kIndexFileName, ignored)) {
      file = (dir / kIndexFileName).string();
    } else {
      throw SafetensorsError(path + ": a directory with neither " + kSingleFileName + " nor " + kIndexFileName);
    }
  }
  if (!ends_with(file, ".json")) return CheckpointFiles{file, std::nullopt, {file}};

  CheckpointFiles files{file, read_sharded_index(file), {}};
  for (const std::string& shard : files.index->shards) {
    const std::string shard_path = files.index->shard_path(shard);
    if (!fs::exists(shard_path, ignored)) {  // follows links: a dangling one is missing too
      throw SafetensorsError(file + ": shard " + quote_user_text(shard) + " is missing (the weight_map puts " +
                             std::to_string(tensors_in(*files.index, shard)) + " tensors in it)");
    }
    files.paths.push_back(shard_path);
  }
  return files;
}

void check_shards(const ShardedIndex& index, const std::vector<const Header*>& shard_headers) {
  if (shard_headers.size() != index.shards.size()) {
    throw std::logic_error("check_shards: " + std::to_string(shard_headers.size()) + " headers for " +
                           std::to_string(index.shards.size()) + " shards");
  }
  const auto fail = [&](const std::string& what) { return SafetensorsError(index.path + ": " + what); };
  const auto shard = [&](std::size_t i) { return "shard " + quote_user_text(index.shards[i]); };
  std::map<std::string, std::size_t> holder;  // tensor -> the shard that holds it
  std::uint64_t tensor_bytes = 0;
  for (std::size_t i = 0; i < shard_headers.size(); ++i) {
    for (const TensorEntry& entry : shard_headers[i]->tensors) {
      const std::string tensor = "tensor " + quote_user_text(entry.name);
      const auto [it, first] = holder.emplace(entry.name, i);
      if (!first) throw fail(tensor + " is in both " + shard(it->second) + " and " + shard(i));
      tensor_bytes += entry.bytes();
    }
  }
  for (const auto& [name, mapped] : index.weight_map) {
    const auto it = holder.find(name);
    const std::string tensor = "tensor " + quote_user_text(name);
    if (it == holder.end()) {
      throw fail(tensor + " is mapped to shard " + quote_user_text(mapped) + ", which does not hold it");
    }
    if (index.shards[it->second] != mapped) {
      throw fail(tensor + " is mapped to shard " + quote_user_text(mapped) + " but is in " + shard(it->second));
    }
  }
  for (const auto& [name, i] : holder) {
    if (!index.weight_map.count(name)) {
      throw fail(shard(i) + " holds tensor " + quote_user_text(name) + ", which the weight_map does not list");
    }
  }
  if (index.total_size && *index.total_size != tensor_bytes) {
    throw fail("metadata.total_size is " + std::to_string(*index.total_size) + " bytes but the shards' " +
               std::to_string(holder.size()) + " tensors hold " + std::to_string(tensor_bytes));
  }
}

}  // namespace oomlab::safetensors
