// Every transformer CUDA kernel against its CPU reference on seeded random inputs (never
// zeros), f32 and bf16 (f16 where it matters), several shapes including odd ones.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>

#include "harness/testing/require_gpu.hpp"
#include "kernels/transformer/adamw.hpp"
#include "kernels/transformer/adamw8bit.hpp"
#include "kernels/transformer/cast.hpp"
#include "kernels/transformer/cross_entropy.hpp"
#include "kernels/transformer/embedding.hpp"
#include "kernels/transformer/gelu.hpp"
#include "kernels/transformer/init_normal.hpp"
#include "kernels/transformer/grad_norm.hpp"
#include "kernels/transformer/layernorm.hpp"
#include "kernels/transformer/loss_scale.hpp"
#include "kernels/transformer/matmul.hpp"
#include "kernels/transformer/quantize.hpp"
#include "kernels/transformer/quantize_nf4.hpp"
#include "kernels/core/residual.hpp"
#include "kernels/transformer/rmsnorm.hpp"
#include "kernels/transformer/rope.hpp"
#include "kernels/transformer/swiglu.hpp"
#include "kernels/transformer/tests/gpu_pairs.hpp"

namespace oomlab::ops {
namespace {

using testing::output_pair;
using testing::Pair;
using testing::pair_close;
using testing::random_pair;
using testing::random_indices;
using testing::Tolerance;
using testing::tolerance_for;
using testing::values_pair;
using testing::zeros_pair;

const std::vector<Shape> kShapes = {{1, 1}, {3, 7}, {5, 33}, {64, 768}, {17, 3072}, {4, 1000003}};
const std::vector<DType> kDtypes = {DType::f32, DType::bf16};

// Accumulations over C elements in f32 vs f64 (and atomics in any order) need more room.
Tolerance reduction_tolerance(DType dtype, std::int64_t count) {
  Tolerance t = tolerance_for(dtype);
  double growth = std::sqrt(double(count));
  return {t.atol * (dtype == DType::f32 ? growth * 10 : 2), t.rtol * (dtype == DType::f32 ? growth : 2)};
}

TEST(TransformerGpu, RopeForwardAndBackward) {
  OOMLAB_REQUIRE_GPU();
  // Angles up to 2047 rad: f32's angle (t * inv_freq, as Hugging Face computes it) differs by an
  // ulp of inv_freq between the host's and the device's powf, about 1e-4 rad at the far end.
  for (const Shape& shape : std::vector<Shape>{{2, 3, 37, 16}, {1, 4, 513, 128}, {1, 32, 2048, 128}}) {
    for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
      SCOPED_TRACE(shape_string(shape) + " " + dtype_name(dtype));
      const Tolerance tol = dtype == DType::f32 ? Tolerance{3e-4, 3e-4} : tolerance_for(dtype);
      Pair x = random_pair(shape, dtype, 71);
      rope_forward(x.host);
      rope_forward(x.cuda);
      EXPECT_TRUE(pair_close(x, tol, "rope_forward"));
      Pair dx = random_pair(shape, dtype, 72);
      rope_backward(dx.host);
      rope_backward(dx.cuda);
      EXPECT_TRUE(pair_close(dx, tol, "rope_backward"));
    }
  }
}

TEST(TransformerGpu, FillNormalEqualsTheHost) {
  OOMLAB_REQUIRE_GPU();
  // The same (seed, index) draws on both sides: only logf/cosf/sqrtf's last ulp may differ.
  for (DType dtype : {DType::f32, DType::bf16}) {
    for (std::int64_t n : {1, 4099, 3000017}) {
      Pair out = output_pair({n}, dtype);
      fill_normal(out.host, 77, 0.02f);
      fill_normal(out.cuda, 77, 0.02f);
      EXPECT_TRUE(pair_close(out, dtype == DType::f32 ? Tolerance{1e-7, 1e-5} : tolerance_for(dtype),
                             std::string("fill_normal ") + dtype_name(dtype)));
    }
  }
}

TEST(TransformerGpu, GeluSwigluResidual) {
  OOMLAB_REQUIRE_GPU();
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (const Shape& shape : kShapes) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(shape));
      Pair x = random_pair(shape, dtype, 1, -4, 4), y = random_pair(shape, dtype, 2, -2, 2);
      Pair dout = random_pair(shape, dtype, 3);
      Pair out = output_pair(shape, dtype), d1 = output_pair(shape, dtype), d2 = output_pair(shape, dtype);
      Tolerance tol = tolerance_for(dtype);
      gelu_forward(out.host, x.host);
      gelu_forward(out.cuda, x.cuda);
      EXPECT_TRUE(pair_close(out, tol, "gelu"));
      gelu_backward(d1.host, dout.host, x.host);
      gelu_backward(d1.cuda, dout.cuda, x.cuda);
      EXPECT_TRUE(pair_close(d1, tol, "gelu dx"));
      swiglu_forward(out.host, x.host, y.host);
      swiglu_forward(out.cuda, x.cuda, y.cuda);
      EXPECT_TRUE(pair_close(out, tol, "swiglu"));
      swiglu_backward(d1.host, d2.host, dout.host, x.host, y.host);
      swiglu_backward(d1.cuda, d2.cuda, dout.cuda, x.cuda, y.cuda);
      EXPECT_TRUE(pair_close(d1, tol, "swiglu dgate"));
      EXPECT_TRUE(pair_close(d2, tol, "swiglu dup"));
      residual_add(out.host, x.host, y.host);
      residual_add(out.cuda, x.cuda, y.cuda);
      EXPECT_TRUE(pair_close(out, {0, 0}, "residual"));
    }
  }
}

