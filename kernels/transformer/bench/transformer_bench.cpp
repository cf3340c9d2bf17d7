// Transformer kernels on GPT-2 124M shapes (B*T = 16384 rows, C = 768, 4C = 3072, vocab 50257),
// each next to its reference measured in the same run so the ratio holds on any GPU:
//  - memory-bound kernels (LayerNorm forward, GELU, AdamW, casts) against cudaMemcpy
//    device-to-device moving the same number of bytes (target: >= 75% of its bandwidth);
//  - matmul through our cuBLASLt wrapper against a direct cublasGemmEx call (target >= 95%); at
//    a decode's few rows our GEMV, its weights' rate beside the copy's.
// Timing: CUDA events around each iteration (RAII timer -> SetIterationTime, UseManualTime).
// Run: transformer_bench --benchmark_out=results.json --benchmark_out_format=json
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>

#include "harness/testing/cuda_event_timer.hpp"
#include "harness/memory/cuda_check.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/adamw.hpp"
#include "kernels/transformer/cast.hpp"
#include "kernels/transformer/gelu.hpp"
#include "kernels/transformer/cross_entropy.hpp"
#include "kernels/transformer/layernorm.hpp"
#include "kernels/transformer/matmul.hpp"

namespace oomlab {
namespace {

constexpr std::int64_t kRows = 16384, kChannels = 768, kHidden = 3072, kVocab = 50257;
constexpr std::int64_t kPaddedVocab = 50304;  // what the model uses: a multiple of 64
constexpr std::int64_t kGpt2Params = 124439808;

// Never destroyed: freeing from a static destructor can race the CUDA runtime's teardown.
Device& device() {
  static Device* cuda = new Device(DeviceKind::cuda, memory::AllocatorConfig{});
  return *cuda;
}
cudaStream_t stream() { return reinterpret_cast<cudaStream_t>(device().stream()); }

using oomlab::testing::CudaEventTimer;

// Mean milliseconds of one run of `work` on the bench stream (20 runs after a warm-up).
double time_ms(const std::function<void()>& work) { return testing::mean_milliseconds(work, stream()); }

// Device-to-device copy bandwidth (bytes read + written per second) for a copy moving `traffic`
// bytes in total, measured once per size in this run.
double copy_bandwidth(std::size_t traffic) {
  static std::map<std::size_t, double> measured;
  auto found = measured.find(traffic);
  if (found != measured.end()) return found->second;
  std::size_t bytes = traffic / 2;
  Tensor src = Tensor::empty(device(), {static_cast<std::int64_t>(bytes)}, DType::i8);
  Tensor dst = Tensor::empty(device(), {static_cast<std::int64_t>(bytes)}, DType::i8);
  src.fill(1.0);
  double ms = time_ms([&] {
    OOMLAB_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream()));
  });
  double bandwidth = double(traffic) / (ms * 1e-3);
  measured.emplace(traffic, bandwidth);
  return bandwidth;
}

// Reports GB/s and the ratio to the copy bandwidth for a kernel moving `traffic` bytes per call.
void run_memory_bound(benchmark::State& state, std::size_t traffic, const std::function<void()>& kernel) {
  double reference = copy_bandwidth(traffic);
  kernel();  // warm-up
  for (auto _ : state) {
    CudaEventTimer timer(state, stream());
    kernel();
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(traffic));
  double ms = time_ms(kernel);  // a steady-state mean for the ratio, same stream and sizes
  double bandwidth = double(traffic) / (ms * 1e-3);
  state.counters["GB/s"] = bandwidth / 1e9;
  state.counters["copy_GB/s"] = reference / 1e9;
  state.counters["ratio_to_copy"] = bandwidth / reference;
}

