// Argument checks for ops: a failed check throws std::invalid_argument with the op's name and
// the shapes involved, on every device (dry included), so bad calls never compute garbage.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

#define OOMLAB_CHECK(condition, message)                                               \
  do {                                                                                 \
    if (!(condition)) {                                                                \
      std::ostringstream oomlab_check_stream_;                                         \
      oomlab_check_stream_ << message << " (check `" #condition "` failed)";            \
      throw std::invalid_argument(oomlab_check_stream_.str());                          \
    }                                                                                  \
  } while (0)