TEST(TransformerGpu, UnalignedViewsTakeTheScalarPath) {
  OOMLAB_REQUIRE_GPU();
  Pair x = random_pair({9, 5}, DType::bf16, 4, -3, 3);
  Pair out = output_pair({9, 5}, DType::bf16);
  Tensor xh = x.host.slice(1, 8), xc = x.cuda.slice(1, 8);  // 10-byte offset: not 16-aligned
  Tensor oh = out.host.slice(2, 9), oc = out.cuda.slice(2, 9);
  gelu_forward(oh, xh);
  gelu_forward(oc, xc);
  EXPECT_TRUE(pair_close(out, tolerance_for(DType::bf16), "gelu on unaligned slices"));
}

TEST(TransformerGpu, CastsAreBitExact) {
  OOMLAB_REQUIRE_GPU();
  for (DType from : {DType::f32, DType::bf16, DType::f16}) {
    for (DType to : {DType::f32, DType::bf16, DType::f16}) {
      for (std::int64_t n : {1, 13, 4096, 1000003}) {
        Pair in = random_pair({n}, from, 5, -60000, 60000);  // most of f16's range
        Pair out = output_pair({n}, to);
        cast(out.host, in.host);
        cast(out.cuda, in.cuda);
        EXPECT_TRUE(pair_close(out, {0, 0}, std::string("cast ") + dtype_name(from) + "->" + dtype_name(to)));
      }
    }
  }
}

