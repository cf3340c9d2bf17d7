// The detector on a real allocator (dry device): totals, tags, sites through the trace, the
// budget prediction, and the OOM diagnosis it hands back.
#include <gtest/gtest.h>

#include <optional>
#include <vector>

#include "harness/device/device.hpp"
#include "harness/leak/leak_detector.hpp"
#include "harness/leak/leak_metrics.hpp"
#include "harness/memory/size.hpp"
#include "harness/runner/run_context.hpp"

namespace oomlab::leak {
namespace {

using namespace oomlab::literals;
using memory::Tag;

// A block freed when it goes out of scope.
class Block {
 public:
  Block(memory::CachingAllocator& allocator, std::size_t bytes, Tag tag)
      : allocator_(&allocator), ptr_(allocator.allocate(bytes, tag, 0)) {}
  Block(Block&& other) noexcept : allocator_(other.allocator_), ptr_(other.ptr_) { other.ptr_ = nullptr; }
  Block(const Block&) = delete;
  ~Block() {
    if (ptr_) allocator_->deallocate(ptr_);
  }

 private:
  memory::CachingAllocator* allocator_;
  void* ptr_;
};

memory::AllocatorConfig with_budget(std::size_t budget) {
  memory::AllocatorConfig config;
  config.budget = budget;
  return config;
}

// A training-like step: activations made and freed; optionally one kept block per step.
struct ToyLoop {
  Device device;
  explicit ToyLoop(memory::AllocatorConfig config = {}) : device(DeviceKind::dry, config) {}
  memory::CachingAllocator& allocator() { return device.allocator(); }
};

void step_activations(memory::CachingAllocator& allocator) {
  Block a(allocator, 40_MiB, Tag::activations);
  Block b(allocator, 24_MiB, Tag::activations);
  Block workspace(allocator, 32_MiB, Tag::workspace);
}

TEST(LeakDetector, FlatTrainingLoopStaysOkWithSlopeZero) {
  ToyLoop loop;
  Block weights(loop.allocator(), 100_MiB, Tag::weights);
  LeakDetector detector(loop.allocator());
  for (int step = 0; step < 30; ++step) {
    step_activations(loop.allocator());
    detector.sample(step);
  }
  EXPECT_FALSE(detector.verdict().leak);
  EXPECT_EQ(detector.verdict().bytes_per_step, 0);
  EXPECT_FALSE(detector.first_detection().has_value());
  for (const LeakSample& s : detector.samples()) EXPECT_EQ(s.allocated, static_cast<std::int64_t>(100_MiB));
  // The in-step peak is seen through the trace although every sample is at a boundary.
  EXPECT_EQ(detector.samples().back().peak_allocated, static_cast<std::int64_t>(196_MiB));
}

TEST(LeakDetector, KeptTensorPerStepIsALeakInItsTagAndSite) {
  ToyLoop loop;
  LeakDetector detector(loop.allocator());
  std::vector<Block> history;
  for (int step = 0; step < 20; ++step) {
    step_activations(loop.allocator());
    {
      LeakSite site(detector, "history.append(outputs)");
      history.emplace_back(loop.allocator(), 3_MiB, Tag::retained);
    }
    detector.sample(step);
  }
  const LeakVerdict& v = detector.verdict();
  ASSERT_TRUE(v.leak) << v.describe();
  EXPECT_EQ(v.bytes_per_step, static_cast<std::int64_t>(3_MiB));
  EXPECT_EQ(v.tag, Tag::retained);
  EXPECT_EQ(v.tag_bytes_per_step, static_cast<std::int64_t>(3_MiB));
  EXPECT_EQ(v.growing_tags, std::vector<Tag>{Tag::retained});
  EXPECT_EQ(v.site, "history.append(outputs)");
  EXPECT_EQ(v.site_bytes_per_step, static_cast<std::int64_t>(3_MiB));
  EXPECT_EQ(v.predicted_oom_step, -1) << "no budget, no prediction";
  ASSERT_TRUE(detector.first_detection().has_value());
  EXPECT_EQ(detector.first_detection()->step, 11);  // the 12th sample: the first verdict possible
  EXPECT_TRUE(detector.sites_complete());
  EXPECT_NE(v.describe().find("retained"), std::string::npos);
}

TEST(LeakDetector, SiteBlocksFreedLaterDoNotCount) {
  // A site whose allocations die at the end of the step is flat; the leaking site is named.
  ToyLoop loop;
  LeakDetector detector(loop.allocator());
  std::vector<Block> history;
  for (int step = 0; step < 20; ++step) {
    std::optional<Block> temporary;
    {
      LeakSite site(detector, "loss.compute()");
      temporary.emplace(loop.allocator(), 8_MiB, Tag::activations);
    }
    {
      LeakSite site(detector, "losses.append(loss)");
      history.emplace_back(loop.allocator(), 512, Tag::retained);
    }
    temporary.reset();
    detector.sample(step);
  }
  EXPECT_EQ(detector.site_bytes().at("loss.compute()").back(), 0);
  EXPECT_EQ(detector.site_bytes().at("losses.append(loss)").back(), 20 * 512);
  EXPECT_EQ(detector.verdict().site, "losses.append(loss)");
  EXPECT_EQ(detector.verdict().bytes_per_step, 512);
}

TEST(LeakDetector, InnermostSiteNamesTheBlock) {
  ToyLoop loop;
  LeakDetector detector(loop.allocator());
  std::vector<Block> kept;
  {
    LeakSite outer(detector, "outer");
    kept.emplace_back(loop.allocator(), 1_MiB, Tag::retained);
    {
      LeakSite inner(detector, "inner");
      kept.emplace_back(loop.allocator(), 2_MiB, Tag::retained);
    }
  }
  detector.sample(0);
  EXPECT_EQ(detector.site_bytes().at("outer").back(), static_cast<std::int64_t>(1_MiB));
  EXPECT_EQ(detector.site_bytes().at("inner").back(), static_cast<std::int64_t>(2_MiB));
}

TEST(LeakDetector, DroppedTraceEventsStopSiteAttributionOnly) {
  memory::AllocatorConfig config;
  config.trace_capacity = 4;  // far less than one step's events
  ToyLoop loop(config);
  LeakDetector detector(loop.allocator());
  std::vector<Block> history;
  for (int step = 0; step < 20; ++step) {
    step_activations(loop.allocator());
    LeakSite site(detector, "history.append");
    history.emplace_back(loop.allocator(), 1_MiB, Tag::retained);
    detector.sample(step);
  }
  EXPECT_FALSE(detector.sites_complete());
  EXPECT_TRUE(detector.verdict().leak);
  EXPECT_EQ(detector.verdict().bytes_per_step, static_cast<std::int64_t>(1_MiB));
  EXPECT_EQ(detector.verdict().tag, Tag::retained);
}

TEST(LeakDetector, PredictsTheOomStepAndTheOomCarriesDiagnosisLeak) {
  ToyLoop loop(with_budget(1_GiB));
  LeakDetector detector(loop.allocator());
  std::vector<Block> history;
  std::optional<memory::OomInfo> oom;
  std::int64_t oom_step = -1;
  for (int step = 0; step < 1000 && !oom; ++step) {
    try {
      try {
        step_activations(loop.allocator());
        LeakSite site(detector, "features.append");
        history.emplace_back(loop.allocator(), 20_MiB, Tag::retained);
      } catch (const memory::OomError& e) {
        detector.rethrow(e);
      }
      detector.sample(step);
    } catch (const memory::OomError& e) {
      oom = e.info();
      oom_step = step;
      EXPECT_NE(std::string(e.what()).find("features.append"), std::string::npos) << e.what();
    }
  }
  ASSERT_TRUE(oom.has_value());
  EXPECT_EQ(oom->diagnosis, memory::Diagnosis::leak);
  EXPECT_NE(oom->remedy.find(".item()"), std::string::npos);
  EXPECT_NE(oom->remedy.find(".detach().cpu()"), std::string::npos);
  ASSERT_TRUE(detector.first_detection().has_value());
  EXPECT_LT(detector.first_detection()->step, oom_step);
  // Each kept block splits a cached workspace segment, so reserved grows 32 MiB/step while
  // allocated grows 20 MiB/step: the prediction follows the faster, reserved growth.
  EXPECT_EQ(detector.first_detection()->predicted_oom_step, oom_step);
}

TEST(LeakDetector, OomWithoutALeakKeepsTheAllocatorsDiagnosis) {
  ToyLoop loop(with_budget(256_MiB));
  LeakDetector detector(loop.allocator());
  for (int step = 0; step < 12; ++step) {
    step_activations(loop.allocator());
    detector.sample(step);
  }
  try {
    try {
      Block too_big(loop.allocator(), 300_MiB, Tag::activations);
    } catch (const memory::OomError& e) {
      detector.rethrow(e);
    }
    FAIL() << "expected an OOM";
  } catch (const memory::OomError& e) {
    EXPECT_EQ(e.info().diagnosis, memory::Diagnosis::capacity);
  }
}

TEST(LeakDetector, StepsMustNotGoBack) {
  ToyLoop loop;
  LeakDetector detector(loop.allocator());
  detector.sample(3);
  EXPECT_THROW(detector.sample(2), std::invalid_argument);
}

TEST(LeakDetector, InvalidCriteriaAreRejectedAtConstruction) {
  ToyLoop loop;
  GrowthCriteria criteria;
  criteria.window = 5;
  EXPECT_THROW(LeakDetector(loop.allocator(), criteria), std::invalid_argument);
}

TEST(LeakMetrics, RecordsTheFirstDetectionOrAZeroSlope) {
  ToyLoop loop(with_budget(2_GiB));
  {
    LeakDetector detector(loop.allocator());
    RunContext context(loop.device, Scale::tiny, 20);
    for (int step = 0; step < 20; ++step) detector.sample(step);
    record_leak_metrics(detector, context);
    EXPECT_EQ(context.metrics().at("leak_detected"), 0.0);
    EXPECT_EQ(context.metrics().at("leak_bytes_per_step"), 0.0);
    EXPECT_EQ(context.metrics().count("predicted_oom_step"), 0u);
  }
  LeakDetector detector(loop.allocator());
  RunContext context(loop.device, Scale::tiny, 20);
  std::vector<Block> kept;
  for (int step = 0; step < 20; ++step) {
    kept.emplace_back(loop.allocator(), 4_MiB, Tag::retained);
    detector.sample(step);
  }
  record_leak_metrics(detector, context);
  EXPECT_EQ(context.metrics().at("leak_detected"), 1.0);
  EXPECT_EQ(context.metrics().at("leak_bytes_per_step"), static_cast<double>(4_MiB));
  EXPECT_EQ(context.metrics().at("leak_tag"), static_cast<double>(static_cast<int>(Tag::retained)));
  EXPECT_EQ(context.metrics().at("leak_detected_at_step"), 11.0);
  EXPECT_GT(context.metrics().at("predicted_oom_step"), 11.0);
}

}  // namespace
}  // namespace oomlab::leak
