// Softmax cross-entropy: CPU reference (f64) and dispatch.
#include "kernels/transformer/cross_entropy.hpp"

#include <cmath>
#include <vector>

#include "kernels/core/host_values.hpp"
#include "kernels/core/op_checks.hpp"

namespace oomlab::ops {

void softmax_cross_entropy(Tensor& losses, Tensor& dlogits, const Tensor& logits,
                           const Tensor& targets, float dloss, std::int64_t classes) {
  const char* op = "softmax_cross_entropy";
  check_dtype(op, "logits", logits, kFloatDtypes);
  OOMLAB_CHECK(logits.ndim() >= 1 && logits.dim(-1) > 0,
               op << ": logits " << logits.describe() << " need a vocabulary dimension");
  std::int64_t rows = rows_of(logits), vocab = logits.dim(-1);
  if (classes == 0) classes = vocab;
  OOMLAB_CHECK(classes > 0 && classes <= vocab,
               op << ": classes " << classes << " outside (0, " << vocab << "] for logits " << logits.describe());
  check_shape(op, "targets", targets, {rows});
  check_dtype(op, "targets", targets, {DType::i32});
  check_shape(op, "losses", losses, {rows});
  check_dtype(op, "losses", losses, {DType::f32});
  if (dlogits.defined()) {
    check_shape(op, "dlogits", dlogits, logits.shape());
    check_same_dtype(op, dlogits, logits);
  }
  check_same_device(op, {&losses, &dlogits, &logits, &targets});
  switch (logits.device().kind()) {
    case DeviceKind::dry: return;
    case DeviceKind::host: {
      std::vector<double> row(static_cast<std::size_t>(vocab));
      for (std::int64_t r = 0; r < rows; ++r) {
        std::int32_t target = targets.data_as<const std::int32_t>()[r];
        OOMLAB_CHECK(target >= 0 && target < classes,
                     op << ": target " << target << " of row " << r << " outside [0, " << classes << ")");
        double max_logit = -INFINITY;
        for (std::int64_t v = 0; v < classes; ++v) {
          row[v] = load_as_float(logits.data(), logits.dtype(), r * vocab + v);
          max_logit = std::fmax(max_logit, row[v]);
        }
        double sum = 0;
        for (std::int64_t v = 0; v < classes; ++v) sum += std::exp(row[v] - max_logit);
        double log_sum = max_logit + std::log(sum);
        losses.data_as<float>()[r] = static_cast<float>(log_sum - row[target]);
        if (!dlogits.defined()) continue;
        for (std::int64_t v = 0; v < vocab; ++v) {
          double p = v < classes ? std::exp(row[v] - log_sum) : 0.0;
          store_value(dlogits.data(), dlogits.dtype(), r * vocab + v,
                      (p - (v == target ? 1.0 : 0.0)) * dloss);
        }
      }
      return;
    }
    case DeviceKind::cuda:
#if OOMLAB_WITH_CUDA
      return cuda::softmax_cross_entropy(losses, dlogits, logits, targets, dloss, classes,
                                         logits.device().stream());
#endif
      throw_no_cuda(op);
  }
}

}  // namespace oomlab::ops
