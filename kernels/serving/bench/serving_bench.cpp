// Paged decode attention on the GPU: one query token per sequence over a paged cache of one
// LLaMA-7B layer (H = Hkv = 32, D = 128, blocks of 32 tokens), for batch x context from 1 x 2048
// to 64 x 4096, bf16 and int8 caches. Decode is memory-bound: the counter GB/s is the cache bytes
// read per second, and copy_GB/s a device-to-device copy of the same bytes measured in the same
// run (bytes read plus bytes written per second), so GB/s over copy_GB/s holds on any card.
//   serving_bench --benchmark_out=results/<gpu>/serving.json --benchmark_out_format=json
#include <cstdint>
#include <vector>

#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>

#include "harness/device/device.hpp"
#include "harness/memory/oom_error.hpp"
#include "harness/testing/cuda_event_timer.hpp"
#include "kernels/serving/paged_kv.hpp"

namespace {

using oomlab::DType;
using oomlab::Device;
using oomlab::DeviceKind;
using oomlab::Tensor;

constexpr std::int64_t kHeads = 32, kHeadDim = 128, kBlockTokens = 32;

Device& bench_device() {
  static Device device(DeviceKind::cuda, {});
  return device;
}

cudaStream_t stream_of(Device& device) { return reinterpret_cast<cudaStream_t>(device.stream()); }

void BM_PagedDecode(benchmark::State& state, DType cache_dtype) {
  Device& device = bench_device();
  const std::int64_t batch = state.range(0), context = state.range(1);
  const oomlab::ops::KvLayout layout{1, kHeads, kHeadDim, cache_dtype};
  const std::int64_t blocks_per_sequence = (context + kBlockTokens - 1) / kBlockTokens;
  try {
    // One pool, carved into blocks and handed out in a shuffled order, as a long-running server's are.
    const std::size_t block_bytes = layout.slot_bytes() * kBlockTokens;
    Tensor pool =
        Tensor::zeros(device, {static_cast<std::int64_t>(block_bytes) * batch * blocks_per_sequence}, DType::i8);
    std::vector<std::int64_t> table(static_cast<std::size_t>(batch * blocks_per_sequence));
    const std::int64_t total = batch * blocks_per_sequence;
    for (std::int64_t i = 0; i < total; ++i) {
      const std::int64_t shuffled = (i * 7919) % total;  // 7919 is prime: a permutation unless it divides total
      table[static_cast<std::size_t>(i)] = reinterpret_cast<std::int64_t>(pool.data()) +
                                           (total % 7919 == 0 ? i : shuffled) * static_cast<std::int64_t>(block_bytes);
    }
    Tensor block_table = Tensor::empty(device, {batch, blocks_per_sequence}, DType::i64);
    block_table.copy_from_host(table.data(), table.size() * sizeof(std::int64_t));
    std::vector<std::int32_t> lens(static_cast<std::size_t>(batch), static_cast<std::int32_t>(context));
    Tensor context_lens = Tensor::empty(device, {batch}, DType::i32);
    context_lens.copy_from_host(lens.data(), lens.size() * sizeof(std::int32_t));
    Tensor qkv = Tensor::zeros(device, {batch, 3 * kHeads, kHeadDim}, DType::bf16);
    Tensor out = Tensor::empty(device, {batch, kHeads, kHeadDim}, DType::bf16);
    auto decode = [&] {
      oomlab::ops::paged_decode_attention(out, qkv, layout, 0, block_table, kBlockTokens, context_lens, context);
    };
    decode();
    device.synchronize();
    for (auto _ : state) {
      oomlab::testing::CudaEventTimer timer(state, stream_of(device));
      decode();
    }
    const double bytes = double(batch) * double(context) * double(layout.slot_bytes());
    // The peer: a device-to-device copy of as many bytes (reads and writes them: 2x the traffic).
    Tensor copy_target = Tensor::empty(device, {static_cast<std::int64_t>(bytes)}, DType::i8);
    Tensor copy_source = pool.slice(0, static_cast<std::int64_t>(bytes));
    const double copy_ms = oomlab::testing::mean_milliseconds([&] { copy_target.copy_from(copy_source); },
                                                              stream_of(device));
    const double copy_gbps = 2.0 * bytes / (copy_ms * 1e-3) / 1e9;
    state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["copy_GB/s"] = copy_gbps;
    state.counters["cache_bytes"] = bytes;
  } catch (const oomlab::memory::OomError& error) {
    state.SkipWithError(error.what());
  }
}

void decode_shapes(benchmark::internal::Benchmark* b) {
  for (std::int64_t batch : {1, 8, 32, 64}) {
    for (std::int64_t context : {2048, 4096}) b->Args({batch, context});
  }
  b->Args({1, 32768});  // one long context: the split-K case
  b->ArgNames({"batch", "context"})->UseManualTime()->Unit(benchmark::kMicrosecond);
}

BENCHMARK_CAPTURE(BM_PagedDecode, bf16, DType::bf16)->Apply(decode_shapes);
BENCHMARK_CAPTURE(BM_PagedDecode, int8, DType::i8)->Apply(decode_shapes);

}  // namespace

BENCHMARK_MAIN();
