// NF4 quantisation: shapes, argument checks, the workspace (allocated on every device) and the
// CPU reference, step by step in the order the CUDA kernels follow.
#include "kernels/transformer/quantize_nf4.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"
#include "kernels/transformer/quantize_nf4_math.hpp"

namespace oomlab::ops {
namespace {

std::int64_t blocks_of(std::int64_t numel) { return numel / kNf4Block; }
std::int64_t groups_of(std::int64_t numel) { return (blocks_of(numel) + kNf4AbsmaxBlock - 1) / kNf4AbsmaxBlock; }

void check_storage(const char* op, const Tensor& values, const Tensor& codes, const Tensor& absmax_q,
                   const Tensor& absmax_scale) {
  check_defined(op, "values", values);
  check_dtype(op, "values", values, kFloatDtypes);
  OOMLAB_CHECK(values.numel() > 0 && values.numel() % kNf4Block == 0,
               op << ": " << values.describe() << " is not a whole number of " << kNf4Block
                  << "-value blocks (NF4 does not pad)");
  // Any shapes (a model keeps codes as (out, in / 2), say), the element counts of nf4_shapes.
  const Nf4Shapes shapes = nf4_shapes(values.numel());
  const struct {
    const char* name;
    const Tensor& tensor;
    const Shape& shape;
    DType dtype;
  } parts[] = {{"codes", codes, shapes.codes, DType::i8},
               {"absmax_q", absmax_q, shapes.absmax_q, DType::i8},
               {"absmax_scale", absmax_scale, shapes.absmax_scale, DType::f32}};
  for (const auto& part : parts) {
    check_dtype(op, part.name, part.tensor, {part.dtype});
    OOMLAB_CHECK(part.tensor.numel() == shape_numel(part.shape),
                 op << ": " << part.name << " " << part.tensor.describe() << " must hold " << shape_numel(part.shape)
                    << " elements for " << values.numel() << " values");
  }
  check_same_device(op, {&values, &codes, &absmax_q, &absmax_scale});
}

const float* signed_dynamic_map() {
  static const auto map = [] {
    std::array<float, kDynamicMapSize> values{};
    for (int i = 0; i < kDynamicMapSize; ++i) values[static_cast<std::size_t>(i)] = dynamic_map_value(true, i);
    return values;
  }();
  return map.data();
}

void quantize_on_host(Tensor& codes, Tensor& absmax_q, Tensor& absmax_scale, const Tensor& x, float* block_absmax,
                      double* partial_sums) {
  const std::int64_t blocks = blocks_of(x.numel()), groups = groups_of(x.numel());
  auto* code_bytes = codes.data_as<std::uint8_t>();
  // 1. Each block's absmax and its 32 bytes of codes.
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::size_t first = static_cast<std::size_t>(b * kNf4Block);
    float absmax = 0.0f;
    for (std::size_t i = first; i < first + kNf4Block; ++i) {
      absmax = std::fmax(absmax, std::fabs(load_as_float(x.data(), x.dtype(), i)));
    }
    block_absmax[b] = absmax;
    const float inverse = nf4_inverse_absmax(absmax);
    for (std::size_t i = first; i < first + kNf4Block; i += 2) {
      code_bytes[i / 2] = nf4_pack(nf4_quantize(load_as_float(x.data(), x.dtype(), i) * inverse),
                                   nf4_quantize(load_as_float(x.data(), x.dtype(), i + 1) * inverse));
    }
  }
  // 2. The offset: the mean of all absmax, summed in double per 256-block, then over the blocks.
  for (std::int64_t g = 0; g < groups; ++g) {
    double sum = 0.0;
    for (std::int64_t b = g * kNf4AbsmaxBlock; b < std::min(blocks, (g + 1) * kNf4AbsmaxBlock); ++b)
      sum += block_absmax[b];
    partial_sums[g] = sum;
  }
  double total = 0.0;
  for (std::int64_t g = 0; g < groups; ++g) total += partial_sums[g];
  const float offset = static_cast<float>(total / static_cast<double>(blocks));
  // 3. absmax - offset, 8-bit per 256-block with the block's largest magnitude as its scale.
  float* scales = absmax_scale.data_as<float>();
  auto* absmax_codes = absmax_q.data_as<std::uint8_t>();
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t end = std::min(blocks, (g + 1) * kNf4AbsmaxBlock);
    float scale = 0.0f;
    for (std::int64_t b = g * kNf4AbsmaxBlock; b < end; ++b)
      scale = std::fmax(scale, std::fabs(block_absmax[b] - offset));
    scales[g] = scale;
    for (std::int64_t b = g * kNf4AbsmaxBlock; b < end; ++b) {
      absmax_codes[b] = nf4_quantize_absmax(signed_dynamic_map(), block_absmax[b] - offset, scale);
    }
  }
  scales[groups] = offset;
}

