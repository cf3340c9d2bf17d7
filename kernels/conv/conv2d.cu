// conv2d on CUDA: forward, backward-data and backward-weight, as implicit GEMM.
//
// Each convolution is a GEMM C(M x N) = A(M x Kd) * B(Kd x N) whose operands are never
// materialised: implicit_gemm.cuh gathers A and B tiles straight from the NHWC/KRSC tensors
// into shared memory (padding and out-of-range taps read as zeros); the views below say where.
//   forward       M = n*p*q (output pixels)  N = k  Kd = r*s*c (c fastest)  A = x taps  B = w
//   backward-data M = n*h*w (input pixels)   N = c  Kd = r*s*k (k fastest)  A = dy taps B = w_t
//                 (stride > 1: one launch per stride phase of dx, over only the taps it meets;
//                 w_t: w transposed to C-RS-K before, so B runs along Kd as wgmma needs)
//   backward-weight, computed as dw^T:       M = r*s*c  N = k  Kd = n*p*q   A = x taps  B = dy
// The data passes' stores apply the epilogue (conv_epilogue.cuh: residual add, (leaky) ReLU or
// its gradient), so the SR-GAN's activations need no separate pass over the tensor.
// Backward-weight splits Kd into fixed ranges (plan_wgrad), each writing its own f32 partial,
// summed in order afterwards: deterministic, no atomics.
// With <= 4 channels on one side (the SR-GAN's RGB convs) no pass uses the GEMM: forward and
// backward-data run direct_narrow.cuh, backward-weight wgrad_small_channels.cuh (f32 FMAs over
// staged tiles; exact f32 products, also for f32 tensors).
//
// Engines and tile shapes (every dtype on tensor cores, f32 as TF32):
//   16-bit on Hopper, stride 1, by shifted windows (no gathers: staged input rows read at an
//   offset per tap): forward and backward-data of 3x3 convs with 64 channels in and out
//   (conv_shifted_sm90.cuh); backward-weight with <= 3 taps a kernel row and 64-channel
//   multiples (wgrad_shifted_sm90.cuh).
//   forward and backward-data with N >= 64 and 16-byte gathers of both operands on Hopper: wgmma
//   (implicit_gemm_sm90.cuh), 128 x 128 or 128 x 64 tiles.
//   else mma.sync (implicit_gemm.cuh), warp tiles of 64x32 where the shape allows:
//   forward / backward-data: N > 64: 128x128 (2x4 warps; f32 128x64 where a block has 99 KiB of
//   shared memory: 8.6, 8.9, 12.x); N > 16: 128x64 (4x2); N > 8: 256x16
//   (8x1); else 256x8 (8x1): narrow outputs waste at most 5 of 8 columns.
//   backward-weight (M = r*s*c is small, the splits give the parallelism): N > 16: 64x64 (2x2
//   warps; 16-bit: 128x128 for N >= 128, 128x64 for N >= 64); else 128x16 / 128x8 (8x1).
#include <algorithm>
#include <type_traits>

#include "kernels/conv/conv2d_launch.hpp"
#include "kernels/conv/conv_epilogue.cuh"
#include "kernels/conv/conv_shifted_sm90.cuh"
#include "kernels/conv/direct_narrow.hpp"
#include "kernels/conv/fast_divmod.cuh"
#include "kernels/conv/implicit_gemm.cuh"
#include "kernels/conv/implicit_gemm_sm90.cuh"
#include "kernels/conv/index_map.cuh"
#include "kernels/conv/reduce_kernels.cuh"
#include "kernels/conv/wgrad_shifted_sm90.cuh"
#include "kernels/conv/wgrad_small_channels.cuh"
#include "kernels/core/check.hpp"
#include "kernels/core/wgmma_device.hpp"

