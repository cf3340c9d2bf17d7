// conv2d benchmark: our kernels (forward, backward-data, backward-weight and the three
// together) beside cuDNN with the fastest algorithm cudnnFind* picks, in the same run, NHWC/KRSC,
// no bias on either side, bf16 and f32 (both sides on TF32 tensor cores, PyTorch's default for
// f32 convolutions: the SR-GAN's f32 variant). Rows: ours as the library runs it (wgmma on
// Hopper where it applies), ours with wgmma off (mma.sync), cuDNN. Counters: TFLOP/s, and for
// our rows `vs_cudnn` = cuDNN's time / ours from alternating rounds (the target: >= 0.6
// for the total of B=4 64->64 3x3 256x256).
//   ./conv_bench --benchmark_out=conv.json --benchmark_out_format=json
// Results: results/h200/ (the latest run), docs/h200-history.md (the tuning, with commits).
// Problems 2 and 3 (the RGB convs) run
// without the GEMM (direct_narrow.cuh, wgrad_small_channels.cuh).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#if OOMLAB_HAVE_CUDNN
#include <cudnn.h>
#endif

#include "harness/testing/cuda_event_timer.hpp"
#include "harness/memory/cuda_check.hpp"
#include "harness/device/device.hpp"
#include "kernels/conv/conv2d.hpp"
#include "kernels/core/wgmma_device.hpp"
#include "kernels/core/tensor.hpp"

