// The committed torch 2.11 snapshots of `oomlab replay` (harness/replay/tests/fixtures/torch),
// extrapolated from themselves: two "recordings" of one run make every size constant, so the
// trace synthesised at the reference value is the run's own requests with fresh addresses, and
// its replay must give PyTorch's own peaks (manifest: max_memory_allocated/reserved) to the
// byte. This checks the synthesis (streams, record_stream's late frees, frees ordering) on real
// traces; the fit itself is checked on synthetic programs and on the GPU (record_batches.py).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "harness/extrapolate/prediction.hpp"
#include "harness/replay/snapshot_file.hpp"

namespace oomlab::extrapolate {
namespace {

const std::string kFixtures = OOMLAB_REPLAY_FIXTURES "/torch/";
const std::string kTag = "-torch2.11.0_cu130";

class TorchFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(TorchFixture, ExtrapolatedToItselfGivesPyTorchsPeaks) {
  if (!replay::snapshot_gzip_supported()) GTEST_SKIP() << "this build reads no gzip";
  std::ifstream manifest_file(kFixtures + "manifest" + kTag + ".json");
  ASSERT_TRUE(manifest_file.good());
  const auto manifest = nlohmann::json::parse(manifest_file);
  const auto& peaks = manifest["fixtures"][GetParam()]["pytorch_peaks"];
  ASSERT_TRUE(peaks.is_object()) << GetParam();
  const std::string path = kFixtures + GetParam() + kTag + ".pickle.gz";
  std::vector<ProgramTrace> traces;
  traces.push_back(program_trace("a", 1, replay::load_snapshot(path), -1));
  traces.push_back(program_trace("b", 2, replay::load_snapshot(path), -1));
  const Extrapolation model = extrapolation({"batch", {1, 2}}, std::move(traces), FitMode::automatic);
  EXPECT_TRUE(model.exact());
  const Prediction prediction = predict(model, 2, {});
  EXPECT_EQ(prediction.result.peak_allocated, peaks["peak_allocated"].get<std::uint64_t>());
  EXPECT_EQ(prediction.result.peak_reserved, peaks["peak_reserved"].get<std::uint64_t>());
}

// A compiled program's CUDA graphs put blocks in private pools, which the synthesised trace does not
// carry: the prediction must say it is an estimate rather than claim PyTorch's peaks.
TEST(TorchFixtureWithPools, IsAnEstimateNotExact) {
  if (!replay::snapshot_gzip_supported()) GTEST_SKIP() << "this build reads no gzip";
  const std::string path = kFixtures + "compile_cuda_graphs" + kTag + ".pickle.gz";
  std::vector<ProgramTrace> traces;
  traces.push_back(program_trace("a", 1, replay::load_snapshot(path), -1));
  traces.push_back(program_trace("b", 2, replay::load_snapshot(path), -1));
  const Extrapolation model = extrapolation({"batch", {1, 2}}, std::move(traces), FitMode::automatic);
  EXPECT_TRUE(model.private_pools);
  EXPECT_FALSE(model.exact());
  ASSERT_FALSE(model.notes.empty());
  EXPECT_NE(model.notes.back().find("private pools"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Torch211, TorchFixture,
                         ::testing::Values("lora_hf", "record_stream", "generate_growing_cache"));

}  // namespace
}  // namespace oomlab::extrapolate