namespace oomlab::ops::detail {

namespace {

// ---- the three GEMM views of a convolution (see implicit_gemm.cuh for the contract) ----
//
// A tap's element offset is split into a part fixed per GEMM row (decoded once per kernel) and a
// part fixed per reduction index (decoded once per k-tile for operands contiguous along Kd), so a
// copy costs one bounds check and one add. A row or reduction index past the GEMM's end gets a
// coordinate of kNowhere: the bounds check that finds padding taps finds it too.
// (Unused in images without the implicit GEMM kernels: compute 7.5, device_image.cuh.)
[[maybe_unused]] constexpr int kNowhere = -(1 << 30);

// Whether pixel (h, w) lies inside an H x W image (padding taps fall outside).
[[maybe_unused]] __device__ __forceinline__ bool inside(int h, int w, int H, int W) {
  return static_cast<unsigned>(h) < static_cast<unsigned>(H) && static_cast<unsigned>(w) < static_cast<unsigned>(W);
}

template <class T>
struct ForwardGemm {
  using Elem = T;
  using Out = T;
  static constexpr bool kAAlongK = true;    // x taps: channels run along kk
  static constexpr bool kBAlongK = true;    // w[n, kk]
  static constexpr bool kOutAlongM = false; // y[m, n]
  const T* a;                               // x
  const T* b;                               // w
  const T* bias;                            // may be null
  T* out;                                   // y
  OutputEpilogue<T> epilogue;
  bool vector_out;
  int M, N, Kd;
  int H, W, C, stride, pad;
  FastDivmod div_q, div_p, div_c, div_s;

  // x[n, h0 + r, w0 + s, c] (h0 = p * stride - pad) = x[row.base + k.delta].
  struct ARow { std::int64_t base; int h0, w0; };
  __device__ ARow a_row(int m) const {
    int pq, q, n, p;
    div_q.divmod(m, pq, q);
    div_p.divmod(pq, n, p);
    const int h0 = p * stride - pad, w0 = q * stride - pad;
    return {((static_cast<std::int64_t>(n) * H + h0) * W + w0) * C, m < M ? h0 : kNowhere, w0};
  }
  struct AK { std::int64_t delta; int r, s; };
  __device__ AK a_k(int kk) const {
    int rs, c, r, s;
    div_c.divmod(kk, rs, c);
    div_s.divmod(rs, r, s);
    return {(static_cast<std::int64_t>(r) * W + s) * C + c, kk < Kd ? r : kNowhere, s};
  }
  __device__ Gather a_gather(const ARow& row, const AK& k) const {
    return {row.base + k.delta, inside(row.h0 + k.r, row.w0 + k.s, H, W)};
  }
  struct BRow { std::int64_t start; bool valid; };
  __device__ BRow b_row(int n) const { return {static_cast<std::int64_t>(n) * Kd, n < N}; }
  struct BK { int kk; bool valid; };
  __device__ BK b_k(int kk) const { return {kk, kk < Kd}; }
  __device__ Gather b_gather(const BRow& row, const BK& k) const {
    return {row.start + k.kk, row.valid && k.valid};
  }
  __device__ float out_value(int, int n, float value) const {
    return bias != nullptr ? value + to_f32(bias[n]) : value;
  }
  __device__ std::int64_t out_index(int m, int n) const { return static_cast<std::int64_t>(m) * N + n; }
};

// Backward-data, one stride phase per launch. With stride s, dx pixel (h, w) only meets taps
// r = (h + pad) mod s + s*i (likewise s): the other taps land between dy pixels. So dx pixels
// are split into s*s phases (h mod s, w mod s), each a GEMM over its own taps only: no work on
// the (s*s - 1)/(s*s) of taps that would read as zeros. Stride 1 is the one phase (0, 0).
template <class T>
struct BackwardDataGemm {
  using Elem = T;
  using Out = T;
  static constexpr bool kAAlongK = true;    // dy taps: output channels run along kk
  static constexpr bool kBAlongK = true;    // w_t[c, r, s, k]: k runs along kk
  static constexpr bool kOutAlongM = false; // dx[m, n]
  const T* a;                               // dy
  const T* b;                               // w_t
  T* out;                                   // dx
  OutputEpilogue<T> epilogue;
  bool vector_out;
  int M, N, Kd;                             // M: this phase's dx pixels; N is c; Kd: its taps * k
  int H, W, P, Q, S, RS, K, stride, pad;
  int phase_h, phase_w;                     // this phase: h = phase_h + stride * i
  int tap_r0, tap_s0;                       // its first taps: (phase + pad) mod stride
  FastDivmod div_w, div_h, div_k, div_s;    // by the phase's widths, k, and its taps along s

