// The loader with real worker processes (this test program re-executed as `spawn.loader`).
#include "scenarios/spawn/loader.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <set>
#include <vector>

namespace oomlab::scenarios {
namespace {

LoaderOptions small_loader(int workers, WorkerStart start = WorkerStart::spawn_clean) {
  LoaderOptions o;
  o.device_kind = DeviceKind::host;
  o.start = start;
  o.workers = workers;
  o.batch_size = 3;
  o.image = {24, 16, 3};
  o.batches = 17;  // not a multiple of the worker count
  o.seed = 99;
  o.simulated_context_bytes = 529u << 20;
  return o;
}

class LoaderWorkers : public ::testing::TestWithParam<int> {};

TEST_P(LoaderWorkers, EverySampleOnceInOrderWithTheReferencePixels) {
  const LoaderOptions options = small_loader(GetParam());
  BatchLoader loader(options);
  ASSERT_EQ(static_cast<int>(loader.workers().size()), options.workers);
  std::set<std::int64_t> seen;
  std::vector<std::int64_t> last_batch_of_worker(static_cast<std::size_t>(options.workers), -1);
  std::vector<float> expected(options.image.floats_per_sample());
  for (std::int64_t b = 0; b < options.batches; ++b) {
    const BatchLoader::Batch batch = loader.next();
    ASSERT_EQ(batch.index, b);
    if (options.workers > 0) {
      ASSERT_EQ(batch.worker, b % options.workers);  // batch b belongs to worker b % N
      ASSERT_GT(b, last_batch_of_worker[batch.worker]);
      last_batch_of_worker[batch.worker] = b;
    }
    for (int i = 0; i < options.batch_size; ++i) {
      const std::int64_t id = batch.sample_ids[i];
      ASSERT_EQ(id, b * options.batch_size + i);
      ASSERT_TRUE(seen.insert(id).second) << "sample " << id << " delivered twice";
      synthesize_sample(options.image, options.seed, id, expected.data());
      const float* got = batch.pixels + static_cast<std::size_t>(i) * options.image.floats_per_sample();
      ASSERT_EQ(std::vector<float>(got, got + expected.size()), expected) << "sample " << id;
    }
    loader.release(batch);
  }
  EXPECT_EQ(seen.size(), static_cast<std::size_t>(options.batches * options.batch_size));
  EXPECT_THROW(loader.next(), std::out_of_range);
}

INSTANTIATE_TEST_SUITE_P(Spawned, LoaderWorkers, ::testing::Values(0, 1, 2, 4));

TEST(Loader, CleanWorkersCreateNoContext) {
  BatchLoader loader(small_loader(3));
  for (const WorkerInfo& w : loader.workers()) {
    EXPECT_GT(w.pid, 0);
    EXPECT_FALSE(w.created_context);
    EXPECT_EQ(w.simulated_context_bytes, 0u);
  }
}

TEST(Loader, WorkersTouchingCudaEachReportAContext) {
  BatchLoader loader(small_loader(3, WorkerStart::spawn_touching_cuda));
  for (const WorkerInfo& w : loader.workers()) {
    EXPECT_TRUE(w.created_context);
    EXPECT_EQ(w.simulated_context_bytes, 529u << 20);
  }
}

TEST(Loader, ShmNameIsGoneOnceWorkersStartedAndAfterwards) {
  std::string name;
  {
    BatchLoader loader(small_loader(2));
    name = loader.shm_name();
    ASSERT_FALSE(name.empty());
    EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name));  // unlinked as soon as all attached
    loader.release(loader.next());
  }
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + name));
}

TEST(Loader, ForkAfterSimulatedCudaInitFailsEveryWorkerClearly) {
  mark_simulated_cuda_initialised(true);
  try {
    BatchLoader loader(small_loader(2, WorkerStart::fork_after_cuda));
    ADD_FAILURE() << "forked workers must fail their first CUDA call";
  } catch (const WorkerStartError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("cudaErrorInitializationError"), std::string::npos) << message;
    EXPECT_NE(message.find("worker 0"), std::string::npos) << message;
    EXPECT_NE(message.find("1 more of 2 workers failed"), std::string::npos) << message;
    EXPECT_NE(message.find("exit code 3"), std::string::npos) << message;
  }
  mark_simulated_cuda_initialised(false);
  // Without CUDA in the parent a forked worker works.
  BatchLoader loader(small_loader(2, WorkerStart::fork_after_cuda));
  EXPECT_EQ(loader.next().index, 0);
}

TEST(Loader, ADeadWorkerIsAClearErrorNotAHang) {
  LoaderOptions options = small_loader(2);
  options.batches = 1000;
  options.prefetch_per_worker = 1;
  BatchLoader loader(options);
  ::kill(loader.workers()[1].pid, SIGKILL);
  try {
    for (int i = 0; i < 1000; ++i) loader.release(loader.next());
    ADD_FAILURE() << "the loader must notice the dead worker";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("SIGKILL"), std::string::npos) << error.what();
  }
}

TEST(Loader, BadOptionsThrow) {
  LoaderOptions options = small_loader(2);
  options.workers = -1;
  EXPECT_THROW(BatchLoader{options}, std::invalid_argument);
  options = small_loader(2);
  options.batch_size = 0;
  EXPECT_THROW(BatchLoader{options}, std::invalid_argument);
  options = small_loader(2);
  options.image = {8, 16, 3};
  EXPECT_THROW(BatchLoader{options}, std::invalid_argument);
}

}  // namespace
}  // namespace oomlab::scenarios
