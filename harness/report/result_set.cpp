#include "harness/report/result_set.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "harness/memory/size.hpp"

#include "harness/report/baseline_file.hpp"
#include "harness/report/input_error.hpp"
#include "harness/report/input_file.hpp"
#include "harness/report/record_numbers.hpp"

namespace oomlab::report {

namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr const char* kFileKinds = "record or benchmark file";

enum class FileKind { records, baseline, benchmarks, suite_summary, chrome_trace, other };

FileKind classify(const Json& json) {
  if (is_benchmark_json(json)) return FileKind::benchmarks;
  if (is_baseline_json(json)) return FileKind::baseline;
  if (json.is_object() && json.contains("traceEvents")) return FileKind::chrome_trace;  // traces, OOM dumps
  if (json.is_object() && json.contains("schema_version") && json.contains("runs")) return FileKind::suite_summary;
  if (json.is_object() && json.contains("schema_version") && json.contains("scenario")) return FileKind::records;
  if (json.is_array() && !json.empty() && std::all_of(json.begin(), json.end(), [](const Json& item) {
        return item.is_object() && item.contains("scenario");
      })) {
    return FileKind::records;
  }
  return FileKind::other;
}

// Google Benchmark writes NaN (the cv of a counter whose mean is 0) and inf as bare words, which
// JSON has not: outside strings they become null, a value the readers skip.
std::string non_finite_as_null(const std::string& text) {
  static const char* const kWords[] = {"-Infinity", "Infinity", "-NaN", "NaN", "-nan", "nan", "-inf", "inf"};
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const char* word : kWords) {
      const std::size_t n = std::char_traits<char>::length(word);
      if (text.compare(i, n, word) == 0) {
        out += "null";
        i += n - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return out;
}

// Throws InputError "<path>: not valid JSON".
Json parse_text(const std::string& text, const std::string& path) {
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::exception&) {
  }
  try {
    return Json::parse(non_finite_as_null(text));
  } catch (const nlohmann::json::exception&) {
    throw InputError(path + ": not valid JSON");
  }
}

Json parse_file(const std::string& path) {
  return parse_text(read_input_file(path, kMaxResultFileBytes, kFileKinds), path);
}

// Adds what one parsed file holds. Returns false for JSON that is none of the kinds.
bool add_file(ResultSet& set, const Json& json, const std::string& path, const std::string& relative) {
  try {
    switch (classify(json)) {
      case FileKind::records:
        if (json.is_array()) {
          for (const Json& item : json) {
            check_record_numbers(item, path);
            set.records.push_back({run_record_from_json(item), relative, false});
          }
        } else {
          check_record_numbers(json, path);
          set.records.push_back({run_record_from_json(json), relative, false});
        }
        return true;
      case FileKind::baseline:
        check_record_numbers(json, path);
        set.records.push_back({record_from_baseline(json), relative, true});
        return true;
      case FileKind::benchmarks: {
        auto results = read_benchmarks(json, relative);
        set.benchmarks.insert(set.benchmarks.end(), results.begin(), results.end());
        const std::string device = benchmark_device(json);
        if (!device.empty() && std::find(set.benchmark_devices.begin(), set.benchmark_devices.end(), device) ==
                                   set.benchmark_devices.end()) {
          set.benchmark_devices.push_back(device);
        }
        return true;
      }
      case FileKind::suite_summary:
        if (json.contains("complete") && json["complete"].is_boolean() && !json["complete"].get<bool>()) {
          set.notes.push_back(relative + " says the suite did not complete: some records may be missing");
        }
        return true;
      case FileKind::chrome_trace: return true;  // read by the report beside its record, not a result
      case FileKind::other: return false;
    }
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path + ": " + e.what());
  }
  return false;
}

// The .json files under `root` that hold results, sorted; every one checked (a regular file within
// the size cap, all together within the set's) before any is read. Other kinds of entries are
// passed over, except a .json link that leads nowhere and any link loop: those are bad input.
std::vector<fs::path> json_files(const fs::path& root) {
  std::vector<fs::path> files;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    std::error_code status_error;
    const fs::file_status status = it->status(status_error);
    if (!name.empty() && name[0] == '.') {  // .git, editors' files
      if (fs::is_directory(status)) it.disable_recursion_pending();
      continue;
    }
    const bool json = it->path().extension() == ".json";
    if (status_error && (json || status_error == std::errc::too_many_symbolic_link_levels)) {
      throw InputError(it->path().string() + ": cannot read (" + status_error.message() + ")");
    }
    if (json && !fs::is_directory(status)) files.push_back(it->path());
  }
  if (error) throw InputError(root.string() + ": cannot list (" + error.message() + ")");
  std::sort(files.begin(), files.end());
  std::uint64_t total = 0;
  for (const fs::path& file : files) {
    total += input_file_size(file.string(), kMaxResultFileBytes, kFileKinds);
    if (total > kMaxResultSetBytes) {
      throw InputError(root.string() + ": its .json files hold more than " + format_size(kMaxResultSetBytes) +
                       ", the most one result set may; not read (give a smaller folder)");
    }
  }
  return files;
}

