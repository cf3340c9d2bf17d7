#include "scenarios/serve7b/serve_workload.hpp"

#include <random>
#include <stdexcept>
#include <string>

namespace oomlab::serve {

std::vector<Request> make_workload(const WorkloadSpec& spec, bool with_tokens) {
  if (spec.requests < 1 || spec.prompt_min < 1 || spec.prompt_min > spec.prompt_max || spec.output_min < 1 ||
      spec.output_min > spec.output_max || spec.truncate_prompt < 0 || spec.vocab < 1) {
    throw std::invalid_argument("serve7b: requests >= 1, 1 <= prompt_min <= prompt_max, 1 <= output_min <= output_max");
  }
  // Lengths and tokens from separate streams: asking for tokens never changes a length.
  std::mt19937 lengths(spec.seed), tokens(spec.seed ^ 0x9e3779b9u);
  std::uniform_int_distribution<int> prompt(spec.prompt_min, spec.prompt_max), output(spec.output_min, spec.output_max);
  std::uniform_int_distribution<std::int64_t> token(0, spec.vocab - 1);
  std::vector<Request> requests;
  for (int id = 0; id < spec.requests; ++id) {
    Request r;
    r.id = id;
    const int full_prompt = prompt(lengths);
    r.output = output(lengths);
    r.prompt = spec.truncate_prompt > 0 && full_prompt > spec.truncate_prompt ? spec.truncate_prompt : full_prompt;
    if (with_tokens) {
      std::vector<std::int32_t> all(static_cast<std::size_t>(full_prompt));
      for (auto& t : all) t = static_cast<std::int32_t>(token(tokens));
      r.prompt_tokens.assign(all.end() - r.prompt, all.end());  // truncation keeps the end
    }
    requests.push_back(std::move(r));
  }
  return requests;
}

}  // namespace oomlab::serve