void BM_CopyDeviceToDevice(benchmark::State& state) {
  std::size_t bytes = static_cast<std::size_t>(state.range(0)) << 20;
  Tensor src = Tensor::empty(device(), {static_cast<std::int64_t>(bytes)}, DType::i8);
  Tensor dst = Tensor::empty(device(), {static_cast<std::int64_t>(bytes)}, DType::i8);
  for (auto _ : state) {
    CudaEventTimer timer(state, stream());
    OOMLAB_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, stream()));
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * 2 * static_cast<std::int64_t>(bytes));
}
BENCHMARK(BM_CopyDeviceToDevice)->Arg(256)->Arg(1024)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_LayerNormForward(benchmark::State& state) {
  DType dtype = static_cast<DType>(state.range(0));
  Tensor x = testing::random_tensor(device(), {kRows, kChannels}, dtype, 1);
  Tensor w = testing::random_tensor(device(), {kChannels}, dtype, 2);
  Tensor b = testing::random_tensor(device(), {kChannels}, dtype, 3);
  Tensor out = Tensor::empty(device(), {kRows, kChannels}, dtype);
  Tensor mean = Tensor::empty(device(), {kRows}, DType::f32);
  Tensor rstd = Tensor::empty(device(), {kRows}, DType::f32);
  std::size_t traffic = 2 * x.nbytes() + 2 * w.nbytes() + mean.nbytes() + rstd.nbytes();
  state.SetLabel(dtype_name(dtype));
  run_memory_bound(state, traffic, [&] { ops::layernorm_forward(out, mean, rstd, x, w, b); });
}
BENCHMARK(BM_LayerNormForward)
    ->Arg(int(DType::bf16))
    ->Arg(int(DType::f32))
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// dx from x and dout, dweight/dbias accumulated in f32: the backward of every LayerNorm of a
// GPT-2 124M step at B*T = 16384.
void BM_LayerNormBackward(benchmark::State& state) {
  DType dtype = static_cast<DType>(state.range(0));
  Tensor x = testing::random_tensor(device(), {kRows, kChannels}, dtype, 1);
  Tensor dout = testing::random_tensor(device(), {kRows, kChannels}, dtype, 5);
  Tensor w = testing::random_tensor(device(), {kChannels}, dtype, 2, 0.5f, 1.5f);
  Tensor b = testing::random_tensor(device(), {kChannels}, dtype, 3);
  Tensor out = Tensor::empty(device(), {kRows, kChannels}, dtype);
  Tensor dx = Tensor::empty(device(), {kRows, kChannels}, dtype);
  Tensor mean = Tensor::empty(device(), {kRows}, DType::f32);
  Tensor rstd = Tensor::empty(device(), {kRows}, DType::f32);
  Tensor dw = Tensor::zeros(device(), {kChannels}, DType::f32);
  Tensor db = Tensor::zeros(device(), {kChannels}, DType::f32);
  ops::layernorm_forward(out, mean, rstd, x, w, b);
  std::size_t traffic = 3 * x.nbytes() + w.nbytes() + mean.nbytes() + rstd.nbytes() + 2 * dw.nbytes();
  state.SetLabel(dtype_name(dtype));
  run_memory_bound(state, traffic, [&] { ops::layernorm_backward(dx, dw, db, dout, x, w, mean, rstd); });
}
BENCHMARK(BM_LayerNormBackward)
    ->Arg(int(DType::bf16))
    ->Arg(int(DType::f32))
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The fused loss and dlogits over GPT-2's padded vocabulary, in place as the trainer runs it.
// 4096 rows (a quarter of a B*T = 16384 step) keep the host-side random fill short; the rows
// are independent, so the time scales by 4. Traffic counts one read and one write of the logits.
void BM_SoftmaxCrossEntropy(benchmark::State& state) {
  constexpr std::int64_t kLossRows = 4096;
  Tensor logits = testing::random_tensor(device(), {kLossRows, kPaddedVocab}, DType::bf16, 6, -5.0f, 5.0f);
  Tensor targets = Tensor::from_host(device(), {kLossRows}, DType::i32,
                                     testing::random_indices(kLossRows, kVocab, 7));
  Tensor losses = Tensor::empty(device(), {kLossRows}, DType::f32);
  state.SetLabel("bf16 in place");
  run_memory_bound(state, 2 * logits.nbytes(), [&] {
    ops::softmax_cross_entropy(losses, logits, logits, targets, 1.0f / kRows, kVocab);
  });
}
BENCHMARK(BM_SoftmaxCrossEntropy)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_GeluForward(benchmark::State& state) {
  DType dtype = static_cast<DType>(state.range(0));
  Tensor x = testing::random_tensor(device(), {kRows, kHidden}, dtype, 4);
  Tensor out = Tensor::empty(device(), {kRows, kHidden}, dtype);
  state.SetLabel(dtype_name(dtype));
  run_memory_bound(state, 2 * x.nbytes(), [&] { ops::gelu_forward(out, x); });
}
BENCHMARK(BM_GeluForward)->Arg(int(DType::bf16))->Arg(int(DType::f32))->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_AdamWStep(benchmark::State& state) {
  // GPT-2 124M: f32 master, m, v; bf16 grads and parameter copy.
  std::int64_t n = kGpt2Params;
  Tensor master = Tensor::empty(device(), {n}, DType::f32);
  Tensor m = Tensor::zeros(device(), {n}, DType::f32);
  Tensor v = Tensor::zeros(device(), {n}, DType::f32);
  Tensor grad = Tensor::empty(device(), {n}, DType::bf16);
  Tensor param = Tensor::empty(device(), {n}, DType::bf16);
  master.fill(0.5);
  grad.fill(0.01);
  std::size_t traffic = 2 * master.nbytes() + 2 * m.nbytes() + 2 * v.nbytes() + grad.nbytes() + param.nbytes();
  int step = 1;
  run_memory_bound(state, traffic, [&] {
    ops::adamw_step(master, param, grad, m, v, ops::AdamWConfig{}, step++);
  });
}
BENCHMARK(BM_AdamWStep)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_Cast(benchmark::State& state) {
  DType from = static_cast<DType>(state.range(0)), to = static_cast<DType>(state.range(1));
  Tensor in = testing::random_tensor(device(), {kRows, kHidden}, from, 5);
  Tensor out = Tensor::empty(device(), {kRows, kHidden}, to);
  state.SetLabel(std::string(dtype_name(from)) + "->" + dtype_name(to));
  run_memory_bound(state, in.nbytes() + out.nbytes(), [&] { ops::cast(out, in); });
}
BENCHMARK(BM_Cast)
    ->Args({int(DType::f32), int(DType::bf16)})
    ->Args({int(DType::bf16), int(DType::f32)})
    ->Args({int(DType::f32), int(DType::f16)})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// y (M, N) = x (M, K) · W^T with W (N, K), bf16, f32 accumulation: our cuBLASLt wrapper, then
