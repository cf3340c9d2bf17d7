// The site is the user's own line: on stacks as PyTorch records them by default (C++ frames
// first, stacks="all"), on `python -c`, notebooks, generated code and C++-only work, and on every
// real fixture in fixtures/torch.
#include "harness/replay/allocation_sites.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "harness/replay/replay_report.hpp"
#include "harness/replay/snapshot_file.hpp"

namespace oomlab::replay {
namespace {

namespace fs = std::filesystem;

// The C++ frames torch 2.11 puts before the Python ones (fixtures/torch/python_c_site).
const std::vector<Frame> kNativePrefix = {
    {"??", 0, "torch::unwind::unwind()"},
    {"??", 0, "torch::CapturedTraceback::gather(bool, bool, bool)"},
    {"memory_snapshot.cpp", 0, "torch::cuda::(anonymous namespace)::gather_with_cpp()"},
    {"CUDACachingAllocator.cpp", 0,
     "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)"},
    {"", 0, "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"},
    {"??", 0, "at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>)"},
    {"RegisterCUDA_0.cpp", 0,
     "at::(anonymous namespace)::wrapper_CUDA_memory_format_empty(c10::ArrayRef<c10::SymInt>)"},
    {"??", 0, "at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)"},
    {"python_torch_functions_2.cpp", 0, "torch::autograd::THPVariable_empty(_object*, _object*, _object*)"},
    {"??", 0, "PyCMethod_New"},
    {"??", 0, "_PyObject_MakeTpCall"},
};
const std::vector<Frame> kInterpreterTail = {
    {"??", 0, "_PyEval_EvalFrameDefault"}, {"??", 0, "PyRun_StringFlags"}, {"??", 0, "Py_BytesMain"},
    {"??", 0, "__libc_start_main"},        {"??", 0, "_start"},
};

StackId add(StackTable& table, const std::vector<std::vector<Frame>>& parts) {
  std::vector<FrameId> ids;
  for (const std::vector<Frame>& part : parts) {
    for (const Frame& frame : part) ids.push_back(table.add_frame(frame));
  }
  return table.add_stack(ids);
}

TEST(AllocationSites, PythonCIsTheUsersCodeNotTheUnwinder) {
  StackTable table;
  const StackId stack = add(table, {kNativePrefix, {{"<string>", 7, "make_batch"}}, kInterpreterTail,
                                    {{"<string>", 8, "<module>"}}});
  EXPECT_EQ(site_of(table, stack), "<string>:7 make_batch");
  // The stack a user reads: the Python frames only, innermost first.
  EXPECT_EQ(stack_lines(table, stack, 12), (std::vector<std::string>{"<string>:7 make_batch", "<string>:8 <module>"}));
}

TEST(AllocationSites, InstalledPackagesAndTorchAreSkippedForTheScriptsLine) {
  StackTable table;
  const StackId stack = add(
      table, {kNativePrefix,
              {{"/opt/venv/lib/python3.12/site-packages/torch/nn/modules/module.py", 1370, "convert"},
               {"/opt/venv/lib/python3.12/site-packages/transformers/modeling_utils.py", 3706, "to"},
               {"/usr/lib/python3.12/contextlib.py", 81, "inner"},
               {"/home/me/pytorch/torch/_tensor.py", 40, "wrapped"},
               {"<frozen runpy>", 88, "_run_code"},
               {"/opt/torch/train.py", 371, "main"}}});
  // /opt/torch/ is a folder named torch, not torch's package: the user's script.
  EXPECT_EQ(site_of(table, stack), "/opt/torch/train.py:371 main");
}

TEST(AllocationSites, NotebookCellsAreTheUsersCode) {
  StackTable table;
  EXPECT_EQ(site_of(table, add(table, {kNativePrefix, {{"<ipython-input-3-5f2a>", 4, "<module>"}}})),
            "<ipython-input-3-5f2a>:4 <module>");
  EXPECT_EQ(site_of(table, add(table, {{{"/tmp/ipykernel_812/2931.py", 2, "<module>"}}})),
            "/tmp/ipykernel_812/2931.py:2 <module>");
}

TEST(AllocationSites, AStackWithoutUserCodeSaysWhatItIs) {
  StackTable table;
  const std::string inductor = "/tmp/torchinductor_root/dt/cdtqouq3dkq5t3z5p6qnt7sul4k274f2rnxe2xa5ui77tactamx7.py";
  EXPECT_EQ(site_of(table, add(table, {kNativePrefix,
                                       {{inductor, 234, "partition_0"},
                                        {"/venv/lib/python3.12/site-packages/torch/_inductor/cudagraph_trees.py", 724,
                                         "run"}}})),
            "(Inductor-generated code: cdtqouq3dkq5t3z5p6qnt7sul4k274f2rnxe2xa5ui77tactamx7.py:234 partition_0)");
  // TORCHINDUCTOR_CACHE_DIR elsewhere: the file's shape still says Inductor.
  EXPECT_EQ(frame_kind({"/cache/dt/cdtqouq3dkq5t3z5p6qnt7sul4k274f2rnxe2xa5ui77tactamx7.py", 1, "call"}),
            FrameKind::generated);
  EXPECT_EQ(site_of(table, add(table, {{{"<eval_with_key>.3", 5, "forward"}}})),
            "(torch.fx-generated code: <eval_with_key>.3:5 forward)");
  EXPECT_EQ(site_of(table, add(table, {{{"/v/lib/python3.12/site-packages/peft/tuners/lora/layer.py", 9, "merge"}}})),
            "(library code: peft/tuners/lora/layer.py:9 merge)");
  EXPECT_EQ(site_of(table,
                    add(table, {kNativePrefix,
                                {{"??", 0, "at::native::mm_out_cuda(at::Tensor const&)"},
                                 {"??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&)"},
                                 {"??", 0, "torch::autograd::Engine::thread_main(std::shared_ptr<int> const&)"}}})),
            "(backward pass: MmBackward0, no Python frame)");
  const std::vector<Frame> allocator(kNativePrefix.begin(), kNativePrefix.begin() + 5);
  const StackId workspace = add(table, {allocator,
                                        {{"CublasHandlePool.cpp", 0, "at::cuda::getCUDABlasLtWorkspace()"},
                                         {"Blas.cpp", 0, "at::native::addmm_out_cuda_impl(at::Tensor&)"}}});
  EXPECT_EQ(site_of(table, workspace), "(C++ only: at::cuda::getCUDABlasLtWorkspace)");
  // Without a Python frame the stack shown is the C++ one, past the unwinder and the dispatcher.
  EXPECT_EQ(stack_lines(table, workspace, 2), (std::vector<std::string>{
                                                  "at::cuda::getCUDABlasLtWorkspace (CublasHandlePool.cpp)",
                                                  "at::native::addmm_out_cuda_impl (Blas.cpp)"}));
  EXPECT_EQ(site_of(table, kNoFrames), "(no frames recorded: C++ only, e.g. the backward pass)");
}

// Every real snapshot: no site is a C++ frame; one recorded from a .py file or `python -c` names
// the workload's own line (record/record_snapshots.py, or <string>) as its largest site.
TEST(AllocationSites, EveryRealFixturesSitesAreTheUsersLines) {
  const fs::path folder = fs::path(OOMLAB_REPLAY_FIXTURES) / "torch";
  std::size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".pickle") == std::string::npos) continue;
    SCOPED_TRACE(name);
    ReplayReport report;
    try {
      report = analyse_snapshot(load_snapshot(entry.path().string()), {});
    } catch (const std::exception& error) {
      ADD_FAILURE() << error.what();  // a fixture the reader refuses is its own failure
      continue;
    }
    ASSERT_FALSE(report.top_sites.empty());
    const std::string own_line = name.rfind("python_c_site", 0) == 0 ? "<string>:" : "record_snapshots.py:";
    EXPECT_NE(report.top_sites.front().site.find(own_line), std::string::npos) << report.top_sites.front().site;
    for (const SiteBytes& site : report.top_sites) {
      EXPECT_EQ(site.site.find("gather_with_cpp"), std::string::npos);
      EXPECT_EQ(site.site.find("unwind"), std::string::npos);
      EXPECT_TRUE(site.site.find(".py:") != std::string::npos || site.site.find("<string>:") != std::string::npos ||
                  site.site.front() == '(')
          << site.site;
    }
    ++checked;
  }
  EXPECT_GT(checked, 10u);
}

TEST(AllocationSites, PythonCFixtureNamesItsScriptLines) {
  const fs::path file = fs::path(OOMLAB_REPLAY_FIXTURES) / "torch" / "python_c_site-torch2.11.0_cu130.pickle.gz";
  const ReplayReport report = analyse_snapshot(load_snapshot(file.string()), {});
  ASSERT_EQ(report.top_sites.size(), 2u);
  EXPECT_EQ(report.top_sites[0].site, "<string>:9 <module>");  // extra = torch.empty(64 MiB)
  EXPECT_EQ(report.top_sites[1].site, "<string>:7 make_batch");
  EXPECT_EQ(report.top_sites[1].blocks, 3u);
}

}  // namespace
}  // namespace oomlab::replay
