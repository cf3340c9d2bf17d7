// LayerNorm, RMSNorm, embedding and cross-entropy on host: every backward against central
// finite differences of its forward (small odd shapes), known values, and dry shape checks.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/cross_entropy.hpp"
#include "kernels/transformer/embedding.hpp"
#include "kernels/transformer/layernorm.hpp"
#include "kernels/transformer/rmsnorm.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::ops {
namespace {

using testing::all_close;
using testing::dry_device;
using testing::finite_difference_gradient;
using testing::host_device;
using testing::kFiniteDifferenceTolerance;
using testing::probe_loss;
using testing::random_indices;
using testing::random_tensor;
using testing::random_values;

Tensor probe_tensor(const Shape& shape, std::vector<float>& probe, std::uint32_t seed) {
  probe = random_values(static_cast<std::size_t>(shape_numel(shape)), seed);
  return Tensor::from_host(host_device(), shape, DType::f32, probe);
}

TEST(LayerNorm, ForwardNormalisesEachRow) {
  Tensor x = Tensor::from_host(host_device(), {1, 4}, DType::f32, {1, 2, 3, 4});
  Tensor w = Tensor::from_host(host_device(), {4}, DType::f32, {1, 1, 2, 1});
  Tensor b = Tensor::from_host(host_device(), {4}, DType::f32, {0, 0, 0, 10});
  Tensor out = Tensor::empty(host_device(), {1, 4}, DType::f32);
  Tensor mean = Tensor::empty(host_device(), {1}, DType::f32);
  Tensor rstd = Tensor::empty(host_device(), {1}, DType::f32);
  layernorm_forward(out, mean, rstd, x, w, b, 0.0f);
  float s = 1.0f / std::sqrt(1.25f);
  EXPECT_TRUE(all_close(out.to_host_f32(), {-1.5f * s, -0.5f * s, 2 * 0.5f * s, 1.5f * s + 10}, {1e-6, 1e-6}));
  EXPECT_EQ(mean.to_host_f32()[0], 2.5f);
  EXPECT_NEAR(rstd.to_host_f32()[0], s, 1e-6);
}

TEST(LayerNorm, BackwardMatchesFiniteDifferences) {
  for (Shape shape : {Shape{3, 7}, Shape{5, 33}}) {
    std::int64_t C = shape[1];
    Tensor x = random_tensor(host_device(), shape, DType::f32, 1, -2, 2);
    Tensor w = random_tensor(host_device(), {C}, DType::f32, 2, 0.5f, 1.5f);
    Tensor b = random_tensor(host_device(), {C}, DType::f32, 3);
    Tensor out = Tensor::empty(host_device(), shape, DType::f32);
    Tensor mean = Tensor::empty(host_device(), {shape[0]}, DType::f32);
    Tensor rstd = Tensor::empty(host_device(), {shape[0]}, DType::f32);
    std::vector<float> probe;
    Tensor dout = probe_tensor(shape, probe, 4);
    layernorm_forward(out, mean, rstd, x, w, b);
    Tensor dx = Tensor::empty(host_device(), shape, DType::f32);
    Tensor dw = Tensor::zeros(host_device(), {C}, DType::f32);
    Tensor db = Tensor::zeros(host_device(), {C}, DType::f32);
    layernorm_backward(dx, dw, db, dout, x, w, mean, rstd);
    auto loss = [&] {
      layernorm_forward(out, mean, rstd, x, w, b);
      return probe_loss(out, probe);
    };
    EXPECT_TRUE(all_close(dx.to_host_f32(), finite_difference_gradient(x, loss), kFiniteDifferenceTolerance, "dx"));
    EXPECT_TRUE(
        all_close(dw.to_host_f32(), finite_difference_gradient(w, loss), kFiniteDifferenceTolerance, "dweight"));
    EXPECT_TRUE(all_close(db.to_host_f32(), finite_difference_gradient(b, loss), kFiniteDifferenceTolerance, "dbias"));
  }
}

// The skip connection's gradient added as dx is written equals dx plus it, the parameter gradients
// unchanged; for LayerNorm and RMSNorm alike.
TEST(NormBackward, ResidualIsAddedToDx) {
  const Shape shape{4, 9};
  Tensor x = random_tensor(host_device(), shape, DType::f32, 21, -2, 2);
  Tensor w = random_tensor(host_device(), {9}, DType::f32, 22, 0.5f, 1.5f);
  Tensor b = random_tensor(host_device(), {9}, DType::f32, 23);
  Tensor dout = random_tensor(host_device(), shape, DType::f32, 24);
  Tensor skip = random_tensor(host_device(), shape, DType::f32, 25);
  Tensor out = Tensor::empty(host_device(), shape, DType::f32);
  Tensor mean = Tensor::empty(host_device(), {4}, DType::f32), rstd = Tensor::empty(host_device(), {4}, DType::f32);
  Tensor plain = Tensor::empty(host_device(), shape, DType::f32);
  Tensor fused = Tensor::empty(host_device(), shape, DType::f32);
  auto expect_sum = [&](const char* what) {
    std::vector<float> p = plain.to_host_f32(), f = fused.to_host_f32(), r = skip.to_host_f32();
    for (std::size_t i = 0; i < p.size(); ++i) EXPECT_NEAR(f[i], p[i] + r[i], 1e-5) << what << " " << i;
  };
  layernorm_forward(out, mean, rstd, x, w, b);
  Tensor dw1 = Tensor::zeros(host_device(), {9}, DType::f32), db1 = Tensor::zeros(host_device(), {9}, DType::f32);
  Tensor dw2 = Tensor::zeros(host_device(), {9}, DType::f32), db2 = Tensor::zeros(host_device(), {9}, DType::f32);
  layernorm_backward(plain, dw1, db1, dout, x, w, mean, rstd);
  layernorm_backward(fused, dw2, db2, dout, x, w, mean, rstd, skip);
  expect_sum("layernorm");
  EXPECT_EQ(dw1.to_host_f32(), dw2.to_host_f32());
  EXPECT_EQ(db1.to_host_f32(), db2.to_host_f32());
  EXPECT_THROW(layernorm_backward(fused, dw2, db2, dout, x, w, mean, rstd, fused), std::invalid_argument);

  rmsnorm_forward(out, rstd, x, w);
  rmsnorm_backward(plain, dw1, dout, x, w, rstd);
  rmsnorm_backward(fused, dw2, dout, x, w, rstd, skip);
  expect_sum("rmsnorm");
  Tensor narrow = Tensor::empty(host_device(), {4, 8}, DType::f32);
  EXPECT_THROW(rmsnorm_backward(fused, dw2, dout, x, w, rstd, narrow), std::invalid_argument);
}

TEST(LayerNorm, ParameterGradientsAccumulate) {
  Shape shape{3, 7};
  Tensor x = random_tensor(host_device(), shape, DType::f32, 5);
  Tensor w = random_tensor(host_device(), {7}, DType::f32, 6);
  Tensor b = random_tensor(host_device(), {7}, DType::f32, 7);
  Tensor out = Tensor::empty(host_device(), shape, DType::f32);
  Tensor mean = Tensor::empty(host_device(), {3}, DType::f32);
  Tensor rstd = Tensor::empty(host_device(), {3}, DType::f32);
  layernorm_forward(out, mean, rstd, x, w, b);
  Tensor dout = random_tensor(host_device(), shape, DType::f32, 8);
  Tensor dx = Tensor::empty(host_device(), shape, DType::f32);
  Tensor dw = Tensor::zeros(host_device(), {7}, DType::f32);
  Tensor db = Tensor::zeros(host_device(), {7}, DType::f32);
  layernorm_backward(dx, dw, db, dout, x, w, mean, rstd);
  std::vector<float> once = db.to_host_f32();
  layernorm_backward(dx, dw, db, dout, x, w, mean, rstd);
  std::vector<float> twice = db.to_host_f32();
  for (std::size_t i = 0; i < once.size(); ++i) EXPECT_FLOAT_EQ(twice[i], 2 * once[i]);
}

TEST(RmsNorm, ForwardKnownValueAndBackwardMatchesFiniteDifferences) {
  Tensor x1 = Tensor::from_host(host_device(), {1, 2}, DType::f32, {3, 4});
  Tensor w1 = Tensor::from_host(host_device(), {2}, DType::f32, {1, 2});
  Tensor o1 = Tensor::empty(host_device(), {1, 2}, DType::f32);
  Tensor r1 = Tensor::empty(host_device(), {1}, DType::f32);
  rmsnorm_forward(o1, r1, x1, w1, 0.0f);
  float s = 1.0f / std::sqrt(12.5f);
  EXPECT_TRUE(all_close(o1.to_host_f32(), {3 * s, 8 * s}, {1e-6, 1e-6}));

  for (Shape shape : {Shape{3, 7}, Shape{5, 33}}) {
    std::int64_t C = shape[1];
    Tensor x = random_tensor(host_device(), shape, DType::f32, 11, -2, 2);
    Tensor w = random_tensor(host_device(), {C}, DType::f32, 12, 0.5f, 1.5f);
    Tensor out = Tensor::empty(host_device(), shape, DType::f32);
    Tensor rstd = Tensor::empty(host_device(), {shape[0]}, DType::f32);
    std::vector<float> probe;
    Tensor dout = probe_tensor(shape, probe, 13);
    rmsnorm_forward(out, rstd, x, w);
    Tensor dx = Tensor::empty(host_device(), shape, DType::f32);
    Tensor dw = Tensor::zeros(host_device(), {C}, DType::f32);
    rmsnorm_backward(dx, dw, dout, x, w, rstd);
    auto loss = [&] {
      rmsnorm_forward(out, rstd, x, w);
      return probe_loss(out, probe);
    };
    EXPECT_TRUE(all_close(dx.to_host_f32(), finite_difference_gradient(x, loss), kFiniteDifferenceTolerance, "dx"));
    EXPECT_TRUE(
        all_close(dw.to_host_f32(), finite_difference_gradient(w, loss), kFiniteDifferenceTolerance, "dweight"));
  }
}

TEST(Embedding, ForwardGathersAndBackwardMatchesFiniteDifferences) {
  const std::int64_t B = 3, T = 5, V = 7, C = 9;
  std::vector<float> ids = random_indices(B * T, V, 21);
  ids[0] = ids[1] = 2;  // a repeated token must accumulate
  Tensor tokens = Tensor::from_host(host_device(), {B, T}, DType::i32, ids);
  Tensor wte = random_tensor(host_device(), {V, C}, DType::f32, 22);
  Tensor wpe = random_tensor(host_device(), {T + 2, C}, DType::f32, 23);
  Tensor out = Tensor::empty(host_device(), {B, T, C}, DType::f32);
  embedding_forward(out, tokens, wte, wpe);
  std::vector<float> o = out.to_host_f32(), e = wte.to_host_f32(), p = wpe.to_host_f32();
  std::size_t row = 1 * T + 3;  // b = 1, t = 3
  for (std::int64_t c = 0; c < C; ++c) {
    EXPECT_EQ(o[row * C + c], e[static_cast<std::size_t>(ids[row]) * C + c] + p[3 * C + c]);
  }

  std::vector<float> probe;
  Tensor dout = probe_tensor({B, T, C}, probe, 24);
  Tensor dwte = Tensor::zeros(host_device(), {V, C}, DType::f32);
  Tensor dwpe = Tensor::zeros(host_device(), {T + 2, C}, DType::f32);
  embedding_backward(dwte, dwpe, dout, tokens);
  auto loss = [&] {
    embedding_forward(out, tokens, wte, wpe);
    return probe_loss(out, probe);
  };
  EXPECT_TRUE(all_close(dwte.to_host_f32(), finite_difference_gradient(wte, loss), kFiniteDifferenceTolerance, "dwte"));
  EXPECT_TRUE(all_close(dwpe.to_host_f32(), finite_difference_gradient(wpe, loss), kFiniteDifferenceTolerance, "dwpe"));

  Tensor no_positions;
  EXPECT_NO_THROW(embedding_forward(out, tokens, wte, no_positions));
  Tensor bad = Tensor::from_host(host_device(), {1, 1}, DType::i32, {float(V)});
  Tensor out1 = Tensor::empty(host_device(), {1, 1, C}, DType::f32);
  EXPECT_THROW(embedding_forward(out1, bad, wte, wpe), std::invalid_argument);
}

TEST(Embedding, ABf16GradientIsRoundedOncePerCall) {
  // 300 positions of one token, each adding 1 to a bf16 gradient that holds 1024 (bf16 steps by 8
  // there): added one at a time each 1 would round away; summed in f32 first, 1324 rounds to 1328.
  const std::int64_t T = 300, C = 2;
  Tensor tokens = Tensor::from_host(host_device(), {1, T}, DType::i32, std::vector<float>(T, 1.0f));
  Tensor dout = Tensor::from_host(host_device(), {1, T, C}, DType::bf16, std::vector<float>(T * C, 1.0f));
  Tensor dwte = Tensor::from_host(host_device(), {3, C}, DType::bf16, {0, 0, 1024, 1024, 0, 0});
  Tensor none;
  embedding_backward(dwte, none, dout, tokens);
  EXPECT_EQ(dwte.to_host_f32(), (std::vector<float>{0, 0, 1328, 1328, 0, 0}));
}

TEST(CrossEntropy, KnownLossAndFusedGradientMatchesFiniteDifferences) {
  Tensor uniform = Tensor::from_host(host_device(), {1, 4}, DType::f32, {0.5f, 0.5f, 0.5f, 0.5f});
  Tensor target1 = Tensor::from_host(host_device(), {1}, DType::i32, {2});
  Tensor loss1 = Tensor::empty(host_device(), {1}, DType::f32);
  Tensor none;
  softmax_cross_entropy(loss1, none, uniform, target1, 1.0f);
  EXPECT_NEAR(loss1.to_host_f32()[0], std::log(4.0f), 1e-6);

  for (Shape shape : {Shape{3, 7}, Shape{5, 33}}) {
    std::int64_t N = shape[0], V = shape[1];
    Tensor logits = random_tensor(host_device(), shape, DType::f32, 31, -3, 3);
    Tensor targets = Tensor::from_host(host_device(), {N}, DType::i32, random_indices(N, V, 32));
    Tensor losses = Tensor::empty(host_device(), {N}, DType::f32);
    Tensor dlogits = Tensor::empty(host_device(), shape, DType::f32);
    // L = 0.75 * sum of row losses, so dL/dlogits is the fused gradient with dloss = 0.75.
    softmax_cross_entropy(losses, dlogits, logits, targets, 0.75f);
    auto loss = [&] {
      softmax_cross_entropy(losses, none, logits, targets, 1.0f);
      std::vector<float> l = losses.to_host_f32();
      double total = 0;
      for (float v : l) total += 0.75 * v;
      return total;
    };
    EXPECT_TRUE(all_close(dlogits.to_host_f32(), finite_difference_gradient(logits, loss),
                          kFiniteDifferenceTolerance, "dlogits"));
  }
}

TEST(CrossEntropy, InPlaceGradientEqualsSeparateOutput) {
  Tensor logits = random_tensor(host_device(), {5, 33}, DType::f32, 41, -3, 3);
  Tensor copy = Tensor::empty(host_device(), {5, 33}, DType::f32);
  copy.copy_from(logits);
  Tensor targets = Tensor::from_host(host_device(), {5}, DType::i32, random_indices(5, 33, 42));
  Tensor losses = Tensor::empty(host_device(), {5}, DType::f32);
  Tensor separate = Tensor::empty(host_device(), {5, 33}, DType::f32);
  softmax_cross_entropy(losses, separate, logits, targets, 0.2f);
  std::vector<float> expected_loss = losses.to_host_f32();
  softmax_cross_entropy(losses, copy, copy, targets, 0.2f);
  EXPECT_EQ(copy.to_host_f32(), separate.to_host_f32());
  EXPECT_EQ(losses.to_host_f32(), expected_loss);
}

// A vocabulary padded to a multiple of 64: the padding columns change nothing in the loss, and
// the real columns' gradients equal those of the unpadded logits; padding gets gradient 0.
TEST(CrossEntropy, PaddedVocabularyColumnsAreIgnored) {
  const std::int64_t N = 4, V = 37, padded = 64;
  Tensor logits = random_tensor(host_device(), {N, V}, DType::f32, 51, -3, 3);
  Tensor padded_logits = random_tensor(host_device(), {N, padded}, DType::f32, 52, -3, 3);
  std::vector<float> real = logits.to_host_f32(), wide = padded_logits.to_host_f32();
  for (std::int64_t r = 0; r < N; ++r) {
    for (std::int64_t v = 0; v < V; ++v) wide[r * padded + v] = real[r * V + v];
  }
  padded_logits = Tensor::from_host(host_device(), {N, padded}, DType::f32, wide);
  Tensor targets = Tensor::from_host(host_device(), {N}, DType::i32, random_indices(N, V, 53));
  Tensor losses = Tensor::empty(host_device(), {N}, DType::f32),
         padded_losses = Tensor::empty(host_device(), {N}, DType::f32);
  Tensor dlogits = Tensor::empty(host_device(), {N, V}, DType::f32);
  Tensor padded_dlogits = Tensor::empty(host_device(), {N, padded}, DType::f32);
  softmax_cross_entropy(losses, dlogits, logits, targets, 0.5f);
  softmax_cross_entropy(padded_losses, padded_dlogits, padded_logits, targets, 0.5f, V);
  EXPECT_EQ(padded_losses.to_host_f32(), losses.to_host_f32());
  std::vector<float> grad = dlogits.to_host_f32(), padded_grad = padded_dlogits.to_host_f32();
  for (std::int64_t r = 0; r < N; ++r) {
    for (std::int64_t v = 0; v < padded; ++v) {
      float expected = v < V ? grad[r * V + v] : 0.0f;
      ASSERT_EQ(padded_grad[r * padded + v], expected) << "row " << r << " column " << v;
    }
  }
  Tensor beyond = Tensor::from_host(host_device(), {1}, DType::i32, {float(V)});
  Tensor one_loss = Tensor::empty(host_device(), {1}, DType::f32);
  Tensor none;
  Tensor one_row = padded_logits.slice(0, 1);
  EXPECT_THROW(softmax_cross_entropy(one_loss, none, one_row, beyond, 1.0f, V), std::invalid_argument)
      << "a target in the padding";
  EXPECT_THROW(softmax_cross_entropy(padded_losses, none, padded_logits, targets, 1.0f, padded + 1),
               std::invalid_argument);
}

TEST(RowOpsDry, ShapeChecksThrow) {
  Device& dry = dry_device();
  Tensor x = Tensor::empty(dry, {16, 768}, DType::bf16);
  Tensor w = Tensor::empty(dry, {768}, DType::bf16);
  Tensor out = Tensor::empty(dry, {16, 768}, DType::bf16);
  Tensor mean = Tensor::empty(dry, {16}, DType::f32);
  Tensor rstd = Tensor::empty(dry, {16}, DType::f32);
  EXPECT_NO_THROW(layernorm_forward(out, mean, rstd, x, w, w));
  Tensor short_stats = Tensor::empty(dry, {15}, DType::f32);
  EXPECT_THROW(layernorm_forward(out, short_stats, rstd, x, w, w), std::invalid_argument);
  Tensor wrong_w = Tensor::empty(dry, {767}, DType::bf16);
  EXPECT_THROW(rmsnorm_forward(out, rstd, x, wrong_w), std::invalid_argument);
  Tensor dw_bf16 = Tensor::empty(dry, {768}, DType::bf16);
  EXPECT_THROW(rmsnorm_backward(out, dw_bf16, out, x, w, rstd), std::invalid_argument)
      << "parameter gradients are f32";
  Tensor tokens = Tensor::empty(dry, {2, 8}, DType::i32);
  Tensor wte = Tensor::empty(dry, {50257, 768}, DType::bf16);
  Tensor wpe = Tensor::empty(dry, {4, 768}, DType::bf16);
  Tensor emb = Tensor::empty(dry, {2, 8, 768}, DType::bf16);
  EXPECT_THROW(embedding_forward(emb, tokens, wte, wpe), std::invalid_argument) << "wpe shorter than T";
  Tensor logits = Tensor::empty(dry, {16, 50257}, DType::bf16);
  Tensor targets = Tensor::empty(dry, {16}, DType::i32);
  Tensor losses = Tensor::empty(dry, {16}, DType::f32);
  EXPECT_NO_THROW(softmax_cross_entropy(losses, logits, logits, targets, 1.0f / 16));
  Tensor float_targets = Tensor::empty(dry, {16}, DType::f32);
  EXPECT_THROW(softmax_cross_entropy(losses, logits, logits, float_targets, 1.0f), std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::ops
