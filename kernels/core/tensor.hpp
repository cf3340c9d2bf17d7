// Tensor: shape, dtype, device and storage owned through the device's caching allocator.
// Contiguous row-major only; views and dim-0 slices share storage without copying. On dry the
// storage has an address but no backing: never dereference data() there.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/memory/size.hpp"
#include "harness/memory/tags.hpp"
#include "kernels/core/dtype.hpp"

namespace oomlab {

using Shape = std::vector<std::int64_t>;
std::int64_t shape_numel(const Shape& shape);
std::string shape_string(const Shape& shape);  // "(4, 3, 256, 256)"

// One allocation from the device's allocator, returned when the last tensor using it goes.
class Storage {
 public:
  Storage(Device& device, std::size_t bytes, memory::Tag tag);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  memory::Tag tag() const { return tag_; }
  Device& device() const { return device_; }

 private:
  Device& device_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
  memory::Tag tag_;
};

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  // Uninitialised storage; the tag defaults to the current TagScope's.
  static Tensor empty(Device& device, Shape shape, DType dtype);
  static Tensor empty(Device& device, Shape shape, DType dtype, memory::Tag tag);
  static Tensor zeros(Device& device, Shape shape, DType dtype);
  // A copy of host data given as f32, converted to dtype (rounded for bf16/f16/ints).
  static Tensor from_host(Device& device, Shape shape, DType dtype, const std::vector<float>& values);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  std::int64_t dim(int i) const;  // negative i counts from the end
  std::int64_t numel() const { return shape_numel(shape_); }
  std::size_t nbytes() const { return saturating_mul(static_cast<std::size_t>(numel()), dtype_size(dtype_)); }
  DType dtype() const { return dtype_; }
  memory::Tag tag() const;
  Device& device() const;
  std::string describe() const;  // "bf16(4, 1024, 768) on cuda [activations]"

  void* data() const;
  template <class T>
  T* data_as() const { return static_cast<T*>(data()); }

  // Same storage, new shape with equal numel (one dim may be -1).
  Tensor view(Shape shape) const;
  // Rows [begin, end) of dim 0, sharing storage.
  Tensor slice(std::int64_t begin, std::int64_t end) const;

  // Element-wise copy of equal numel and dtype, across any two devices of the same kind or
  // between host memory and a device (h2d/d2h/d2d as needed). Blocking, except a copy between
  // two tensors of one cuda Device: queued on its compute stream (ordered before later kernels
  // and host reads of that device), not waited for.
  void copy_from(const Tensor& src);
  void copy_from_host(const void* src, std::size_t bytes);
  void copy_to_host(void* dst, std::size_t bytes) const;
  void fill(double value);  // converted to dtype
  void zero();
  // Values converted to f32 (for tests and checks); empty on dry.
  std::vector<float> to_host_f32() const;

  // Drops this reference (storage is freed when the last reference goes).
  void reset() { storage_.reset(); }

 private:
  std::shared_ptr<Storage> storage_;
  std::size_t offset_bytes_ = 0;
  Shape shape_;
  DType dtype_ = DType::f32;
};

}  // namespace oomlab
