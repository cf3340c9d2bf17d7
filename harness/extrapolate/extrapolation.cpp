#include "harness/extrapolate/extrapolation.hpp"

#include <algorithm>
#include <utility>

#include "harness/extrapolate/sequence_diff.hpp"
#include "harness/memory/alloc_rounding.hpp"
#include "harness/memory/size.hpp"
#include "harness/replay/allocation_sites_frames.hpp"
#include "harness/replay/replay_pools.hpp"
#include "harness/replay/replay_settings.hpp"
#include "harness/replay/trace_bytes.hpp"

namespace oomlab::extrapolate {
namespace {

using replay::ReplayEventKind;

// Partners of each reference request in one other trace, and back.
struct Pairing {
  std::vector<std::size_t> partner;  // by reference request
  std::vector<std::size_t> back;     // by the other trace's request
};

// The requests' keys; `by_lifetime`: an alloc returned in place (and its frees) keyed apart
// from the others of its stack, so an op's workspace is not paired with its output.
std::vector<std::uint64_t> keys_of(const ProgramTrace& trace, bool by_lifetime) {
  std::vector<std::uint64_t> keys;
  keys.reserve(trace.requests.size());
  for (const ProgramRequest& request : trace.requests) {
    const std::size_t alloc = request.kind == ReplayEventKind::alloc ? keys.size() : request.alloc;
    const bool in_place = by_lifetime && alloc != kNoRequest && trace.requests[alloc].in_place;
    keys.push_back(in_place ? request.key * 1099511628211ull + 0x9e3779b97f4a7c15ull : request.key);
  }
  return keys;
}

// By request: the last request before it that is no free and is paired (kNoRequest: none). The
// frees between two such requests are one run, whatever unpaired workspaces come between.
std::vector<std::size_t> run_anchors(const ProgramTrace& trace, const std::vector<std::size_t>& paired_with) {
  std::vector<std::size_t> anchor(trace.requests.size(), kNoRequest);
  std::size_t last = kNoRequest;
  for (std::size_t r = 0; r < trace.requests.size(); ++r) {
    anchor[r] = last;
    if (!is_free(trace.requests[r].kind) && paired_with[r] != kUnmatched) last = r;
  }
  return anchor;
}

// A run of frees may come in another order at each run (autocast empties its cast cache in hash
// order): within runs that follow partner requests, each free is paired with the free of its
// alloc's partner, whatever the diff paired it with.
void pair_frees_within_runs(const ProgramTrace& reference, const ProgramTrace& other, Pairing& pairing) {
  const std::vector<std::size_t> ref_anchor = run_anchors(reference, pairing.partner);
  const std::vector<std::size_t> other_anchor = run_anchors(other, pairing.back);
  for (std::size_t f = 0; f < reference.requests.size(); ++f) {
    const ProgramRequest& request = reference.requests[f];
    if (!is_free(request.kind) || request.alloc == kNoRequest) continue;
    if (pairing.partner[request.alloc] == kUnmatched) continue;
    const std::size_t p = pairing.partner[request.alloc];
    const std::size_t q = request.kind == ReplayEventKind::free ? other.free_of[p] : other.free_requested_of[p];
    if (q == kNoRequest || pairing.partner[f] == q) continue;
    const std::size_t anchor = ref_anchor[f];
    if ((anchor == kNoRequest ? kNoRequest : pairing.partner[anchor]) != other_anchor[q]) continue;
    if (pairing.partner[f] != kUnmatched) pairing.back[pairing.partner[f]] = kNoRequest;
    if (pairing.back[q] != kNoRequest) pairing.partner[pairing.back[q]] = kUnmatched;
    pairing.partner[f] = q;
    pairing.back[q] = f;
  }
}

Pairing pair(const ProgramTrace& reference, const ProgramTrace& other, bool by_lifetime) {
  Pairing pairing;
  pairing.partner = match_sequences(keys_of(reference, by_lifetime), keys_of(other, by_lifetime));
  pairing.back.assign(other.requests.size(), kNoRequest);
  for (std::size_t r = 0; r < pairing.partner.size(); ++r) {
    if (pairing.partner[r] != kUnmatched) pairing.back[pairing.partner[r]] = r;
  }
  pair_frees_within_runs(reference, other, pairing);
  return pairing;
}

std::size_t partner_of(const Pairing& pairing, std::size_t request) {
  return request == kNoRequest ? kNoRequest : pairing.partner[request];
}

// The alloc is matched and so are its frees, to the partner's own frees.
bool same_lifetime(const ProgramTrace& reference, const ProgramTrace& other, const Pairing& pairing, std::size_t r) {
  const std::size_t p = pairing.partner[r];
  if (p == kNoRequest) return false;
  const auto partner_or_none = [&](std::size_t request) {
    const std::size_t q = partner_of(pairing, request);
    return q == kUnmatched ? kNoRequest : q;
  };
  return partner_or_none(reference.free_of[r]) == other.free_of[p] &&
         partner_or_none(reference.free_requested_of[r]) == other.free_requested_of[p];
}

// What `trace` has where `counterpart` lacks a match: the first request after the last matched
// one before `request`.
std::string at_that_place(const ProgramTrace& trace, const std::vector<std::size_t>& matches,
                          const ProgramTrace& other, std::size_t request) {
  std::size_t place = 0;
  for (std::size_t q = request; q-- > 0;) {
    if (matches[q] != kNoRequest) {
      place = matches[q] + 1;
      break;
    }
  }
  (void)trace;
  return describe_program_request(other, place);
}

std::string knob_at(const Extrapolation& model, const ProgramTrace& trace) {
  return model.knob.name + "=" + std::to_string(trace.knob);
}

std::string request_name(const ProgramTrace& trace, std::size_t request) {
  return "request " + std::to_string(request) + " of " + trace.file + " (trace entry " +
         std::to_string(trace.events.events[trace.requests[request].event].trace_index) + ": " +
         describe_program_request(trace, request) + ")";
}

[[noreturn]] void misaligned(const Extrapolation& model, const ProgramTrace& trace, std::size_t request,
                             const ProgramTrace& other, const std::vector<std::size_t>& matches, bool lifetime) {
  std::string what = request_name(trace, request);
  if (lifetime) {
    what += " is freed at another place in " + other.file + " (" + knob_at(model, other) + ")";
  } else {
    what += " has no counterpart in " + other.file + " (" + knob_at(model, other) + "; there at that place: " +
            at_that_place(trace, matches, other, request) + ")";
  }
  throw MisalignedRequest(what + ": the program's own code makes other requests at another " + model.knob.name +
                          ", so its trace cannot be extrapolated (same script, same steps, same settings?)");
}

std::string sizes_text(const Extrapolation& model, std::size_t r, const std::vector<Pairing>& pairings) {
  std::string sizes, values;
  for (std::size_t t = 0; t < model.traces.size(); ++t) {
    const std::size_t p = t == model.reference ? r : pairings[t].partner[r];
    sizes += (sizes.empty() ? "" : ", ") + format_size(model.traces[t].size(p));
    values += (values.empty() ? "" : ",") + std::to_string(model.traces[t].knob);
  }
  return "sizes " + sizes + " at " + model.knob.name + "=" + values + ": no exact integer " +
         (model.mode == FitMode::affine ? "line" : "polynomial");
}

// The line through the two largest knob values: an estimate for a size no polynomial fits.
SizeFit estimate(const std::vector<std::int64_t>& knob, const std::vector<std::uint64_t>& sizes) {
  std::vector<std::size_t> order(knob.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t i, std::size_t j) { return knob[i] > knob[j]; });
  const std::size_t hi = order[0], lo = order[1];
  SizeFit fit;
  fit.degree = 1;
  const auto rise = static_cast<__int128>(sizes[hi]) - static_cast<__int128>(sizes[lo]);
  const __int128 run = knob[hi] - knob[lo];
  fit.b = static_cast<std::int64_t>(rise > 0 ? (rise + run - 1) / run : 0);  // growth rounded up
  fit.a = static_cast<std::int64_t>(static_cast<__int128>(sizes[hi]) - static_cast<__int128>(fit.b) * knob[hi]);
  return fit;
}

void check_comparable(const std::vector<ProgramTrace>& traces, Extrapolation& model) {
  const ProgramTrace& first = traces.front();
  const std::string first_conf = replay::snapshot_settings(first.snapshot).config.to_string();
  for (const ProgramTrace& trace : traces) {
    if (trace.events.device != first.events.device) {
      throw std::invalid_argument(first.file + " traces device " + std::to_string(first.events.device) + " and " +
                                  trace.file + " device " + std::to_string(trace.events.device) +
                                  ": record the same device (or pick it with --device)");
    }
    const std::string conf = replay::snapshot_settings(trace.snapshot).config.to_string();
    if (conf != first_conf) {
      model.notes.push_back(trace.file + " was recorded with other allocator settings (" + conf + " vs " + first_conf +
                            "); the reference's are used");
    }
  }
}

// The most bytes the allocs `left_out` picks held at one time (from alloc to the first of its
// free_requested and free).
template <typename LeftOut>
std::uint64_t left_out_peak(const ProgramTrace& trace, LeftOut left_out, const memory::RoundupTable& roundup) {
  std::vector<bool> held(trace.requests.size(), false);
  std::uint64_t live = 0, peak = 0;
  for (std::size_t r = 0; r < trace.requests.size(); ++r) {
    const ProgramRequest& request = trace.requests[r];
    const std::size_t alloc = request.kind == ReplayEventKind::alloc ? r : request.alloc;
    if (alloc == kNoRequest || request.kind == ReplayEventKind::empty_cache || !left_out(alloc)) continue;
    const std::uint64_t bytes = memory::round_request(static_cast<std::size_t>(trace.size(alloc)), roundup);
    if (request.kind == ReplayEventKind::alloc) {
      held[r] = true;
      live += bytes;
      peak = std::max(peak, live);
    } else if (held[alloc]) {
      held[alloc] = false;
      live -= bytes;
    }
  }
  return peak;
}

// Aligns every recording with the reference and fits the sizes, filling `model` from its traces
// (everything but knob, mode, traces, reference, private_pools and notes). Throws MisalignedRequest.
void align_and_fit(Extrapolation& model, bool by_lifetime) {
  model.allocs = model.fitted = model.fitted_quadratic = model.checked = model.workspaces = 0;
  model.unfitted.clear();
  const ProgramTrace& ref = model.reference_trace();
  std::vector<Pairing> pairings(model.traces.size());
  for (std::size_t t = 0; t < model.traces.size(); ++t) {
    if (t != model.reference) pairings[t] = pair(ref, model.traces[t], by_lifetime);
  }
  std::vector<std::int64_t> knob_values;
  for (const ProgramTrace& trace : model.traces) knob_values.push_back(trace.knob);

  const std::size_t n = ref.requests.size();
  model.roles.assign(n, RequestRole::other);
  model.fits.assign(n, SizeFit{});
  model.at_least.assign(n, 0);
  std::vector<std::uint64_t> sizes(model.traces.size());
  for (std::size_t r = 0; r < n; ++r) {
    const ProgramRequest& request = ref.requests[r];
    if (request.kind != ReplayEventKind::alloc) continue;
    ++model.allocs;
    const bool short_lived = ref.workspace_like(r, kWorkspaceWindow);
    bool aligned = true;
    for (std::size_t t = 0; t < model.traces.size() && aligned; ++t) {
      if (t == model.reference || same_lifetime(ref, model.traces[t], pairings[t], r)) continue;
      aligned = false;
      if (request.user_frame && !short_lived) {
        misaligned(model, ref, r, model.traces[t], pairings[t].partner, pairings[t].partner[r] != kUnmatched);
      }
    }
    if (!aligned) {
      model.roles[r] = short_lived ? RequestRole::workspace : RequestRole::unaligned;
      if (short_lived) {
        ++model.workspaces;
      } else {
        model.unfitted.push_back({r, replay::site_of(ref.snapshot.stacks, ref.frames(r)),
                                  "not in every recording, and live longer than a workspace: left out, bounded", true});
      }
      continue;
    }
    for (std::size_t t = 0; t < model.traces.size(); ++t) {
      sizes[t] = model.traces[t].size(t == model.reference ? r : pairings[t].partner[r]);
    }
    if (const std::optional<SizeFit> fit = fit_size(knob_values, sizes, model.mode)) {
      model.roles[r] = RequestRole::fitted;
      model.fits[r] = *fit;
      ++model.fitted;
      model.fitted_quadratic += fit->degree == 2;
      model.checked += fit->checked;
    } else if (short_lived) {
      model.roles[r] = RequestRole::workspace;
      ++model.workspaces;
      model.unfitted.push_back({r, replay::site_of(ref.snapshot.stacks, ref.frames(r)),
                                sizes_text(model, r, pairings) + "; a workspace: left out, bounded", true});
    } else {
      model.roles[r] = RequestRole::unfitted;
      model.fits[r] = estimate(knob_values, sizes);
      model.at_least[r] = *std::max_element(sizes.begin(), sizes.end());
      model.unfitted.push_back({r, replay::site_of(ref.snapshot.stacks, ref.frames(r)),
                                sizes_text(model, r, pairings) + "; in the trace at an estimate", false});
    }
  }

  // The other recordings' own requests: workspaces and frameless ones are counted, others stop
  // the run.
  model.extra_requests.assign(model.traces.size(), 0);
  for (std::size_t t = 0; t < model.traces.size(); ++t) {
    if (t == model.reference) continue;
    const ProgramTrace& other = model.traces[t];
    for (std::size_t j = 0; j < other.requests.size(); ++j) {
      if (other.requests[j].kind != ReplayEventKind::alloc || pairings[t].back[j] != kNoRequest) continue;
      if (other.requests[j].user_frame && !other.workspace_like(j, kWorkspaceWindow)) {
        misaligned(model, other, j, ref, pairings[t].back, false);
      }
      ++model.extra_requests[t];
    }
  }

  // The left-out requests' bytes over each run: what they may add to any peak.
  const memory::RoundupTable roundup = replay::snapshot_settings(ref.snapshot).config.roundup_power2_divisions;
  model.left_out_live_bytes.assign(model.traces.size(), 0);
  for (std::size_t t = 0; t < model.traces.size(); ++t) {
    const auto left_out = [&](std::size_t alloc) {
      const std::size_t r = t == model.reference ? alloc : pairings[t].back[alloc];
      return r == kNoRequest || model.roles[r] == RequestRole::workspace || model.roles[r] == RequestRole::unaligned;
    };
    model.left_out_live_bytes[t] = left_out_peak(model.traces[t], left_out, roundup);
  }
}

}  // namespace

