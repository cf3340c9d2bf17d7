// Is a series of byte counts, one per step boundary, growing steadily? A robust slope fit that a
// few outliers, a periodic sawtooth, a one-time plateau or a warm-up that stops cannot fool.
//
// The fit, over the most recent `window` samples:
//  1. floor: the minimum of every `floor_span` consecutive samples, so memory that is allocated
//     and freed again within a few steps (gradient accumulation, a periodic eval buffer) drops
//     out and only what stays is fitted;
//  2. Theil-Sen slope of the floor (the median of all pairwise slopes: exact on a linear series,
//     unmoved by up to ~29% outliers), over the whole floor and over its recent half;
//  3. growth is steady when every test holds:
//     - the floor's slope reaches min_bytes_per_step;
//     - the recent half grows at least half as fast (a warm-up that stopped does not);
//     - the growth is significant: for some lag p in 1..floor_span, the median of the lag-p
//       differences y[k] - y[k-p] is at least min_significance standard errors above 0 (a
//       robust z from their MAD). A sawtooth of period p has constant lag-p differences, so
//       its growing floor is certain; pure noise has differences centred on 0;
//     - no single floor increase makes most of the rise (a plateau is one jump, a leak is many);
//  4. and all of this holds for the window ending at each of the last `confirm_samples`
//     samples, so one lucky window of noise is not enough.
// The reported bytes/step is the recent half's slope: a leak that started mid-window is
// measured at its own rate, not averaged with the flat part before it.
#pragma once
#include <cstdint>
#include <vector>

namespace oomlab::leak {

struct GrowthCriteria {
  int window = 16;                  // most recent samples fitted
  int floor_span = 4;               // samples per floor minimum (covers sawtooth periods <= 4)
  int min_floor_points = 8;         // no verdict before window has this many floor points
  double min_bytes_per_step = 1;    // any steady growth is a leak; raise to ignore small ones
  double min_significance = 6;      // robust z of the lag differences
  int confirm_samples = 2;          // consecutive windows that must agree. With 6 and 2: no
                                    // false alarm in 800 seeded noise runs (uniform, Gaussian)
                                    // judged at every sample, while a 2 MiB/step leak under
                                    // +-4 MiB noise is found in a 32-sample window
  double max_jump_fraction = 0.5;   // the largest single floor increase vs the total rise
};

struct GrowthFit {
  bool enough_samples = false;      // the latest window could be judged
  bool steady = false;              // steady growth: a leak
  double bytes_per_step = 0;        // the recent half's slope when steady, else the whole fit's
  double slope_whole = 0;           // Theil-Sen slope of the whole floor
  double slope_recent = 0;          // Theil-Sen slope of the floor's recent half
  double significance = 0;          // best robust z over the lags (infinite when exact)
  double largest_jump_fraction = 0; // largest single floor increase / floor rise
};

// Median of the pairwise slopes (y_j - y_i) / (x_j - x_i) over pairs with x_j != x_i; 0 with
// fewer than two distinct x. Exactly 0 for a constant series, exactly the slope of a linear one.
double theil_sen_slope(const std::vector<double>& x, const std::vector<double>& y);

// Fits the last criteria.window samples (steps ascending, one bytes value per step); the
// numbers are those of the latest window.
// Throws std::invalid_argument on mismatched lengths, unsorted steps or invalid criteria.
GrowthFit fit_growth(const std::vector<std::int64_t>& steps, const std::vector<std::int64_t>& bytes,
                     const GrowthCriteria& criteria = {});

}  // namespace oomlab::leak
