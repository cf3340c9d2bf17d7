#include "scenarios/models/transformer/nf4_base.hpp"

#include <stdexcept>

#include "kernels/core/check.hpp"
#include "scenarios/models/transformer/projections.hpp"

namespace oomlab::model {
namespace {

void check_layout(const char* op, const Tensor& codes, const Tensor& absmax, const Tensor& absmax_scale,
                  const Tensor& values) {
  OOMLAB_CHECK(values.ndim() == 2 && codes.ndim() == 2, op << ": weights must be (out, in)");
  const std::int64_t out = values.dim(0), in = values.dim(1);
  const Nf4Layout layout = nf4_layout(out, in);
  OOMLAB_CHECK(codes.dtype() == DType::i8 && codes.dim(0) == out && codes.dim(1) == (in + 1) / 2,
               op << ": codes " << codes.describe() << " must be (" << out << ", " << (in + 1) / 2 << ") i8");
  OOMLAB_CHECK(absmax.dtype() == DType::i8 && absmax.numel() == layout.blocks,
               op << ": absmax " << absmax.describe() << " must hold " << layout.blocks << " bytes");
  OOMLAB_CHECK(absmax_scale.dtype() == DType::f32 && absmax_scale.numel() == layout.scale_groups,
               op << ": absmax_scale " << absmax_scale.describe() << " must hold " << layout.scale_groups
                  << " f32");
}

[[noreturn]] void refuse(const Tensor& t) {
  throw std::invalid_argument(std::string("quantize_base=nf4 on ") + device_kind_name(t.device().kind()) +
                              ": this build has no nf4 kernels yet; --device dry plans it");
}

}  // namespace

bool nf4_kernels_available() { return false; }

void quantize_nf4(Tensor& codes, Tensor& absmax, Tensor& absmax_scale, const Tensor& values) {
  check_layout("quantize_nf4", codes, absmax, absmax_scale, values);
  if (values.device().is_dry()) return;
  refuse(values);
}

void dequantize_nf4(Tensor& out, const Tensor& codes, const Tensor& absmax, const Tensor& absmax_scale) {
  check_layout("dequantize_nf4", codes, absmax, absmax_scale, out);
  if (out.device().is_dry()) return;
  refuse(out);
}

}  // namespace oomlab::model
