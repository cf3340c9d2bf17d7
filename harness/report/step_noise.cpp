#include "harness/report/step_noise.hpp"

#include <cmath>

#include "harness/report/number_format.hpp"

namespace oomlab::report {

StepNoise step_noise(const RunRecord& record) {
  // The same steps the throughput is taken over (docs/results-schema.md).
  const std::size_t warmup = static_cast<std::size_t>(record.warmup_steps);
  const std::size_t first = record.step_seconds.size() > warmup ? warmup : 0;
  StepNoise noise;
  noise.steps = record.step_seconds.size() - first;
  if (noise.steps < 2) return noise;
  double sum = 0;
  for (std::size_t i = first; i < record.step_seconds.size(); ++i) sum += record.step_seconds[i];
  const double mean = sum / static_cast<double>(noise.steps);
  if (mean <= 0) return noise;
  double squares = 0;
  for (std::size_t i = first; i < record.step_seconds.size(); ++i) {
    squares += (record.step_seconds[i] - mean) * (record.step_seconds[i] - mean);
  }
  noise.relative = std::sqrt(squares / static_cast<double>(noise.steps - 1)) / mean;
  return noise;
}

std::string throughput_text(const RunRecord& record) {
  if (record.throughput.unit.empty() || !(record.throughput.value > 0)) return "-";
  std::string text = format_number(record.throughput.value) + " " + record.throughput.unit;
  const StepNoise noise = step_noise(record);
  if (noise.relative >= 0) text += " \xC2\xB1" + format_number(100 * noise.relative, 2) + "%";
  return text;
}

}  // namespace oomlab::report