namespace {

using oomlab::DType;
using oomlab::Device;
using oomlab::DeviceKind;
using oomlab::Tensor;
using oomlab::ops::Conv2dParams;

struct Problem {
  std::int64_t n, h, w, c, k, r;
  Conv2dParams params;
  const char* name;
};
// The SR-GAN's convs at full scale: residual blocks, the upsampling conv, the RGB output conv
// (3x3, stride 1, padding 1: same-size output), and the discriminator's RGB input conv (4x4,
// stride 2: 1024x1024 -> 512x512; its backward-weight is the small-channel kernel's other case),
// and the discriminator's second conv (4x4 stride 2, like its three wider ones: 68.7 GFLOP each).
const Problem kProblems[] = {{4, 256, 256, 64, 64, 3, {1, 1}, "B4 64->64 3x3 256x256"},
                            {4, 512, 512, 64, 256, 3, {1, 1}, "B4 64->256 3x3 512x512"},
                            {4, 1024, 1024, 64, 3, 3, {1, 1}, "B4 64->3 3x3 1024x1024"},
                            {4, 1024, 1024, 3, 64, 4, {2, 1}, "B4 3->64 4x4 s2 1024x1024"},
                            {4, 512, 512, 64, 128, 4, {2, 1}, "B4 64->128 4x4 s2 512x512"}};
constexpr int kProblemCount = static_cast<int>(sizeof(kProblems) / sizeof(kProblems[0]));

const DType kDTypes[] = {DType::bf16, DType::f32};

enum Pass : int { kForward, kBackwardData, kBackwardWeight, kTotal };
const char* pass_name(int pass) {
  static const char* names[] = {"forward", "backward_data", "backward_weight", "total"};
  return names[pass];
}

using oomlab::testing::CudaEventTimer;


Device& cuda_device() {
  static Device device(DeviceKind::cuda, {});
  return device;
}
cudaStream_t cuda_stream() { return reinterpret_cast<cudaStream_t>(cuda_device().stream()); }

#if OOMLAB_HAVE_CUDNN
#define CUDNN_CHECK(call)                                                                   \
  do {                                                                                      \
    cudnnStatus_t status_ = (call);                                                         \
    if (status_ != CUDNN_STATUS_SUCCESS)                                                    \
      throw std::runtime_error(std::string(#call) + ": " + cudnnGetErrorString(status_));   \
  } while (0)

// cuDNN handle, NHWC/KRSC bf16 descriptors, the fastest algorithm of each pass, one workspace.
struct CudnnConv {
  cudnnHandle_t handle{};
  cudnnTensorDescriptor_t x_desc{}, y_desc{};
  cudnnFilterDescriptor_t w_desc{};
  cudnnConvolutionDescriptor_t conv_desc{};
  cudnnConvolutionFwdAlgo_t forward_algo{};
  cudnnConvolutionBwdDataAlgo_t data_algo{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo{};
  Tensor workspace;

  CudnnConv(const Problem& p, DType dtype, const Tensor& y) {
    const cudnnDataType_t element = dtype == DType::f32 ? CUDNN_DATA_FLOAT : CUDNN_DATA_BFLOAT16;
    CUDNN_CHECK(cudnnCreate(&handle));
    CUDNN_CHECK(cudnnSetStream(handle, cuda_stream()));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_desc));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_desc));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_desc));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_desc));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NHWC, element, int(p.n),
                                           int(p.c), int(p.h), int(p.w)));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NHWC, element, int(p.n),
                                           int(p.k), int(y.dim(1)), int(y.dim(2))));
    CUDNN_CHECK(cudnnSetFilter4dDescriptor(w_desc, element, CUDNN_TENSOR_NHWC, int(p.k),
                                           int(p.c), int(p.r), int(p.r)));
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_desc, p.params.padding, p.params.padding,
                                                p.params.stride, p.params.stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    // Tensor cores for both dtypes; for f32 data that is TF32 (what PyTorch asks for by default).
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_desc, CUDNN_TENSOR_OP_MATH));
    int returned = 0;
    std::size_t bytes = 0;
    cudnnConvolutionFwdAlgoPerf_t forward[8];
    CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, x_desc, w_desc, conv_desc, y_desc, 8,
                                                     &returned, forward));
    forward_algo = pick(forward, returned, bytes);
    cudnnConvolutionBwdDataAlgoPerf_t data[8];
    CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(handle, w_desc, y_desc, conv_desc, x_desc,
                                                          8, &returned, data));
    data_algo = pick(data, returned, bytes);
    cudnnConvolutionBwdFilterAlgoPerf_t filter[8];
    CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(handle, x_desc, y_desc, conv_desc,
                                                            w_desc, 8, &returned, filter));
    filter_algo = pick(filter, returned, bytes);
    workspace = Tensor::empty(cuda_device(), {static_cast<std::int64_t>(bytes) + 1}, DType::i8,
                              oomlab::memory::Tag::workspace);
  }
  ~CudnnConv() {
    cudnnDestroyConvolutionDescriptor(conv_desc);
    cudnnDestroyFilterDescriptor(w_desc);
    cudnnDestroyTensorDescriptor(y_desc);
    cudnnDestroyTensorDescriptor(x_desc);
    cudnnDestroy(handle);
  }
  CudnnConv(const CudnnConv&) = delete;
  CudnnConv& operator=(const CudnnConv&) = delete;

  // The fastest successful result (cudnnFind* sorts by time); grows `bytes` to its workspace.
  template <class Perf>
  static decltype(Perf::algo) pick(const Perf* results, int count, std::size_t& bytes) {
    for (int i = 0; i < count; ++i) {
      if (results[i].status == CUDNN_STATUS_SUCCESS) {
        bytes = std::max(bytes, results[i].memory);
        return results[i].algo;
      }
    }
    throw std::runtime_error("cudnnFind*: no algorithm succeeded");
  }

  void run(int pass, const Tensor& x, const Tensor& w, const Tensor& y, const Tensor& dx,
           const Tensor& dw) {
    const float one = 1.0f, zero = 0.0f;
    void* ws = workspace.data();
    const std::size_t ws_bytes = workspace.nbytes();
    if (pass == kForward || pass == kTotal) {
      CUDNN_CHECK(cudnnConvolutionForward(handle, &one, x_desc, x.data(), w_desc, w.data(), conv_desc,
                                          forward_algo, ws, ws_bytes, &zero, y_desc, y.data()));
    }
    if (pass == kBackwardData || pass == kTotal) {  // y stands in for dy
      CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &one, w_desc, w.data(), y_desc, y.data(),
                                               conv_desc, data_algo, ws, ws_bytes, &zero, x_desc,
                                               dx.data()));
    }
    if (pass == kBackwardWeight || pass == kTotal) {
      CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &one, x_desc, x.data(), y_desc, y.data(),
                                                 conv_desc, filter_algo, ws, ws_bytes, &zero, w_desc,
                                                 dw.data()));
    }
  }
};
#endif

