// Causal attention on the GPU: the fused (flash) kernels and the naive (T x T) path at
// B=4 H=12 D=64 for T = 1024, 4096, 16384, beside a cuBLAS bf16 GEMM (8192^3) measured in the
// same run, so the TFLOP/s ratio to what this GPU achieves holds on any card. The MmaSync rows
// run the backward on mma.sync where Hopper would use its wgmma kernel (the engines compared).
// Counters: TFLOP/s (causal flops: forward 2 * 2 * B*H*T*T*D / 2, backward 2.5x forward; the
// backward case times the backward alone, after one forward) and
// peak_bytes, the allocator's peak for one iteration (the T^2 story of the naive path).
//   attention_bench --benchmark_out=results/<gpu>/attention.json --benchmark_out_format=json
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "harness/testing/cuda_event_timer.hpp"
#include "harness/memory/cuda_check.hpp"
#include "harness/device/device.hpp"
#include "harness/memory/oom_error.hpp"
#include "kernels/attention/attention.hpp"
#include "kernels/core/wgmma_device.hpp"

namespace {

using oomlab::DType;
using oomlab::Device;
using oomlab::DeviceKind;
using oomlab::Shape;
using oomlab::Tensor;

constexpr std::int64_t kBatch = 4, kHeads = 12, kHeadDim = 64;

using oomlab::testing::CudaEventTimer;

Device& bench_device() {
  static Device device(DeviceKind::cuda, {});
  return device;
}

cudaStream_t stream_of(Device& device) { return reinterpret_cast<cudaStream_t>(device.stream()); }

Tensor random_bf16(Device& device, const Shape& shape, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  std::vector<float> values(static_cast<std::size_t>(oomlab::shape_numel(shape)));
  for (float& x : values) x = uniform(rng);
  return Tensor::from_host(device, shape, DType::bf16, values);
}

double causal_forward_flops(std::int64_t seq) {
  return 2.0 * 2.0 * kBatch * kHeads * double(seq) * double(seq) * kHeadDim / 2.0;
}

void set_counters(benchmark::State& state, double flops_per_iteration, std::int64_t peak_bytes) {
  state.counters["TFLOP/s"] =
      benchmark::Counter(flops_per_iteration / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["peak_bytes"] = benchmark::Counter(double(peak_bytes));
}

// Inputs and outputs of one (B, H, T, D) problem, allocated once per benchmark.
struct AttentionTensors {
  Tensor q, k, v, d_out, out, dq, dk, dv;
  AttentionTensors(Device& device, std::int64_t seq) {
    const Shape shape{kBatch, kHeads, seq, kHeadDim};
    q = random_bf16(device, shape, 1);
    k = random_bf16(device, shape, 2);
    v = random_bf16(device, shape, 3);
    d_out = random_bf16(device, shape, 4);
    out = Tensor::empty(device, shape, DType::bf16);
    dq = Tensor::empty(device, shape, DType::bf16);
    dk = Tensor::empty(device, shape, DType::bf16);
    dv = Tensor::empty(device, shape, DType::bf16);
  }
};

// Which passes one timed iteration runs: the backward alone reuses one forward's O and lse.
enum class Passes { forward, forward_backward, backward };

void BM_FusedAttention(benchmark::State& state, Passes passes) {
  Device& device = bench_device();
  const std::int64_t seq = state.range(0);
  try {
    AttentionTensors t(device, seq);
    Tensor lse = Tensor::empty(device, oomlab::ops::attention_lse_shape(t.q), DType::f32);
    auto forward = [&] { oomlab::ops::attention_fused_forward(t.q, t.k, t.v, t.out, lse); };
    auto backward = [&] {
      oomlab::ops::attention_fused_backward(t.q, t.k, t.v, t.out, lse, t.d_out, t.dq, t.dk, t.dv);
    };
    auto step = [&] {
      if (passes != Passes::backward) forward();
      if (passes != Passes::forward) backward();
    };
    forward();  // warm-up (and the backward's inputs): attribute setting, caching-allocator growth
    backward();
    device.synchronize();
    device.allocator().reset_peak_stats();
    for (auto _ : state) {
      CudaEventTimer timer(state, stream_of(device));
      step();
    }
    const double passes_flops = passes == Passes::forward ? 1.0 : passes == Passes::backward ? 2.5 : 3.5;
    const double flops = causal_forward_flops(seq) * passes_flops;
    set_counters(state, flops, device.allocator().stats().allocated.peak);
  } catch (const oomlab::memory::OomError& error) {
    state.SkipWithError(error.what());
  }
}

// The same with the backward's wgmma kernel (Hopper, D = 64) switched off: mma.sync on this GPU.
void BM_FusedAttentionMmaSync(benchmark::State& state, Passes passes) {
  oomlab::ops::detail::allow_wgmma(false);
  BM_FusedAttention(state, passes);
  oomlab::ops::detail::allow_wgmma(true);
}

// The naive path: probs (B, H, T, T) kept from forward to backward, plus the backward's
// (B, H, T, T) dP workspace. Skipped with the allocator's message where it does not fit.
void BM_NaiveAttention(benchmark::State& state, bool with_backward) {
  Device& device = bench_device();
  const std::int64_t seq = state.range(0);
  device.allocator().empty_cache();
  try {
    AttentionTensors t(device, seq);
    device.synchronize();
    device.allocator().reset_peak_stats();
    auto step = [&] {
      Tensor probs = Tensor::empty(device, oomlab::ops::attention_probs_shape(t.q), DType::bf16);
      oomlab::ops::attention_naive_forward(t.q, t.k, t.v, probs, t.out);
      if (with_backward) {
        oomlab::ops::attention_naive_backward(t.q, t.k, t.v, probs, t.d_out, t.dq, t.dk, t.dv);
      }
    };
    step();
    device.synchronize();
    for (auto _ : state) {
      CudaEventTimer timer(state, stream_of(device));
      step();
    }
    const double flops = causal_forward_flops(seq) * (with_backward ? 3.5 : 1.0);
    set_counters(state, flops, device.allocator().stats().allocated.peak);
  } catch (const oomlab::memory::OomError& error) {
    state.SkipWithError(error.what());
  }
  device.allocator().empty_cache();  // hand the T^2 buffers back before the next benchmark
}

// Reference: a cuBLAS bf16 GEMM (f32 accumulate) of n^3, the rate this GPU reaches on tensor
// cores. Its workspace comes from the allocator like every other byte.
void BM_CublasGemmBf16(benchmark::State& state) {
  Device& device = bench_device();
  const std::int64_t n = state.range(0);
  cublasHandle_t handle = nullptr;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
    return;
  }
  {
    const Shape shape{n, n};
    Tensor a = random_bf16(device, shape, 5), b = random_bf16(device, shape, 6);
    Tensor c = Tensor::empty(device, shape, DType::bf16);
    constexpr std::int64_t kWorkspaceBytes = 32 << 20;
    Tensor workspace = Tensor::empty(device, {kWorkspaceBytes}, DType::i8, oomlab::memory::Tag::workspace);
    cublasSetStream(handle, stream_of(device));
    cublasSetWorkspace(handle, workspace.data(), kWorkspaceBytes);
    const float alpha = 1.0f, beta = 0.0f;
    const int dim = static_cast<int>(n);
    auto gemm = [&] {
      return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, a.data(), CUDA_R_16BF, dim,
                          b.data(), CUDA_R_16BF, dim, &beta, c.data(), CUDA_R_16BF, dim, CUBLAS_COMPUTE_32F,
                          CUBLAS_GEMM_DEFAULT);
    };
    if (gemm() != CUBLAS_STATUS_SUCCESS) {
      state.SkipWithError("cublasGemmEx failed");
    } else {
      device.synchronize();
      for (auto _ : state) {
        CudaEventTimer timer(state, stream_of(device));
        gemm();
      }
      set_counters(state, 2.0 * double(n) * double(n) * double(n), device.allocator().stats().allocated.peak);
    }
  }
  cublasDestroy(handle);
}

