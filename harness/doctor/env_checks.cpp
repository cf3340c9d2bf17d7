// The allocator settings in the environment: oomlab's own, and PyTorch's in the same syntax.
#include <stdexcept>
#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/memory/alloc_config.hpp"
#include "harness/memory/user_text.hpp"

namespace oomlab::doctor {

Check check_oomlab_alloc_conf(const MachineFacts& facts) {
  const char* name = "OOMLAB_ALLOC_CONF";
  if (!facts.env.oomlab_alloc_conf)
    return {name, Verdict::ok, "not set (defaults: " + memory::AllocatorConfig{}.to_string() + ")"};
  try {
    memory::AllocatorConfig config = memory::parse_alloc_conf(*facts.env.oomlab_alloc_conf);
    return {name, Verdict::ok, config.to_string() + " (every run uses it unless --alloc-conf overrides a key)"};
  } catch (const std::invalid_argument& e) {
    return {name, Verdict::fail, std::string(e.what()) + "; every run with it set stops with this error"};
  }
}

Check check_pytorch_alloc_conf(const MachineFacts& facts) {
  const char* name = "PYTORCH_CUDA_ALLOC_CONF";
  if (!facts.env.pytorch_alloc_conf) return {name, Verdict::ok, "not set"};
  const std::string& text = *facts.env.pytorch_alloc_conf;
  // PyTorch reads it, oomlab does not; say whether oomlab can reproduce the same setting.
  try {
    memory::AllocatorConfig config = memory::parse_alloc_conf(text, {}, name);
    return {name, Verdict::ok,
            quote_user_text(text) + " (read by PyTorch, not by oomlab; oomlab's equivalent: "
            "OOMLAB_ALLOC_CONF=" + config.to_string() + ")"};
  } catch (const std::invalid_argument& e) {
    return {name, Verdict::warn, std::string("set for PyTorch; oomlab cannot reproduce it (") + e.what() + ")"};
  }
}

}  // namespace oomlab::doctor
