#include "harness/report/tests/sample_records.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "harness/memory/size.hpp"

namespace oomlab::report::testing {

using namespace oomlab::literals;

RunRecord leak_record() {
  RunRecord r;
  r.scenario = "srgan_leak";
  r.variant = "broken";
  r.device.kind = "dry";
  r.device.name = "dry (no backing)";
  r.budget = {12413042688ull, "rtx3060-12g", "rtx3060-12g (11.56GiB)"};
  r.scale = "full";
  r.knobs = {{"batch", "4"}, {"dtype", "f32"}};
  r.steps = 24;
  r.outcome = {OutcomeStatus::oom, "leak", 14, "oomlab: out of memory: tried to allocate 1.00GiB", 0};
  r.memory.peak_allocated = 11470158336ull;
  r.memory.peak_reserved = 11876171776ull;
  r.memory.peak_device_used = 11924406272ull;
  r.memory.need = 19000000000ull;
  r.memory.per_tag_peak = {{"activations", 3976462336ull}, {"data", 53477376}, {"grads", 14609920},
                           {"optimizer", 29219840},        {"other", 0},        {"retained", 7549747200ull},
                           {"weights", 14609920},          {"workspace", 34078720}};
  r.memory.num_ooms = 1;
  r.memory.num_alloc_retries = 1;
  r.step_seconds = {0.00016, 0.0001, 0.00009};
  r.warmup_steps = 1;
  r.metrics = {{"leak_bytes_per_step", 503316480.0}, {"leak_detected_at_step", 9.0},
               {"predicted_oom_step", 16.0},         {"empty_cache_seconds", 1.2e-6}};
  r.alloc_conf = "expandable_segments:false";
  r.expected = "oom";
  r.matches_expectation = true;
  r.git_commit = "0bd458d62194";
  r.timestamp = "2026-11-29T19:27:26Z";
  r.oomlab_version = "0.1.0";
  return r;
}

RunRecord training_record() {
  RunRecord r;
  r.scenario = "gpt_train";
  r.variant = "bf16";
  r.device = {"cuda", "NVIDIA H200", "9.0", 150754820096ull, 13000, 13000};
  r.budget = {12348030976ull, "rtx3060-12g", "rtx3060-12g (11.50GiB)"};
  r.scale = "small";
  r.steps = 6;
  r.outcome = {OutcomeStatus::ok, "", -1, "", 0};
  r.memory.peak_allocated = 4_GiB;
  r.memory.peak_reserved = 5_GiB;
  r.memory.peak_device_used = 6_GiB;
  r.memory.per_tag_peak = {{"activations", 2_GiB}, {"weights", 1_GiB}};
  r.throughput = {1000.0, "tokens/s"};
  r.step_seconds = {0.5, 0.099, 0.100, 0.101, 0.100, 0.100};  // warm-up, then 1% noise
  r.warmup_steps = 1;
  r.expected = "ok";
  r.matches_expectation = true;
  return r;
}

ScratchDir::ScratchDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/oomlab-report-test-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (!::mkdtemp(buffer.data())) throw std::runtime_error("mkdtemp failed");
  dir_ = buffer.data();
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string ScratchDir::write(const std::string& name, const std::string& text) const {
  const std::filesystem::path file = path(name);
  std::filesystem::create_directories(file.parent_path());
  std::ofstream(file) << text;
  return file.string();
}

}  // namespace oomlab::report::testing
