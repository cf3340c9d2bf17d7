#include "scenarios/models/safetensors/safetensors_format.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/memory/user_text.hpp"
#include "scenarios/models/safetensors/header_json.hpp"

namespace oomlab::safetensors {
namespace {

using nlohmann::json;

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kSupported[] = {
    {"F32", DType::f32}, {"BF16", DType::bf16}, {"F16", DType::f16},
    {"I8", DType::i8},   {"I32", DType::i32},   {"I64", DType::i64},
};
// Valid in the format, but oomlab has no kernels for them: named as unsupported, not unknown.
constexpr const char* kKnownUnsupported[] = {"BOOL", "U8", "I16", "U16", "U32", "U64",
                                              "F64", "F8_E5M2", "F8_E4M3"};

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  throw SafetensorsError(file + ": " + what);
}
[[noreturn]] void fail_tensor(const std::string& file, const std::string& tensor,
                              const std::string& what) {
  fail(file, "tensor " + quote_user_text(tensor) + ": " + what);
}

DType parse_dtype_field(const json& value, const std::string& file, const std::string& tensor) {
  if (!value.is_string()) fail_tensor(file, tensor, "dtype must be a string");
  const std::string name = value.get<std::string>();
  for (const DTypeName& entry : kSupported) {
    if (name == entry.name) return entry.dtype;
  }
  for (const char* known : kKnownUnsupported) {
    if (name == known) {
      fail_tensor(file, tensor, "dtype " + name + " is not supported by oomlab "
                                "(supported: F32, BF16, F16, I8, I32, I64)");
    }
  }
  fail_tensor(file, tensor, "unknown dtype " + quote_user_text(name));
}

Shape parse_shape_field(const json& value, const std::string& file, const std::string& tensor) {
  if (!value.is_array()) fail_tensor(file, tensor, "shape must be an array of integers");
  Shape shape;
  std::uint64_t numel = 1;
  for (const json& dim : value) {
    if (!dim.is_number_unsigned()) {
      // dump() is safe here: parse_header_json capped the nesting.
      fail_tensor(file, tensor, "shape dimension " + std::to_string(shape.size()) + " is " +
                                    quote_user_text(dim.dump()) + ", not a non-negative integer");
    }
    const std::uint64_t d = dim.get<std::uint64_t>();
    // Reject sizes whose byte count could overflow: no real tensor has 2^60 elements.
    if (d > (std::uint64_t{1} << 60) || (d != 0 && numel > (std::uint64_t{1} << 60) / d)) {
      fail_tensor(file, tensor, "shape has too many elements (over 2^60 at dimension " +
                                    std::to_string(shape.size()) + ")");
    }
    numel *= d;
    shape.push_back(static_cast<std::int64_t>(d));
  }
  return shape;
}

void parse_offsets_field(const json& value, TensorEntry& entry, const std::string& file) {
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_unsigned() ||
      !value[1].is_number_unsigned()) {
    fail_tensor(file, entry.name, "data_offsets must be [begin, end] with non-negative integers");
  }
  entry.begin = value[0].get<std::uint64_t>();
  entry.end = value[1].get<std::uint64_t>();
  if (entry.end < entry.begin) {
    fail_tensor(file, entry.name, "data_offsets [" + std::to_string(entry.begin) + ", " +
                                      std::to_string(entry.end) + ") end before they begin");
  }
}

std::map<std::string, std::string> parse_metadata(const json& value, const std::string& file) {
  if (!value.is_object()) fail(file, "__metadata__ must be an object of strings");
  std::map<std::string, std::string> metadata;
  for (const auto& [key, text] : value.items()) {
    if (!text.is_string()) fail(file, "__metadata__ entry " + quote_user_text(key) + " is not a string");
    metadata[key] = text.get<std::string>();
  }
  return metadata;
}

// Offsets must tile [0, data_bytes): each entry holds exactly its shape's bytes, none overlaps
// the next, and there is no hole (the reference reader's rule; a hole hides a truncated write).
void check_layout(std::vector<TensorEntry>& tensors, std::uint64_t data_bytes, const std::string& file) {
  for (const TensorEntry& entry : tensors) {
    const std::uint64_t needed = static_cast<std::uint64_t>(entry.numel()) * dtype_size(entry.dtype);
    const std::string range =
        "[" + std::to_string(entry.begin) + ", " + std::to_string(entry.end) + ")";
    if (entry.end > data_bytes) {
      fail_tensor(file, entry.name, "data_offsets " + range + " reach past the data section (" +
                                        std::to_string(data_bytes) + " bytes; file truncated?)");
    }
    if (entry.bytes() != needed) {
      fail_tensor(file, entry.name, "data_offsets " + range + " hold " +
                                        std::to_string(entry.bytes()) + " bytes but " +
                                        dtype_name(entry.dtype) + " " + shape_for_message(entry.shape) +
                                        " needs " + std::to_string(needed));
    }
  }
  std::stable_sort(tensors.begin(), tensors.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t covered = 0;
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& entry : tensors) {
    if (entry.begin < covered) {
      fail_tensor(file, entry.name, "data_offsets [" + std::to_string(entry.begin) + ", " +
                                        std::to_string(entry.end) + ") overlap tensor " +
                                        quote_user_text(previous->name));
    }
    if (entry.begin > covered) {
      fail_tensor(file, entry.name, "bytes [" + std::to_string(covered) + ", " +
                                        std::to_string(entry.begin) +
                                        ") before it belong to no tensor");
    }
    covered = entry.end;
    previous = &entry;
  }
  if (covered != data_bytes) {
    fail(file, "the header covers " + std::to_string(covered) + " bytes of a " +
                   std::to_string(data_bytes) + "-byte data section");
  }
}

}  // namespace

