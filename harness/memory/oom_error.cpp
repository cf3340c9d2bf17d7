// The OOM exception: PyTorch's message plus a diagnosis and the remedy to try next.
#include "harness/memory/oom_error.hpp"

#include "harness/memory/alloc_config.hpp"
#include "harness/memory/budget.hpp"
#include "harness/memory/size.hpp"

namespace oomlab::memory {
namespace {

bool fits(std::size_t used, std::size_t request, std::size_t extra, std::size_t budget) {
  // used + request + extra <= budget without overflowing.
  if (used > budget) return false;
  std::size_t room = budget - used;
  if (request > room) return false;
  return extra <= room - request;
}

}  // namespace

const char* diagnosis_name(Diagnosis d) {
  switch (d) {
    case Diagnosis::capacity: return "capacity";
    case Diagnosis::fragmentation: return "fragmentation";
    case Diagnosis::external: return "external";
    case Diagnosis::leak: return "leak";
  }
  return "unknown";
}

// The decision tree. Fragmentation first: the bytes are cached but in pieces too small.
// External next: the program alone would fit, the memory used outside the allocator makes it
// not. Otherwise the program simply needs more than the budget. Segment rounding (a 20 MiB
// segment for a 2 MiB request at the edge of the budget) counts as fragmentation too: the bytes
// fit, the shapes the cache holds do not, and the same remedies apply.
namespace {

std::size_t live_bytes(const OomInfo& info, Tag tag) { return info.tag_allocated[static_cast<int>(tag)]; }

// Bytes of training state (gradients and optimizer moments) live or asked for.
std::size_t training_state(const OomInfo& info) {
  const bool asks_for_state = info.tag == Tag::optimizer || info.tag == Tag::grads;
  return live_bytes(info, Tag::grads) + live_bytes(info, Tag::optimizer) + (asks_for_state ? info.requested : 0);
}

// Whether the run trains the whole model: its gradients and moments are at least an eighth of
// the weights (a whole model's are as large as the weights or larger; a LoRA adapter's are a
// few percent). Then weights, gradients and moments fill the card together, whichever tag failed.
bool trains_the_whole_model(const OomInfo& info) {
  const std::size_t state = training_state(info);
  return state > 0 && state >= live_bytes(info, Tag::weights) / 8;
}

std::string state_at_oom(const OomInfo& info) {
  return "weights " + format_size(live_bytes(info, Tag::weights)) + ", gradients " +
         format_size(live_bytes(info, Tag::grads)) + ", optimizer " + format_size(live_bytes(info, Tag::optimizer)) +
         " when it ran out";
}

// What to shrink depends on what fills the card: the failing request's tag when it outweighs
// every live tag (a whole checkpoint asked for at once), else the largest live tag.
std::string capacity_remedy(const OomInfo& info) {
  const std::size_t largest_live = info.tag_allocated[static_cast<int>(info.largest_tag)];
  const Tag dominant = info.requested >= largest_live ? info.tag : info.largest_tag;
  const bool model_state = dominant == Tag::weights || dominant == Tag::optimizer || dominant == Tag::grads;
  if (model_state && trains_the_whole_model(info)) {
    // A bf16-mixed 7B failing on its optimizer with the weights the largest tag was told to load
    // the weights in a smaller dtype: the training state is what does not fit.
    return "the model's training state does not fit (" + state_at_oom(info) + "): train LoRA adapters on a "
           "frozen (or int8) base, keep the optimizer moments in 8 bits (adamw8bit), offload the optimizer state "
           "to the CPU, or shard weights, gradients and moments over several GPUs (ZeRO-3 / FSDP)";
  }
  if (dominant == Tag::weights && training_state(info) > 0) {
    // Training with a little state beside large weights: adapters on a frozen base (or the first
    // layer's gradients of a whole-model run): told apart only by the person who wrote the run.
    return "the frozen weights fill the card beside the training (" + state_at_oom(info) + "): training "
           "adapters, quantise the base (4-bit NF4 as QLoRA does, or int8 per row) or keep some layers on the "
           "CPU; training the whole model, its gradients and moments need as much again: train LoRA adapters "
           "instead, keep the moments in 8 bits, or shard over several GPUs";
  }
  switch (dominant) {
    case Tag::weights:
      return "the weights do not fit: load them in a smaller dtype (bf16 halves f32, int8 per row "
             "quarters it), stream them tensor by tensor instead of reading or uploading the whole "
             "checkpoint first, or keep some layers on the CPU";
    case Tag::optimizer:
      return "the optimizer state does not fit: offload it to pinned CPU memory and stream it "
             "through the update, or keep f32 master weights only where the model is not f32";
    case Tag::activations:
      return "the activations do not fit: reduce the batch size (or keep it with gradient "
             "accumulation), use mixed precision (bf16), recompute activations (checkpointing), "
             "or run evaluation without keeping them (the no_grad inference forward)";
    default:
      return "the working set does not fit: reduce the batch size (or keep it with gradient "
             "accumulation), use mixed precision (bf16), recompute activations (checkpointing), or "
             "offload optimizer state / weights to the CPU";
  }
}

}  // namespace

namespace {

// The fragmentation remedies, without those already in use.
std::string fragmentation_remedy(const OomInfo& info) {
  std::string remedy;
  if (!info.max_split_size_set) {
    remedy += "set OOMLAB_ALLOC_CONF=max_split_size_mb:<just above your common block size> so large "
              "cached blocks are not split; ";
  }
  if (!info.expandable_segments) {
    remedy += "set expandable_segments:true so freed space coalesces into one mapped range; ";
  }
  remedy += "call empty_cache() at phase boundaries (between training and validation)";
  if (info.max_split_size_set && info.expandable_segments) {
    remedy += "; max_split_size_mb and expandable segments are already on, so lowering the peak "
              "(a smaller batch) is what is left";
  }
  return remedy;
}

}  // namespace

void diagnose(OomInfo& info) {
  if (info.diagnosis == Diagnosis::leak) {
    info.remedy =
        "memory grows every step: find what keeps references across steps (the largest tag "
        "names it), release it or detach it from the step's graph";
    return;
  }
  const bool capped = info.budget != AllocatorConfig::kUnlimited;
  const std::size_t unallocated = info.reserved > info.allocated ? info.reserved - info.allocated : 0;
  const bool pieces_too_small = info.largest_free_block < info.requested && info.requested <= unallocated;
  bool fits_alone = false, fits_with_external = false;
  if (info.need_allocated > 0) {
    // The whole run's peak decides: a request that fails while the run's bytes fit is a cache
    // of the wrong shape, however large the request.
    fits_alone = fits(info.need_allocated, 0, 0, info.budget);
    fits_with_external = fits(info.need_allocated, 0, info.external, info.budget);
  } else {
    fits_alone = fits(info.allocated, info.requested, 0, info.budget);
    fits_with_external = fits(info.allocated, info.requested, info.external, info.budget);
  }
  const bool wrong_shape = (fits_with_external && capped) || (info.need_allocated == 0 && pieces_too_small);
  if (wrong_shape) {
    info.diagnosis = Diagnosis::fragmentation;
    info.remedy = fragmentation_remedy(info);
  } else if (info.external > 0 && fits_alone) {
    info.diagnosis = Diagnosis::external;
    info.remedy =
        "memory is used outside this allocator: look for other processes on the device "
        "(nvidia-smi), extra CUDA contexts (one per device a process touches), or library "
        "workspaces not drawn from the allocator; free them or lower the budget they share";
  } else {
    info.diagnosis = Diagnosis::capacity;
    info.remedy = capacity_remedy(info);
  }
}

OomError::OomError(OomInfo info) : info_(std::move(info)) {
  std::size_t unallocated =
      info_.reserved > info_.allocated ? info_.reserved - info_.allocated : 0;
  message_ = "oomlab: out of memory: tried to allocate " + format_size(info_.requested) +
             " (tag " + tag_name(info_.tag) + ")" +
             (info_.site.empty() ? std::string() : " in " + info_.site) + "; budget " +
             format_budget(info_.budget) + "; " +
             format_size(info_.allocated) + " allocated; " + format_size(unallocated) +
             " reserved but unallocated; largest free block " +
             format_size(info_.largest_free_block);
  if (info_.external > 0) message_ += "; " + format_size(info_.external) + " used outside the allocator";
  if (info_.need_allocated > 0) {
    message_ += "; the whole run needs " + format_size(info_.need_allocated) +
                " in live tensors at its peak (" + format_size(info_.need_reserved) + " reserved)";
  }
  if (info_.allocated > 0) {
    message_ += std::string("; largest tag ") + tag_name(info_.largest_tag) + " (" +
                format_size(info_.tag_allocated[static_cast<int>(info_.largest_tag)]) + ")";
  }
  message_ += std::string("; diagnosis: ") + diagnosis_name(info_.diagnosis) + " \xE2\x80\x94 remedy: " +
              info_.remedy;
}

}  // namespace oomlab::memory
