// An aligned plain-text table: columns padded to their widest cell, numbers right-aligned.
// Cells may carry an ANSI colour that does not count towards the width.
#pragma once
#include <string>
#include <vector>

namespace oomlab::report {

class TextTable {
 public:
  enum class Align { left, right };
  explicit TextTable(std::vector<std::string> header, std::vector<Align> align = {});

  void add_row(std::vector<std::string> cells);
  // Wraps the cell of the last row in `colour` (an ANSI SGR code such as "31" for red).
  void colour_last(std::size_t column, const std::string& colour);
  bool empty() const { return rows_.empty(); }
  // The header, a rule under it, then the rows; each line ends with '\n'.
  std::string render() const;

 private:
  std::vector<std::string> header_;
  std::vector<Align> align_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::vector<std::string>> colours_;
};

// The width of `text` on a terminal: UTF-8 sequences count once ("±" is one column).
std::size_t display_width(const std::string& text);

}  // namespace oomlab::report
