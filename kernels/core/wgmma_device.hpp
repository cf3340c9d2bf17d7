// Whether this process runs the Hopper wgmma kernels: the current GPU is compute 9.0, the driver
// loaded this binary's sm_90a image for it, and wgmma has not been switched off. The conv and
// attention launchers pick their wgmma engines by it; otherwise they run on mma.sync. The
// decision is kernels/core/engines.hpp's (current_engine()), the one place engines are chosen.
#pragma once

namespace oomlab::ops::detail {

bool device_runs_wgmma();

// Process-wide, on by default: the GPU tests and the benchmarks switch wgmma off to check and
// measure the mma.sync engines on the same GPU.
void allow_wgmma(bool allowed);

// wgmma switched off for a scope (tests).
struct WgmmaOff {
  WgmmaOff() { allow_wgmma(false); }
  ~WgmmaOff() { allow_wgmma(true); }
  WgmmaOff(const WgmmaOff&) = delete;
  WgmmaOff& operator=(const WgmmaOff&) = delete;
};

}  // namespace oomlab::ops::detail