// The tensors of one problem (kept while consecutive benchmarks use it), and cuDNN's times.
struct Workload {
  int problem = -1;
  DType dtype = DType::bf16;
  Conv2dParams params;
  Tensor x, w, y, dx, dw;
#if OOMLAB_HAVE_CUDNN
  std::unique_ptr<CudnnConv> cudnn;
#endif

  void run_ours(int pass) {
    if (pass == kForward || pass == kTotal) oomlab::ops::conv2d_forward(x, w, Tensor(), y, params);
    if (pass == kBackwardData || pass == kTotal) oomlab::ops::conv2d_backward_data(y, w, dx, params);
    if (pass == kBackwardWeight || pass == kTotal) {
      oomlab::ops::conv2d_backward_weight(x, y, dw, Tensor(), params);
    }
  }
};

Workload& workload_for(int problem, DType dtype) {
  Device& device = cuda_device();  // constructed first, so destroyed after the workload's tensors
  static Workload workload;
  if (workload.problem == problem && workload.dtype == dtype) return workload;
  workload = Workload();  // frees the previous problem's tensors first
  const Problem& p = kProblems[problem];
  const oomlab::Shape x_shape{p.n, p.h, p.w, p.c}, w_shape{p.k, p.r, p.r, p.c};
  const oomlab::Shape y_shape = oomlab::ops::conv2d_output_shape(x_shape, w_shape, p.params);
  workload.x = Tensor::empty(device, x_shape, dtype);
  workload.w = Tensor::empty(device, w_shape, dtype);
  workload.y = Tensor::empty(device, y_shape, dtype);
  workload.dx = Tensor::empty(device, x_shape, dtype);
  workload.dw = Tensor::empty(device, w_shape, dtype);
  workload.x.fill(0.5);  // values do not change the work; non-zero keeps the datapath honest
  workload.w.fill(0.25);
  workload.y.fill(0.125);
  workload.problem = problem;
  workload.dtype = dtype;
  workload.params = p.params;
#if OOMLAB_HAVE_CUDNN
  workload.cudnn = std::make_unique<CudnnConv>(p, dtype, workload.y);
#endif
  return workload;
}

double pass_flops(const Problem& p, int pass) {
  const std::int64_t out_h = (p.h + 2 * p.params.padding - p.r) / p.params.stride + 1;
  const std::int64_t out_w = (p.w + 2 * p.params.padding - p.r) / p.params.stride + 1;
  const double one = 2.0 * p.n * out_h * out_w * p.k * p.r * p.r * p.c;
  return pass == kTotal ? 3 * one : one;
}

// A row's problem, dtype and pass (its arguments) and their workload; no workload (the row is
// skipped) without a GPU.
struct Row {
  const Problem& problem;
  DType dtype;
  int pass;
  Workload* work;
};
Row row_of(benchmark::State& state) {
  const int problem = static_cast<int>(state.range(0));
  const DType dtype = kDTypes[state.range(1)];
  Row row{kProblems[problem], dtype, static_cast<int>(state.range(2)), nullptr};
  if (oomlab::cuda_available()) {
    row.work = &workload_for(problem, dtype);
  } else {
    state.SkipWithError("no usable CUDA device");
  }
  return row;
}

