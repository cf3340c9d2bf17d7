// The requests serve7b serves: a seeded stream whose lengths follow a stated distribution, so
// every variant, and dry, sees the same requests. All arrive at time 0 (an offline batch, as a
// benchmark replays a trace): time to first token includes the wait in the queue.
#pragma once
#include <cstdint>
#include <vector>

namespace oomlab::serve {

struct WorkloadSpec {
  int requests = 0;
  // Prompt and output lengths (tokens), each drawn uniformly from [min, max], independently.
  int prompt_min = 0, prompt_max = 0;
  int output_min = 0, output_max = 0;
  // Prompts longer than this keep their LAST truncate_prompt tokens (0: none): the seed's
  // "smaller input", which changes the answers.
  int truncate_prompt = 0;
  std::uint32_t seed = 0;
  std::int64_t vocab = 0;  // prompt token ids are uniform in [0, vocab)
};

struct Request {
  int id = 0;
  int prompt = 0;  // tokens after truncation
  int output = 0;  // tokens to generate (>= 1)
  std::vector<std::int32_t> prompt_tokens;  // only when make_workload is asked for them
  // Slots of KV cache the request holds at its end: its prompt and every generated token but the
  // last (whose K/V is never needed).
  int max_context() const { return prompt + output - 1; }
};

// Throws std::invalid_argument for an empty range or a negative length.
std::vector<Request> make_workload(const WorkloadSpec& spec, bool with_tokens);

}  // namespace oomlab::serve