TEST(TransformerGpu, LayerNormAndRmsNorm) {
  OOMLAB_REQUIRE_GPU();
  for (DType dtype : kDtypes) {
    // {6000, 768}: warps of the register backward loop over several rows and many blocks add
    // their column sums; {1000, 96}: a row narrower than one warp's 16-byte accesses.
    for (const Shape& shape : {Shape{1, 1}, Shape{3, 7}, Shape{5, 33}, Shape{2, 3, 768}, Shape{300, 1024},
                               Shape{7, 4100}, Shape{6000, 768}, Shape{1000, 96}}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + shape_string(shape));
      std::int64_t C = shape.back(), rows = shape_numel(shape) / C;
      Pair x = random_pair(shape, dtype, 6, -3, 3), w = random_pair({C}, dtype, 7, 0.5f, 1.5f);
      Pair b = random_pair({C}, dtype, 8), dout = random_pair(shape, dtype, 9);
      Pair out = output_pair(shape, dtype), dx = output_pair(shape, dtype);
      Pair mean = output_pair({rows}, DType::f32), rstd = output_pair({rows}, DType::f32);
      Pair dw = zeros_pair({C}, DType::f32), db = zeros_pair({C}, DType::f32);
      Tolerance tol = reduction_tolerance(dtype, C);
      layernorm_forward(out.host, mean.host, rstd.host, x.host, w.host, b.host);
      layernorm_forward(out.cuda, mean.cuda, rstd.cuda, x.cuda, w.cuda, b.cuda);
      EXPECT_TRUE(pair_close(out, tol, "layernorm out"));
      EXPECT_TRUE(pair_close(mean, reduction_tolerance(DType::f32, C), "layernorm mean"));
      EXPECT_TRUE(pair_close(rstd, reduction_tolerance(DType::f32, C), "layernorm rstd"));
      layernorm_backward(dx.host, dw.host, db.host, dout.host, x.host, w.host, mean.host, rstd.host);
      layernorm_backward(dx.cuda, dw.cuda, db.cuda, dout.cuda, x.cuda, w.cuda, mean.cuda, rstd.cuda);
      EXPECT_TRUE(pair_close(dx, tol, "layernorm dx"));
      EXPECT_TRUE(pair_close(dw, reduction_tolerance(DType::f32, rows), "layernorm dweight"));
      EXPECT_TRUE(pair_close(db, reduction_tolerance(DType::f32, rows), "layernorm dbias"));
      // With the skip connection's gradient added as dx is written (both kernels' paths).
      Pair skip = random_pair(shape, dtype, 10);
      layernorm_backward(dx.host, dw.host, db.host, dout.host, x.host, w.host, mean.host, rstd.host, skip.host);
      layernorm_backward(dx.cuda, dw.cuda, db.cuda, dout.cuda, x.cuda, w.cuda, mean.cuda, rstd.cuda, skip.cuda);
      EXPECT_TRUE(pair_close(dx, tol, "layernorm dx + residual"));

      rmsnorm_forward(out.host, rstd.host, x.host, w.host);
      rmsnorm_forward(out.cuda, rstd.cuda, x.cuda, w.cuda);
      EXPECT_TRUE(pair_close(out, tol, "rmsnorm out"));
      Pair dw2 = zeros_pair({C}, DType::f32);
      rmsnorm_backward(dx.host, dw2.host, dout.host, x.host, w.host, rstd.host);
      rmsnorm_backward(dx.cuda, dw2.cuda, dout.cuda, x.cuda, w.cuda, rstd.cuda);
      EXPECT_TRUE(pair_close(dx, tol, "rmsnorm dx"));
      EXPECT_TRUE(pair_close(dw2, reduction_tolerance(DType::f32, rows), "rmsnorm dweight"));
      rmsnorm_backward(dx.host, dw2.host, dout.host, x.host, w.host, rstd.host, skip.host);
      rmsnorm_backward(dx.cuda, dw2.cuda, dout.cuda, x.cuda, w.cuda, rstd.cuda, skip.cuda);
      EXPECT_TRUE(pair_close(dx, tol, "rmsnorm dx + residual"));
    }
  }
}

TEST(TransformerGpu, EmbeddingForwardBackward) {
  OOMLAB_REQUIRE_GPU();
  for (DType dtype : kDtypes) {
    for (auto [B, T, V, C] :
         std::vector<std::array<std::int64_t, 4>>{{1, 1, 1, 1}, {3, 5, 7, 9}, {4, 64, 1000, 768}, {2, 700, 50, 300}}) {
      // The last: every token repeated many times, across more rows than a block's scan.
      Pair tokens = values_pair({B, T}, DType::i32, random_indices(B * T, V, 10));
      Pair wte = random_pair({V, C}, dtype, 11), wpe = random_pair({T + 1, C}, dtype, 12);
      Pair out = output_pair({B, T, C}, dtype);
      embedding_forward(out.host, tokens.host, wte.host, wpe.host);
      embedding_forward(out.cuda, tokens.cuda, wte.cuda, wpe.cuda);
      EXPECT_TRUE(pair_close(out, tolerance_for(dtype), "embedding"));
      Pair dout = random_pair({B, T, C}, dtype, 13);
      // f32 gradients and the compute dtype's; accumulated onto values already there. Same sums
      // in the same order, rounded once: equal bit for bit.
      for (DType grad_dtype : {DType::f32, dtype}) {
        Pair dwte = random_pair({V, C}, grad_dtype, 14), dwpe = random_pair({T + 1, C}, grad_dtype, 15);
        embedding_backward(dwte.host, dwpe.host, dout.host, tokens.host);
        embedding_backward(dwte.cuda, dwpe.cuda, dout.cuda, tokens.cuda);
        EXPECT_EQ(dwte.cuda.to_host_f32(), dwte.host.to_host_f32()) << "dwte " << dtype_name(grad_dtype);
        EXPECT_EQ(dwpe.cuda.to_host_f32(), dwpe.host.to_host_f32()) << "dwpe " << dtype_name(grad_dtype);
      }
    }
  }
}

