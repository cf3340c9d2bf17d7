// dlopen/dlsym of NVML's entry points (nvml_abi.hpp lists them with nvml.h's signatures).
#include "harness/doctor/nvml_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>

#include "harness/memory/user_text.hpp"

namespace oomlab::doctor {
namespace {

constexpr const char* kDriverLibrary = "libnvidia-ml.so.1";
constexpr std::size_t kMaxErrorChars = 240;  // one line, even for a long path in the variable

// dlerror()'s text (it names the path) made safe for one line of the table.
std::string last_dl_error() {
  const char* text = dlerror();
  std::string line = printable_text(text == nullptr ? "unknown dlerror" : text);
  if (line.size() > kMaxErrorChars) line = line.substr(0, kMaxErrorChars) + "...";
  return line;
}

}  // namespace

std::string nvml_library_path() {
  const char* chosen = std::getenv("OOMLAB_NVML_LIBRARY");
  return chosen != nullptr && *chosen != '\0' ? chosen : kDriverLibrary;
}

NvmlLibrary::NvmlLibrary(const std::string& path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    error_ = "NVML not found: " + last_dl_error();
    return;
  }
  // Resolves one entry point into `slot`; the first one missing is named (a driver too old).
  auto resolve = [&](auto& slot, const char* name) {
    if (!error_.empty()) return;
    dlerror();
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr) {  // dlerror() names the library and the symbol
      error_ = "NVML not usable: " + last_dl_error();
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(symbol);
  };
  resolve(api_.init, "nvmlInit_v2");
  resolve(api_.shutdown, "nvmlShutdown");
  resolve(api_.error_string, "nvmlErrorString");
  resolve(api_.driver_version, "nvmlSystemGetDriverVersion");
  resolve(api_.handle_by_bus_id, "nvmlDeviceGetHandleByPciBusId_v2");
  resolve(api_.mig_mode, "nvmlDeviceGetMigMode");
  resolve(api_.ecc_mode, "nvmlDeviceGetEccMode");
  resolve(api_.persistence_mode, "nvmlDeviceGetPersistenceMode");
  resolve(api_.compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  resolve(api_.graphics_processes, "nvmlDeviceGetGraphicsRunningProcesses_v3");
}

NvmlLibrary::~NvmlLibrary() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace oomlab::doctor