  // (image, i, j) of phase pixel m: dx pixel (phase_h + stride*i, phase_w + stride*j).
  __device__ void pixel(int m, int& n, int& h, int& w) const {
    int nh, j, i;
    div_w.divmod(m, nh, j);
    div_h.divmod(nh, n, i);
    h = phase_h + stride * i;
    w = phase_w + stride * j;
  }
  // p0, q0: the dy pixel tap (tap_r0, tap_s0) reads; tap index (ri, si) reads (p0 - ri, q0 - si):
  // dy[n, p0 - ri, q0 - si, k] = dy[row.base + k.delta].
  struct ARow { std::int64_t base; int p0, q0; };
  __device__ ARow a_row(int m) const {
    int n, h, w;
    pixel(m, n, h, w);
    const int p0 = (h + pad - tap_r0) / stride, q0 = (w + pad - tap_s0) / stride;
    return {((static_cast<std::int64_t>(n) * P + p0) * Q + q0) * K, m < M ? p0 : kNowhere, q0};
  }
  // Reduction index kk = (ri * taps_s + si) * K + k: the phase's tap (ri, si) and channel k.
  struct Tap { int ri, si, k; };
  __device__ Tap tap_of(int kk) const {
    Tap tap;
    int rs;
    div_k.divmod(kk, rs, tap.k);
    div_s.divmod(rs, tap.ri, tap.si);
    return tap;
  }
  struct AK { std::int64_t delta; int ri, si; };
  __device__ AK a_k(int kk) const {
    const Tap tap = tap_of(kk);
    return {tap.k - (static_cast<std::int64_t>(tap.ri) * Q + tap.si) * K, kk < Kd ? tap.ri : -kNowhere, tap.si};
  }
  __device__ Gather a_gather(const ARow& row, const AK& k) const {
    return {row.base + k.delta, inside(row.p0 - k.ri, row.q0 - k.si, P, Q)};
  }
  // w_t[c, r, s, k] (the weights transposed to C-RS-K, see TransposeWeights) = w_t[row.start + k.delta].
  struct BRow { std::int64_t start; bool valid; };
  __device__ BRow b_row(int n) const { return {static_cast<std::int64_t>(n) * RS * K, n < N}; }
  struct BK { std::int64_t delta; bool valid; };
  __device__ BK b_k(int kk) const {
    const Tap tap = tap_of(kk);  // the same decode; the weight wants the tap's (r, s) in the kernel
    const int rs = (tap_r0 + stride * tap.ri) * S + tap_s0 + stride * tap.si;
    return {static_cast<std::int64_t>(rs) * K + tap.k, kk < Kd};
  }
  __device__ Gather b_gather(const BRow& row, const BK& k) const {
    return {row.start + k.delta, row.valid && k.valid};
  }
  __device__ float out_value(int, int, float value) const { return value; }
  __device__ std::int64_t out_index(int m, int n) const {
    if (stride == 1) return static_cast<std::int64_t>(m) * N + n;
    int image, h, w;
    pixel(m, image, h, w);
    return ((static_cast<std::int64_t>(image) * H + h) * W + w) * N + n;
  }
};

template <class T>
struct BackwardWeightGemm {
  using Elem = T;
  using Out = float;
  static constexpr bool kAAlongK = false;   // x taps: c (part of m) is contiguous
  static constexpr bool kBAlongK = false;   // dy[kk, n]: n is contiguous
  static constexpr bool kOutAlongM = true;  // partials[split][n][m]: dw in KRSC order
  const T* a;                               // x
  const T* b;                               // dy
  float* out;                               // the split partials
  OutputEpilogue<float> epilogue;           // none
  bool vector_out;
  int M, N, Kd;
  int H, W, C, stride, pad;
  FastDivmod div_c, div_s, div_q, div_p;