void load_folder(ResultSet& set, const fs::path& root) {
  std::vector<std::string> skipped;
  for (const fs::path& file : json_files(root)) {
    const std::string relative = file.lexically_relative(root).string();
    Json json;
    try {
      json = parse_file(file.string());
    } catch (const InputError&) {
      skipped.push_back(relative + " (not valid JSON)");
      continue;
    }
    if (!add_file(set, json, file.string(), relative)) skipped.push_back(relative);
  }
  if (!skipped.empty()) {
    std::string list;
    for (std::size_t i = 0; i < skipped.size() && i < 4; ++i) list += (i ? ", " : "") + skipped[i];
    if (skipped.size() > 4) list += ", ...";
    set.notes.push_back("skipped " + std::to_string(skipped.size()) +
                        " JSON file(s) that are not run records or Google Benchmark results: " + list);
  }
}

}  // namespace

std::string ResultSet::describe() const {
  std::string text;
  if (!records.empty()) {
    // "cuda NVIDIA H200" for a GPU (a record of a run that never reached it names no GPU), with
    // what ran there when the record says: "[compute_80 PTX (JIT): attention_backward mma.sync, ...]".
    std::set<std::string> devices, named_kinds;
    for (const LoadedRecord& loaded : records) {
      const DeviceRecord& device = loaded.record.device;
      if (device.kind == "cuda" && !device.name.empty()) {
        std::string ran;
        for (const auto& [family, engine] : device.engines) ran += (ran.empty() ? "" : ", ") + family + " " + engine;
        if (!device.image.empty()) ran = device.image + (ran.empty() ? "" : ": " + ran);
        devices.insert(device.kind + " " + device.name + (ran.empty() ? "" : " [" + ran + "]"));
        named_kinds.insert(device.kind);
      }
    }
    for (const LoadedRecord& loaded : records) {
      if (!named_kinds.count(loaded.record.device.kind)) devices.insert(loaded.record.device.kind);
    }
    std::string list;
    for (const std::string& device : devices) list += (list.empty() ? "" : ", ") + device;
    text += std::to_string(records.size()) + " run record" + (records.size() == 1 ? "" : "s") + " (" + list + ")";
  }
  if (!benchmarks.empty()) {
    std::string list;
    for (const std::string& device : benchmark_devices) list += (list.empty() ? "" : ", ") + device;
    text += std::string(text.empty() ? "" : ", ") + std::to_string(benchmarks.size()) + " benchmark" +
            (benchmarks.size() == 1 ? "" : "s") + (list.empty() ? "" : " (" + list + ")");
  }
  return text.empty() ? "nothing" : text;
}

ResultSet load_result_set(const std::string& path) {
  ResultSet set;
  set.source = path;
  std::error_code error;
  const fs::file_status status = fs::status(path, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    throw InputError(path + ": cannot read (" + error.message() + ")");
  }
  if (!fs::exists(status)) throw InputError(path + ": no such file or folder");
  if (fs::is_directory(status)) {
    load_folder(set, path);
    if (set.empty()) {
      throw InputError(path + ": holds no run records or Google Benchmark JSON" +
                       (set.notes.empty() ? std::string() : " (" + set.notes.back() + ")"));
    }
    return set;
  }
  const Json json = parse_file(path);
  const std::string name = fs::path(path).filename().string();
  if (classify(json) == FileKind::suite_summary) {
    const fs::path folder = fs::path(path).parent_path();
    return load_result_set(folder.empty() ? "." : folder.string());
  }
  if (!add_file(set, json, path, name)) {
    throw InputError(path + ": not a run record, a baseline or Google Benchmark JSON");
  }
  return set;
}

ResultSet result_set_from_text(const std::string& text, const std::string& name) {
  ResultSet set;
  set.source = name;
  if (text.size() > kMaxResultFileBytes) {
    throw InputError(name + ": larger than the " + format_size(kMaxResultFileBytes) + " a " + kFileKinds +
                     " may hold; not read");
  }
  if (!add_file(set, parse_text(text, name), name, name)) {
    throw InputError(name + ": not a run record, a baseline or Google Benchmark JSON");
  }
  return set;
}

}  // namespace oomlab::report
