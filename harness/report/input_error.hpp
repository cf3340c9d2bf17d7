// Bad input to compare and report: an unreadable file, JSON that is not a result, two result
// sets of different kinds. The CLI prints "oomlab: error: <what>" and exits 2.
#pragma once
#include <stdexcept>

namespace oomlab::report {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace oomlab::report