TEST(TransformerGpu, CrossEntropyFusedWithBackward) {
  OOMLAB_REQUIRE_GPU();
  for (DType dtype : kDtypes) {
    // {37, 2048}: the 16-byte path (V a multiple of 8), in place too; the others take the element path.
    for (auto [N, V] :
         std::vector<std::pair<std::int64_t, std::int64_t>>{{1, 1}, {3, 7}, {5, 33}, {8, 50257}, {37, 2048}}) {
      Pair logits = random_pair({N, V}, dtype, 14, -5, 5);
      Pair targets = values_pair({N}, DType::i32, random_indices(N, V, 15));
      Pair losses = output_pair({N}, DType::f32), dlogits = output_pair({N, V}, dtype);
      softmax_cross_entropy(losses.host, dlogits.host, logits.host, targets.host, 1.0f / N);
      softmax_cross_entropy(losses.cuda, dlogits.cuda, logits.cuda, targets.cuda, 1.0f / N);
      EXPECT_TRUE(pair_close(losses, {1e-4, 1e-4}, "losses"));
      EXPECT_TRUE(pair_close(dlogits, {tolerance_for(dtype).atol * 1e-2, tolerance_for(dtype).rtol}, "dlogits"));
      // In place, as the trainer uses it.
      softmax_cross_entropy(losses.cuda, logits.cuda, logits.cuda, targets.cuda, 1.0f / N);
      EXPECT_TRUE(testing::all_close(logits.cuda.to_host_f32(), dlogits.host.to_host_f32(),
                                     {tolerance_for(dtype).atol * 1e-2, tolerance_for(dtype).rtol}, "in place"));
    }
    // GPT-2's vocabulary padded to 50304 columns: the padding takes no part.
    const std::int64_t N = 6, V = 50257, padded = 50304;
    Pair logits = random_pair({N, padded}, dtype, 16, -5, 5);
    Pair targets = values_pair({N}, DType::i32, random_indices(N, V, 17));
    Pair losses = output_pair({N}, DType::f32), dlogits = output_pair({N, padded}, dtype);
    softmax_cross_entropy(losses.host, dlogits.host, logits.host, targets.host, 1.0f / N, V);
    softmax_cross_entropy(losses.cuda, dlogits.cuda, logits.cuda, targets.cuda, 1.0f / N, V);
    EXPECT_TRUE(pair_close(losses, {1e-4, 1e-4}, "padded losses"));
    EXPECT_TRUE(pair_close(dlogits, {tolerance_for(dtype).atol * 1e-2, tolerance_for(dtype).rtol}, "padded dlogits"));
  }
}

