#include "harness/report/text_table.hpp"

#include <algorithm>

namespace oomlab::report {

std::size_t display_width(const std::string& text) {
  std::size_t width = 0;
  for (unsigned char c : text) width += (c & 0xC0) != 0x80;  // continuation bytes add nothing
  return width;
}

TextTable::TextTable(std::vector<std::string> header, std::vector<Align> align)
    : header_(std::move(header)), align_(std::move(align)) {
  align_.resize(header_.size(), Align::left);
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(header_.size());
  rows_.push_back(std::move(cells));
  colours_.emplace_back(header_.size());
}

void TextTable::colour_last(std::size_t column, const std::string& colour) {
  if (!colours_.empty() && column < header_.size()) colours_.back()[column] = colour;
}

std::string TextTable::render() const {
  std::vector<std::size_t> width(header_.size(), 0);
  for (std::size_t c = 0; c < header_.size(); ++c) width[c] = display_width(header_[c]);
  for (const auto& row : rows_) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], display_width(row[c]));
  }
  const auto line = [&](const std::vector<std::string>& cells, const std::vector<std::string>* colours) {
    std::string out;
    for (std::size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - display_width(cells[c]), ' ');
      std::string cell = cells[c];
      if (colours && !(*colours)[c].empty() && !cell.empty()) cell = "\x1b[" + (*colours)[c] + "m" + cell + "\x1b[0m";
      out += align_[c] == Align::right ? pad + cell : cell + (c + 1 < cells.size() ? pad : "");
      if (c + 1 < cells.size()) out += "  ";
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(header_, nullptr);
  std::size_t total = 0;
  for (std::size_t w : width) total += w + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (std::size_t r = 0; r < rows_.size(); ++r) out += line(rows_[r], &colours_[r]);
  return out;
}

}  // namespace oomlab::report