void set_counters(benchmark::State& state, const Row& row) {
  state.counters["TFLOP/s"] = benchmark::Counter(pass_flops(row.problem, row.pass) * state.iterations() / 1e12,
                                                 benchmark::Counter::kIsRate);
  state.SetLabel(std::string(row.problem.name) + " " + oomlab::dtype_name(row.dtype) + " " + pass_name(row.pass));
}

void run_ours_benchmark(benchmark::State& state) {
  const Row row = row_of(state);
  if (row.work == nullptr) return;
  Workload& work = *row.work;
  const int pass = row.pass;
  work.run_ours(pass);  // warm-up (allocates the backward-weight workspace once)
  for (auto _ : state) {
    CudaEventTimer timer(state, cuda_stream());
    work.run_ours(pass);
  }
  set_counters(state, row);
#if OOMLAB_HAVE_CUDNN
  // The ratio from alternating rounds, best of each: cuDNN timed once at set-up had read 0.16 and
  // 0.24 ms for the same 64->64 bf16 problem within one run.
  const auto [ours_ms, cudnn_ms] = oomlab::testing::alternating_best_milliseconds(
      [&] { work.run_ours(pass); },
      [&] { work.cudnn->run(pass, work.x, work.w, work.y, work.dx, work.dw); }, cuda_stream());
  state.counters["ours_ms"] = ours_ms;
  state.counters["cudnn_ms"] = cudnn_ms;
  state.counters["vs_cudnn"] = cudnn_ms / ours_ms;
#endif
}

// Ours as the library runs it (forward on wgmma on Hopper).
void BM_conv2d_ours(benchmark::State& state) { run_ours_benchmark(state); }

// Ours with wgmma off: the mma.sync engine on the same GPU (every 16-bit pass differs; f32's
// backward-weight is mma.sync either way).
void BM_conv2d_ours_mma_sync(benchmark::State& state) {
  oomlab::ops::detail::allow_wgmma(false);
  run_ours_benchmark(state);
  oomlab::ops::detail::allow_wgmma(true);
}

#if OOMLAB_HAVE_CUDNN
void BM_conv2d_cudnn(benchmark::State& state) {
  const Row row = row_of(state);
  if (row.work == nullptr) return;
  Workload& work = *row.work;
  for (auto _ : state) {
    CudaEventTimer timer(state, cuda_stream());
    work.cudnn->run(row.pass, work.x, work.w, work.y, work.dx, work.dw);
  }
  set_counters(state, row);
}
#endif

// Grouped by problem and dtype, each pass's three rows together: the workload (and cuDNN's
// algorithm search, seconds per problem) is built 10 times, not once per row group (30).
void register_benchmarks() {
  for (int problem = 0; problem < kProblemCount; ++problem) {
    for (int dtype = 0; dtype < 2; ++dtype) {
      for (int pass = 0; pass < 4; ++pass) {
        const auto add = [&](const char* name, void (*fn)(benchmark::State&)) {
          benchmark::RegisterBenchmark(name, fn)
              ->Args({problem, dtype, pass})
              ->ArgNames({"problem", "dtype", "pass"})
              ->UseManualTime()
              ->Unit(benchmark::kMillisecond);
        };
        add("BM_conv2d_ours", BM_conv2d_ours);
        add("BM_conv2d_ours_mma_sync", BM_conv2d_ours_mma_sync);
#if OOMLAB_HAVE_CUDNN
        add("BM_conv2d_cudnn", BM_conv2d_cudnn);
#endif
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  register_benchmarks();
  if (oomlab::cuda_available()) {
    const oomlab::DeviceInfo info = oomlab::query_device_info(DeviceKind::cuda);
    benchmark::AddCustomContext("gpu", info.name);
    benchmark::AddCustomContext("compute_capability",
                                std::to_string(info.compute_major) + "." + std::to_string(info.compute_minor));
  }
#if OOMLAB_HAVE_CUDNN
  benchmark::AddCustomContext("cudnn_version", std::to_string(cudnnGetVersion()));
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