TEST(TransformerGpu, AdamWWithMixedPrecisionCopies) {
  OOMLAB_REQUIRE_GPU();
  for (DType grad_dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (DType param_dtype : {DType::f32, DType::bf16, DType::f16}) {
      for (std::int64_t n : {1, 7, 1027, 1 << 20}) {
        Pair master = random_pair({n}, DType::f32, 16), grad = random_pair({n}, grad_dtype, 17);
        Pair m = random_pair({n}, DType::f32, 18, -0.1f, 0.1f), v = random_pair({n}, DType::f32, 19, 0.001f, 0.01f);
        Pair param = output_pair({n}, param_dtype);
        AdamWConfig config{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
        adamw_step(master.host, param.host, grad.host, m.host, v.host, config, 5);
        adamw_step(master.cuda, param.cuda, grad.cuda, m.cuda, v.cuda, config, 5);
        EXPECT_TRUE(pair_close(master, {1e-6, 1e-5}, "master"));
        EXPECT_TRUE(pair_close(m, {1e-7, 1e-5}, "m"));
        EXPECT_TRUE(pair_close(v, {1e-8, 1e-5}, "v"));
        EXPECT_TRUE(pair_close(param, tolerance_for(param_dtype), "param copy"));
      }
    }
  }
}

// The many-tensor step: more tensors than one launch's pointer table and more chunks than one
// launch's list (so a tensor is split across launches), mixed dtypes (several passes), sizes that
// end mid-vector, and a view whose start breaks 128-bit alignment.
TEST(TransformerGpu, AdamWOverManyTensorsMatchesOneStepEach) {
  OOMLAB_REQUIRE_GPU();
  std::vector<std::int64_t> sizes;
  for (int i = 0; i < 60; ++i) sizes.push_back(1 + 37 * i);
  sizes.push_back(41 * 65536 + 3);  // 42 chunks
  for (int i = 0; i < 20; ++i) sizes.push_back(40 * 65536);  // 800 chunks: several launches
  std::vector<AdamWTensors> host, cuda;
  std::vector<Pair> kept;
  std::uint64_t seed = 100;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::int64_t n = sizes[i];
    const DType grad_dtype = i % 3 == 0 ? DType::f32 : DType::bf16;
    const bool copy = i % 4 != 1;
    Pair master = random_pair({n + 1}, DType::f32, seed++), grad = random_pair({n}, grad_dtype, seed++);
    Pair m = random_pair({n}, DType::f32, seed++, -0.1f, 0.1f), v = random_pair({n}, DType::f32, seed++, 0.001f, 0.01f);
    Pair param = output_pair({n}, DType::bf16);
    // Tensor 5's master starts one element into its buffer: that tensor takes the scalar path.
    const std::int64_t skip = i == 5 ? 1 : 0;
    auto view = [&](const Tensor& t) { return t.slice(skip, skip + n); };
    host.push_back({view(master.host), copy ? param.host : Tensor(), grad.host, m.host, v.host});
    cuda.push_back({view(master.cuda), copy ? param.cuda : Tensor(), grad.cuda, m.cuda, v.cuda});
    for (Pair* p : {&master, &grad, &m, &v, &param}) kept.push_back(*p);
  }
  const AdamWConfig config{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
  adamw_step(host, config, 3);
  adamw_step(cuda, config, 3);
  for (std::size_t i = 0; i < kept.size(); ++i) {
    SCOPED_TRACE("tensor " + std::to_string(i / 5) + " list " + std::to_string(i % 5));
    EXPECT_TRUE(pair_close(kept[i], i % 5 == 4 ? tolerance_for(DType::bf16) : Tolerance{1e-6, 1e-5}, "adamw"));
  }
}

TEST(TransformerGpu, AdamW8BitMatchesTheHostReference) {
  OOMLAB_REQUIRE_GPU();
  for (DType grad_dtype : {DType::f32, DType::bf16}) {
    for (DType param_dtype : {DType::f32, DType::bf16}) {
      for (std::int64_t n : {1, 2047, 2049, 3 * 2048 + 5, 1 << 20}) {
        SCOPED_TRACE(std::string(dtype_name(grad_dtype)) + " grads, " + dtype_name(param_dtype) + " copy, n " +
                     std::to_string(n));
        const std::int64_t blocks = adam8bit_blocks(n);
        Pair master = random_pair({n}, DType::f32, 26);
        Pair mc = zeros_pair({n}, DType::i8), vc = zeros_pair({n}, DType::i8);
        Pair ma = zeros_pair({blocks}, DType::f32), va = zeros_pair({blocks}, DType::f32);
        Pair param = output_pair({n}, param_dtype);
        const AdamWConfig config{3e-4f, 0.9f, 0.95f, 1e-8f, 0.1f};
        for (int step = 1; step <= 3; ++step) {
          Pair grad = random_pair({n}, grad_dtype, 27 + step);
          adamw8bit_step(master.host, param.host, grad.host, mc.host, ma.host, vc.host, va.host, config, step);
          adamw8bit_step(master.cuda, param.cuda, grad.cuda, mc.cuda, ma.cuda, vc.cuda, va.cuda, config, step);
        }
        EXPECT_TRUE(pair_close(master, {1e-6, 1e-5}, "master"));
        EXPECT_TRUE(pair_close(param, tolerance_for(param_dtype), "param copy"));
        EXPECT_TRUE(pair_close(ma, {1e-9, 1e-5}, "m absmax"));
        EXPECT_TRUE(pair_close(va, {1e-12, 1e-5}, "v absmax"));
        // A code may land on the other side of a rounding boundary (f32 rounding differs between
        // the host and fused device arithmetic): never more than one entry away, and rarely.
        for (const Pair* codes : {&mc, &vc}) {
          const std::vector<float> host = codes->host.to_host_f32(), dev = codes->cuda.to_host_f32();
          std::size_t differ = 0;
          for (std::size_t i = 0; i < host.size(); ++i) {
            const int a = static_cast<std::uint8_t>(static_cast<std::int8_t>(host[i]));
            const int b = static_cast<std::uint8_t>(static_cast<std::int8_t>(dev[i]));
            ASSERT_LE(std::abs(a - b), 1) << "element " << i;
            differ += a != b;
          }
          EXPECT_LE(differ, host.size() / 1000 + 1);
        }
      }
    }
  }
}

TEST(TransformerGpu, GradNormIsDeterministicAndClips) {
  OOMLAB_REQUIRE_GPU();
  std::vector<Pair> pairs;
  std::vector<Tensor> host_grads, cuda_grads;
  std::uint32_t seed = 20;
  // Odd sizes, more tensors than one launch's table (~150 on GPT-2) and tensors of 256 chunks
  // (the most one tensor is cut into): the chunk lists cross launches.
  std::vector<std::int64_t> sizes = {1, 33, 768, 1 << 20, 3 * 768 * 768 + 5};
  for (int i = 0; i < 60; ++i) sizes.push_back(1 + 37 * i);
  for (int i = 0; i < 4; ++i) sizes.push_back(256 * 32768 + 7);
  for (std::int64_t n : sizes) {
    pairs.push_back(random_pair({n}, seed % 3 == 0 ? DType::f16 : seed % 3 == 1 ? DType::bf16 : DType::f32, seed));
    ++seed;
    host_grads.push_back(pairs.back().host);
    cuda_grads.push_back(pairs.back().cuda);
  }
  Pair norm = output_pair({1}, DType::f32);
  global_grad_norm(norm.host, host_grads);
  global_grad_norm(norm.cuda, cuda_grads);
  EXPECT_TRUE(pair_close(norm, {1e-4, 1e-5}, "norm"));
  float first = norm.cuda.to_host_f32()[0];
  for (int run = 0; run < 5; ++run) {
    global_grad_norm(norm.cuda, cuda_grads);
    EXPECT_EQ(norm.cuda.to_host_f32()[0], first) << "bit-identical across runs";
  }
  clip_grads_by_norm(host_grads, norm.host, 1.0f);
  clip_grads_by_norm(cuda_grads, norm.cuda, 1.0f);
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    EXPECT_TRUE(pair_close(pairs[i], tolerance_for(pairs[i].host.dtype()), "clipped grad"));
  }
}

