// oomlab doctor: the machine's side of an OOM (checklist step four), one verdict per line, or the
// same fields as JSON for tools. The checks themselves live in harness/doctor.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness/cli/commands.hpp"
#include "harness/doctor/checks.hpp"
#include "harness/doctor/gather.hpp"

namespace oomlab::cli {

struct DoctorOptions {
  bool json = false;  // the table's fields as JSON, for tools
};

namespace {

using doctor::Check;
using doctor::Verdict;

bool colour_wanted() { return ::isatty(STDOUT_FILENO) == 1 && std::getenv("NO_COLOR") == nullptr; }

const char* colour_of(Verdict verdict) {
  switch (verdict) {
    case Verdict::ok: return "\033[32m";
    case Verdict::warn: return "\033[33m";
    case Verdict::fail: return "\033[31m";
    case Verdict::skip: return "\033[2m";
  }
  return "";
}

// `text` padded to `width`, coloured when asked (the padding stays outside the escape codes).
std::string cell(const std::string& text, std::size_t width, const char* colour) {
  std::string padded = text + std::string(width > text.size() ? width - text.size() : 0, ' ');
  if (colour == nullptr) return padded;
  return colour + text + "\033[0m" + padded.substr(text.size());
}

void print_table(const std::vector<Check>& checks, const doctor::Summary& summary) {
  const bool colour = colour_wanted();
  std::size_t name_width = 0;
  for (const Check& check : checks) name_width = std::max(name_width, check.name.size());
  for (const Check& check : checks) {
    std::printf("%s %s  %s\n",
                cell(doctor::verdict_name(check.verdict), 4, colour ? colour_of(check.verdict) : nullptr).c_str(),
                cell(check.name, name_width, nullptr).c_str(), check.detail.c_str());
  }
  const Verdict overall = summary.exit_code == 0 ? Verdict::ok : Verdict::fail;
  std::printf("verdict: %s; %s\n",
              cell(summary.exit_code == 0 ? "pass" : "fail", 0, colour ? colour_of(overall) : nullptr).c_str(),
              summary.line.c_str());
}

void print_json(const std::vector<Check>& checks, const doctor::Summary& summary) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Check& check : checks) {
    rows.push_back({{"name", check.name}, {"verdict", doctor::verdict_name(check.verdict)}, {"detail", check.detail}});
  }
  nlohmann::ordered_json out = {{"checks", rows},
                        {"verdict", summary.exit_code == 0 ? "pass" : "fail"},
                        {"summary", summary.line},
                        {"exit_code", summary.exit_code}};
  // Details can quote environment values that are not UTF-8: replace, never throw.
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

}  // namespace

int doctor_command(const DoctorOptions& options) {
  const doctor::MachineFacts facts = doctor::gather_machine_facts();
  const std::vector<Check> checks = doctor::run_checks(facts);
  const doctor::Summary summary = doctor::summarize(checks, doctor::device_unchecked_reason(facts));
  if (options.json) {
    print_json(checks, summary);
  } else {
    print_table(checks, summary);
  }
  return summary.exit_code;
}

Command add_doctor_command(CLI::App& app) {
  auto options = std::make_shared<DoctorOptions>();
  CLI::App* doctor = app.add_subcommand(
      "doctor", "Check this machine for what makes runs fail: driver/runtime/toolkit, the GPU's "
                "architecture vs this build, memory, other processes holding the GPU, context "
                "size, MIG/ECC/persistence, allocator settings. Exit 0 if no check fails "
                "(warnings allowed), 1 if one fails, 2 on bad usage");
  add_json_flag(*doctor, options->json);
  return {doctor, [options] { return doctor_command(*options); }};
}

}  // namespace oomlab::cli
