// conv2d's backward-data and backward-weight (and the bias gradient) against central finite
// differences of its forward on host, for small odd shapes, 3x3 and 4x4, stride 1 and 2.
// The loss is sum(y * probe), so dL/dy = probe. conv is linear in x, w and b, so a large step is
// exact up to rounding and the comparison can be tight.
#include <gtest/gtest.h>

#include <ostream>

#include "kernels/conv/conv2d.hpp"
#include "kernels/testing/compare.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"

namespace oomlab::ops {
namespace {

struct GradientCase {
  Shape x, w;
  Conv2dParams params;
};
std::ostream& operator<<(std::ostream& out, const GradientCase& c) {
  return out << "x" << shape_string(c.x) << " w" << shape_string(c.w) << " stride " << c.params.stride
             << " pad " << c.params.padding;
}

class Conv2dGradient : public ::testing::TestWithParam<GradientCase> {};

TEST_P(Conv2dGradient, BackwardsMatchFiniteDifferences) {
  const GradientCase& c = GetParam();
  Device host(DeviceKind::host, {});
  Tensor x = testing::random_tensor(host, c.x, DType::f32, 11);
  Tensor w = testing::random_tensor(host, c.w, DType::f32, 12);
  Tensor bias = testing::random_tensor(host, {c.w[0]}, DType::f32, 13);
  const Shape y_shape = conv2d_output_shape(c.x, c.w, c.params);
  Tensor y = Tensor::empty(host, y_shape, DType::f32);
  const std::vector<float> probe = testing::random_values(shape_numel(y_shape), 14);
  auto loss = [&] {
    conv2d_forward(x, w, bias, y, c.params);
    return testing::probe_loss(y, probe);
  };

  Tensor dy = Tensor::from_host(host, y_shape, DType::f32, probe);
  Tensor dx = Tensor::empty(host, c.x, DType::f32);
  Tensor dw = Tensor::empty(host, c.w, DType::f32);
  Tensor dbias = Tensor::empty(host, {c.w[0]}, DType::f32);
  conv2d_backward_data(dy, w, dx, c.params);
  conv2d_backward_weight(x, dy, dw, dbias, c.params);

  const testing::Tolerance tol{2e-4, 2e-4};
  EXPECT_TRUE(testing::all_close(dx.to_host_f32(), testing::finite_difference_gradient(x, loss, 0.25f), tol, "dx"));
  EXPECT_TRUE(testing::all_close(dw.to_host_f32(), testing::finite_difference_gradient(w, loss, 0.25f), tol, "dw"));
  EXPECT_TRUE(
      testing::all_close(dbias.to_host_f32(), testing::finite_difference_gradient(bias, loss, 0.25f), tol, "dbias"));
}

INSTANTIATE_TEST_SUITE_P(
    OddShapes, Conv2dGradient,
    ::testing::Values(GradientCase{{2, 5, 4, 3}, {4, 3, 3, 3}, {1, 1}},
                      GradientCase{{1, 7, 6, 2}, {3, 4, 4, 2}, {2, 1}},
                      GradientCase{{1, 5, 5, 3}, {5, 3, 3, 3}, {2, 0}},
                      GradientCase{{1, 6, 7, 3}, {2, 4, 4, 3}, {1, 2}}));

}  // namespace
}  // namespace oomlab::ops