void dequantize_on_host(Tensor& out, const Tensor& codes, const Tensor& absmax_q, const Tensor& absmax_scale) {
  const std::int64_t blocks = blocks_of(out.numel()), groups = groups_of(out.numel());
  const auto* code_bytes = codes.data_as<const std::uint8_t>();
  const auto* absmax_codes = absmax_q.data_as<const std::uint8_t>();
  const float* scales = absmax_scale.data_as<const float>();
  for (std::int64_t b = 0; b < blocks; ++b) {
    const float absmax = nf4_absmax(signed_dynamic_map(), absmax_codes[b], scales[b / kNf4AbsmaxBlock], scales[groups]);
    for (std::size_t i = static_cast<std::size_t>(b * kNf4Block); i < static_cast<std::size_t>((b + 1) * kNf4Block);
         i += 2) {
      store_value(out.data(), out.dtype(), i, nf4_value(nf4_first(code_bytes[i / 2])) * absmax);
      store_value(out.data(), out.dtype(), i + 1, nf4_value(nf4_second(code_bytes[i / 2])) * absmax);
    }
  }
}

}  // namespace

Nf4Shapes nf4_shapes(std::int64_t numel) {
  OOMLAB_CHECK(numel > 0 && numel % kNf4Block == 0,
               "nf4: " << numel << " values are not a whole number of " << kNf4Block << "-value blocks");
  return {{numel / 2}, {blocks_of(numel)}, {groups_of(numel) + 1}};
}

std::size_t nf4_storage_bytes(std::int64_t numel) {
  const Nf4Shapes shapes = nf4_shapes(numel);
  return static_cast<std::size_t>(shape_numel(shapes.codes) + shape_numel(shapes.absmax_q)) +
         static_cast<std::size_t>(shape_numel(shapes.absmax_scale)) * sizeof(float);
}

std::size_t nf4_quantize_workspace_bytes(std::int64_t numel) {
  nf4_shapes(numel);  // the same refusal
  return static_cast<std::size_t>(blocks_of(numel)) * sizeof(float) +
         static_cast<std::size_t>(groups_of(numel)) * sizeof(double);
}

void quantize_nf4(Tensor& codes, Tensor& absmax_q, Tensor& absmax_scale, const Tensor& x) {
  constexpr const char* op = "quantize_nf4";
  check_storage(op, x, codes, absmax_q, absmax_scale);
  Device& device = x.device();
  // Allocated on every device so dry predicts cuda's peak exactly. DType has no f64: the partial
  // sums are doubles in an i64 tensor of the same size.
  Tensor block_absmax = Tensor::empty(device, {blocks_of(x.numel())}, DType::f32, memory::Tag::workspace);
  Tensor partial_sums = Tensor::empty(device, {groups_of(x.numel())}, DType::i64, memory::Tag::workspace);
  switch (device.kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host:
      return quantize_on_host(codes, absmax_q, absmax_scale, x, block_absmax.data_as<float>(),
                              partial_sums.data_as<double>());
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::quantize_nf4(codes, absmax_q, absmax_scale, x, block_absmax.data_as<float>(),
                                partial_sums.data_as<double>(), device.stream());
#endif
      throw_no_cuda(op);
  }
}

void dequantize_nf4(Tensor& out, const Tensor& codes, const Tensor& absmax_q, const Tensor& absmax_scale) {
  constexpr const char* op = "dequantize_nf4";
  check_storage(op, out, codes, absmax_q, absmax_scale);
  switch (out.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: return dequantize_on_host(out, codes, absmax_q, absmax_scale);
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::dequantize_nf4(out, codes, absmax_q, absmax_scale, out.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