// cublasGemmEx on the same buffers for the reference time.
void BM_Matmul(benchmark::State& state) {
  std::int64_t M = state.range(0), N = state.range(1), K = state.range(2);
  Tensor x = testing::random_tensor(device(), {M, K}, DType::bf16, 6);
  Tensor w = testing::random_tensor(device(), {N, K}, DType::bf16, 7);
  Tensor y = Tensor::empty(device(), {M, N}, DType::bf16);
  Tensor none;
  ops::MatmulOptions linear{false, true, false, false};
  auto ours = [&] { ops::matmul(y, x, w, none, linear); };

  static cublasHandle_t handle = [] {
    cublasHandle_t h;
    cublasCreate(&h);
    return h;
  }();
  cublasSetStream(handle, stream());
  float alpha = 1.0f, beta = 0.0f;
  auto reference = [&] {
    cublasStatus_t status = cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, int(N), int(M), int(K), &alpha,
                                         w.data(), CUDA_R_16BF, int(K), x.data(), CUDA_R_16BF, int(K), &beta,
                                         y.data(), CUDA_R_16BF, int(N), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    if (status != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublasGemmEx failed");
  };
  ours();  // the wrapper picks its algorithm on first use
  for (auto _ : state) {
    CudaEventTimer timer(state, stream());
    ours();
  }
  const auto [ours_ms, reference_ms] = testing::alternating_best_milliseconds(ours, reference, stream());
  double flops = 2.0 * double(M) * double(N) * double(K);
  state.counters["TFLOP/s"] = flops / (ours_ms * 1e-3) / 1e12;
  state.counters["cublas_TFLOP/s"] = flops / (reference_ms * 1e-3) / 1e12;
  state.counters["ratio_to_cublas"] = reference_ms / ours_ms;
  // A decode step's Linear (a few rows) is a stream of W: its rate beside the copy's (BM_CopyDeviceToDevice).
  const double weight_bytes = double(N) * double(K) * 2.0;
  state.counters["weights_GB/s"] = weight_bytes / (ours_ms * 1e-3) / 1e9;
  state.counters["cublas_weights_GB/s"] = weight_bytes / (reference_ms * 1e-3) / 1e9;
}
BENCHMARK(BM_Matmul)
    ->Args({kRows, 3 * kChannels, kChannels})  // QKV projection
    ->Args({kRows, kHidden, kChannels})        // MLP up
    ->Args({kRows, kChannels, kHidden})        // MLP down
    ->Args({kRows, kVocab, kChannels})         // LM head, GPT-2's vocabulary as is
    ->Args({kRows, kPaddedVocab, kChannels})   // LM head, padded (TransformerConfig::padded_vocab)
    // LLaMA-7B decoding one token (our GEMV below 5 rows): qkv, attention out, gate/up, down, LM head.
    ->Args({1, 12288, 4096})
    ->Args({1, 4096, 4096})
    ->Args({1, 11008, 4096})
    ->Args({1, 4096, 11008})
    ->Args({1, 32000, 4096})
    ->Args({4, 11008, 4096})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace oomlab

int main(int argc, char** argv) {
  if (!oomlab::cuda_available()) {
    std::fprintf(stderr, "transformer_bench: no usable CUDA device\n");
    return 2;
  }
  oomlab::DeviceInfo info = oomlab::query_device_info(oomlab::DeviceKind::cuda);
  benchmark::AddCustomContext("gpu", info.name);
  benchmark::AddCustomContext("compute_capability",
                              std::to_string(info.compute_major) + "." + std::to_string(info.compute_minor));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