  // x[n, h0 + r, w0 + s, c] (h0 = p * stride - pad) = x[k.base + row.delta]: here the tap and
  // channel are the row's, the pixel the reduction index's.
  struct ARow { std::int64_t delta; int r, s; };
  __device__ ARow a_row(int m) const {
    int rs, c, r, s;
    div_c.divmod(m, rs, c);
    div_s.divmod(rs, r, s);
    return {(static_cast<std::int64_t>(r) * W + s) * C + c, m < M ? r : kNowhere, s};
  }
  struct AK { std::int64_t base; int h0, w0; };
  __device__ AK a_k(int kk) const {
    int np, q, n, p;
    div_q.divmod(kk, np, q);
    div_p.divmod(np, n, p);
    const int h0 = p * stride - pad, w0 = q * stride - pad;
    return {((static_cast<std::int64_t>(n) * H + h0) * W + w0) * C, kk < Kd ? h0 : kNowhere, w0};
  }
  __device__ Gather a_gather(const ARow& row, const AK& k) const {
    return {k.base + row.delta, inside(k.h0 + row.r, k.w0 + row.s, H, W)};
  }
  struct BRow { int k; bool valid; };
  __device__ BRow b_row(int n) const { return {n, n < N}; }
  struct BK { int kk; bool valid; };
  __device__ BK b_k(int kk) const { return {kk, kk < Kd}; }
  __device__ Gather b_gather(const BRow& row, const BK& k) const {
    return {static_cast<std::int64_t>(k.kk) * N + row.k, row.valid && k.valid};
  }
  __device__ float out_value(int, int, float value) const { return value; }
  __device__ std::int64_t out_index(int m, int n) const {
    return (static_cast<std::int64_t>(blockIdx.z) * N + n) * M + m;
  }
};

// w_t[c, r, s, k] = w[k, r, s, c]: backward-data's B operand contiguous along its reduction index
// (k fastest), which wgmma needs for TF32 and which saves its in-kernel transpose for 16-bit.
// The weights are small (at most a few MB), so one pass per backward-data call.
template <class T>
struct TransposeWeights {
  const T* w;
  T* w_t;
  std::int64_t K, RS, C;
  __device__ void operator()(std::int64_t i) const {  // i indexes w_t
    const std::int64_t k = i % K, crs = i / K, rs = crs % RS, c = crs / RS;
    w_t[i] = w[(k * RS + rs) * C + c];
  }
};

// dw[i] = sum over splits of partials[split][i], in split order (then rounded to T).
template <class T>
struct SumSplits {
  const float* partials;
  std::int64_t splits, count;
  T* dw;
  __device__ void operator()(std::int64_t i) const {
    float total = 0.0f;
    for (std::int64_t z = 0; z < splits; ++z) total += partials[z * count + i];
    dw[i] = from_f32<T>(total);
  }
};

// kernel launchers

// Tile shapes by output width (see the top of the file). Backward-weight has its own table.
template <class View, class T>
void launch_data_gemm(const View& view, bool vec_a, bool vec_b, cudaStream_t stream) {
  // wgmma reads K-major operands (backward-data's weights are transposed to that before).
  if constexpr (View::kAAlongK && View::kBAlongK) {
    if (view.N >= 64 && vec_a && vec_b && device_runs_wgmma()) {
      // Ring depth measured in the SR-GAN (H200): f32 gains from 4 stages (1 block per SM),
      // 16-bit from 3 (2 blocks per SM).
      constexpr int kStages = std::is_same_v<T, float> ? 4 : 3;
      if (view.N <= 64) {
        launch_sm90_gemm<View, Sm90GemmConfig<T, 64, kStages>>(view, stream);
      } else {
        launch_sm90_gemm<View, Sm90GemmConfig<T, 128, kStages>>(view, stream);
      }
      return;
    }
  }
  if (view.N <= 8) {
    launch_implicit_gemm<View, GemmConfig<T, 256, 8, 8, 1, 3>>(view, vec_a, vec_b, view.Kd, 1, stream);
  } else if (view.N <= 16) {
    launch_implicit_gemm<View, GemmConfig<T, 256, 16, 8, 1, 3>>(view, vec_a, vec_b, view.Kd, 1, stream);
  } else if (view.N <= 64 ||
             gemm_shared_bytes<View, GemmConfig<T, 128, 128, 2, 4, 3>>() > max_shared_bytes_per_block()) {
    // (f32's 128 x 128 ring takes 108 KiB: on 8.6, 8.9 and 12.x, 99 KiB a block, 128 x 64 tiles.)
    launch_implicit_gemm<View, GemmConfig<T, 128, 64, 4, 2, 3>>(view, vec_a, vec_b, view.Kd, 1, stream);
  } else {
    launch_implicit_gemm<View, GemmConfig<T, 128, 128, 2, 4, 3>>(view, vec_a, vec_b, view.Kd, 1, stream);
  }
}

template <class View, class T>
void launch_weight_gemm(const View& view, bool vec_a, bool vec_b, int k_per_split, int splits,
                        cudaStream_t stream) {
  if (view.N <= 8) {
    launch_implicit_gemm<View, GemmConfig<T, 128, 8, 8, 1, 4>>(view, vec_a, vec_b, k_per_split, splits, stream);
  } else if (view.N <= 16) {
    launch_implicit_gemm<View, GemmConfig<T, 128, 16, 8, 1, 4>>(view, vec_a, vec_b, k_per_split, splits, stream);
  } else if constexpr (!std::is_same_v<T, float>) {  // 16-bit: larger tiles measured faster (SR-GAN)
    if (view.N >= 128) {
      launch_implicit_gemm<View, GemmConfig<T, 128, 128, 2, 4, 3>>(view, vec_a, vec_b, k_per_split, splits, stream);
    } else if (view.N >= 64) {
      launch_implicit_gemm<View, GemmConfig<T, 128, 64, 4, 2, 3>>(view, vec_a, vec_b, k_per_split, splits, stream);
    } else {
      launch_implicit_gemm<View, GemmConfig<T, 64, 64, 2, 2, 4>>(view, vec_a, vec_b, k_per_split, splits, stream);
    }
  } else {
    launch_implicit_gemm<View, GemmConfig<T, 64, 64, 2, 2, 4>>(view, vec_a, vec_b, k_per_split, splits, stream);
  }
}

// 16-byte copies need the run to be whole vectors and the base 16-byte aligned.
bool vectorisable(const void* base, std::int64_t run, std::size_t element_bytes) {
  const std::int64_t vec = static_cast<std::int64_t>(16 / element_bytes);
  return run % vec == 0 && reinterpret_cast<std::uintptr_t>(base) % 16 == 0;
}

int as_int(std::int64_t value) { return static_cast<int>(value); }  // extents checked on the host

// dw^T partials of every split on tensor cores: plan.splits ranges of plan.rows_per_split dy rows.
template <class T>
void launch_backward_weight_gemm(const Conv2dGeometry& g, const void* x, const void* dy, float* workspace,
                                 const WgradPlan& plan, cudaStream_t stream) {
  BackwardWeightGemm<T> view{};
  view.a = static_cast<const T*>(x);
  view.b = static_cast<const T*>(dy);
  view.out = workspace;
  view.M = as_int(g.r * g.s * g.c), view.N = as_int(g.k), view.Kd = as_int(g.n * g.p * g.q);
  view.vector_out = vectorisable(workspace, view.M, sizeof(float));
  view.H = as_int(g.h), view.W = as_int(g.w), view.C = as_int(g.c), view.stride = g.stride, view.pad = g.pad;
  view.div_c = FastDivmod(as_int(g.c)), view.div_s = FastDivmod(as_int(g.s));
  view.div_q = FastDivmod(as_int(g.q)), view.div_p = FastDivmod(as_int(g.p));
  launch_weight_gemm<BackwardWeightGemm<T>, T>(view, vectorisable(x, g.c, sizeof(T)), vectorisable(dy, g.k, sizeof(T)),
                                               as_int(plan.rows_per_split), as_int(plan.splits), stream);
}

// 16-bit forward-shaped convolution by shifted windows on wgmma (conv_shifted_sm90.cuh): x has 64
// channels, w is (out, 3, 3, 64) (flip: read at the mirrored tap), y (n, p, q, out). Whether it ran
// (TF32 is not taken: the kernel was tuned and tested for 16-bit only).
template <class T>
bool shifted_conv_if_it_applies(const Conv2dGeometry& in, std::int64_t out_channels, int pad, bool flip,
                                std::int64_t p, std::int64_t q, const void* x, const void* w, const void* bias,
                                void* y, const EpilogueArgs& epilogue, cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    return false;
  } else {
    if (!device_runs_wgmma() ||
        !shifted_conv_applies(as_int(in.r), as_int(in.s), in.stride, pad, in.c, out_channels, x, w, y, epilogue)) {
      return false;
    }
    ShiftedConv<T> params{};
    params.x = static_cast<const T*>(x), params.w = static_cast<const T*>(w);
    params.bias = static_cast<const T*>(bias), params.y = static_cast<T*>(y);
    params.epilogue = OutputEpilogue<T>::make(epilogue);
    params.H = as_int(in.h), params.W = as_int(in.w), params.P = as_int(p), params.Q = as_int(q);
    params.K = as_int(out_channels), params.pad = pad, params.flip = flip;
    params.segments = as_int((q + kShiftedConvPixels - 1) / kShiftedConvPixels);
    params.items = as_int(in.n * p) * params.segments;
    launch_shifted_conv(params, stream);
    return true;
  }
}

// 16-bit backward-weight by shifted windows on wgmma (wgrad_shifted_sm90.cuh) where it applies:
// the partials it filled, else 0 (TF32 wgmma reads K-major operands only, so f32 never does).
template <class T>
int shifted_wgrad_if_it_applies(const Conv2dGeometry& g, const T* x, const T* dy, float* workspace, int max_splits,
                                cudaStream_t stream) {
  if constexpr (std::is_same_v<T, float>) {
    return 0;
  } else {
    if (!device_runs_wgmma() || !shifted_wgrad_applies(g, x, dy)) return 0;
    return launch_shifted_wgrad(g, x, dy, workspace, max_splits, stream);
  }
}

}  // namespace

