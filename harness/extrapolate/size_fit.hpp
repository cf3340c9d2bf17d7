// A request's size as an exact integer polynomial of the knob: size = a + b*k (+ c*k^2), from the
// sizes recorded at the knob points. Integer coefficients are required, not assumed: a tensor's
// bytes are a product of whole extents and an element size, so for a request that follows one
// formula every divided difference divides exactly; one that does not is not fitted.
//
// Sizes are what the trace records for an alloc: the bytes the program asked for, before the
// allocator's rounding (snapshot_events.hpp). Fitting those is what makes the fit exact: the
// rounded block size (multiples of 512 B, or roundup_power2_divisions) is a step function of the
// knob, not a polynomial; the replay rounds the synthesised request as PyTorch would.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlab::extrapolate {

enum class FitMode {
  automatic,  // affine; quadratic when affine does not fit and there are three points or more
  affine,
  quadratic,  // needs three points
};

struct SizeFit {
  int degree = 0;           // 0 constant, 1 affine, 2 quadratic
  std::int64_t a = 0, b = 0, c = 0;
  bool checked = false;     // more points than the degree needs, and they agreed
  std::string formula(const std::string& knob) const;  // "1024 + 3072*batch"
};

// Points are (knob value, size), knob values distinct. nullopt: no polynomial of the degrees the
// mode allows has integer coefficients through every point, or only a quadratic with a negative
// square or linear term, which no tensor's size (a product of growing extents) has.
std::optional<SizeFit> fit_size(const std::vector<std::int64_t>& knob, const std::vector<std::uint64_t>& sizes,
                                FitMode mode);

// The size at `k`; nullopt when it would be below 1 byte or more than any GPU holds.
std::optional<std::uint64_t> size_at(const SizeFit& fit, std::int64_t k);

}  // namespace oomlab::extrapolate