TEST(TransformerGpu, LossScalingAndQuantisation) {
  OOMLAB_REQUIRE_GPU();
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    Pair g = random_pair({5, 33}, dtype, 30, -1000, 1000);
    Pair flag = output_pair({1}, DType::f32);
    unscale_and_check({g.host}, 1.0f / 1024, flag.host);
    unscale_and_check({g.cuda}, 1.0f / 1024, flag.cuda);
    EXPECT_TRUE(pair_close(g, {0, 0}, "unscaled"));
    EXPECT_FALSE(read_found_inf(flag.cuda));
    std::vector<float> with_inf = testing::random_values(100, 31);
    with_inf[57] = std::numeric_limits<float>::infinity();
    Pair bad = values_pair({100}, dtype, with_inf);
    unscale_and_check({g.cuda, bad.cuda}, 0.5f, flag.cuda);
    EXPECT_TRUE(read_found_inf(flag.cuda));
    unscale_and_check({g.host}, 0.5f, flag.host);  // g.cuda was unscaled too: keep the pair equal
    with_inf[57] = std::nanf("");
    Pair nan = values_pair({100}, dtype, with_inf);
    unscale_and_check({nan.cuda}, 0.5f, flag.cuda);
    EXPECT_TRUE(read_found_inf(flag.cuda));
    scale(g.host, 3.0f);
    scale(g.cuda, 3.0f);
    EXPECT_TRUE(pair_close(g, {0, 0}, "scaled"));

    for (const Shape& shape : {Shape{1, 1}, Shape{5, 33}, Shape{768, 3072}}) {
      Pair x = random_pair(shape, dtype, 32, -4, 4);
      Pair q = output_pair(shape, DType::i8), scales = output_pair({shape[0]}, DType::f32);
      quantize_int8_rowwise(q.host, scales.host, x.host);
      quantize_int8_rowwise(q.cuda, scales.cuda, x.cuda);
      EXPECT_TRUE(pair_close(q, {0, 0}, "q"));
      EXPECT_TRUE(pair_close(scales, {0, 0}, "scales"));
      Pair restored = output_pair(shape, dtype);
      dequantize_int8_rowwise(restored.host, q.host, scales.host);
      dequantize_int8_rowwise(restored.cuda, q.cuda, scales.cuda);
      EXPECT_TRUE(pair_close(restored, {0, 0}, "dequantized"));
    }
  }
}