void sequence_lengths(benchmark::internal::Benchmark* b) {
  b->ArgName("T")->Arg(1024)->Arg(4096)->Arg(16384)->UseManualTime()->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_CublasGemmBf16)->ArgName("n")->Arg(8192)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_FusedAttention, forward, Passes::forward)->Apply(sequence_lengths);
BENCHMARK_CAPTURE(BM_FusedAttention, forward_backward, Passes::forward_backward)->Apply(sequence_lengths);
BENCHMARK_CAPTURE(BM_FusedAttention, backward, Passes::backward)->Apply(sequence_lengths);
BENCHMARK_CAPTURE(BM_FusedAttentionMmaSync, forward_backward, Passes::forward_backward)->Apply(sequence_lengths);
BENCHMARK_CAPTURE(BM_FusedAttentionMmaSync, backward, Passes::backward)->Apply(sequence_lengths);
BENCHMARK_CAPTURE(BM_NaiveAttention, forward, false)->Apply(sequence_lengths);
BENCHMARK_CAPTURE(BM_NaiveAttention, forward_backward, true)->Apply(sequence_lengths);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  const auto info = oomlab::query_device_info(DeviceKind::cuda);
  benchmark::AddCustomContext("gpu", info.name);
  benchmark::AddCustomContext("compute_capability",
                              std::to_string(info.compute_major) + "." + std::to_string(info.compute_minor));
  benchmark::AddCustomContext("shape", "B=4 H=12 D=64 causal bf16");
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
