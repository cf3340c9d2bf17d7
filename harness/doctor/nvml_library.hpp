// NVML loaded at run time: libnvidia-ml.so.1 ships with the driver, not with the toolkit, so a
// binary built anywhere (without nvml.h) reads MIG/ECC/persistence wherever a driver is present.
#pragma once
#include <string>

#include "harness/doctor/nvml_abi.hpp"

namespace oomlab::doctor {

// The library the doctor opens: $OOMLAB_NVML_LIBRARY when set (NVML outside the loader's path,
// or a test's stand-in), else "libnvidia-ml.so.1" as the driver installs it.
std::string nvml_library_path();

// Opens `path` and resolves every entry point of nvml::Api; never throws. When that fails,
// error() says why in one line ("NVML not found: libnvidia-ml.so.1: cannot open shared object
// file: ...") and api() must not be used. Closes the library when destroyed.
class NvmlLibrary {
 public:
  explicit NvmlLibrary(const std::string& path);
  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  bool loaded() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const nvml::Api& api() const { return api_; }

 private:
  void* handle_ = nullptr;
  nvml::Api api_;
  std::string error_;
};

}  // namespace oomlab::doctor