// NF4: the codes, second-level codes, scales and offset bit for bit (the offset's mean is summed
// in the same order on both), and the dequantised values bit for bit into every float dtype; from
// one block to several 256-block groups with a partial last one; unaligned slices (2-byte
// offsets) take the kernels' scalar paths.
TEST(TransformerGpu, Nf4QuantiseAndDequantiseAreBitExact) {
  OOMLAB_REQUIRE_GPU();
  struct Nf4Case {
    DType dtype;
    std::int64_t n;
    bool unaligned;
  };
  const Nf4Case cases[] = {{DType::f32, 64, false},         {DType::bf16, 64 * 257, false},
                           {DType::f16, 64 * 300, false},   {DType::bf16, 4096 * 1024 + 64 * 3, false},
                           {DType::f32, 64 * 1000, false},  {DType::bf16, 64 * 300, true}};
  for (const Nf4Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " n " + std::to_string(c.n) + (c.unaligned ? " unaligned" : ""));
    const std::int64_t skip = c.unaligned ? 1 : 0;  // a leading element sliced off
    // Magnitudes that change from block to block, as weights' rows do.
    std::vector<float> values = testing::random_values(static_cast<std::size_t>(c.n + skip), 60);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] *= 0.01f * static_cast<float>(1 + i / 64 % 13);
    Pair x_full = values_pair({c.n + skip}, c.dtype, values);
    const Tensor x_host = x_full.host.slice(skip, c.n + skip), x_cuda = x_full.cuda.slice(skip, c.n + skip);
    const Nf4Shapes shapes = nf4_shapes(c.n);
    Pair codes_full = output_pair({shapes.codes[0] + skip}, DType::i8);
    Pair codes{codes_full.host.slice(skip, shapes.codes[0] + skip),
               codes_full.cuda.slice(skip, shapes.codes[0] + skip)};
    Pair absmax_q = output_pair(shapes.absmax_q, DType::i8),
         absmax_scale = output_pair(shapes.absmax_scale, DType::f32);
    quantize_nf4(codes.host, absmax_q.host, absmax_scale.host, x_host);
    quantize_nf4(codes.cuda, absmax_q.cuda, absmax_scale.cuda, x_cuda);
    EXPECT_TRUE(pair_close(codes, {0, 0}, "codes"));
    EXPECT_TRUE(pair_close(absmax_q, {0, 0}, "absmax codes"));
    EXPECT_TRUE(pair_close(absmax_scale, {0, 0}, "absmax scales and offset"));
    for (DType out_dtype : {DType::f32, DType::bf16, DType::f16}) {
      Pair out_full = output_pair({c.n + skip}, out_dtype);
      Tensor out_host = out_full.host.slice(skip, c.n + skip), out_cuda = out_full.cuda.slice(skip, c.n + skip);
      dequantize_nf4(out_host, codes.host, absmax_q.host, absmax_scale.host);
      dequantize_nf4(out_cuda, codes.cuda, absmax_q.cuda, absmax_scale.cuda);
      EXPECT_TRUE(pair_close(out_full, {0, 0}, std::string("dequantized to ") + dtype_name(out_dtype)));
    }
  }
}

struct MatmulCase {
  std::int64_t batch, m, n, k;
  bool transpose_a, transpose_b, bias, gelu, accumulate;
};

TEST(TransformerGpu, MatmulThroughCublasLt) {
  OOMLAB_REQUIRE_GPU();
  const std::vector<MatmulCase> cases = {
      {1, 1, 1, 1, false, false, false, false, false},  {1, 3, 5, 7, false, false, true, false, false},
      {1, 5, 33, 17, false, true, true, true, false},   {1, 64, 48, 96, true, false, false, false, true},
      {1, 37, 29, 41, true, true, true, false, false},  {1, 256, 768, 3072, false, true, true, true, false},
      {4, 33, 65, 24, false, true, false, false, false}, {3, 16, 40, 64, true, false, false, false, false},
      // dbias's 128-bit column kernel: whole 256-column blocks, and a last block cut short.
      {1, 1000, 2304, 64, false, true, true, false, false}, {1, 77, 776, 32, false, true, true, false, false},
      // A batch-1 decode's row through the GEMV (bf16/f16, k a multiple of 8): an odd n (a warp's
      // second row missing), k not a multiple of the unrolled stride; 2 to 5 rows and k = 36 stay
      // with cuBLASLt.
      {1, 1, 1000, 4096, false, true, true, false, false}, {1, 1, 77, 520, false, true, false, false, false},
      {1, 1, 9, 8, false, true, true, false, false},        {1, 1, 31, 36, false, true, true, false, false},
      {1, 2, 77, 520, false, true, false, false, false},    {1, 4, 257, 1032, false, true, true, false, false},
      {1, 5, 64, 64, false, true, true, false, false}};
  for (DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    for (const MatmulCase& mc : cases) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " m" + std::to_string(mc.m) + " n" + std::to_string(mc.n) +
                   " k" + std::to_string(mc.k) + " batch" + std::to_string(mc.batch));
      Shape a_shape = mc.transpose_a ? Shape{mc.k, mc.m} : Shape{mc.m, mc.k};
      Shape b_shape = mc.transpose_b ? Shape{mc.n, mc.k} : Shape{mc.k, mc.n};
      Shape c_shape = {mc.m, mc.n};
      if (mc.batch > 1) {
        a_shape.insert(a_shape.begin(), mc.batch);
        b_shape.insert(b_shape.begin(), mc.batch);
        c_shape.insert(c_shape.begin(), mc.batch);
      }
      Pair a = random_pair(a_shape, dtype, 40), b = random_pair(b_shape, dtype, 41);
      Pair c = random_pair(c_shape, dtype, 42);
      Pair bias = mc.bias ? random_pair({mc.n}, dtype, 43) : Pair{};
      MatmulOptions options{mc.transpose_a, mc.transpose_b, mc.accumulate, mc.gelu};
      matmul(c.host, a.host, b.host, bias.host, options);
      matmul(c.cuda, a.cuda, b.cuda, bias.cuda, options);
      EXPECT_TRUE(pair_close(c, reduction_tolerance(dtype, mc.k), "c"));
      if (!mc.accumulate) {  // the skip connection added by the epilogue: C = ... + R
        Pair residual = random_pair(c_shape, dtype, 46);
        matmul(c.host, a.host, b.host, bias.host, options, residual.host);
        matmul(c.cuda, a.cuda, b.cuda, bias.cuda, options, residual.cuda);
        EXPECT_TRUE(pair_close(c, reduction_tolerance(dtype, mc.k), "c + residual"));
      }

      if (mc.gelu || mc.accumulate) continue;
      Pair dc = random_pair(c_shape, dtype, 44);
      Pair da = output_pair(a_shape, dtype), db = random_pair(b_shape, dtype, 45);
      Pair dbias = mc.bias ? zeros_pair({mc.n}, DType::f32) : Pair{};
      matmul_backward(da.host, db.host, dbias.host, dc.host, a.host, b.host, options);
      matmul_backward(da.cuda, db.cuda, dbias.cuda, dc.cuda, a.cuda, b.cuda, options);
      EXPECT_TRUE(pair_close(da, reduction_tolerance(dtype, mc.n), "da"));
      EXPECT_TRUE(pair_close(db, reduction_tolerance(dtype, mc.m), "db"));
      if (mc.bias) {
        EXPECT_TRUE(pair_close(dbias, reduction_tolerance(DType::f32, mc.m), "dbias"));
      }
    }
  }
}

