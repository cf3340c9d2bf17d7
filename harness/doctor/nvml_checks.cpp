// MIG, ECC and persistence mode: only NVML knows them, so without it (no GPU, no driver library)
// they are skipped, not failed.
#include <optional>
#include <string>

#include "harness/doctor/checks.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::doctor {
namespace {

const char* mode_name(Mode mode) {
  switch (mode) {
    case Mode::on: return "on";
    case Mode::off: return "off";
    case Mode::not_supported: return "not supported by this card";
    case Mode::unknown: break;
  }
  return "unknown";
}

// The skip every NVML check shares when NVML cannot answer; nullopt when it can.
std::optional<Check> nvml_unavailable(const char* name, const MachineFacts& facts) {
  if (!facts.gpu.available) return Check{name, Verdict::skip, "no GPU to ask"};
  if (!facts.nvml.error.empty()) return Check{name, Verdict::skip, "unknown (" + facts.nvml.error + ")"};
  return std::nullopt;
}

bool change_pending(const ModeFact& mode) {
  return mode.pending != Mode::unknown && mode.pending != mode.current;
}

}  // namespace

Check check_mig(const MachineFacts& facts) {
  if (auto skipped = nvml_unavailable("mig", facts)) return *skipped;
  const ModeFact& mig = facts.nvml.mig;
  if (mig.current == Mode::on) {
    return {"mig", Verdict::warn,
            "on: this process sees one MIG instance (" + format_size(facts.gpu.total_bytes) +
                "), not the whole card; budgets for the full card do not fit in it"};
  }
  if (change_pending(mig)) {
    return {"mig", Verdict::warn,
            std::string(mode_name(mig.current)) + ", " + mode_name(mig.pending) + " after the next GPU reset"};
  }
  return {"mig", mig.current == Mode::unknown ? Verdict::skip : Verdict::ok, mode_name(mig.current)};
}

Check check_ecc(const MachineFacts& facts) {
  if (auto skipped = nvml_unavailable("ecc", facts)) return *skipped;
  const ModeFact& ecc = facts.nvml.ecc;
  if (change_pending(ecc)) {
    return {"ecc", Verdict::warn,
            std::string(mode_name(ecc.current)) + ", " + mode_name(ecc.pending) +
                " after the next reboot (the memory the driver reports changes with it)"};
  }
  return {"ecc", ecc.current == Mode::unknown ? Verdict::skip : Verdict::ok, mode_name(ecc.current)};
}

Check check_persistence(const MachineFacts& facts) {
  if (auto skipped = nvml_unavailable("persistence", facts)) return *skipped;
  const Mode mode = facts.nvml.persistence.current;
  if (mode == Mode::off) {
    // Not a memory problem: the cost is start-up time, so it is a note, not a warning.
    return {"persistence", Verdict::ok,
            "off: the driver is set up again whenever no process uses the GPU (slower first call); "
            "sudo nvidia-smi -pm 1 keeps it"};
  }
  return {"persistence", mode == Mode::unknown ? Verdict::skip : Verdict::ok, mode_name(mode)};
}

}  // namespace oomlab::doctor