bool Extrapolation::estimated() const {
  return std::any_of(unfitted.begin(), unfitted.end(), [](const UnfittedRequest& u) { return !u.left_out; });
}

bool Extrapolation::exact() const {
  return !private_pools && unfitted.empty() && workspaces == 0 &&
         std::all_of(extra_requests.begin(), extra_requests.end(), [](std::size_t n) { return n == 0; });
}

std::uint64_t Extrapolation::unaligned_bound(std::int64_t at) const {
  __int128 bound = 0;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    const std::int64_t base = traces[t].knob;
    const __int128 live = left_out_live_bytes[t];
    bound = std::max(bound, at <= base ? live : (live * at + base - 1) / base);
  }
  return static_cast<std::uint64_t>(std::min<__int128>(bound, replay::kMostDeviceBytes));
}

Extrapolation extrapolation(KnobPoints knob, std::vector<ProgramTrace> traces, FitMode mode) {
  Extrapolation model;
  model.knob = std::move(knob);
  model.mode = mode;
  check_comparable(traces, model);
  model.traces = std::move(traces);
  for (std::size_t t = 1; t < model.traces.size(); ++t) {
    if (model.traces[t].knob > model.traces[model.reference].knob) model.reference = t;
  }
  const ProgramTrace& ref = model.traces[model.reference];
  model.private_pools = replay::trace_segments(ref.events, ref.snapshot).has_private_pools;
  if (model.private_pools) {
    model.notes.push_back("the recordings use private pools (CUDA graphs or torch.cuda.MemPool); the prediction "
                          "replays every block in the default pool, so its peaks are an estimate, not exact");
  }
  if (ref.snapshot.stacks.stack_count() <= 1) {
    model.notes.push_back("the snapshots have no stacks: requests are aligned by action alone, and a program that "
                          "changes with the knob cannot be told apart; record with "
                          "torch.cuda.memory._record_memory_history(stacks=\"python\") or the default \"all\"");
  }
  // Aligned twice: by stack and action alone, and with the blocks an op returns before it ends
  // keyed apart (where a workspace shares its output's frames, the first may pair one run's
  // output with another's workspace). The alignment that fits more requests is kept.
  std::optional<MisalignedRequest> plain_error;
  try {
    align_and_fit(model, false);
  } catch (const MisalignedRequest& e) {
    plain_error = e;
  }
  if (!plain_error && model.fitted == model.allocs) return model;
  std::vector<ProgramTrace> recordings = std::move(model.traces);
  Extrapolation by_lifetime = model;  // without the traces: a copy of the counts, not the snapshots
  by_lifetime.traces = std::move(recordings);
  try {
    align_and_fit(by_lifetime, true);
  } catch (const MisalignedRequest&) {
    if (plain_error) throw *plain_error;
    model.traces = std::move(by_lifetime.traces);
    return model;
  }
  if (plain_error || by_lifetime.fitted > model.fitted) {
    by_lifetime.notes.push_back("aligned with the blocks an op returns before it ends (library workspaces) told "
                                "apart from the blocks it hands back under the same Python lines");
    return by_lifetime;
  }
  model.traces = std::move(by_lifetime.traces);
  return model;
}

