// The streams and events that overlap the offloaded optimizer's traffic with its arithmetic:
// state chunks go in on one copy stream, AdamW runs on the compute stream, the results go out
// on a second copy stream (PCIe moves both directions at once). A staging slot takes a new
// chunk only after its last one went out. On host and dry the streams are 0 and the events
// inert: every copy has finished when its call returns, so the order is the program's.
#pragma once
#include <vector>

#include "harness/device/device.hpp"
#include "harness/device/stream_event.hpp"

namespace oomlab::model {

class OffloadStreams {
 public:
  OffloadStreams(Device& device, int slots);
  ~OffloadStreams();  // waits for the last copy out, then destroys the streams
  OffloadStreams(const OffloadStreams&) = delete;
  OffloadStreams& operator=(const OffloadStreams&) = delete;

  memory::StreamHandle in() const { return in_; }
  memory::StreamHandle out() const { return out_; }

  // The host state the previous update wrote must be out before this update reads it.
  void begin_update();
  // Before copying a chunk into `slot`: its previous chunk has been copied out.
  void before_load(int slot);
  // The chunk is in: the compute stream waits for it.
  void loaded(int slot);
  // The update of the chunk is queued on the compute stream: the out stream waits for it.
  void updated(int slot);
  // The chunk's copies out are queued: the slot is free once they finish.
  void stored(int slot);
  void end_update();

 private:
  Device& device_;
  memory::StreamHandle in_ = 0, out_ = 0;
  std::vector<StreamEvent> loaded_, updated_, freed_;
  StreamEvent update_done_;
};

}  // namespace oomlab::model