// A decode's last row is a slice of the rows: 16-byte aligned (k = 64) it takes the GEMV, off
// alignment (k = 12: rows of 24 bytes) cuBLASLt; both equal the reference.
TEST(TransformerGpu, MatmulOnASliceOfRowsAlignedOrNot) {
  OOMLAB_REQUIRE_GPU();
  for (std::int64_t k : {64, 12}) {
    SCOPED_TRACE("k " + std::to_string(k));
    Pair rows = random_pair({5, k}, DType::bf16, 70), w = random_pair({40, k}, DType::bf16, 71);
    Pair c = output_pair({1, 40}, DType::bf16);
    Tensor none;
    const MatmulOptions linear{false, true, false, false};
    matmul(c.host, rows.host.slice(3, 4), w.host, none, linear);
    matmul(c.cuda, rows.cuda.slice(3, 4), w.cuda, none, linear);
    EXPECT_TRUE(pair_close(c, reduction_tolerance(DType::bf16, k), "row 3"));
  }
}

// Plans are cached per problem (descriptors + tuned algorithm): later calls with other buffers
// and another bias must use those buffers, and accumulation must add exactly once.
TEST(TransformerGpu, MatmulPlanIsReusedWithNewBuffersAndBias) {
  OOMLAB_REQUIRE_GPU();
  const std::int64_t m = 96, n = 80, k = 72;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::uint32_t seed = 60 + 10 * static_cast<std::uint32_t>(round);
    Pair a = random_pair({m, k}, DType::bf16, seed), b = random_pair({n, k}, DType::bf16, seed + 1);
    Pair bias = random_pair({n}, DType::bf16, seed + 2);
    Pair c = random_pair({m, n}, DType::bf16, seed + 3);
    MatmulOptions linear{false, true, false, false};
    matmul(c.host, a.host, b.host, bias.host, linear);
    matmul(c.cuda, a.cuda, b.cuda, bias.cuda, linear);
    EXPECT_TRUE(pair_close(c, reduction_tolerance(DType::bf16, k), "c"));
    MatmulOptions accumulate{false, true, true, false};
    Tensor none;
    matmul(c.host, a.host, b.host, none, accumulate);
    matmul(c.cuda, a.cuda, b.cuda, none, accumulate);
    EXPECT_TRUE(pair_close(c, reduction_tolerance(DType::bf16, k), "c accumulated"));
  }
}

}  // namespace
}  // namespace oomlab::ops