replay::DeviceEvents synthesise(const Extrapolation& model, std::int64_t at) {
  const ProgramTrace& ref = model.reference_trace();
  replay::DeviceEvents out;
  out.device = ref.events.device;
  out.events.reserve(ref.requests.size());
  std::vector<std::size_t> event_of(ref.requests.size(), replay::kNoEvent);
  std::uint64_t next_address = std::uint64_t{1} << 44;  // fresh addresses: nothing reads them but messages
  for (std::size_t r = 0; r < ref.requests.size(); ++r) {
    const ProgramRequest& request = ref.requests[r];
    const replay::ReplayEvent& recorded = ref.events.events[request.event];
    replay::ReplayEvent event;
    event.kind = request.kind;
    event.trace_index = recorded.trace_index;
    event.stream = recorded.stream;
    event.time_us = recorded.time_us;
    event.frames = recorded.frames;
    if (request.kind == ReplayEventKind::alloc) {
      const RequestRole role = model.roles[r];
      if (role != RequestRole::fitted && role != RequestRole::unfitted) continue;
      const SizeFit& fit = model.fits[r];
      std::optional<std::uint64_t> size = size_at(fit, at);
      if (!size && role == RequestRole::fitted) {
        const __int128 x = at;
        const bool too_large = static_cast<__int128>(fit.a) + fit.b * x + fit.c * x * x > 0;
        const std::string what = "at " + model.knob.name + "=" + std::to_string(at) + " request " + std::to_string(r) +
                                 " (" + replay::site_of(ref.snapshot.stacks, recorded.frames) + ", " +
                                 fit.formula(model.knob.name) + " bytes) would be ";
        if (too_large) throw std::range_error(what + "more than any GPU holds");
        throw std::invalid_argument(what + "below 1 byte: the value is outside what these recordings describe");
      }
      event.size = std::max(size.value_or(0), model.at_least[r]);
      event.addr = next_address;
      next_address += (event.size + 511) / 512 * 512;
      ++out.allocs;
    } else if (request.kind == ReplayEventKind::empty_cache) {
      ++out.empty_caches;
    } else {
      if (request.alloc == kNoRequest || event_of[request.alloc] == replay::kNoEvent) continue;
      event.alloc_event = event_of[request.alloc];
      event.addr = out.events[event.alloc_event].addr;
      event.size = out.events[event.alloc_event].size;
      out.frees += request.kind == ReplayEventKind::free;
    }
    event_of[r] = out.events.size();
    out.events.push_back(event);
  }
  return out;
}

}  // namespace oomlab::extrapolate
