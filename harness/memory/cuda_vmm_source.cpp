// cuda_vmm: expandable segments through the CUDA virtual-memory API (reserve an address range
// once, then cuMemCreate + cuMemMap physical pages into it). The driver functions come from
// cudaGetDriverEntryPointByVersion, so oomlab never links libcuda directly. Whole segments still
// come from cudaMalloc.
#include <cuda.h>

#include <stdexcept>
#include <string>
#include <unordered_map>

#include "harness/memory/detail/cuda_source_base.hpp"

namespace oomlab::memory {
namespace {

// The ABI version the entry points are requested at: the VMM API is unchanged since 10.2, and
// every driver that runs CUDA 12+ code provides it at 12.0.
constexpr unsigned int kDriverAbiVersion = 12000;

struct DriverApi {
  decltype(&::cuMemAddressReserve) address_reserve = nullptr;
  decltype(&::cuMemAddressFree) address_free = nullptr;
  decltype(&::cuMemCreate) create = nullptr;
  decltype(&::cuMemRelease) release = nullptr;
  decltype(&::cuMemMap) map = nullptr;
  decltype(&::cuMemUnmap) unmap = nullptr;
  decltype(&::cuMemSetAccess) set_access = nullptr;
  decltype(&::cuMemGetAllocationGranularity) granularity = nullptr;
  decltype(&::cuGetErrorName) error_name = nullptr;
};

template <typename Fn>
void load(Fn& fn, const char* symbol) {
  void* address = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  OOMLAB_CUDA_CHECK(cudaGetDriverEntryPointByVersion(symbol, &address, kDriverAbiVersion,
                                                     cudaEnableDefault, &found));
  if (found != cudaDriverEntryPointSuccess || address == nullptr) {
    throw std::runtime_error(std::string("cuda_vmm source: the driver lacks ") + symbol);
  }
  fn = reinterpret_cast<Fn>(address);
}

DriverApi load_driver_api() {
  DriverApi api;
  load(api.address_reserve, "cuMemAddressReserve");
  load(api.address_free, "cuMemAddressFree");
  load(api.create, "cuMemCreate");
  load(api.release, "cuMemRelease");
  load(api.map, "cuMemMap");
  load(api.unmap, "cuMemUnmap");
  load(api.set_access, "cuMemSetAccess");
  load(api.granularity, "cuMemGetAllocationGranularity");
  load(api.error_name, "cuGetErrorName");
  return api;
}

class CudaVmmSource final : public detail::CudaSourceBase {
 public:
  CudaVmmSource() : api_(load_driver_api()) {
    OOMLAB_CUDA_CHECK(cudaGetDevice(&device_));
    OOMLAB_CUDA_CHECK(cudaFree(nullptr));  // make the primary context current for driver calls
    prop_.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop_.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop_.location.id = device_;
    check(api_.granularity(&granularity_, &prop_, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
          "cuMemGetAllocationGranularity");
  }

  ~CudaVmmSource() override {
    // Pages still mapped belong to ranges the allocator failed to return; release them quietly.
    for (auto& [address, handle] : pages_) {
      api_.unmap(address, granularity_);
      api_.release(handle);
    }
  }

 private:
  void check(CUresult result, const char* call) const {
    if (result == CUDA_SUCCESS) return;
    const char* name = "unknown";
    if (api_.error_name != nullptr) api_.error_name(result, &name);
    throw std::runtime_error(std::string("cuda_vmm source: ") + call + " failed: " + name);
  }

  bool do_supports_expandable() const override { return true; }
  std::size_t do_page_granularity() const override { return granularity_; }

  void* do_reserve(std::size_t bytes) override {
    CUdeviceptr base = 0;
    CUresult result = api_.address_reserve(&base, bytes, granularity_, 0, 0);
    if (result == CUDA_ERROR_OUT_OF_MEMORY) return nullptr;
    check(result, "cuMemAddressReserve");
    return reinterpret_cast<void*>(base);
  }
  void do_release(void* base, std::size_t bytes) override {
    check(api_.address_free(reinterpret_cast<CUdeviceptr>(base), bytes), "cuMemAddressFree");
  }

  // One physical allocation per page, as PyTorch's ExpandableSegment does, so any page range
  // can later be unmapped on its own.
  bool do_map(void* address, std::size_t bytes) override {
    auto begin = reinterpret_cast<CUdeviceptr>(address);
    for (std::size_t offset = 0; offset < bytes; offset += granularity_) {
      CUmemGenericAllocationHandle handle{};
      CUresult result = api_.create(&handle, granularity_, &prop_, 0);
      if (result == CUDA_ERROR_OUT_OF_MEMORY) {
        unmap_pages(begin, offset);  // roll back this call's pages: map is all or nothing
        return false;
      }
      check(result, "cuMemCreate");
      result = api_.map(begin + offset, granularity_, 0, handle, 0);
      if (result != CUDA_SUCCESS) {
        api_.release(handle);
        unmap_pages(begin, offset);
        check(result, "cuMemMap");
      }
      pages_[begin + offset] = handle;
      held_bytes_ += granularity_;
    }
    CUmemAccessDesc access{};
    access.location = prop_.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    check(api_.set_access(begin, bytes, &access, 1), "cuMemSetAccess");
    return true;
  }
  void do_unmap(void* address, std::size_t bytes) override {
    unmap_pages(reinterpret_cast<CUdeviceptr>(address), bytes);
  }

  void unmap_pages(CUdeviceptr begin, std::size_t bytes) {
    for (std::size_t offset = 0; offset < bytes; offset += granularity_) {
      auto page = pages_.find(begin + offset);
      if (page == pages_.end()) throw std::invalid_argument("cuda_vmm source: unmap of a page that is not mapped");
      check(api_.unmap(page->first, granularity_), "cuMemUnmap");
      check(api_.release(page->second), "cuMemRelease");
      pages_.erase(page);
      held_bytes_ -= granularity_;
    }
  }

  std::string do_name() const override { return "cuda_vmm"; }

  DriverApi api_;
  int device_ = 0;
  CUmemAllocationProp prop_{};
  std::size_t granularity_ = 0;
  std::unordered_map<CUdeviceptr, CUmemGenericAllocationHandle> pages_;
};

}  // namespace

std::unique_ptr<MemorySource> make_cuda_vmm_source() {
  detail::require_cuda_device();
  return std::make_unique<CudaVmmSource>();
}

}  // namespace oomlab::memory
