// Which engine each kernel family runs on the current GPU, for the run record's device block.
// The kernels library decides it (kernels/core/engines.hpp) and registers its answer here at
// start-up, so the harness reports it without linking the kernels.
#pragma once
#include <map>
#include <string>

namespace oomlab {

using EngineReporter = std::map<std::string, std::string> (*)();  // family -> engine

void register_engine_reporter(EngineReporter reporter);
// The registered reporter's answer; empty when none is registered (a program without kernels).
// Throws where the reporter does (no usable code for this GPU).
std::map<std::string, std::string> reported_engines();

}  // namespace oomlab
