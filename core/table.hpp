// A plain text table with aligned columns, for terminal output (and markdown when asked).
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace truepeak {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  // Columns str() left-aligns (labels); by default only the first.
  void set_left_columns(std::vector<std::size_t> columns) { left_columns_ = std::move(columns); }
  // Columns padded to the widest cell (counted in UTF-8 code points, so "×" pads like one
  // character); the left columns left-aligned, the others (numbers) right-aligned.
  std::string str() const;
  // "| a | b |" rows with a "|---|---:|" separator; '|' inside cells is escaped.
  std::string markdown() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::size_t> left_columns_ = {0};
};

}  // namespace truepeak
