#include "scenarios/models/transformer/offload_streams.hpp"

namespace oomlab::model {

OffloadStreams::OffloadStreams(Device& device, int slots)
    : device_(device), update_done_(device.kind()) {
  for (int i = 0; i < slots; ++i) {
    loaded_.emplace_back(device.kind());
    updated_.emplace_back(device.kind());
    freed_.emplace_back(device.kind());
  }
  in_ = device.create_stream();
  try {
    out_ = device.create_stream();
  } catch (...) {
    device.destroy_stream(in_);
    throw;
  }
}

OffloadStreams::~OffloadStreams() {
  try {
    update_done_.synchronize();
    device_.destroy_stream(in_);
    device_.destroy_stream(out_);
  } catch (...) {
    // After a device error the context is unusable anyway; nothing more to release safely.
  }
}

void OffloadStreams::begin_update() { update_done_.make_stream_wait(in_); }

void OffloadStreams::before_load(int slot) { freed_[slot].make_stream_wait(in_); }

void OffloadStreams::loaded(int slot) {
  loaded_[slot].record(in_);
  loaded_[slot].make_stream_wait(device_.stream());
}

void OffloadStreams::updated(int slot) {
  updated_[slot].record(device_.stream());
  updated_[slot].make_stream_wait(out_);
}

void OffloadStreams::stored(int slot) { freed_[slot].record(out_); }

void OffloadStreams::end_update() { update_done_.record(out_); }

}  // namespace oomlab::model