void conv2d_forward_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* w,
                         const void* bias, void* y, const EpilogueArgs& epilogue,
                         memory::StreamHandle stream) {
  if (narrow_forward_applies(g)) {  // <= 4 channels on one side: direct kernels (direct_narrow.cuh)
    narrow_forward_cuda(dtype, g, x, w, bias, y, epilogue, stream);
    return;
  }
  dispatch_float(dtype, "conv2d_forward", [&](auto zero) {
    using T = decltype(zero);
    if (shifted_conv_if_it_applies<T>(g, g.k, g.pad, false, g.p, g.q, x, w, bias, y, epilogue,
                                      as_cuda_stream(stream))) {
      return;
    }
    ForwardGemm<T> view{};
    view.a = static_cast<const T*>(x);
    view.b = static_cast<const T*>(w);
    view.bias = static_cast<const T*>(bias);
    view.out = static_cast<T*>(y);
    view.epilogue = OutputEpilogue<T>::make(epilogue);
    view.vector_out = vectorisable(y, g.k, sizeof(T)) && epilogue_aligned(epilogue);
    view.M = as_int(g.n * g.p * g.q), view.N = as_int(g.k), view.Kd = as_int(g.r * g.s * g.c);
    view.H = as_int(g.h), view.W = as_int(g.w), view.C = as_int(g.c), view.stride = g.stride, view.pad = g.pad;
    view.div_q = FastDivmod(as_int(g.q)), view.div_p = FastDivmod(as_int(g.p));
    view.div_c = FastDivmod(as_int(g.c)), view.div_s = FastDivmod(as_int(g.s));
    launch_data_gemm<ForwardGemm<T>, T>(view, vectorisable(x, g.c, sizeof(T)),
                                        vectorisable(w, g.r * g.s * g.c, sizeof(T)), as_cuda_stream(stream));
  });
}

