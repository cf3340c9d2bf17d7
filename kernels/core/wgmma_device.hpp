// Whether this process runs the Hopper wgmma kernels: the build includes sm_90a device code
// (OOMLAB_CUDA_SM90A) and the current GPU is compute 9.0 (asked once per process). The conv and
// attention launchers pick their wgmma engines by it; elsewhere they run on mma.sync.
#pragma once

namespace oomlab::ops::detail {

bool device_runs_wgmma();

}  // namespace oomlab::ops::detail
