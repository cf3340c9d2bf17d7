// RoPE's CPU reference: Hugging Face's rotate_half formula in double precision, position 0 left
// alone, every pair's length kept, backward = the inverse rotation = the gradient (finite
// differences), and bad shapes refused.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/testing/finite_difference.hpp"
#include "kernels/testing/random_fill.hpp"
#include "kernels/transformer/rope.hpp"
#include "kernels/transformer/tests/test_support.hpp"

namespace oomlab::ops {
namespace {

using testing::all_close;
using testing::finite_difference_gradient;
using testing::host_device;
using testing::kFiniteDifferenceTolerance;
using testing::probe_loss;
using testing::random_tensor;

// q_embed = q * cos + rotate_half(q) * sin, rotate_half(x) = cat(-x[D/2:], x[:D/2]), with
// cos/sin of cat(freqs, freqs), freqs = t / base^(2i/D): transformers' apply_rotary_pos_emb.
std::vector<double> hugging_face_rope(const std::vector<float>& x, std::int64_t rows, std::int64_t seq,
                                      std::int64_t dim) {
  std::vector<double> out(x.size());
  const std::int64_t half = dim / 2;
  for (std::int64_t row = 0; row < rows; ++row) {
    const double t = static_cast<double>(row % seq);
    for (std::int64_t j = 0; j < dim; ++j) {
      const std::int64_t i = j % half;
      const double angle = t / std::pow(10000.0, 2.0 * static_cast<double>(i) / static_cast<double>(dim));
      const double rotated = j < half ? -x[static_cast<std::size_t>(row * dim + j + half)]
                                      : x[static_cast<std::size_t>(row * dim + j - half)];
      out[static_cast<std::size_t>(row * dim + j)] =
          x[static_cast<std::size_t>(row * dim + j)] * std::cos(angle) + rotated * std::sin(angle);
    }
  }
  return out;
}

TEST(Rope, MatchesHuggingFacesFormula) {
  const Shape shape{2, 3, 37, 16};  // B, H, T, D: positions up to 36, every pair's frequency
  Tensor x = random_tensor(host_device(), shape, DType::f32, 31);
  const std::vector<float> before = x.to_host_f32();
  rope_forward(x);
  const std::vector<double> expected = hugging_face_rope(before, 2 * 3 * 37, 37, 16);
  const std::vector<float> got = x.to_host_f32();
  for (std::size_t k = 0; k < got.size(); ++k) ASSERT_NEAR(got[k], expected[k], 2e-5) << "element " << k;
  // Position 0 of every head is untouched (angle 0).
  for (std::int64_t head = 0; head < 6; ++head) {
    for (std::int64_t j = 0; j < 16; ++j) {
      const std::size_t k = static_cast<std::size_t>(head * 37 * 16 + j);
      EXPECT_EQ(got[k], before[k]);
    }
  }
}

TEST(Rope, KeepsEveryPairsLengthAndBackwardUndoesIt) {
  const Shape shape{1, 2, 300, 128};  // LLaMA's head size, long positions
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    Tensor x = random_tensor(host_device(), shape, dtype, 32);
    const std::vector<float> before = x.to_host_f32();
    rope_forward(x);
    const std::vector<float> rotated = x.to_host_f32();
    const double tolerance = dtype == DType::f32 ? 1e-5 : 2e-2;
    for (std::size_t row = 0; row < before.size() / 128; ++row) {
      for (std::size_t i = 0; i < 64; ++i) {
        const std::size_t a = row * 128 + i, b = a + 64;
        EXPECT_NEAR(std::hypot(rotated[a], rotated[b]), std::hypot(before[a], before[b]), tolerance);
      }
    }
    rope_backward(x);
    EXPECT_TRUE(all_close(x.to_host_f32(), before, dtype == DType::f32 ? testing::Tolerance{1e-5, 1e-5}
                                                                       : testing::Tolerance{3e-2, 3e-2},
                          "rope_backward(rope_forward(x))"));
  }
}

TEST(Rope, BackwardIsTheGradient) {
  const Shape shape{2, 2, 9, 8};
  Tensor x = random_tensor(host_device(), shape, DType::f32, 33);
  const std::vector<float> probe = testing::random_values(static_cast<std::size_t>(x.numel()), 34);
  Tensor dx = Tensor::from_host(host_device(), shape, DType::f32, probe);
  rope_backward(dx);  // d(probe . rope(x)) / dx
  Tensor out = Tensor::empty(host_device(), shape, DType::f32);
  auto loss = [&] {
    out.copy_from(x);
    rope_forward(out);
    return probe_loss(out, probe);
  };
  EXPECT_TRUE(all_close(dx.to_host_f32(), finite_difference_gradient(x, loss), kFiniteDifferenceTolerance, "rope dx"));
}

TEST(Rope, BadShapesAreRefused) {
  Tensor odd = Tensor::empty(host_device(), {1, 1, 4, 7}, DType::f32);
  EXPECT_THROW(rope_forward(odd), std::invalid_argument);
  Tensor flat = Tensor::empty(host_device(), {4, 8}, DType::f32);
  EXPECT_THROW(rope_forward(flat), std::invalid_argument);
  Tensor ints = Tensor::empty(host_device(), {1, 1, 4, 8}, DType::i32);
  EXPECT_THROW(rope_backward(ints), std::invalid_argument);
  Tensor ok = Tensor::empty(testing::dry_device(), {1, 32, 2048, 128}, DType::bf16);
  EXPECT_NO_THROW(rope_forward(ok));  // dry: shapes only
}

}  // namespace
}  // namespace oomlab::ops