const TensorEntry* Header::find(std::string_view name) const {
  for (const TensorEntry& entry : tensors) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

const char* safetensors_dtype_name(DType dtype) {
  for (const DTypeName& entry : kSupported) {
    if (entry.dtype == dtype) return entry.name;
  }
  throw std::invalid_argument("safetensors: no name for dtype");
}

std::string shape_for_message(const Shape& shape) {
  constexpr std::size_t kShownDims = 8;
  if (shape.size() <= kShownDims) return shape_string(shape);
  std::string text = "(";
  for (std::size_t i = 0; i < kShownDims; ++i) text += std::to_string(shape[i]) + ", ";
  return text + "... " + std::to_string(shape.size()) + " dims)";
}

Header parse_header(std::string_view text, std::uint64_t data_bytes, const std::string& file) {
  const json root = parse_header_json(text, file);
  if (!root.is_object()) fail(file, "the header must be a JSON object");
  Header header;
  header.json_bytes = text.size();
  header.data_bytes = data_bytes;
  for (const auto& [name, value] : root.items()) {
    if (name == "__metadata__") {
      header.metadata = parse_metadata(value, file);
      continue;
    }
    if (!value.is_object()) fail_tensor(file, name, "entry must be an object");
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!value.contains(field)) fail_tensor(file, name, std::string("missing '") + field + "'");
    }
    TensorEntry entry;
    entry.name = name;
    entry.dtype = parse_dtype_field(value["dtype"], file, name);
    entry.shape = parse_shape_field(value["shape"], file, name);
    parse_offsets_field(value["data_offsets"], entry, file);
    header.tensors.push_back(std::move(entry));
  }
  check_layout(header.tensors, data_bytes, file);
  return header;
}

std::uint64_t read_u64_le(const std::uint8_t* bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | bytes[i];
  return value;
}

std::uint64_t header_length_from_prefix(const std::uint8_t* prefix, std::uint64_t file_bytes,
                                        const std::string& file) {
  if (file_bytes < kLengthPrefixBytes) {
    fail(file, "truncated: " + std::to_string(file_bytes) +
                   " bytes, shorter than the 8-byte header length");
  }
  const std::uint64_t length = read_u64_le(prefix);
  if (length > kMaxHeaderBytes) {
    fail(file, "header length " + std::to_string(length) + " exceeds the format's limit of " +
                   std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (length > file_bytes - kLengthPrefixBytes) {
    fail(file, "header length " + std::to_string(length) + " reaches beyond the end of the " +
                   std::to_string(file_bytes) + "-byte file");
  }
  return length;
}

Header parse_file_image(const std::uint8_t* bytes, std::size_t size, const std::string& file) {
  const std::uint64_t length = header_length_from_prefix(bytes, size, file);
  const std::string_view json_text(reinterpret_cast<const char*>(bytes) + kLengthPrefixBytes,
                                   static_cast<std::size_t>(length));
  return parse_header(json_text, size - kLengthPrefixBytes - length, file);
}

std::vector<TensorEntry> assign_offsets(std::vector<TensorEntry> tensors) {
  std::uint64_t offset = 0;
  for (TensorEntry& entry : tensors) {
    entry.begin = offset;
    entry.end = offset + static_cast<std::uint64_t>(entry.numel()) * dtype_size(entry.dtype);
    offset = entry.end;
  }
  return tensors;
}

std::string serialize_header(const std::vector<TensorEntry>& tensors,
                             const std::map<std::string, std::string>& metadata) {
  // Written by hand (not through nlohmann::json, whose objects sort keys) so the header lists
  // tensors in file order, as the reference writer does.
  std::ostringstream out;
  out << '{';
  bool first = true;
  if (!metadata.empty()) {
    out << "\"__metadata__\":" << json(metadata).dump();
    first = false;
  }
  for (const TensorEntry& entry : tensors) {
    if (!first) out << ',';
    first = false;
    out << json(entry.name).dump() << ":{\"dtype\":\"" << safetensors_dtype_name(entry.dtype)
        << "\",\"shape\":" << json(entry.shape).dump() << ",\"data_offsets\":[" << entry.begin
        << ',' << entry.end << "]}";
  }
  out << '}';
  std::string text = out.str();
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace oomlab::safetensors
