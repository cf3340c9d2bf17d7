// CPU-only build: no pinned memory and no events; cuda devices cannot exist in this build.
#include "scenarios/weights7b/staging_ring.hpp"

namespace oomlab::scenarios::weights7b {

HostStaging::HostStaging(DeviceKind kind, std::size_t bytes) : kind_(kind), bytes_(bytes) {
  if (kind != DeviceKind::dry && bytes > 0) data_ = new std::uint8_t[bytes];
}
HostStaging::~HostStaging() { delete[] data_; }

}  // namespace oomlab::scenarios::weights7b
