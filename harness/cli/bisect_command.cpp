// oomlab bisect SCENARIO: the smallest budget a variant runs in, or the largest value of a knob
// that fits a budget; searched on dry, confirmed on the GPU (or host) when --device says so.
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "harness/advise/bisect.hpp"
#include "harness/cli/commands.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/atomic_file.hpp"
#include "harness/runner/knobs.hpp"
#include "harness/runner/json_text.hpp"

namespace oomlab::cli {

struct BisectOptions : QuestionOptions {
  std::string knob;  // empty: the smallest budget; else the largest value of this knob that fits
};

namespace {

using Json = nlohmann::ordered_json;

std::string subject(const RunRequest& request) {
  const ResolvedRun resolved = resolve_run(request);
  return request.scenario + "/" + request.variant + " on " + scale_name(request.scale) + " scale (" +
         describe_knobs(resolved.knobs.all()) + ")";
}

Json probes_json(const std::vector<advise::Probe>& probes) {
  Json list = Json::array();
  for (const advise::Probe& p : probes) {
    list.push_back({{"setting", p.setting}, {"fits", p.fits}, {"need", p.need ? Json(p.need) : Json(nullptr)}});
  }
  return list;
}

// Runs the answer on the device the user named (cuda: the GPU) in a child; true when it fits.
bool confirm(RunRequest answer, DeviceKind device, std::string& line) {
  answer.device = device;
  const RunRecord record = run_variant_in_child(answer);
  line = std::string("confirmed on ") + device_kind_name(device) + ": " + outcome_status_name(record.outcome.status);
  if (record.outcome.status != OutcomeStatus::ok) line += " — " + record.outcome.message;
  return record.outcome.status == OutcomeStatus::ok;
}

void write_answer_record(const RunRequest& answer, const Json& result, const std::string& path) {
  RunRequest request = answer;
  request.quiet = true;
  RunRecord record = run_variant_in_process(request);
  nlohmann::ordered_json json = to_json(record);
  json["bisect"] = result;
  try {
    write_file_atomically(path, json_text(json, 2) + "\n");
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

int bisect_command(const BisectOptions& options) {
  const RunRequest base = question_request(options);
  const DeviceKind confirm_on = device_option(options.device);
  const auto start = std::chrono::steady_clock::now();
  Json result;
  RunRequest answer = base;
  std::string verdict;
  bool found = true;
  try {
    if (options.knob.empty()) {
      const advise::BudgetBisection b = advise::bisect_budget(base);
      answer.budget = std::to_string(b.smallest_fitting) + "B";
      // In MiB too: at two decimals of GiB the answer and the failing budget a step below read the same.
      const auto mib = [](std::size_t bytes) { return std::to_string(bytes / MiB) + " MiB"; };
      verdict = "fits a budget of " + format_size(b.smallest_fitting) + " (" + mib(b.smallest_fitting) +
                (b.largest_failing ? "; " + mib(b.largest_failing) + " fails: searched in 1 MiB steps" : "") + ")" +
                "; it needs " + format_size(b.need) + " in live tensors at its peak, and reserves " +
                format_size(b.need_reserved) + " with no cap";
      result = {{"question", "smallest budget"},
                {"smallest_fitting_budget", b.smallest_fitting},
                {"largest_failing_budget", b.largest_failing ? Json(b.largest_failing) : Json(nullptr)},
                {"need", b.need},
                {"need_reserved", b.need_reserved},
                {"probes", probes_json(b.probes)}};
    } else {
      const advise::KnobBisection k = advise::bisect_knob(base, options.knob);
      const std::string budget = resolve_run(base).budget.describe();
      const std::string extreme = k.more_needs_less ? "smallest" : "largest";
      found = k.fitting > 0;
      if (found) {
        answer.set.emplace_back(k.knob, std::to_string(k.fitting));
        verdict = "the " + extreme + " " + k.knob + " that fits " + budget + " is " + std::to_string(k.fitting) +
                  (k.failing ? " (" + std::to_string(k.failing) + " does not)"
                             : " (the " + extreme + " value the scenario accepts here)");
        if (k.more_needs_less) verdict += "; more " + k.knob + " needs less memory here";
      } else {
        verdict = "no " + k.knob + " fits " + budget + ": not even " + k.knob + "=" + std::to_string(k.failing) +
                  ", the value the scenario accepts here that needs the least memory";
      }
      result = {{"question", extreme + " " + k.knob},
                {"knob", k.knob},
                {"direction", k.more_needs_less ? "more needs less memory" : "more needs more memory"},
                {"start", k.start},
                {"step", k.step},
                {"fitting", found ? Json(k.fitting) : Json(nullptr)},
                {"failing", k.failing ? Json(k.failing) : Json(nullptr)},
                {"budget", budget},
                {"probes", probes_json(k.probes)}};
    }
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result["runs"] = result["probes"].size();
  result["seconds"] = seconds;
  result["scenario"] = base.scenario;
  result["variant"] = base.variant;
  result["scale"] = scale_name(base.scale);

  bool confirmed = true;
  std::string confirmation;
  if (found && confirm_on != DeviceKind::dry) {
    confirmed = confirm(answer, confirm_on, confirmation);
    result["confirmed_on"] = device_kind_name(confirm_on);
    result["confirmed"] = confirmed;
  }
  if (found && !options.out_path.empty()) write_answer_record(answer, result, options.out_path);

  if (options.json) {
    std::printf("%s\n", json_text(result, 2).c_str());
  } else {
    std::printf("%s:\n  %s\n  %zu runs on dry in %.2f s\n", subject(base).c_str(), verdict.c_str(),
                result["probes"].size(), seconds);
    if (!confirmation.empty()) std::printf("  %s\n", confirmation.c_str());
  }
  return found && confirmed ? 0 : 1;
}

Command add_bisect_command(CLI::App& app) {
  auto options = std::make_shared<BisectOptions>();
  CLI::App* bisect = app.add_subcommand(
      "bisect", "The smallest budget a variant runs in (to 1 MiB), or with --knob the largest "
                "batch/seq/... that fits the budget; searched on dry in well under a second. Exit 0 "
                "with an answer, 1 when nothing fits or the confirmation fails, 2 on bad input");
  add_question_options(*bisect, *options);
  bisect->add_option("--knob", options->knob,
                     "Search this whole-number knob (batch, seq, micro_batches, ...) instead of the budget");
  return {bisect, [options] { return bisect_command(*options); }, [] { return true; }};
}

}  // namespace oomlab::cli
