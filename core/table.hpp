// A plain text table with aligned columns, for terminal output (and markdown when asked).
#pragma once

#include <string>
#include <vector>

namespace truepeak {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  // Columns padded to the widest cell; the first column left-aligned, the others right-aligned.
  std::string str() const;
  std::string markdown() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace truepeak
