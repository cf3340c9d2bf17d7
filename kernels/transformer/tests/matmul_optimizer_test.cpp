// Matmul (every transpose combination, batched, bias and GELU epilogues), AdamW, global grad
// norm and clipping on host: backward against finite differences, known values, and the
// fixed-size workspace requests that dry must see too.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/core/host_values.hpp"
#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/adamw.hpp"
#include "kernels/transformer/gelu_math.hpp"
#include "kernels/transformer/grad_norm.hpp"
#include "kernels/transformer/matmul.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::ops {
namespace {

using testing::all_close;
using testing::dry_device;
using testing::finite_difference_gradient;
using testing::host_device;
using testing::kFiniteDifferenceTolerance;
using testing::probe_loss;
using testing::random_tensor;
using testing::random_values;

TEST(Matmul, KnownProductWithBiasAndGelu) {
  Tensor a = Tensor::from_host(host_device(), {2, 3}, DType::f32, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_host(host_device(), {3, 2}, DType::f32, {1, 0, 0, 1, 1, -1});
  Tensor bias = Tensor::from_host(host_device(), {2}, DType::f32, {0.5f, -0.5f});
  Tensor c = Tensor::empty(host_device(), {2, 2}, DType::f32);
  Tensor none;
  matmul(c, a, b, none);
  EXPECT_EQ(c.to_host_f32(), (std::vector<float>{4, -1, 10, -1}));
  matmul(c, a, b, bias);
  EXPECT_EQ(c.to_host_f32(), (std::vector<float>{4.5f, -1.5f, 10.5f, -1.5f}));
  matmul(c, a, b, bias, {false, false, true, false});  // accumulate
  EXPECT_EQ(c.to_host_f32(), (std::vector<float>{9, -3, 21, -3}));
  matmul(c, a, b, bias, {false, false, false, true});
  EXPECT_TRUE(all_close(c.to_host_f32(), {gelu_value(4.5f), gelu_value(-1.5f), gelu_value(10.5f), gelu_value(-1.5f)},
                        {1e-6, 1e-6}));
  Tensor bt = Tensor::from_host(host_device(), {2, 3}, DType::f32, {1, 0, 1, 0, 1, -1});  // b^T
  matmul(c, a, bt, none, {false, true, false, false});
  EXPECT_EQ(c.to_host_f32(), (std::vector<float>{4, -1, 10, -1}));
}

// The skip connection added by the GEMM: C = A·B + bias + R, with R another tensor, left as it was.
TEST(Matmul, ResidualIsAddedAndKept) {
  Tensor a = Tensor::from_host(host_device(), {2, 3}, DType::f32, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_host(host_device(), {3, 2}, DType::f32, {1, 0, 0, 1, 1, -1});
  Tensor bias = Tensor::from_host(host_device(), {2}, DType::f32, {0.5f, -0.5f});
  Tensor r = Tensor::from_host(host_device(), {2, 2}, DType::f32, {100, 200, 300, 400});
  Tensor c = Tensor::empty(host_device(), {2, 2}, DType::f32);
  matmul(c, a, b, bias, {}, r);
  EXPECT_EQ(c.to_host_f32(), (std::vector<float>{104.5f, 198.5f, 310.5f, 398.5f}));
  EXPECT_EQ(r.to_host_f32(), (std::vector<float>{100, 200, 300, 400}));
  EXPECT_THROW(matmul(c, a, b, bias, {}, c), std::invalid_argument) << "the residual is C itself";
  EXPECT_THROW(matmul(c, a, b, bias, {false, false, true, false}, r), std::invalid_argument) << "with accumulate";
  Tensor wrong = Tensor::empty(host_device(), {2, 3}, DType::f32);
  EXPECT_THROW(matmul(c, a, b, bias, {}, wrong), std::invalid_argument) << "not C's shape";
}

struct TransposeCase {
  bool transpose_a, transpose_b;
};

class MatmulBackward : public ::testing::TestWithParam<TransposeCase> {};

TEST_P(MatmulBackward, MatchesFiniteDifferences) {
  const std::int64_t M = 5, K = 7, N = 3;
  MatmulOptions options{GetParam().transpose_a, GetParam().transpose_b, false, false};
  Shape a_shape = options.transpose_a ? Shape{K, M} : Shape{M, K};
  Shape b_shape = options.transpose_b ? Shape{N, K} : Shape{K, N};
  Tensor a = random_tensor(host_device(), a_shape, DType::f32, 1);
  Tensor b = random_tensor(host_device(), b_shape, DType::f32, 2);
  Tensor bias = random_tensor(host_device(), {N}, DType::f32, 3);
  Tensor c = Tensor::empty(host_device(), {M, N}, DType::f32);
  std::vector<float> probe = random_values(M * N, 4);
  Tensor dc = Tensor::from_host(host_device(), {M, N}, DType::f32, probe);
  Tensor da = Tensor::empty(host_device(), a_shape, DType::f32);
  Tensor db = Tensor::zeros(host_device(), b_shape, DType::f32);
  Tensor dbias = Tensor::zeros(host_device(), {N}, DType::f32);
  matmul_backward(da, db, dbias, dc, a, b, options);
  auto loss = [&] {
    matmul(c, a, b, bias, options);
    return probe_loss(c, probe);
  };
  EXPECT_TRUE(all_close(da.to_host_f32(), finite_difference_gradient(a, loss), kFiniteDifferenceTolerance, "da"));
  EXPECT_TRUE(all_close(db.to_host_f32(), finite_difference_gradient(b, loss), kFiniteDifferenceTolerance, "db"));
  EXPECT_TRUE(
      all_close(dbias.to_host_f32(), finite_difference_gradient(bias, loss), kFiniteDifferenceTolerance, "dbias"));
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, MatmulBackward,
                         ::testing::Values(TransposeCase{false, false}, TransposeCase{false, true},
                                           TransposeCase{true, false}, TransposeCase{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.transpose_a ? "At" : "A") +
                                  (info.param.transpose_b ? "Bt" : "B");
                         });

TEST(Matmul, ActivationsWithLeadingDimsAndLinearWeight) {
  // (B, T, C) x W^T with W (N, C): the layout of every linear layer.
  const std::int64_t B = 2, T = 3, C = 5, N = 4;
  Tensor x = random_tensor(host_device(), {B, T, C}, DType::f32, 5);
  Tensor w = random_tensor(host_device(), {N, C}, DType::f32, 6);
  Tensor y = Tensor::empty(host_device(), {B, T, N}, DType::f32);
  Tensor none;
  MatmulOptions linear{false, true, false, false};
  std::vector<float> probe = random_values(B * T * N, 7);
  Tensor dy = Tensor::from_host(host_device(), {B, T, N}, DType::f32, probe);
  Tensor dx = Tensor::empty(host_device(), {B, T, C}, DType::f32);
  Tensor dw = Tensor::zeros(host_device(), {N, C}, DType::f32);
  matmul_backward(dx, dw, none, dy, x, w, linear);
  auto loss = [&] {
    matmul(y, x, w, none, linear);
    return probe_loss(y, probe);
  };
  EXPECT_TRUE(all_close(dx.to_host_f32(), finite_difference_gradient(x, loss), kFiniteDifferenceTolerance, "dx"));
  EXPECT_TRUE(all_close(dw.to_host_f32(), finite_difference_gradient(w, loss), kFiniteDifferenceTolerance, "dw"));
}

TEST(Matmul, BatchedBackwardMatchesFiniteDifferences) {
  const std::int64_t batch = 3, M = 4, K = 5, N = 3;
  Tensor a = random_tensor(host_device(), {batch, M, K}, DType::f32, 8);
  Tensor b = random_tensor(host_device(), {batch, N, K}, DType::f32, 9);
  Tensor c = Tensor::empty(host_device(), {batch, M, N}, DType::f32);
  Tensor none;
  MatmulOptions options{false, true, false, false};  // scores = Q K^T
  std::vector<float> probe = random_values(batch * M * N, 10);
  Tensor dc = Tensor::from_host(host_device(), {batch, M, N}, DType::f32, probe);
  Tensor da = Tensor::empty(host_device(), {batch, M, K}, DType::f32);
  Tensor db = Tensor::zeros(host_device(), {batch, N, K}, DType::f32);
  matmul_backward(da, db, none, dc, a, b, options);
  auto loss = [&] {
    matmul(c, a, b, none, options);
    return probe_loss(c, probe);
  };
  EXPECT_TRUE(all_close(da.to_host_f32(), finite_difference_gradient(a, loss), kFiniteDifferenceTolerance, "da"));
  EXPECT_TRUE(all_close(db.to_host_f32(), finite_difference_gradient(b, loss), kFiniteDifferenceTolerance, "db"));
}

TEST(Matmul, DryChecksShapesAndRequestsTheWorkspace) {
  Device dry(DeviceKind::dry, {});
  Tensor a = Tensor::empty(dry, {16384, 768}, DType::bf16);
  Tensor w = Tensor::empty(dry, {3072, 768}, DType::bf16);
  Tensor c = Tensor::empty(dry, {16384, 3072}, DType::bf16);
  Tensor none;
  dry.allocator().reset_peak_stats();
  matmul(c, a, w, none, {false, true, false, false});
  memory::MemoryStats stats = dry.allocator().stats();
  EXPECT_EQ(stats.tag(memory::Tag::workspace).peak, static_cast<std::int64_t>(kMatmulWorkspaceBytes));
  EXPECT_EQ(stats.tag(memory::Tag::workspace).current, 0) << "returned after the call";
  EXPECT_THROW(matmul(c, a, w, none), std::invalid_argument) << "inner dims 768 vs 3072";
  Tensor wrong_c = Tensor::empty(dry, {16384, 3071}, DType::bf16);
  EXPECT_THROW(matmul(wrong_c, a, w, none, {false, true, false, false}), std::invalid_argument);
  Tensor f32_bias = Tensor::empty(dry, {3072}, DType::f32);
  EXPECT_THROW(matmul(c, a, w, f32_bias, {false, true, false, false}), std::invalid_argument);
}

TEST(AdamW, FirstStepMovesByLearningRateTimesSign) {
  Tensor master = Tensor::from_host(host_device(), {3}, DType::f32, {1.0f, -2.0f, 0.5f});
  Tensor param = Tensor::empty(host_device(), {3}, DType::bf16);
  Tensor grad = Tensor::from_host(host_device(), {3}, DType::bf16, {0.5f, -4.0f, 1.0f});
  Tensor m = Tensor::zeros(host_device(), {3}, DType::f32);
  Tensor v = Tensor::zeros(host_device(), {3}, DType::f32);
  AdamWConfig config;
  config.lr = 0.1f;
  config.weight_decay = 0.01f;
  adamw_step(master, param, grad, m, v, config, 1);
  // Step 1: m_hat = g, v_hat = g^2, so the update is lr * (sign(g) + wd * w).
  std::vector<float> w = master.to_host_f32();
  EXPECT_NEAR(w[0], 1.0f - 0.1f * (1 + 0.01f * 1.0f), 1e-6);
  EXPECT_NEAR(w[1], -2.0f - 0.1f * (-1 + 0.01f * -2.0f), 1e-6);
  EXPECT_NEAR(w[2], 0.5f - 0.1f * (1 + 0.01f * 0.5f), 1e-6);
  std::vector<float> copy = param.to_host_f32();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(copy[i], round_to_dtype(w[i], DType::bf16));
  EXPECT_TRUE(all_close(m.to_host_f32(), {0.05f, -0.4f, 0.1f}, {1e-7, 1e-6}));
  EXPECT_TRUE(all_close(v.to_host_f32(), {0.00025f, 0.016f, 0.001f}, {1e-9, 1e-4}));
  Tensor none;
  EXPECT_NO_THROW(adamw_step(master, none, grad, m, v, config, 2));
  EXPECT_THROW(adamw_step(master, param, grad, m, v, config, 0), std::invalid_argument);
  Tensor short_m = Tensor::zeros(host_device(), {2}, DType::f32);
  EXPECT_THROW(adamw_step(master, param, grad, short_m, v, config, 3), std::invalid_argument);
}

TEST(GradNorm, GlobalNormAndClipping) {
  Tensor g1 = Tensor::from_host(host_device(), {2}, DType::f32, {3.0f, 0.0f});
  Tensor g2 = Tensor::from_host(host_device(), {1, 1}, DType::bf16, {4.0f});
  Tensor norm = Tensor::empty(host_device(), {1}, DType::f32);
  global_grad_norm(norm, {g1, g2});
  EXPECT_FLOAT_EQ(norm.to_host_f32()[0], 5.0f);
  clip_grads_by_norm({g1, g2}, norm, 10.0f);
  EXPECT_EQ(g1.to_host_f32()[0], 3.0f) << "below max_norm: unchanged";
  clip_grads_by_norm({g1, g2}, norm, 1.0f);
  EXPECT_NEAR(g1.to_host_f32()[0], 0.6f, 1e-6);
  EXPECT_NEAR(g2.to_host_f32()[0], 0.8f, 4e-3);
  global_grad_norm(norm, {g1, g2});
  EXPECT_NEAR(norm.to_host_f32()[0], 1.0f, 3e-3);
}

TEST(GradNorm, DryRequestsTheSameScratchAndChecksShapes) {
  Device dry(DeviceKind::dry, {});
  std::vector<Tensor> grads = {Tensor::empty(dry, {100}, DType::f32), Tensor::empty(dry, {7}, DType::bf16)};
  Tensor norm = Tensor::empty(dry, {1}, DType::f32);
  global_grad_norm(norm, grads);
  EXPECT_EQ(dry.allocator().stats().tag(memory::Tag::workspace).peak, 2048) << "2 x 256 f32";
  Tensor wrong = Tensor::empty(dry, {2}, DType::f32);
  EXPECT_THROW(global_grad_norm(wrong, grads), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::ops
