// Cached alloc+free pairs through the caching allocator (host, dry, cuda) beside raw
// cudaMalloc/cudaFree pairs of the same sizes, in one run so the ratio holds on any GPU.
// Target on the H200: a cached pair <= 0.5 us median, >= 100x faster than the raw pair.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <string>

#include "harness/memory/caching_allocator.hpp"
#include "harness/memory/size.hpp"

#if OOMLAB_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace {
using namespace oomlab::literals;
using oomlab::memory::AllocatorConfig;
using oomlab::memory::CachingAllocator;
using oomlab::memory::MemorySource;

bool cuda_device_present() {
#if OOMLAB_WITH_CUDA
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    (void)cudaGetLastError();
    return false;
  }
  return count > 0;
#else
  return false;
#endif
}

std::unique_ptr<MemorySource> make_source(const std::string& name) {
  if (name == "host") return oomlab::memory::make_host_source();
  if (name == "dry") return oomlab::memory::make_dry_source();
  return oomlab::memory::make_cuda_source();
}

void set_ns_per_pair(benchmark::State& state, std::chrono::steady_clock::duration elapsed) {
  double ns = std::chrono::duration<double, std::nano>(elapsed).count();
  state.counters["ns_per_pair"] = state.iterations() > 0 ? ns / static_cast<double>(state.iterations()) : 0;
  state.counters["bytes"] = static_cast<double>(state.range(0));
}

void BM_CachedPair(benchmark::State& state, const std::string& source_name) {
  if (source_name == "cuda" && !cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
  auto source = make_source(source_name);
  CachingAllocator allocator(*source, AllocatorConfig{});
  auto bytes = static_cast<std::size_t>(state.range(0));
  allocator.deallocate(allocator.allocate(bytes));  // warm: the segment is cached from here on
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    void* p = allocator.allocate(bytes);
    benchmark::DoNotOptimize(p);
    allocator.deallocate(p);
  }
  set_ns_per_pair(state, std::chrono::steady_clock::now() - start);
}

void BM_RawCudaPair(benchmark::State& state) {
  if (!cuda_device_present()) {
    state.SkipWithError("no CUDA device");
    return;
  }
#if OOMLAB_WITH_CUDA
  auto bytes = static_cast<std::size_t>(state.range(0));
  auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      state.SkipWithError("cudaMalloc failed");
      break;
    }
    benchmark::DoNotOptimize(p);
    cudaFree(p);
  }
  set_ns_per_pair(state, std::chrono::steady_clock::now() - start);
#endif
}

void sizes(benchmark::internal::Benchmark* b) {
  b->Arg(512)->Arg(static_cast<std::int64_t>(1_MiB))->Arg(static_cast<std::int64_t>(64_MiB));
  b->Repetitions(5)->DisplayAggregatesOnly(true);
}

BENCHMARK_CAPTURE(BM_CachedPair, host, std::string("host"))->Apply(sizes);
BENCHMARK_CAPTURE(BM_CachedPair, dry, std::string("dry"))->Apply(sizes);
BENCHMARK_CAPTURE(BM_CachedPair, cuda, std::string("cuda"))->Apply(sizes);
BENCHMARK(BM_RawCudaPair)->Apply(sizes);

std::string gpu_name() {
#if OOMLAB_WITH_CUDA
  if (cuda_device_present()) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) return prop.name;
  }
#endif
  return "none";
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::AddCustomContext("gpu", gpu_name());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