void conv2d_backward_data_cuda(DType dtype, const Conv2dGeometry& g, const void* dy, const void* w,
                               void* w_transposed, void* dx, const EpilogueArgs& epilogue,
                               memory::StreamHandle stream) {
  if (narrow_backward_data_applies(g)) {
    narrow_backward_data_cuda(dtype, g, dy, w, dx, epilogue, stream);
    return;
  }
  dispatch_float(dtype, "conv2d_backward_data", [&](auto zero) {
    using T = decltype(zero);
    const cudaStream_t cuda_stream = as_cuda_stream(stream);
    T* w_t = static_cast<T*>(w_transposed);
    launch_index_map(TransposeWeights<T>{static_cast<const T*>(w), w_t, g.k, g.r * g.s, g.c},
                     g.k * g.r * g.s * g.c, cuda_stream);
    // Stride 1: dx = dy convolved with w_t's taps mirrored, padding r - 1 - pad.
    Conv2dGeometry dy_as_input = g;
    dy_as_input.h = g.p, dy_as_input.w = g.q, dy_as_input.c = g.k;
    if (shifted_conv_if_it_applies<T>(dy_as_input, g.c, as_int(g.r) - 1 - g.pad, true, g.h, g.w, dy, w_t, nullptr, dx,
                                      epilogue, cuda_stream)) {
      return;
    }
    const int stride = g.stride;
    // Count of i in [0, extent) with i = first (mod stride).
    auto phase_count = [stride](std::int64_t extent, int first) {
      return extent > first ? as_int((extent - first + stride - 1) / stride) : 0;
    };
    for (int phase_h = 0; phase_h < stride; ++phase_h) {
      for (int phase_w = 0; phase_w < stride; ++phase_w) {
        const int rows = phase_count(g.h, phase_h), cols = phase_count(g.w, phase_w);
        if (rows == 0 || cols == 0) continue;
        BackwardDataGemm<T> view{};
        view.a = static_cast<const T*>(dy);
        view.b = w_t;
        view.out = static_cast<T*>(dx);
        view.epilogue = OutputEpilogue<T>::make(epilogue);
        view.vector_out = vectorisable(dx, g.c, sizeof(T)) && epilogue_aligned(epilogue);
        view.tap_r0 = (phase_h + g.pad) % stride, view.tap_s0 = (phase_w + g.pad) % stride;
        const int taps_r = phase_count(g.r, view.tap_r0), taps_s = phase_count(g.s, view.tap_s0);
        view.M = as_int(g.n) * rows * cols, view.N = as_int(g.c), view.Kd = taps_r * taps_s * as_int(g.k);
        view.H = as_int(g.h), view.W = as_int(g.w), view.P = as_int(g.p), view.Q = as_int(g.q);
        view.S = as_int(g.s), view.RS = as_int(g.r * g.s), view.K = as_int(g.k);
        view.stride = stride, view.pad = g.pad, view.phase_h = phase_h, view.phase_w = phase_w;
        view.div_w = FastDivmod(cols), view.div_h = FastDivmod(rows);
        view.div_k = FastDivmod(as_int(g.k)), view.div_s = FastDivmod(std::max(taps_s, 1));
        // A phase without taps (kernel smaller than the stride) still writes its zeros.
        launch_data_gemm<BackwardDataGemm<T>, T>(view, vectorisable(dy, g.k, sizeof(T)),
                                                 vectorisable(w_t, g.k, sizeof(T)), cuda_stream);
      }
    }
  });
}

