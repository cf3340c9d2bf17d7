// Several recordings of one program at different values of a knob (batch, seq), aligned request
// by request and fitted, so the trace at any other value can be written down and replayed.
//
// Alignment: every recording is diffed against the reference (the one at the largest value) on
// the requests' keys (program_trace.hpp): a longest common subsequence, not positions, so a few
// extra requests in one recording shift nothing. An alloc is aligned when it is matched in every
// recording and its free (and free_requested) is matched to the partner's: same place, same
// lifetime. Frees in one run between the same two requests are paired by their allocs, in
// whatever order they came (autocast empties its cache in hash order). The diff runs twice, by
// (action, stack) and with blocks returned in place (ProgramRequest::in_place) keyed apart, and
// the one that fits more allocs is kept: cuDNN's workspace shares its output's frames, and
// comes and goes with the algorithm. What is not aligned is classified:
//  - workspace: asked for in library code (no Python frame at all, as in the backward pass, or the
//    innermost one in torch or another library, as cuDNN's inside conv2d) and freed within
//    kWorkspaceWindow requests or returned in place: scratch memory taken and returned around one
//    kernel (GPT-2 makes 100 more of these at batch 1 than at batch 2; cuDNN picks other
//    algorithms per shape). Left out of the trace; their effect is bounded
//    (Extrapolation::unaligned_bound).
//  - unaligned: no user frame but longer-lived (a library choosing another algorithm keeps its
//    buffer longer): left out and bounded the same way, and listed with its site.
//  - any other request with a frame in the program's own code that is not aligned: the program
//    itself did something else at another knob value. That cannot be extrapolated:
//    MisalignedRequest names the request and the Python line in both recordings.
// Sizes: each aligned alloc's recorded sizes are fitted (size_fit.hpp). One that no exact
// integer polynomial fits is listed with its site and is either
//  - a workspace (frameless and short-lived: a library choosing another workspace at another
//    shape): left out and bounded like the unaligned ones, or
//  - `unfitted` (a data-dependent size in the program's own code): kept in the trace at an
//    estimate (the line through the two largest values, never below the largest recorded size).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/extrapolate/knob_points.hpp"
#include "harness/extrapolate/program_trace.hpp"
#include "harness/extrapolate/size_fit.hpp"
#include "harness/replay/snapshot_events.hpp"

namespace oomlab::extrapolate {

// Requests from alloc to free (inclusive of neither) within which a frameless request counts as a
// workspace: an op's output and its scratch, not a tensor that outlives the op.
constexpr std::size_t kWorkspaceWindow = 32;

// The recordings make different requests in the program's own code: one line, naming the
// request and its Python line in one recording and what the other has at that place.
class MisalignedRequest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class RequestRole : std::uint8_t {
  fitted,     // aligned, size an exact polynomial of the knob
  unfitted,   // aligned, no exact polynomial: an estimate
  workspace,  // not aligned, frameless, short-lived: left out, bounded
  unaligned,  // not aligned, frameless, long-lived: left out, bounded, listed
  other,      // frees and empty_cache: follow their alloc / kept
};

struct UnfittedRequest {
  std::size_t request = 0;            // in the reference trace
  std::string site;
  std::string what;  // "sizes 1.00MiB, 2.50MiB, 3.10MiB at batch=1,2,4: ..." / "not in every recording ..."
  bool left_out = false;              // bounded (unaligned, or a workspace whose size fits nothing), else estimated
};

struct Extrapolation {
  KnobPoints knob;
  FitMode mode = FitMode::automatic;
  std::vector<ProgramTrace> traces;   // in the files' order
  std::size_t reference = 0;          // the trace at the largest knob value
  std::vector<RequestRole> roles;     // by reference request
  std::vector<SizeFit> fits;          // by reference request (allocs that are fitted or unfitted)
  std::vector<std::uint64_t> at_least;  // unfitted: the largest recorded size

  std::size_t allocs = 0, fitted = 0, fitted_quadratic = 0, checked = 0;
  std::size_t workspaces = 0;
  std::vector<UnfittedRequest> unfitted;    // unfitted and unaligned, in order
  // Frameless requests the other recordings make that the reference does not ("100 more at
  // batch=1"), by trace.
  std::vector<std::size_t> extra_requests;
  // By trace: the most bytes (rounded as allocated) its left-out requests held at any one time
  // (the reference's workspaces and unaligned requests; another's extra requests and its
  // partners of those).
  std::vector<std::uint64_t> left_out_live_bytes;
  std::vector<std::string> notes;
  // The reference recording put blocks in private pools (a CUDA graph's, a torch.cuda.MemPool's):
  // the synthesised trace carries no pools, so its replay is the default pool's, an estimate.
  bool private_pools = false;

  const ProgramTrace& reference_trace() const { return traces[reference]; }
  std::int64_t reference_knob() const { return traces[reference].knob; }
  // Every request aligned and fitted, and no private pools: the trace at any knob value is exact.
  bool exact() const;
  // Some request is in the trace at an estimated size: the peaks are estimates too.
  bool estimated() const;
  // Bytes the left-out requests may add at `at`: the largest of each recording's, scaled by
  // at / its knob value when larger (a workspace grows no faster than the knob: assumed, said).
  std::uint64_t unaligned_bound(std::int64_t at) const;
};

// Throws MisalignedRequest; std::invalid_argument when the recordings cannot be compared at all
// (different devices traced, different allocator settings are noted, not refused).
Extrapolation extrapolation(KnobPoints knob, std::vector<ProgramTrace> traces, FitMode mode);

// The trace at knob value `at`: the reference's requests in its order, fitted sizes evaluated
// (fresh addresses; streams and frames kept), left-out requests and their frees dropped.
// Throws std::invalid_argument when a fitted size is below 1 byte at `at`, and std::range_error
// when one is more than any GPU holds.
replay::DeviceEvents synthesise(const Extrapolation& model, std::int64_t at);

}  // namespace oomlab::extrapolate
