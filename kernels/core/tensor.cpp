// Tensor and Storage: every byte comes from the device's caching allocator, so the allocation
// sequence (and thus the peak) is the same on cuda, host and dry.
#include "kernels/core/tensor.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "kernels/core/check.hpp"
#include "kernels/core/fill.hpp"
#include "kernels/core/host_values.hpp"

namespace oomlab {

std::int64_t shape_numel(const Shape& shape) {
  // Saturating (see kSizeSaturated): extents from knobs can multiply past 64 bits, and a wrapped
  // count would be a small tensor where an impossible one was asked for.
  SaturatingSize numel = 1;
  for (std::int64_t extent : shape) {
    OOMLAB_CHECK(extent >= 0, "shape " << shape_string(shape) << " has a negative extent");
    numel = numel * static_cast<std::size_t>(extent);
  }
  return static_cast<std::int64_t>(std::min<std::size_t>(numel.value, std::numeric_limits<std::int64_t>::max()));
}

std::string shape_string(const Shape& shape) {
  std::ostringstream out;
  out << "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << ")";
  return out.str();
}

Storage::Storage(Device& device, std::size_t bytes, memory::Tag tag)
    : device_(device), bytes_(bytes), tag_(tag) {
  data_ = device.allocator().allocate(bytes, tag, device.stream());
}

Storage::~Storage() {
  try {
    device_.allocator().deallocate(data_);
  } catch (...) {
    // A destructor must not throw; deallocate only fails for pointers it never handed out.
  }
}

namespace {

const Storage& storage_of(const std::shared_ptr<Storage>& storage, const char* what) {
  if (!storage) throw std::logic_error(std::string("Tensor::") + what + " on an undefined tensor");
  return *storage;
}

// Bytes of one element of `dtype` holding `value` (little-endian in the low bytes).
std::uint64_t element_pattern(DType dtype, double value) {
  std::uint64_t pattern = 0;
  store_value(&pattern, dtype, 0, value);
  return pattern;
}

}  // namespace

Tensor Tensor::empty(Device& device, Shape shape, DType dtype) {
  return empty(device, std::move(shape), dtype, memory::current_tag());
}

Tensor Tensor::empty(Device& device, Shape shape, DType dtype, memory::Tag tag) {
  std::int64_t numel = shape_numel(shape);  // validates extents
  Tensor tensor;
  tensor.storage_ =
      std::make_shared<Storage>(device, static_cast<std::size_t>(numel) * dtype_size(dtype), tag);
  tensor.shape_ = std::move(shape);
  tensor.dtype_ = dtype;
  return tensor;
}

Tensor Tensor::zeros(Device& device, Shape shape, DType dtype) {
  Tensor tensor = empty(device, std::move(shape), dtype);
  tensor.zero();
  return tensor;
}

Tensor Tensor::from_host(Device& device, Shape shape, DType dtype,
                         const std::vector<float>& values) {
  OOMLAB_CHECK(static_cast<std::int64_t>(values.size()) == shape_numel(shape),
               "Tensor::from_host: " << values.size() << " values for shape "
                                     << shape_string(shape));
  Tensor tensor = empty(device, std::move(shape), dtype);
  if (device.is_dry()) return tensor;
  std::vector<unsigned char> bytes(tensor.nbytes());
  for (std::size_t i = 0; i < values.size(); ++i) store_value(bytes.data(), dtype, i, values[i]);
  tensor.copy_from_host(bytes.data(), bytes.size());
  return tensor;
}

std::int64_t Tensor::dim(int i) const {
  int index = i < 0 ? i + ndim() : i;
  OOMLAB_CHECK(index >= 0 && index < ndim(),
               "Tensor::dim(" << i << ") out of range for shape " << shape_string(shape_));
  return shape_[index];
}

memory::Tag Tensor::tag() const { return storage_of(storage_, "tag").tag(); }

Device& Tensor::device() const { return storage_of(storage_, "device").device(); }

std::string Tensor::describe() const {
  if (!defined()) return "undefined tensor";
  std::ostringstream out;
  out << dtype_name(dtype_) << shape_string(shape_) << " on " << device_kind_name(device().kind())
      << " [" << memory::tag_name(tag()) << "]";
  return out.str();
}

void* Tensor::data() const {
  void* base = storage_of(storage_, "data").data();
  return base ? static_cast<char*>(base) + offset_bytes_ : nullptr;
}

Tensor Tensor::view(Shape shape) const {
  storage_of(storage_, "view");
  int inferred = -1;
  std::int64_t known = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      OOMLAB_CHECK(inferred < 0, "Tensor::view" << shape_string(shape) << ": more than one -1");
      inferred = static_cast<int>(i);
    } else {
      OOMLAB_CHECK(shape[i] >= 0, "Tensor::view" << shape_string(shape) << ": negative extent");
      known *= shape[i];
    }
  }
  if (inferred >= 0) {
    OOMLAB_CHECK(known > 0 && numel() % known == 0,
                 "Tensor::view" << shape_string(shape) << ": cannot infer -1 for "
                                << numel() << " elements of " << describe());
    shape[inferred] = numel() / known;
  }
  OOMLAB_CHECK(shape_numel(shape) == numel(), "Tensor::view" << shape_string(shape)
                                                  << ": element count differs from "
                                                  << describe());
  Tensor result = *this;
  result.shape_ = std::move(shape);
  return result;
}