void conv2d_backward_weight_cuda(DType dtype, const Conv2dGeometry& g, const void* x, const void* dy,
                                 void* dw, void* dbias, float* workspace,
                                 memory::StreamHandle stream) {
  const WgradPlan plan = plan_wgrad(g, dbias != nullptr);
  OOMLAB_CHECK(plan.rows_per_split % 32 == 0 && plan.splits <= 65535,
               "conv2d_backward_weight: bad split plan " << plan.splits << " x " << plan.rows_per_split);
  dispatch_float(dtype, "conv2d_backward_weight", [&](auto zero) {
    using T = decltype(zero);
    const cudaStream_t cuda_stream = as_cuda_stream(stream);
    const std::int64_t weights = g.k * g.r * g.s * g.c;
    const T* x_t = static_cast<const T*>(x);
    const T* dy_t = static_cast<const T*>(dy);
    int written = as_int(plan.splits);  // partials filled
    if (small_channel_wgrad_applies(g)) {
      written = launch_small_channel_wgrad(g, x_t, dy_t, workspace, written, cuda_stream);
    } else if (const int shifted = shifted_wgrad_if_it_applies(g, x_t, dy_t, workspace, written, cuda_stream)) {
      written = shifted;
    } else {
      launch_backward_weight_gemm<T>(g, x, dy, workspace, plan, cuda_stream);
    }
    launch_index_map(SumSplits<T>{workspace, written, weights, static_cast<T*>(dw)}, weights, cuda_stream);
    if (dbias != nullptr) {
      launch_channel_sum(static_cast<const T*>(dy), g.n * g.p * g.q, g.k, 1.0f,
                         workspace + plan.weight_partial_floats, static_cast<T*>(dbias), cuda_stream);
    }
  });
}

}  // namespace oomlab::ops::detail
