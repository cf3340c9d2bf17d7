// The decoded values as a graph: memo references make it a DAG in any real pickle, but a
// hand-made one can put a list inside itself, nest without bound or give a dict key twice.
// Checked once after decoding, in time linear in the nodes and items, so that whatever reads the
// document may recurse and look keys up without its own guards.
#pragma once
#include <cstddef>

#include "harness/replay/pickle_value.hpp"

namespace oomlab::replay {

// Throws PickleError (at the offending container's byte) on a reference cycle, on containers
// nested deeper than `max_depth`, on a dict key that is not str or int, and on a key given twice.
void check_pickle_graph(const PickleValue& root, std::size_t max_depth);

}  // namespace oomlab::replay