Tensor Tensor::slice(std::int64_t begin, std::int64_t end) const {
  storage_of(storage_, "slice");
  OOMLAB_CHECK(ndim() >= 1, "Tensor::slice on a 0-d tensor " << describe());
  OOMLAB_CHECK(0 <= begin && begin <= end && end <= shape_[0],
               "Tensor::slice(" << begin << ", " << end << ") out of range for " << describe());
  std::int64_t row_numel = 1;
  for (int i = 1; i < ndim(); ++i) row_numel *= shape_[i];
  std::size_t row_bytes = static_cast<std::size_t>(row_numel) * dtype_size(dtype_);
  Tensor result = *this;
  result.shape_[0] = end - begin;
  result.offset_bytes_ = offset_bytes_ + static_cast<std::size_t>(begin) * row_bytes;
  return result;
}

void Tensor::copy_from(const Tensor& src) {
  storage_of(storage_, "copy_from");
  storage_of(src.storage_, "copy_from (source)");
  OOMLAB_CHECK(numel() == src.numel() && dtype_ == src.dtype_,
               "Tensor::copy_from: " << src.describe() << " into " << describe());
  // dry holds no values: a copy to or from it is bookkeeping only.
  if (device().is_dry() || src.device().is_dry() || nbytes() == 0) return;
  bool dst_cuda = device().is_cuda();
  bool src_cuda = src.device().is_cuda();
  if (dst_cuda && src_cuda && &device() == &src.device()) {
    // Within one device: ordered on its compute stream like a kernel, so the host does not wait
    // (a blocking copy drained the GPU's queue). Host reads go through copy_to_host, which
    // synchronises that stream; tensors' memory is stream-ordered on it too.
    device().copy_async(data(), src.data(), nbytes(), CopyKind::device_to_device, device().stream());
    return;
  }
  CopyKind kind = dst_cuda ? (src_cuda ? CopyKind::device_to_device : CopyKind::host_to_device)
                           : (src_cuda ? CopyKind::device_to_host : CopyKind::host_to_host);
  // The cuda side owns the stream the copy is ordered on.
  Device& engine = (src_cuda && !dst_cuda) ? src.device() : device();
  engine.copy(data(), src.data(), nbytes(), kind);
}

void Tensor::copy_from_host(const void* src, std::size_t bytes) {
  storage_of(storage_, "copy_from_host");
  OOMLAB_CHECK(bytes == nbytes(), "Tensor::copy_from_host: " << bytes << " bytes into "
                                                             << describe() << " of " << nbytes());
  if (device().is_dry() || bytes == 0) return;
  device().copy(data(), src, bytes,
                device().is_cuda() ? CopyKind::host_to_device : CopyKind::host_to_host);
}

void Tensor::copy_to_host(void* dst, std::size_t bytes) const {
  storage_of(storage_, "copy_to_host");
  OOMLAB_CHECK(bytes == nbytes(), "Tensor::copy_to_host: " << describe() << " of " << nbytes()
                                                           << " bytes into " << bytes);
  if (device().is_dry() || bytes == 0) return;
  device().copy(dst, data(), bytes,
                device().is_cuda() ? CopyKind::device_to_host : CopyKind::host_to_host);
}

void Tensor::fill(double value) {
  storage_of(storage_, "fill");
  if (device().is_dry() || numel() == 0) return;
  std::uint64_t pattern = element_pattern(dtype_, value);
  std::size_t element_bytes = dtype_size(dtype_);
  std::size_t count = static_cast<std::size_t>(numel());
  if (device().is_cuda()) {
#if OOMLAB_WITH_CUDA
    fill_pattern_cuda(data(), count, element_bytes, pattern, device().stream());
    return;
#else
    throw std::logic_error("Tensor::fill: cuda tensor in a build without CUDA");
#endif
  }
  auto* bytes = static_cast<unsigned char*>(data());
  for (std::size_t i = 0; i < count; ++i) std::memcpy(bytes + i * element_bytes, &pattern, element_bytes);
}

void Tensor::zero() {
  storage_of(storage_, "zero");
  if (device().is_dry() || nbytes() == 0) return;
  device().memset(data(), 0, nbytes());
}

std::vector<float> Tensor::to_host_f32() const {
  storage_of(storage_, "to_host_f32");
  if (device().is_dry()) return {};
  std::vector<unsigned char> bytes(nbytes());
  copy_to_host(bytes.data(), bytes.size());
  std::vector<float> values(static_cast<std::size_t>(numel()));
  for (std::size_t i = 0; i < values.size(); ++i) values[i] = load_as_float(bytes.data(), dtype_, i);
  return values;
}

}  // namespace oomlab
